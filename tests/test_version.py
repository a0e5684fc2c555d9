"""analyze_version end to end on the H200 capture, and its data files (numbers + determinism)."""
from __future__ import annotations

import csv
import json
import lzma
import statistics
from pathlib import Path

import pandas as pd
import pytest
import yaml

from generator.analyses.classify import LATENCY, RULE_CLASSES
from generator.analyses.version import AnalysisSettings, analyze_version
from generator.model import VersionInputs
from generator.pipeline.inputs import InputCache
from generator.render.data_files import write_version_data

H200 = Path(__file__).parent / "data" / "h200-small"
STAGES = ("all", "vision", "projector", "prefill", "decode")
MEAN_KEYS = {"sm_throughput_pct", "dram_throughput_pct", "memory_throughput_pct", "achieved_occupancy_pct",
             "l1_hit_rate_pct", "l2_hit_rate_pct", "duration_us"}


def h200_inputs(*ncu: str) -> VersionInputs:
    with InputCache() as cache:
        sqlite = H200 / "small_vlm.nsys.sqlite.xz"
        summary = cache.stages(sqlite, STAGES).summary
        datasets = [cache.read(H200 / name) for name in ncu]
        nsys = cache.read(sqlite)
    metrics = [d.kernel_metrics for d in datasets]
    for i in range(1, len(metrics)):  # launch ids of a second file continue after the first's
        metrics[i] = metrics[i].assign(launch_id=metrics[i]["launch_id"] + int(metrics[i - 1]["launch_id"].max()) + 1)
    return VersionInputs(summary, pd.concat(metrics, ignore_index=True), datasets[0].gpus,
                         [nsys.provenance, *(d.provenance for d in datasets)])


@pytest.fixture(scope="module")
def decode_inputs() -> VersionInputs:
    return h200_inputs("small_vlm_decode_ncu_raw.csv.xz")


@pytest.fixture(scope="module")
def result(decode_inputs):
    return analyze_version("v1", decode_inputs, AnalysisSettings())


def _decode_csv_means() -> dict[str, dict[str, float]]:
    """Per distinct ncu kernel name: mean SM %, duration (µs), L2 hit % from the raw CSV rows."""
    with lzma.open(H200 / "small_vlm_decode_ncu_raw.csv.xz", "rt", newline="") as fh:
        rows = list(csv.reader(fh))
    h = rows[0]
    cols = {"sm": "sm__throughput.avg.pct_of_peak_sustained_elapsed", "us": "gpu__time_duration.sum",
            "l2": "lts__t_sector_hit_rate.pct"}
    by: dict[str, list[list[str]]] = {}
    for row in rows[2:]:
        by.setdefault(row[h.index("Kernel Name")], []).append(row)
    return {n: {k: statistics.mean(float(r[h.index(c)]) for r in rs) for k, c in cols.items()} for n, rs in by.items()}


def test_result_shape_and_numbers(result):
    assert result.stages == list(STAGES)
    assert set(result.top_kernels) == set(STAGES)
    assert all(len(top) <= 20 for top in result.top_kernels.values())
    means = _decode_csv_means()
    assert len(result.ncu_metrics) == len(means) == 25
    assert result.ncu_metrics["ncu_name"].tolist() == list(means)  # first-launch order
    cls = result.classification
    assert cls["rule"] == "sol" and cls["counts"] == {c: (25 if c == LATENCY else 0) for c in RULE_CLASSES["sol"]}
    assert cls["overall_means"]["sm_throughput_pct"] == pytest.approx(statistics.mean(m["sm"] for m in means.values()))
    assert cls["overall_means"]["duration_us"] == pytest.approx(statistics.mean(m["us"] for m in means.values()))
    assert cls["overall_means"]["l2_hit_rate_pct"] == pytest.approx(statistics.mean(m["l2"] for m in means.values()))
    assert result.coverage["top_n"] == 20
    assert result.coverage["profiled"] + len(result.coverage["missing"]) == 20
    assert result.top_by_duration["duration_us"].iloc[0] == pytest.approx(max(m["us"] for m in means.values()))
    assert result.comparison is None
    # explicit files (no capture run): no GPU timeline, so launch overhead abstains with its reason
    assert {f.id for f in result.findings} >= {"stage_split", "launch_overhead_abstain", "hw_power_none"}
    assert result.gpu is not None and result.gpu.name == "NVIDIA H200"


def test_friendly_names_come_from_the_nsys_names(result):
    # ncu and nsys spell the same kernel differently; profiled kernels carry the nsys name's
    # friendly name, so "Index Select (BF16)" is not numbered as if it were two kernels
    names = result.ncu_metrics["friendly_name"].tolist()
    assert "Index Select (BF16)" in names
    assert not any(n.endswith("-2 (BF16)") for n in names)
    assert result.ncu_metrics["stage_time_pct"].notna().sum() >= 20


def test_data_files_numbers_and_bytes(result, tmp_path):
    write_version_data(result, tmp_path / "a")
    write_version_data(analyze_version("v1", h200_inputs("small_vlm_decode_ncu_raw.csv.xz"), AnalysisSettings()),
                       tmp_path / "b")
    for name in ("top_kernels.csv", "kernels.yaml", "ncu_metrics.csv", "summary.json"):
        assert (tmp_path / "a" / "data" / name).read_bytes() == (tmp_path / "b" / "data" / name).read_bytes(), name
    data = tmp_path / "a" / "data"
    summary = json.loads((data / "summary.json").read_text())
    assert summary["version"] == "v1" and summary["kernels_profiled"] == 25
    assert summary["coverage"] == {"top_n": 20, "profiled": result.coverage["profiled"]}
    assert summary["classification"]["rule"] == "sol"
    assert set(summary["overall_means"]) == MEAN_KEYS and set(summary["class_means"][LATENCY]) == MEAN_KEYS
    with open(data / "ncu_metrics.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 25 and {r["class"] for r in rows} == {LATENCY}
    sm = statistics.mean(float(r["sm_throughput_pct"]) for r in rows)
    assert summary["overall_means"]["sm_throughput_pct"] == pytest.approx(sm, rel=1e-12)
    with open(data / "top_kernels.csv", newline="") as fh:
        top = list(csv.DictReader(fh))
    decode_top = [r for r in top if r["stage"] == "decode"]
    assert [int(r["rank"]) for r in decode_top] == list(range(1, len(decode_top) + 1))
    nsys = result.top_kernels["decode"]
    assert [int(r["total_ns"]) for r in decode_top] == [int(v) for v in nsys["total_ns"]]  # exact ns
    entries = yaml.safe_load((data / "kernels.yaml").read_text())
    assert {e["friendly_name"] for e in entries} >= set(result.ncu_metrics["friendly_name"])


def test_settings_rule_margin_and_peaks(decode_inputs):
    margin = analyze_version("v1", decode_inputs, AnalysisSettings(rule="sm_dram_margin", margin=0.5))
    diffs = margin.ncu_metrics["sm_throughput_pct"] - margin.ncu_metrics["dram_throughput_pct"]
    assert margin.classification["counts"]["compute-bound"] == int((diffs > 0.5).sum())
    assert margin.classification["params"] == {"margin": 0.5}
    peaks = analyze_version("v1", decode_inputs, AnalysisSettings(peaks={"peak_dram_gbps": 4800,
                                                                         "peak_tflops": {"bf16_tensor": 989}}))
    roofs = peaks.roofline["roofs"]
    assert roofs["peak_dram_bytes_per_s"] == 4.8e12 and roofs["ceilings"]["tensor"] == 989e12
    assert roofs["source"]["tensor"] == "settings" and roofs["source"]["fp32"] == "ncu"


def test_prefill_and_decode_files_stay_stage_true():
    """Decode launches (raw CSV) and prefill launches (report) of the same kernels: one row per
    kernel and stage, each averaged over its own stage's launches only."""
    both = analyze_version("v1", h200_inputs("small_vlm_decode_ncu_raw.csv.xz", "small_vlm_prefill.ncu-rep.xz"),
                           AnalysisSettings())
    frame = both.ncu_metrics
    assert not frame.duplicated(["name", "stage"]).any() and set(frame["stage"]) == {"prefill", "decode"}
    assert frame["launches"].sum() == 40 + 30
    assert frame.groupby("stage")["launches"].sum().to_dict() == {"decode": 40, "prefill": 30}
    shared = frame[frame.duplicated("name", keep=False)]
    assert len(shared) >= 2 and len(frame) == 25 + 20  # kernels profiled in both stages: one row per stage
    decode_only = analyze_version("v1", h200_inputs("small_vlm_decode_ncu_raw.csv.xz"), AnalysisSettings()).ncu_metrics
    for name in shared["name"].unique():  # decode rows are exactly the decode-only version's rows
        a = frame[(frame["name"] == name) & (frame["stage"] == "decode")].iloc[0]
        b = decode_only[decode_only["name"] == name].iloc[0]
        assert a["duration_ns"] == b["duration_ns"] and a["sm_throughput_pct"] == b["sm_throughput_pct"]
    # the top-kernels tables attach only this stage's measurements
    for stage in ("prefill", "decode"):
        for _, row in both.top_kernels[stage].iterrows():
            assert all(p["stage"] == stage for p in row["profiled"])
