"""Every finding rule fires and stays silent on real captures; texts render in EN and ZH.

Where no fixture crosses a rule's threshold on one side, the test moves the named threshold
constant to the real value (monkeypatch) or replaces one real number, and says so.
"""
from __future__ import annotations

from pathlib import Path

import jinja2
import pandas as pd
import pytest

from generator.analyses import findings as F
from generator.analyses.classify import classify, profiled_kernels
from generator.analyses.naming import name_kernels
from generator.analyses.result import Finding
from generator.analyses.roofline import device_peaks
from generator.model import ALL_STAGES
from generator.pipeline.inputs import InputCache, load_manifest, manifest_stages
from generator.readers import read
from generator.render.findings import render_finding, render_method

DATA = Path(__file__).parent / "data"
H200 = DATA / "h200-small"
NSYS = H200 / "small_vlm.nsys.sqlite.xz"
EXAMPLES = Path(__file__).parent.parent / "examples" / "runs"


def _summary(path: Path, stages: tuple[str, ...] = ()) -> pd.DataFrame:
    frames = [read(path).kernel_summary] + [read(path, stage=s).kernel_summary for s in stages]
    return pd.concat(frames, ignore_index=True)


def _share(summary: pd.DataFrame, names: dict, stage: str, categories: frozenset[str]) -> float:
    """Category share of a stage from total_ns (not the time_pct column the rules sum)."""
    rows = summary[summary["stage"] == stage]
    hit = rows[[names[n].category in categories for n in rows["name"]]]
    return 100.0 * hit["total_ns"].sum() / rows["total_ns"].sum()


@pytest.fixture(scope="module")
def h200():
    summary = _summary(NSYS, ("decode",))
    return summary, name_kernels(summary["name"])


@pytest.fixture(scope="module")
def decode():
    metrics = read(H200 / "small_vlm_decode_ncu_raw.csv.xz").kernel_metrics
    names = name_kernels(metrics["name"])
    peaks = device_peaks(metrics, [], {})
    return classify(profiled_kernels(metrics, names), "roofline", peaks=peaks), peaks


@pytest.fixture(scope="module")
def nvtx_sample():
    """NVIDIA's manual_nvtx sample (RTX 3070): 3 long, high-occupancy, memory-saturating kernels."""
    metrics = read(DATA / "nsight-training" / "manual_nvtx.ncu-rep").kernel_metrics
    return classify(profiled_kernels(metrics), "sol")


def _hta(name: str) -> tuple[pd.DataFrame, dict]:
    summary = read(DATA / "hta" / name).kernel_summary
    return summary, name_kernels(summary["name"])


def test_gemv_decode_fires_on_h200_decode(h200):
    summary, names = h200
    got = F.gemv_decode(summary, names)
    assert [f.id for f in got] == ["gemv_decode", "gemv_decode_hw"]
    expected = _share(summary, names, "decode", F.GEMM_CATEGORIES)
    assert expected > F.MATVEC_DECODE_SHARE_PCT
    assert got[0].evidence["share_pct"] == pytest.approx(expected, abs=0.05)
    assert got[0].evidence["gemv_share_pct"] == 0.0  # cuBLAS runs them as nvjet GEMMs on Hopper
    assert got[0].kernels[0] == names[summary[summary["stage"] == "decode"]["name"].iloc[0]].friendly_name


def test_gemv_decode_silent_without_decode_stage_or_below_threshold(h200, monkeypatch):
    summary, names = h200
    assert F.gemv_decode(summary[summary["stage"] == "all"], names) == []
    share = _share(summary, names, "decode", F.GEMM_CATEGORIES)
    monkeypatch.setattr(F, "MATVEC_DECODE_SHARE_PCT", share + 0.01)
    assert F.gemv_decode(summary, names) == []


def test_elementwise_fires_on_h200_not_on_distributed_training(h200):
    summary, names = h200
    got = F.elementwise_fusion(summary, names)
    assert [f.id for f in got] == ["elementwise_fusion", "elementwise_fusion_hw"]
    assert got[0].evidence["share_pct"] == pytest.approx(_share(summary, names, "all", F.ELEMENTWISE_CATEGORIES),
                                                         abs=0.05)
    hta, hta_names = _hta("negative_queue_length_rank0.json.gz")  # NCCL-heavy training step
    assert _share(hta, hta_names, "all", F.ELEMENTWISE_CATEGORIES) < F.ELEMENTWISE_SHARE_PCT
    assert F.elementwise_fusion(hta, hta_names) == []


def test_copy_cast_fires_on_h200_not_on_vision_training(h200):
    summary, names = h200
    got = F.copy_cast(summary, names)
    assert [f.id for f in got] == ["copy_cast_precision"]
    assert got[0].evidence["share_pct"] == pytest.approx(_share(summary, names, "all", F.COPY_CATEGORIES), abs=0.05)
    hta, hta_names = _hta("ns_resolution_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz")
    assert F.copy_cast(hta, hta_names) == []


def test_attention_silent_when_all_flash(h200):
    summary, names = h200
    attention = [n for n in summary["name"] if names[n].category == "attention"]
    assert attention and all("flash" in n for n in attention)  # cuDNN flash SDPA only
    assert F.attention_mix(summary, names) == []


def _run_summary(name: str) -> tuple[pd.DataFrame, dict]:
    """A committed capture run's kernel summaries for "all" and each manifest stage."""
    run = EXAMPLES / name
    with InputCache() as cache:
        summary = cache.stage_summaries(run / "nsys" / "report.sqlite.xz",
                                        (ALL_STAGES, *manifest_stages(run, load_manifest(run))))
    return summary, name_kernels(summary["name"])


def test_attention_fires_on_eager_not_on_sdpa():
    # the same OCR-VLM workload captured with eager attention and with SDPA (examples/runs)
    eager, eager_names = _run_summary("ocr-vlm-eager")
    got = F.attention_mix(eager, eager_names)
    assert [f.id for f in got] == ["attention_flash"]
    softmax = _share(eager, eager_names, "all", F.SOFTMAX_CATEGORIES)
    assert softmax >= F.ATTENTION_NON_FLASH_SHARE_PCT
    assert got[0].evidence["softmax_share_pct"] == pytest.approx(softmax, abs=0.05)
    assert got[0].evidence["flash_share_pct"] == 0.0
    sdpa, sdpa_names = _run_summary("ocr-vlm-sdpa")
    assert _share(sdpa, sdpa_names, "all", F.ATTENTION_CATEGORIES) > 0  # cuDNN flash kernels
    assert _share(sdpa, sdpa_names, "all", F.SOFTMAX_CATEGORIES) < F.ATTENTION_NON_FLASH_SHARE_PCT
    assert F.attention_mix(sdpa, sdpa_names) == []


def test_launch_overhead_fires_on_decode_not_on_long_kernels(decode, nvtx_sample):
    kernels, _ = decode
    got = F.launch_overhead(kernels)
    assert [f.id for f in got] == ["launch_overhead"]
    ev = got[0].evidence
    assert ev["kernels"] == 25 and ev["short_kernels"] == int((kernels["duration_ns"] < 10_000).sum()) == 25
    assert ev["mean_occupancy_pct"] == pytest.approx(kernels["achieved_occupancy_pct"].mean(), abs=0.05)
    assert nvtx_sample["achieved_occupancy_pct"].mean() > F.LOW_OCCUPANCY_PCT
    assert F.launch_overhead(nvtx_sample) == []


def test_latency_and_memory_majorities(decode, nvtx_sample):
    kernels, _ = decode
    assert [f.id for f in F.latency_bound_majority(kernels)] == ["latency_bound_majority"]
    assert F.latency_bound_majority(kernels)[0].evidence["small_grid"] == 24
    assert F.memory_bound_majority(kernels) == []
    # manual_nvtx under the SOL rule: memory throughput 88–95 % → all three memory-bound
    assert list(nvtx_sample["class"]) == ["memory-bound"] * 3
    got = F.memory_bound_majority(nvtx_sample)
    assert [f.id for f in got] == ["memory_bound_majority"] and got[0].evidence["share_pct"] == 100.0
    assert F.latency_bound_majority(nvtx_sample) == []


def test_l2_sizing_edge_on_decode_mean(decode, monkeypatch):
    kernels, _ = decode
    mean = kernels["l2_hit_rate_pct"].mean()
    assert mean >= F.L2_HIT_LOW_PCT and F.l2_sizing(kernels) == []
    monkeypatch.setattr(F, "L2_HIT_LOW_PCT", mean)  # exactly the mean: not below → silent
    assert F.l2_sizing(kernels) == []
    monkeypatch.setattr(F, "L2_HIT_LOW_PCT", mean + 0.01)
    got = F.l2_sizing(kernels)
    assert [f.id for f in got] == ["l2_sizing"]
    assert got[0].evidence["mean_l1_hit_pct"] == pytest.approx(kernels["l1_hit_rate_pct"].mean(), abs=0.05)


def test_tensor_underused_on_a_decode_gemm_made_compute_bound(decode):
    kernels, peaks = decode
    assert F.tensor_underused(kernels, peaks) == []  # no compute-bound GEMM in decode
    # replace one number: the largest tensor-FLOP nvjet kernel's SM throughput → 85 %, SOL rule
    idx = kernels["flop_tensor"].idxmax()
    edited = kernels.copy()
    edited.loc[idx, "sm_throughput_pct"] = 85.0
    edited = classify(edited, "sol")
    got = F.tensor_underused(edited, peaks)
    assert [f.id for f in got] == ["tensor_underused"]
    k = kernels.loc[idx]
    util = k["flop_tensor"] / (k["duration_ns"] * 1e-9) / peaks.flop_per_s["tensor"] * 100
    assert got[0].evidence["max_util_pct"] == pytest.approx(util, abs=0.05)
    assert got[0].kernels == (k["friendly_name"],)


def test_find_and_render_every_fired_finding(h200, decode):
    summary, names = h200
    kernels, peaks = decode
    found = F.find(kernels, summary, names, peaks)
    assert [f.id for f in found] == ["gemv_decode", "gemv_decode_hw", "elementwise_fusion",
                                     "elementwise_fusion_hw", "copy_cast_precision", "launch_overhead",
                                     "latency_bound_majority"]
    for finding in found:
        en, zh = render_finding(finding, "en"), render_finding(finding, "zh")
        assert en and zh and en != zh
        share = finding.evidence.get("share_pct")
        if share is not None:
            assert f"{share:.1f}" in en and f"{share:.1f}" in zh
    with pytest.raises(jinja2.UndefinedError):
        render_finding(Finding("gemv_decode", "recommendation", {"share_pct": 40.0}), "en")


@pytest.mark.parametrize("rule, params", [
    ("roofline", {"latency_pct": 60.0, "small_grid_waves": 1.0, "peak_dram_gbps": 4800.0,
                  "peak_tflops": {"tensor": 989.0}, "ridges": {"tensor": 206.0},
                  "peak_source": {"dram": "settings", "tensor": "settings"}}),
    ("sol", {"high_pct": 80.0, "latency_pct": 60.0, "apart_pct": 10.0, "small_grid_waves": 1.0}),
    ("sm_dram_margin", {"margin": 5.0}),
])
def test_method_texts_quote_thresholds(rule, params):
    for lang in ("en", "zh"):
        text = render_method(rule, params, lang)
        assert ("60" in text) if rule != "sm_dram_margin" else ("5" in text)
        if rule == "roofline":
            assert "4800 GB/s" in text and "206.0" in text


def test_tensor_underused_silent_on_a_real_4096_gemm(monkeypatch):
    # the committed H200 capture of one bf16 4096³ GEMM: compute-bound, near the dense tensor peak
    metrics = read(DATA / "gemm" / "ncu" / "report.ncu-rep.xz").kernel_metrics
    names = name_kernels(metrics["name"])
    peaks = device_peaks(metrics, [], {})
    kernels = classify(profiled_kernels(metrics, names), "roofline", peaks=peaks)
    k = kernels.iloc[0]
    assert k["class"] == "compute-bound" and k["category"] == "gemm"
    util = k["flop_tensor"] / (k["duration_ns"] * 1e-9) / peaks.flop_per_s["tensor"] * 100
    assert util > F.TENSOR_UTIL_LOW_PCT
    assert F.tensor_underused(kernels, peaks) == []
    monkeypatch.setattr(F, "TENSOR_UTIL_LOW_PCT", util)  # not below its own utilisation → silent
    assert F.tensor_underused(kernels, peaks) == []
    monkeypatch.setattr(F, "TENSOR_UTIL_LOW_PCT", util + 0.01)
    got = F.tensor_underused(kernels, peaks)
    assert [f.id for f in got] == ["tensor_underused"]
    assert got[0].evidence["mean_util_pct"] == pytest.approx(util, abs=0.05)
