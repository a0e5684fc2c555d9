"""Classification rules on real ncu rows (H200 decode capture), edges set by replacing one number.

The frames are built here straight from the raw CSV with the csv module (this test's own reading
of a handful of ncu columns), so the expected numbers do not come from the code under test.
"""
from __future__ import annotations

import csv
import lzma
import math
import statistics
from pathlib import Path

import pandas as pd
import pytest

from generator.analyses.classify import (
    BALANCED,
    COMPUTE,
    LATENCY,
    MEMORY,
    SMALL_GRID,
    UNKNOWN,
    class_stats,
    classify,
    profiled_kernels,
)
from generator.analyses.roofline import Peaks

DATA = Path(__file__).parent / "data"
DECODE_RAW = DATA / "h200-small" / "small_vlm_decode_ncu_raw.csv.xz"

#: raw ncu metric → canonical column, and the factor per unit into the canonical unit
RAW_COLUMNS: dict[str, tuple[str, dict[str, float]]] = {
    "gpu__time_duration.sum": ("duration_ns", {"us": 1e3, "ns": 1.0}),
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": ("sm_throughput_pct", {"%": 1.0}),
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": ("dram_throughput_pct", {"%": 1.0}),
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": ("memory_throughput_pct", {"%": 1.0}),
    "sm__warps_active.avg.pct_of_peak_sustained_active": ("achieved_occupancy_pct", {"%": 1.0}),
    "l1tex__t_sector_hit_rate.pct": ("l1_hit_rate_pct", {"%": 1.0}),
    "lts__t_sector_hit_rate.pct": ("l2_hit_rate_pct", {"%": 1.0}),
    "launch__waves_per_multiprocessor": ("waves_per_sm", {"": 1.0}),
    "dram__bytes_read.sum": ("dram_read", {"byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}),
    "dram__bytes_write.sum": ("dram_write", {"byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}),
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum": ("flop_tensor", {"": 1.0}),
}


def _num(text: str) -> float:
    return math.nan if text in ("", "n/a") else float(text.replace(",", ""))


def decode_rows() -> list[dict]:
    """One dict per profiled launch of the decode capture (raw page: header row, units row)."""
    with lzma.open(DECODE_RAW, "rt", newline="") as fh:
        rows = list(csv.reader(fh))
    header, units = rows[0], rows[1]
    out = []
    for row in rows[2:]:
        rec = {"launch_id": int(row[0]), "name": row[header.index("Kernel Name")]}
        for metric, (column, factors) in RAW_COLUMNS.items():
            i = header.index(metric)
            rec[column] = _num(row[i]) * factors[units[i]]
        rec["dram_bytes"] = rec.pop("dram_read") + rec.pop("dram_write")
        out.append(rec)
    return out


@pytest.fixture(scope="module")
def launches() -> pd.DataFrame:
    return pd.DataFrame(decode_rows())


@pytest.fixture(scope="module")
def kernels(launches: pd.DataFrame) -> pd.DataFrame:
    return profiled_kernels(launches)


def test_one_row_per_distinct_kernel_with_means(launches, kernels):
    rows = decode_rows()
    assert len(rows) == 40
    assert len(kernels) == len({r["name"] for r in rows}) == 25
    name = "nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN"
    mine = [r for r in rows if r["name"] == name]
    k = kernels.set_index("name").loc[name]
    assert k["launches"] == len(mine) == 2
    assert k["duration_ns"] == pytest.approx(statistics.mean(r["duration_ns"] for r in mine))
    assert k["max_duration_ns"] == max(r["duration_ns"] for r in mine)
    assert k["sm_throughput_pct"] == pytest.approx(statistics.mean(r["sm_throughput_pct"] for r in mine))
    # first-launch order: the first kernel profiled is launch 0
    assert kernels["name"].iloc[0] == rows[0]["name"]


def test_roofline_on_real_decode_is_latency_bound_with_small_grids(kernels):
    rows = decode_rows()
    by_name: dict[str, list[dict]] = {}
    for r in rows:
        by_name.setdefault(r["name"], []).append(r)
    mean = {n: {c: statistics.mean(r[c] for r in rs) for c in ("sm_throughput_pct", "memory_throughput_pct",
                                                              "waves_per_sm")} for n, rs in by_name.items()}
    expected_latency = sum(1 for m in mean.values() if m["sm_throughput_pct"] < 60 and m["memory_throughput_pct"] < 60)
    expected_small = sum(1 for m in mean.values() if m["sm_throughput_pct"] < 60
                         and m["memory_throughput_pct"] < 60 and m["waves_per_sm"] < 1)
    out = classify(kernels, "roofline", peaks=Peaks(dram_bytes_per_s=4.8e12, flop_per_s={"tensor": 989e12}))
    assert (out["class"] == LATENCY).sum() == expected_latency == 25
    assert (out["qualifier"] == SMALL_GRID).sum() == expected_small == 24


def _row(kernels: pd.DataFrame, name: str = "nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN", **replace) -> pd.DataFrame:
    """A real profiled kernel with some numbers replaced (the edge under test)."""
    row = kernels[kernels["name"] == name].copy()
    for column, value in replace.items():
        row[column] = value
    return row


def _cls(frame: pd.DataFrame, rule: str, **kw) -> str:
    return classify(frame, rule, **kw)["class"].iloc[0]


H200 = Peaks(dram_bytes_per_s=4.8e12, flop_per_s={"tensor": 989e12, "fp32": 67e12})


@pytest.mark.parametrize("sm, mem, expected", [
    (60.0, 10.0, "roof"),  # exactly 60 is not < 60 → goes on to the roofline test
    (59.999, 59.999, LATENCY),
    (10.0, 60.0, "roof"),
])
def test_roofline_latency_edge(kernels, sm, mem, expected):
    row = _row(kernels, sm_throughput_pct=sm, memory_throughput_pct=mem)
    got = _cls(row, "roofline", peaks=H200)
    assert got == expected if expected == LATENCY else got in (COMPUTE, MEMORY)


def test_roofline_intensity_against_tensor_ridge(kernels):
    # nvjet decode GEMV, real tensor FLOP and DRAM bytes: intensity far below the bf16 ridge
    base = _row(kernels, sm_throughput_pct=70.0)
    flop, dram = float(base["flop_tensor"].iloc[0]), float(base["dram_bytes"].iloc[0])
    assert flop > 0 and dram > 0
    assert _cls(base, "roofline", peaks=H200) == MEMORY
    ridge = H200.ridge("tensor")
    # intensity exactly at the ridge → compute-bound (≥); a hair below → memory-bound
    assert _cls(_row(kernels, sm_throughput_pct=70.0, flop_tensor=ridge * dram), "roofline", peaks=H200) == COMPUTE
    assert _cls(_row(kernels, sm_throughput_pct=70.0, flop_tensor=ridge * dram * 0.999), "roofline",
                peaks=H200) == MEMORY
    # the same FLOP counted as FP32 work meets the much lower FP32 ridge → compute-bound
    fp32 = _row(kernels, sm_throughput_pct=70.0, flop_tensor=0.0, flop_fp32=H200.ridge("fp32") * dram)
    assert _cls(fp32, "roofline", peaks=H200) == COMPUTE


def test_roofline_unknown_when_data_missing(kernels):
    assert _cls(_row(kernels, sm_throughput_pct=math.nan), "roofline", peaks=H200) == UNKNOWN
    assert _cls(_row(kernels, sm_throughput_pct=70.0, dram_bytes=math.nan), "roofline", peaks=H200) == UNKNOWN
    assert _cls(_row(kernels, sm_throughput_pct=70.0, dram_bytes=0.0), "roofline", peaks=H200) == UNKNOWN
    assert _cls(_row(kernels, sm_throughput_pct=70.0, flop_tensor=math.nan), "roofline", peaks=H200) == UNKNOWN
    assert _cls(_row(kernels, sm_throughput_pct=70.0), "roofline", peaks=Peaks()) == UNKNOWN  # no peaks
    # zero FLOP: the busier unit decides (memory % ≥ SM % → memory-bound), peaks not needed
    assert _cls(_row(kernels, sm_throughput_pct=70.0, memory_throughput_pct=70.0, flop_tensor=0.0), "roofline",
                peaks=Peaks()) == MEMORY
    assert _cls(_row(kernels, sm_throughput_pct=70.0, memory_throughput_pct=69.99, flop_tensor=0.0), "roofline",
                peaks=Peaks()) == COMPUTE


@pytest.mark.parametrize("sm, mem, expected", [
    (80.0, 79.0, COMPUTE),  # max exactly 80 → high throughput, SM higher
    (79.999, 70.0, BALANCED),  # below 80 and 9.999 points apart → balanced
    (75.0, 65.0, COMPUTE),  # exactly 10 points apart → the higher one
    (74.999, 65.0, BALANCED),  # 9.999 apart → balanced
    (65.0, 85.0, MEMORY),
    (60.0, 59.0, BALANCED),  # exactly 60 is not latency; 1 point apart → balanced
    (59.999, 59.0, LATENCY),
    (80.0, 80.0, BALANCED),
])
def test_sol_edges(kernels, sm, mem, expected):
    assert _cls(_row(kernels, sm_throughput_pct=sm, memory_throughput_pct=mem), "sol") == expected


@pytest.mark.parametrize("sm, dram, margin, expected", [
    (10.0, 5.0, 5.0, BALANCED),  # exactly +5 → balanced (strict >)
    (10.001, 5.0, 5.0, COMPUTE),
    (5.0, 10.0, 5.0, BALANCED),  # exactly −5 → balanced
    (5.0, 10.001, 5.0, MEMORY),
    (10.0, 5.0, 4.0, COMPUTE),  # margin is a parameter
])
def test_margin_edges(kernels, sm, dram, margin, expected):
    row = _row(kernels, sm_throughput_pct=sm, dram_throughput_pct=dram)
    assert _cls(row, "sm_dram_margin", margin=margin) == expected


def test_margin_on_real_rows_matches_independent_count(kernels):
    rows = decode_rows()
    by_name: dict[str, list[dict]] = {}
    for r in rows:
        by_name.setdefault(r["name"], []).append(r)
    diffs = [statistics.mean(r["sm_throughput_pct"] for r in rs) - statistics.mean(r["dram_throughput_pct"] for r in rs)
             for rs in by_name.values()]
    out = classify(kernels, "sm_dram_margin")
    assert (out["class"] == COMPUTE).sum() == sum(d > 5 for d in diffs)
    assert (out["class"] == MEMORY).sum() == sum(d < -5 for d in diffs)
    assert (out["class"] == BALANCED).sum() == sum(-5 <= d <= 5 for d in diffs)


def test_class_stats_means_recomputed_from_csv(kernels):
    rows = decode_rows()
    out = classify(kernels, "sm_dram_margin")
    stats = class_stats(out, "sm_dram_margin", {"margin": 5.0})
    assert stats["counts"] == {COMPUTE: 1, MEMORY: 0, BALANCED: 24, UNKNOWN: 0}
    assert stats["percent"][BALANCED] == pytest.approx(96.0)
    by_name: dict[str, list[dict]] = {}
    for r in rows:
        by_name.setdefault(r["name"], []).append(r)
    per_kernel = {n: {c: statistics.mean(r[c] for r in rs) for c in ("sm_throughput_pct", "dram_throughput_pct",
                                                                   "duration_ns", "l2_hit_rate_pct")}
                  for n, rs in by_name.items()}
    overall = stats["overall_means"]
    assert overall["sm_throughput_pct"] == pytest.approx(statistics.mean(k["sm_throughput_pct"] for k in per_kernel.values()))
    assert overall["duration_us"] == pytest.approx(statistics.mean(k["duration_ns"] for k in per_kernel.values()) / 1e3)
    compute = [n for n, k in per_kernel.items() if k["sm_throughput_pct"] - k["dram_throughput_pct"] > 5]
    assert stats["class_means"][COMPUTE]["sm_throughput_pct"] == pytest.approx(per_kernel[compute[0]]["sm_throughput_pct"])
    assert MEMORY not in stats["class_means"]  # no kernel, no means
    balanced_l2 = [per_kernel[n]["l2_hit_rate_pct"] for n in per_kernel if n not in compute]
    assert stats["class_means"][BALANCED]["l2_hit_rate_pct"] == pytest.approx(statistics.mean(balanced_l2))


def test_unknown_rule_is_rejected(kernels):
    with pytest.raises(ValueError):
        classify(kernels, "vibes")


def test_reader_frames_classify_like_the_csv_rows(kernels):
    """Through the ncu reader: the same 25 kernels, same means, same classes as the csv reading."""
    from generator.readers import read

    metrics = read(DECODE_RAW).kernel_metrics
    via_reader = classify(profiled_kernels(metrics), "sol")
    via_csv = classify(kernels, "sol")
    assert list(via_reader["name"]) == list(via_csv["name"])
    assert list(via_reader["class"]) == list(via_csv["class"])
    for column in ("sm_throughput_pct", "memory_throughput_pct", "duration_ns", "l2_hit_rate_pct"):
        assert via_reader[column].to_numpy() == pytest.approx(via_csv[column].to_numpy())
    assert (via_reader["qualifier"] == SMALL_GRID).sum() == 24


def _expected_roofline(k: pd.Series, ridge: dict[str, float]) -> str:
    """The documented roofline rule, written out again for the test."""
    sm, mem = k["sm_throughput_pct"], k["memory_throughput_pct"]
    if sm < 60 and mem < 60:
        return LATENCY
    flops = {"tensor": k["flop_tensor"], "fp32": k["flop_fp32"], "fp16": k["flop_fp16"], "fp64": k["flop_fp64"]}
    flops = {dp: v for dp, v in flops.items() if not math.isnan(v)}  # a counter the capture lacks
    total = sum(flops.values())
    if total == 0:
        return MEMORY if mem >= sm else COMPUTE
    return COMPUTE if total / k["dram_bytes"] >= ridge[max(flops, key=flops.get)] else MEMORY


def test_roofline_compute_bound_sgemm_on_a10g():
    """ESMM's SGEMMs (A10G .ncu-rep, `--set roofline`): the one busy kernel is FP32 compute-bound."""
    from generator.analyses.roofline import device_peaks
    from generator.readers import read

    dataset = read(DATA / "ESMM-Research" / "profile_output.ncu-rep")
    metrics, clock = dataset.kernel_metrics, dataset.gpus[0].sm_clock_hz
    peaks = device_peaks(metrics, dataset.gpus, {})
    out = classify(profiled_kernels(metrics), "roofline", peaks=peaks)
    dram = metrics["peak_dram_bytes_per_cycle"].iloc[0] * dataset.gpus[0].memory_clock_hz
    ridge = {"fp32": metrics["peak_fp32_flop_per_cycle"].iloc[0] * clock / dram}
    for _, k in out.iterrows():
        assert k["class"] == _expected_roofline(k, ridge)
    assert list(out["class"]).count(COMPUTE) == 1 and list(out["class"]).count(LATENCY) == 3


def test_roofline_on_the_ocr_vlm_h200_run():
    """A full-set H200 capture (57 kernels, tensor + FP32 + zero-FLOP ones): every class by the rule."""
    from generator.analyses.roofline import DATAPATHS, device_peaks
    from generator.readers import read

    dataset = read(Path(__file__).parent.parent / "examples" / "runs" / "ocr-vlm-sdpa" / "ncu" / "raw.csv.xz")
    metrics, gpu = dataset.kernel_metrics, dataset.gpus[0]
    peaks = device_peaks(metrics, dataset.gpus, {})
    out = classify(profiled_kernels(metrics), "roofline", peaks=peaks)
    dram = metrics["peak_dram_bytes_per_cycle"].iloc[0] * gpu.memory_clock_hz  # 4.81 TB/s
    ridge = {dp: metrics[col].iloc[0] * gpu.sm_clock_hz / dram for dp, (_, col) in DATAPATHS.items()}
    for _, k in out.iterrows():
        assert k["class"] == _expected_roofline(k, ridge), k["name"]
    counts = out["class"].value_counts().to_dict()
    assert counts[COMPUTE] >= 5 and counts[MEMORY] >= 2 and counts[LATENCY] >= 40


ROOT = Path(__file__).parent.parent
#: every committed capture that carries ncu's own verdicts: reports (rule results) and details CSVs
VERDICT_FILES = sorted([*ROOT.glob("examples/runs/**/ncu/report.ncu-rep.*"), *DATA.glob("**/*.ncu-rep*"),
                        *DATA.glob("**/*details*.csv*")])


#: ncu's verdict titles → our classes (High Throughput: the higher unit; the test reads SM vs memory)
TITLES = {"Small Grid": LATENCY, "Latency Issue": LATENCY, "High Compute Throughput": COMPUTE,
          "High Memory Throughput": MEMORY, "Balanced Throughput": BALANCED}


@pytest.mark.parametrize("path", VERDICT_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_default_rule_agrees_with_ncu(path, capsys):
    """Acceptance: the default rule on each launch's own metrics vs the verdict ncu's rule stored for
    that launch, ≥ 95 %; figures printed. For reports, ncu's verdict is re-read here by title."""
    from helpers_ncu import read_once, report_launches

    from generator.analyses.classify import DEFAULT_RULE, ncu_agreement, ncu_verdict

    metrics = read_once(path).kernel_metrics
    result = ncu_agreement(metrics, DEFAULT_RULE)
    with capsys.disabled():
        print(f"\nncu agreement {path.relative_to(ROOT)}: {result['agree']}/{result['compared']} launches "
              f"({result['pct']:.1f} %), busiest unit {result['units_agree']}/{result['units_compared']}")
    assert result["compared"] == len(metrics) and result["pct"] >= 95.0
    if ".ncu-rep" in path.name:
        titles = [launch[3] for launch in report_launches(path)]
        assert len(titles) == len(metrics)
        for (i, row), message in zip(metrics.iterrows(), metrics["ncu_bottleneck"]):
            expected = TITLES.get(titles[i]) or (COMPUTE if row["sm_throughput_pct"] > row["memory_throughput_pct"]
                                                 else MEMORY)
            assert ncu_verdict(message)[0] == expected, titles[i]
