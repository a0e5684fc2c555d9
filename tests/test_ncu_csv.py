"""ncu CSV reader: raw page and the three details layouts, checked against the csv module."""
from __future__ import annotations

import csv
import io
import lzma
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.errors import InputError
from generator.model import renumber_launches
from generator.pipeline.config import load_report
from generator.pipeline.inputs import InputCache, version_inputs
from generator.readers import detect, read
from generator.readers.ncu_csv import READER, nvtx_entries
from tests.conftest import DATA

DECODE_RAW = DATA / "h200-small" / "small_vlm_decode_ncu_raw.csv.xz"
PREFILL_DETAILS = DATA / "h200-small" / "small_vlm_prefill_export_details.csv.xz"
ESMM_CSV = DATA / "ESMM-Research" / "metrics.csv"
LELEUCAS = [DATA / "leleucas-apc" / "gpt2_flashattn_nsight.csv.xz",
            DATA / "leleucas-apc" / "bert_torch_nsight.csv.xz"]


def _rows(path) -> list[list[str]]:
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt", encoding="utf-8", newline="") as fh:
        return list(csv.reader(fh))


def _num(cell: str) -> float:
    return float(cell.replace(",", ""))


@pytest.fixture(scope="module")
def decode():
    return read(DECODE_RAW)


@pytest.fixture(scope="module")
def decode_rows():
    return _rows(DECODE_RAW)


def test_raw_page_identity(decode, decode_rows):
    header, units, first = decode_rows[0], decode_rows[1], decode_rows[2]
    km = decode.kernel_metrics
    assert decode.provenance.format == "ncu-csv-raw" and len(km) == len(decode_rows) - 2 == 40
    assert list(km["launch_id"]) == [int(r[0]) for r in decode_rows[2:]]
    row = km.iloc[0]
    assert row["name"] == first[header.index("Kernel Name")]
    assert (row["grid"], row["block"], row["cc"], row["process"]) == ("(8, 1, 1)", "(128, 1, 1)", "9.0", "python3.12")
    assert set(km["stage"]) == {"decode"}
    col = header.index("gpu__time_duration.sum")
    assert units[col] == "us"
    assert row["duration_ns"] == pytest.approx(_num(first[col]) * 1000)
    [gpu] = decode.gpus
    assert (gpu.name, gpu.index, gpu.sm_count) == ("NVIDIA H200", 0, 132)


def test_raw_page_units_and_tensor_columns(decode, decode_rows):
    header, units = decode_rows[0], decode_rows[1]
    cell = lambda r, name: _num(decode_rows[r + 2][header.index(name)])  # noqa: E731
    unit = lambda name: units[header.index(name)]  # noqa: E731
    km = decode.kernel_metrics
    assert unit("launch__shared_mem_per_block") == "Kbyte/block"
    assert km["shared_mem_per_block_bytes"].iloc[0] == pytest.approx(cell(0, "launch__shared_mem_per_block") * 1e3)
    assert unit("dram__bytes.sum.peak_sustained") == "Kbyte/cycle" and unit("dram__cycles_elapsed.avg.per_second") == "Ghz"
    assert km["peak_dram_bytes_per_s"].iloc[3] == pytest.approx(
        cell(3, "dram__bytes.sum.peak_sustained") * 1e3 * cell(3, "dram__cycles_elapsed.avg.per_second") * 1e9)
    generic = [n for n in header if n.startswith("sm__ops_path_tensor_src_") and n.endswith(".sum")
               and "int" not in n]
    for r in range(len(km)):
        assert km["flop_tensor"].iloc[r] == sum(cell(r, n) for n in generic)
    bf16 = [r for r in range(len(km)) if cell(r, "sm__ops_path_tensor_src_bf16_dst_fp32.sum") > 0]
    assert bf16 == [21, 22, 23, 36, 38]  # the nvjet GEMMs and cuDNN's flash attention
    assert [r for r in range(len(km)) if km["tensor_datapath"].iloc[r] == "bf16→fp32"] == bf16
    assert km["tensor_datapath"].drop(index=bf16).isna().all()
    dense = "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained_elapsed.per_second"
    sparse = "sm__ops_path_tensor_src_bf16_dst_fp32.sum.peak_sustained_elapsed.per_second"
    assert km["peak_tensor_flop_per_s"].iloc[0] == cell(0, dense)
    assert cell(0, sparse) == 2 * cell(0, dense)  # why the generic peak must not be used
    # fp16 (non-tensor) = 4·HFMA2 + 2·HADD2 + 2·HMUL2 per cycle × elapsed cycles, as ncu's roofline.
    rate = lambda op: cell(0, f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed")  # noqa: E731
    cycles = cell(0, "smsp__cycles_elapsed.avg")
    assert km["flop_fp16"].iloc[0] == pytest.approx((4 * rate("hfma") + 2 * rate("hadd") + 2 * rate("hmul")) * cycles)


def test_details_2021_has_no_duration_or_launch_dims():
    for path, kernels in zip(LELEUCAS, (10, 26)):
        ds = read(path)
        km = ds.kernel_metrics
        assert ds.provenance.format_version == "ncu 2021.2 layout" and len(km) == kernels
        assert km["duration_ns"].isna().all()
        assert km["grid"].isna().all() and km["block"].isna().all() and km["cc"].isna().all()
        assert ds.gpus == []
    rows = _rows(LELEUCAS[0])
    grid = next(r for r in rows[1:] if r[0] == "0" and r[9] == "Grid Size")
    freq = next(r for r in rows[1:] if r[0] == "0" and r[9] == "sm__cycles_elapsed.avg.per_second")
    km = read(LELEUCAS[0]).kernel_metrics
    assert km["grid_size"].iloc[0] == _num(grid[11])
    assert freq[10] == "cycle/second" and km["sm_frequency_hz"].iloc[0] == _num(freq[11]) == 1031877059.0
    assert km["achieved_occupancy_pct"].iloc[0] == 50.76


def test_details_2023_duration_in_nanoseconds():
    ds = read(ESMM_CSV)
    km = ds.kernel_metrics
    assert ds.provenance.format_version == "ncu 2023.1 layout" and len(km) == 9
    assert km["duration_ns"].iloc[0] == 10_776_576 and km["dram_bytes"].iloc[0] == 32_746_880
    assert km["grid"].iloc[3] == "(16, 16, 1)" and km["block"].iloc[3] == "(512, 1, 1)"
    assert [(g.index, g.compute_capability) for g in ds.gpus] == [(0, "8.6")]


def test_details_2025_from_our_h200_report():
    """`ncu --import small_vlm_prefill.ncu-rep --csv --page details` (ncu 2025.3.1)."""
    rows = _rows(PREFILL_DETAILS)
    header = rows[0]
    assert len(header) == 22  # 20 columns + the two NVTX columns
    assert {len(r) for r in rows[1:]} == {18, 22}  # metric rows end after Metric Value + a comma
    ds = read(PREFILL_DETAILS)
    km = ds.kernel_metrics
    assert ds.provenance.format_version == "ncu 2025 layout" and len(km) == 30
    assert set(km["stage"]) == {"prefill"}
    section, name, unit, value = (header.index(c) for c in ("Section Name", "Metric Name", "Metric Unit", "Metric Value"))
    first = [r for r in rows[1:] if r[0] == "0"]
    duration = next(r for r in first if (r[section], r[name]) == ("GPU Speed Of Light Throughput", "Duration"))
    busy = next(r for r in first if r[name] == "Mem Busy")
    assert duration[unit] == "us" and km["duration_ns"].iloc[0] == pytest.approx(_num(duration[value]) * 1e3)
    assert km["memory_busy_pct"].iloc[0] == _num(busy[value])
    rules = [r for r in rows[1:] if len(r) == 22 and r[header.index("Rule Name")]]
    assert rules and all(r[name] == "" for r in rules)  # rule rows are not metrics


def test_reader_registry_sniffs_csv():
    assert detect(ESMM_CSV).format == "ncu-csv"


def test_per_kernel_csv_folders_keep_launch_ids_unique(tmp_path):
    """A study of one `kernel_*/ncu.details.csv` per kernel (each numbering its launches from 0),
    given as a glob next to an .ncu-rep: every launch read once, ids unique in file order."""
    for i in range(2):
        (tmp_path / f"kernel_{i:04d}").mkdir()
        (tmp_path / f"kernel_{i:04d}" / "ncu.details.csv").write_bytes(ESMM_CSV.read_bytes())
    report = tmp_path / "report.yaml"
    report.write_text(f"""
id: r
title: {{en: R, zh: R}}
versions:
  - id: v1
    title: {{en: V1, zh: 一}}
    date: 2025-01-01
    inputs:
      nsys: [{DATA}/h200-small/small_vlm.nsys.sqlite.xz]
      ncu: ["kernel_*/ncu.details.csv", {DATA}/ESMM-Research/profile_output.ncu-rep]
""", encoding="utf-8")
    with InputCache() as cache:
        km = version_inputs(load_report(report).versions[0], cache, report, 0).kernel_metrics
    assert list(km["launch_id"]) == list(range(len(km))) and len(km) == 9 + 9 + 4
    assert list(km["duration_ns"][:9]) == list(km["duration_ns"][9:18])


def test_renumbered_launch_ids_keep_file_order():
    """One rule (model.renumber_launches) for read_many and a version's inputs: a file whose ids are
    not all above the ids so far starts just after them, so id order is file order."""
    decode, prefill = read(DECODE_RAW).kernel_metrics, read(PREFILL_DETAILS).kernel_metrics
    late = decode.assign(launch_id=decode["launch_id"] + 10_000)
    first, second = renumber_launches([late, prefill])
    assert list(first["launch_id"]) == list(late["launch_id"])
    assert list(second["launch_id"]) == [i - prefill["launch_id"].min() + late["launch_id"].max() + 1
                                         for i in prefill["launch_id"]]
    kept = renumber_launches([prefill, late])  # already above: unchanged
    assert [list(f["launch_id"]) for f in kept] == [list(prefill["launch_id"]), list(late["launch_id"])]


# ---- bad input -------------------------------------------------------------------------------

ESMM_HEADER = _rows(ESMM_CSV)[0]


def _write(tmp_path, rows, name="bad.csv", quoting=csv.QUOTE_ALL) -> object:
    buf = io.StringIO()
    csv.writer(buf, quoting=quoting, lineterminator="\n").writerows(rows)
    path = tmp_path / name
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


def test_unknown_layout(tmp_path):
    path = _write(tmp_path, [ESMM_HEADER + ["Extra"], _rows(ESMM_CSV)[1] + ["x"]])
    with pytest.raises(InputError, match="unknown ncu CSV layout"):
        READER.read(path)


@pytest.mark.parametrize("column", ["Kernel Name", "Metric Value", "ID"])
def test_missing_required_column(tmp_path, column):
    header = [c for c in ESMM_HEADER if c != column]
    path = _write(tmp_path, [header])
    with pytest.raises(InputError, match=f"missing column '{column}'"):
        READER.read(path)


def test_ragged_row_beyond_known_raggedness(tmp_path):
    rows = _rows(ESMM_CSV)[:6]
    rows[4] = rows[4][:9]
    path = _write(tmp_path, rows)
    with pytest.raises(InputError, match="line 5: 9 fields, expected 15"):
        READER.read(path)


def test_non_number_in_a_needed_metric(tmp_path):
    rows = _rows(ESMM_CSV)
    rows[2][-1] = "12 ms"  # gpu__time_duration.sum of launch 0
    with pytest.raises(InputError, match="launch 0: metric gpu__time_duration.sum"):
        READER.read(_write(tmp_path, rows))


def test_truncated_xz(tmp_path):
    cut = tmp_path / "cut.csv.xz"
    cut.write_bytes(DECODE_RAW.read_bytes()[:5000])
    with pytest.raises(InputError):
        read(cut)


LAYOUT_2021 = _rows(LELEUCAS[0])[0]
_ID = st.integers(min_value=0, max_value=50)
_VALUE = st.one_of(st.floats(min_value=0, max_value=1e15, allow_nan=False), st.just(None))


def _printed(value: float | None, decimals: int) -> str:
    return "n/a" if value is None else f"{value:,.{decimals}f}"


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(st.lists(st.tuples(_ID, _VALUE, _VALUE, st.booleans()), min_size=1, max_size=12),
       st.sampled_from([0, 2]), st.sampled_from([csv.QUOTE_ALL, csv.QUOTE_MINIMAL]), st.data())
def test_details_2021_property(tmp_path, launches, decimals, quoting, data):
    """Random launches in the 2021.2 layout: ragged metric rows with a trailing comma, rule rows,
    thousands separators, n/a, either quoting → the reader gives back exactly what was written."""
    rows = [LAYOUT_2021]
    expected: dict[int, tuple[str, str]] = {}
    for launch_id, dram, occupancy, with_rule in launches:
        ident = [str(launch_id), "7", "python3", "127.0.0.1", f"kernel_{launch_id}<float, 4>(int, float *)",
                 "2023-May-09 15:23:06", "1", "7"]
        dram_text, occ_text = _printed(dram, decimals), _printed(occupancy, decimals)
        if launch_id in expected:  # a second copy of a launch: the first value wins
            dram_text, occ_text = expected[launch_id]
        expected.setdefault(launch_id, (dram_text, occ_text))
        rows.append(ident + ["Command line profiler metrics", "dram__bytes.sum", "byte", dram_text, ""])
        rows.append(ident + ["Occupancy", "Achieved Occupancy", "%", occ_text, ""])
        if with_rule:
            rows.append(ident + ["Occupancy", "", "", "", "Occupancy", "WRN", "limited, by registers"])
    km = READER.read(_write(tmp_path, rows, quoting=quoting)).kernel_metrics
    assert sorted(km["launch_id"]) == sorted(expected)
    for _, row in km.iterrows():
        dram_text, occ_text = expected[row["launch_id"]]
        for got, text in ((row["dram_bytes"], dram_text), (row["achieved_occupancy_pct"], occ_text)):
            assert math.isnan(got) if text == "n/a" else got == float(text.replace(",", ""))
    cut_at = data.draw(st.integers(min_value=1, max_value=len(rows) - 1))
    short = data.draw(st.integers(min_value=1, max_value=11))
    rows[cut_at] = rows[cut_at][:short]
    with pytest.raises(InputError, match=f"line {cut_at + 1}: "):
        READER.read(_write(tmp_path, rows, quoting=quoting))


def test_raw_page_ragged_row_names_its_line(tmp_path):
    rows = _rows(DECODE_RAW)[:8]
    rows[5] = rows[5][:-1]
    with pytest.raises(InputError, match="line 6: 2239 fields, expected 2240"):
        READER.read(_write(tmp_path, rows))
    with pytest.raises(InputError, match="units row"):
        READER.read(_write(tmp_path, [rows[0]] + rows[2:]))


def test_nvtx_cells():
    decode = read(DECODE_RAW).kernel_metrics
    assert set(decode["nvtx"]) == {"<default domain>:decode"}
    cell = '615  "<default domain>:outer:none:none:none:none:none:none" "<default domain>:a:b:none:none:none:none:none:none"'
    assert nvtx_entries(cell, start_end=False) == [("<default domain>", "outer"), ("<default domain>", "a:b")]
    assert nvtx_entries('"3:dom:step:none:none:none:none:none:none"', start_end=True) == [("dom", "step")]
    assert nvtx_entries("", start_end=False) == []
