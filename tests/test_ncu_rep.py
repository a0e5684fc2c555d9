"""`.ncu-rep` reader: identity, canonical metrics and devices, checked against ncu_report itself."""
from __future__ import annotations

import functools
import lzma
import os
import shutil
from pathlib import Path

import ncu_report
import pytest

from generator.errors import InputError
from generator.metric_table import CANONICAL_METRIC_NAMES, CANONICAL_METRICS
from generator.model import KERNEL_METRICS_ID_COLUMNS
from generator.readers import detect, read
from tests.conftest import DATA

PREFILL = DATA / "h200-small" / "small_vlm_prefill.ncu-rep.xz"
ESMM_REP = DATA / "ESMM-Research" / "profile_output.ncu-rep"
NVTX_REP = DATA / "nsight-training" / "manual_nvtx.ncu-rep"
VECADD_REP = DATA / "nsight-training" / "CuVectorAddDrv.ncu-rep"


@pytest.fixture(scope="module")
def prefill_plain(tmp_path_factory):
    plain = tmp_path_factory.mktemp("rep") / "prefill.ncu-rep"
    with lzma.open(PREFILL) as src, open(plain, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return plain


@pytest.fixture(scope="module")
def prefill():
    return read(PREFILL)


def test_prefill_identity_and_device(prefill, prefill_plain):
    km = prefill.kernel_metrics
    assert list(km.columns[: len(KERNEL_METRICS_ID_COLUMNS)]) == KERNEL_METRICS_ID_COLUMNS
    assert len(km) == 30 and list(km["launch_id"]) == list(range(30))
    assert set(km["stage"]) == {"prefill"} and set(km["cc"]) == {"9.0"}
    assert prefill.provenance.format_version == "ncu 2025.3.1"
    action = ncu_report.load_report(str(prefill_plain)).range_by_idx(0).action_by_idx(0)
    row = km.iloc[0]
    assert row["name"] == action.name(ncu_report.IAction.NameBase_DEMANGLED)
    assert row["short_name"] == "elementwise_kernel_with_index"
    assert row["mangled_name"].startswith("_ZN")
    assert row["grid"] == "(14, 1, 1)" and row["block"] == "(64, 1, 1)"
    assert row["duration_ns"] == action["gpu__time_duration.sum"].value() == 1760.0
    [gpu] = prefill.gpus
    assert (gpu.name, gpu.sm_count, gpu.memory_bytes) == ("NVIDIA H200", 132, 150109880320)
    assert gpu.memory_bandwidth_bytes_per_s == pytest.approx(4.814304e12)  # 2 × 3201 MHz × 6016 bit / 8


def test_prefill_metrics_are_sane(prefill, prefill_plain):
    km = prefill.kernel_metrics
    shares = [m.name for m in CANONICAL_METRICS if m.unit == "%" and m.name != "l1_throughput_pct"]
    assert km[shares].notna().all().all()
    assert ((km[shares] >= 0) & (km[shares] <= 100)).all().all()
    # The roofline section holds FP32/FP64 only: no half-precision or tensor counters → unknown.
    assert km["flop_fp16"].isna().all() and km["flop_tensor"].isna().all()
    assert km["tensor_datapath"].isna().all()
    action = ncu_report.load_report(str(prefill_plain)).range_by_idx(0).action_by_idx(5)
    row = km.iloc[5]
    m = lambda name: action[name].value()  # noqa: E731
    duration_s = m("gpu__time_duration.sum") * 1e-9
    assert row["dram_bytes"] == pytest.approx(m("dram__bytes.sum.per_second") * duration_s)
    assert row["peak_fp32_flop_per_s"] == pytest.approx(
        2 * m("sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained") * m("sm__cycles_elapsed.avg.per_second"))
    assert row["peak_dram_bytes_per_s"] == pytest.approx(
        m("dram__bytes.sum.peak_sustained") * m("dram__cycles_elapsed.avg.per_second"))
    assert 4.0e12 < row["peak_dram_bytes_per_s"] < 5.0e12  # H200 HBM3e, ~4.8 TB/s
    assert row["memory_busy_pct"] == m("gpu__compute_memory_access_throughput.avg.pct_of_peak_sustained_elapsed")


def test_nvtx_ranges_and_stage_filter():
    km = read(NVTX_REP).kernel_metrics
    assert list(km["stage"]) == ["init_data", "daxpy", "check_results"]
    assert km["nvtx"].iloc[1] == "<default domain>:run_test/daxpy"
    assert list(read(NVTX_REP, stage="daxpy").kernel_metrics["name"]) == [
        "daxpy_kernel(int, double, double *, double *)"]
    assert len(read(NVTX_REP, stage="run_test").kernel_metrics) == 3
    assert read(NVTX_REP, stage="nope").kernel_metrics.empty


def test_file_without_nvtx_keeps_launches_and_says_so():
    ds = read(VECADD_REP, stage="decode")
    assert len(ds.kernel_metrics) == 1 and ds.kernel_metrics["stage"].isna().all()
    assert any("not applied" in note for note in ds.provenance.notes)
    row = ds.kernel_metrics.iloc[0]
    assert row["duration_ns"] == 3232.0 and row["grid"] == "(196, 1, 1)"
    assert ds.provenance.format_version == "ncu 2022.3.0"


def test_esmm_rep_agrees_with_its_metrics_csv():
    rep = read(ESMM_REP).kernel_metrics
    csv = read(DATA / "ESMM-Research" / "metrics.csv").kernel_metrics
    both = rep.merge(csv, on="name", suffixes=("_rep", "_csv"))
    assert len(both) == 4  # the four tiling kernels the report holds
    # Separate runs of the same kernels: durations within 2 %, FP32 FLOP identical (1024³ GEMM).
    for _, row in both.iterrows():
        assert row["duration_ns_rep"] == pytest.approx(row["duration_ns_csv"], rel=0.02)
        assert row["flop_fp32_rep"] == pytest.approx(row["flop_fp32_csv"], rel=1e-9)
        assert row["flop_fp32_csv"] == 2 * 1024**3
    assert read(ESMM_REP).provenance.format_version == "ncu 2023.1.1"


def test_every_rep_fixture_reads():
    for path in (PREFILL, ESMM_REP, NVTX_REP, VECADD_REP):
        km = read(path).kernel_metrics
        assert list(km.columns) == KERNEL_METRICS_ID_COLUMNS + CANONICAL_METRIC_NAMES + ["tensor_datapath", "ncu_bottleneck"]
        assert km["duration_ns"].gt(0).all()


@pytest.mark.parametrize("keep", [20_000, 200_000])
def test_truncated_report_is_an_input_error(tmp_path, keep):
    cut = tmp_path / "cut.ncu-rep"
    cut.write_bytes(ESMM_REP.read_bytes()[:keep])
    assert detect(cut).format == "ncu-rep"
    with pytest.raises(InputError, match="truncated report"):
        read(cut)


def test_sparse_peak_is_not_taken_for_dense():
    """The metric table never reads a generic tensor path's peak (the 2:4-sparse rate) as dense."""
    from generator.metric_table import TENSOR_DATAPATHS

    for path in TENSOR_DATAPATHS:
        for name in path.dense_peaks:
            assert "sparsity_on" not in name
            assert "sparsity_off" in name or path.label == "fp64"


def _die() -> None:
    os._exit(3)


def _fail(name: str) -> None:
    raise InputError(name, "bad launch")


def test_report_readers_in_children_answer_in_order_and_name_a_crash(tmp_path: Path) -> None:
    """The .ncu-rep reader's children: values in call order, the first failure in call order
    raised, and a child that dies without answering (ncu_report crashing) one InputError."""
    from generator.readers.ncu_rep import _in_children

    report = tmp_path / "r.ncu-rep"
    values, extra = _in_children(report, [os.getpid, functools.partial(abs, -3), functools.partial(max, 1, 5)], 2,
                                 lambda: "here")
    assert values[1:] == [3, 5] and values[0] != os.getpid() and extra == "here"
    with pytest.raises(InputError, match="first: bad launch"):
        _in_children(report, [functools.partial(abs, 1), functools.partial(_fail, "first"),
                              functools.partial(_fail, "second")], 2, lambda: None)
    with pytest.raises(InputError, match=r"r\.ncu-rep: Nsight Compute's report reader crashed"):
        _in_children(report, [_die], 1, lambda: None)


def _read_in_one_process(path: Path):
    from generator.readers.ncu_rep import _load, _rows, kernel_metrics_frame

    context = _load(path)
    counts = [context.range_by_idx(r).num_actions() for r in range(context.num_ranges())]
    return kernel_metrics_frame(_rows(path, context, counts, 0, sum(counts))[0], None)[0]


def test_shards_forked_from_the_loaded_report_read_what_one_process_reads(prefill_plain):
    """A report of more launches than FEW_LAUNCHES is loaded once and read by shard children forked
    from the child that loaded it: the rows, in launch order, of one process reading them all."""
    from helpers_ncu import _in_child

    from generator.readers.ncu_rep import FEW_LAUNCHES, NcuRepReader

    whole = _in_child(_read_in_one_process, prefill_plain)
    sharded = NcuRepReader().read(prefill_plain).kernel_metrics
    assert len(whole) == 30 > FEW_LAUNCHES and list(sharded["launch_id"]) == list(range(30))
    assert sharded.equals(whole)


def test_a_shard_child_crashing_is_one_input_error(prefill_plain, monkeypatch):
    from generator.readers import ncu_rep

    real = ncu_rep._rows
    monkeypatch.setattr(ncu_rep, "_rows", lambda path, context, counts, start, stop:
                        os._exit(9) if start else real(path, context, counts, start, stop))
    with pytest.raises(InputError, match=r"prefill\.ncu-rep: Nsight Compute's report reader crashed"):
        ncu_rep.NcuRepReader().read(prefill_plain)
