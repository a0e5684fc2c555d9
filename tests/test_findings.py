"""Every findings rule fires and stays silent (or abstains) on two real H200 captures
(tests/data/ocr-vlm-eager-vs-sdpa: examples/runs/ocr-vlm-eager-v2 = v1, ocr-vlm-sdpa = v2).
Expected numbers were read off the nsys summary and ncu rows by hand; the tests recompute the ones
they can from the tables directly."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from generator.analyses import findings as F
from generator.analyses.findings.context import FindingInputs
from generator.analyses.findings.precision import kernel_arch
from generator.analyses.version import AnalysisSettings, analyze_version
from generator.pipeline.config import load_report
from generator.pipeline.inputs import InputCache, version_inputs

REPORT = Path(__file__).parent / "data" / "ocr-vlm-eager-vs-sdpa" / "report.yaml"


@pytest.fixture(scope="module")
def example():
    config = load_report(REPORT)
    out = {}
    with InputCache() as cache:
        previous = None
        for i, version in enumerate(config.versions):
            inputs = version_inputs(version, cache, REPORT, i)
            previous = analyze_version(version.id, inputs, AnalysisSettings(rule="sol"), previous)
            out[version.id] = (inputs, previous)
    return out


def _inputs(example, version: str) -> FindingInputs:
    inputs, result = example[version]
    names, peaks = result.values["names"], result.values["peaks"]
    return FindingInputs(inputs.kernel_summary, result.ncu_metrics, names, peaks, inputs.gpus[0], inputs.timeline,
                         dict(inputs.manifest["params"]), 20)


def _by(findings, finding_id, stage=None):
    """The findings with this id (and stage), the ones merged into another included."""
    every = [g for f in findings for g in (f, *f.merged)]
    return [f for f in every if f.id == finding_id and (stage is None or f.stage == stage)]


def _stage_ms(inputs, stage):
    s = inputs.kernel_summary
    return round(s.loc[s["stage"] == stage, "total_ns"].sum() / 1e6, 2)


def test_stage_split_decode_dominates(example):
    inputs, result = example["v2"]
    (f,) = _by(result.findings, "stage_split")
    assert f.evidence["largest"] == "decode"
    assert f.evidence["decode.ms"] == _stage_ms(inputs, "decode") == 75.97
    assert f.evidence["total_ms"] == _stage_ms(inputs, "all") == 93.57
    assert f.evidence["decode.pct"] == 81.2
    assert f.evidence["decode.top_pct"] == 74.0  # top-20 decode kernels
    stripped = dataclasses.replace(_inputs(example, "v2"), summary=inputs.kernel_summary.iloc[0:0])
    assert [x.abstained for x in F.stage_split(stripped)] == [True]


def test_few_kernels_sam_add_and_copy(example):
    _, result = example["v2"]
    (f,) = _by(result.findings, "few_kernels", "sam")
    assert f.kernels == ("Elementwise Add (BF16)", "Direct Copy (BF16)")
    assert (f.evidence["share_pct"], f.evidence["k1.us"], f.evidence["k2.us"]) == (67.8, 3699.8, 3611.8)
    assert not _by(result.findings, "few_kernels", "decode")  # decode's two largest hold < 50 %


def test_matmul_shapes_decode_useful_work_unknown_without_shapes(example):
    """The capture recorded no operator shapes: executed FLOP per byte is quoted, rows and class are not
    (ncu's counts include tile padding)."""
    from generator.render.findings import render_finding

    _, result = example["v2"]
    (f,) = _by(result.findings, "matmul_shapes", "decode")
    assert "verdict" not in f.evidence and "min_rows" not in f.evidence and f.evidence["shapes_known"] == 0
    assert (f.evidence["min_flop_per_byte"], f.evidence["max_flop_per_byte"]) == (7.9, 63.6)
    assert f.evidence["tensor_time_pct"] == 100.0
    assert "useful work unknown" in render_finding(f, "en") and "有用功未知" in render_finding(f, "zh")
    assert f.confidence == "medium"  # its floor is ncu's bytes, not shapes
    k = result.ncu_metrics
    lm_head = k[(k["stage"] == "decode") & (k["friendly_name"] == "nvjet GEMM (128x8x64, 2x1, TNT)")].iloc[0]
    assert round(lm_head["arithmetic_intensity"], 1) == 7.9 and lm_head["flop_tensor"] > 0
    assert not _by(result.findings, "matmul_shapes", "projector")  # below 1 % of all GPU time


def test_fusion_inside_measured_stages_only(example):
    _, result = example["v2"]
    (f,) = _by(result.findings, "fusion", "sam")
    assert f.evidence["share_pct"] == 72.6
    assert "Elementwise Add (BF16)" in f.kernels
    assert "all" not in {x.stage for x in _by(result.findings, "fusion")}
    assert not _by(result.findings, "fusion", "projector")


def test_precision_fallback_conv_on_fp32_cores(example):
    _, result = example["v2"]
    (f,) = _by(result.findings, "precision_fallback")
    assert f.kernels == ("cuDNN Conv Forward (BF16)",) and f.stage == "sam"
    assert (f.evidence["duration_us"], f.evidence["flop_fp32_g"], f.evidence["flop_tensor_g"]) == (277.8, 4.83, 0.0)
    fp16 = dataclasses.replace(_inputs(example, "v2"), params={"dtype": "float32"})
    assert F.precision_fallback(fp16) == []  # an FP32 model has no fallback


def test_old_arch_sm80_on_sm90(example):
    assert kernel_arch("cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35") == 80
    assert kernel_arch("at::native::vectorized_elementwise_kernel<4>") is None
    (f,) = _by(example["v2"][1].findings, "old_arch")
    assert (f.stage, f.evidence["kernel_arch"], f.evidence["gpu_arch"]) == ("decode", "sm80", "sm90")
    assert (f.evidence["total_us"], f.evidence["sm_pct"]) == (4142.3, 0.95)
    assert not _by(example["v1"][1].findings, "old_arch")  # eager v1 runs no cuDNN attention


def test_attention_by_identity(example):
    v1, v2 = example["v1"][1].findings, example["v2"][1].findings
    assert _by(v1, "attention", "sam")[0].evidence["implementation"] == "eager"
    (eager,) = _by(v1, "attention", "decode")  # 384 attention softmaxes; the router's 352 = the top-k's launches
    assert (eager.evidence["launches"], eager.evidence["total_us"], eager.evidence["not_attention_us"]) == \
        (384, 783.8, 435.9)  # softmax_warp_forward (9): 783,835 ns; (6): 435,871 ns (nsys summary)
    assert _by(v2, "attention", "sam")[0].evidence["implementation"] == "fused"
    (decode,) = _by(v2, "attention", "decode")
    assert decode.kernels == ("cuDNN Flash Attention Forward (sm80, 16x128x256)",)
    assert decode.evidence["not_attention_us"] == 436.2  # the router softmax, not counted as attention
    assert not _by(v2, "attention", "projector")


def test_launch_overhead_measured_and_abstaining(example):
    inputs, result = example["v2"]
    (f,) = _by(result.findings, "launch_overhead", "decode")
    row = inputs.timeline[inputs.timeline["stage"] == "decode"].iloc[0]
    assert f.evidence["idle_pct"] == round(100 * row["idle_ns"] / row["span_ns"], 1) == 88.7
    assert f.evidence["median_launch_us"] == 4.9 and f.evidence["mean_kernel_us"] == 2.4
    no_timeline = dataclasses.replace(_inputs(example, "v2"), timeline=None)
    assert [x.abstained for x in F.launch_overhead(no_timeline)] == [True]


def test_efficiency_rules_fire_and_stay_silent(example):
    _, result = example["v2"]
    (occ,) = _by(result.findings, "occupancy", "decode")
    assert (occ.evidence["kernels"], occ.evidence["grid_limited"], occ.evidence["max_registers"]) == (20, 19, 168)
    (cache,) = _by(result.findings, "cache", "decode")
    assert cache.kernels == ("nvjet GEMM (128x8x64, 2x1, TNT)",) and cache.evidence["l2_hit_pct"] == 3.5
    assert _by(result.findings, "memory_bandwidth", "sam")[0].evidence["max_dram_pct"] == 35.7
    bare = dataclasses.replace(_inputs(example, "v2"), kernels=result.ncu_metrics.iloc[0:0])
    assert F.occupancy(bare) == [] and F.cache(bare) == [] and F.memory_bandwidth(bare) == []


def test_hardware_areas_each_computed_or_abstaining(example):
    _, result = example["v2"]
    hw = [f for f in result.findings if f.kind == "hardware"]
    assert len(hw) == 9
    (bw,) = _by(hw, "hw_bandwidth")
    e = bw.evidence
    assert e["needed_gbs"] == pytest.approx(e["mib_per_token"] * 2**20 * e["tok_per_s"] / 1e9, abs=0.1)
    assert {f.id for f in hw if f.abstained} == {"hw_interconnect_none", "hw_power_none"}
    (core,) = _by(hw, "hw_core_balance")  # the time outside the tensor units, summed (not "40.3 + 13.1 %")
    assert core.evidence["outside_pct"] == pytest.approx(core.evidence["cuda_pct"] + core.evidence["no_flop_pct"],
                                                          abs=0.1)
    (units,) = _by(hw, "hw_decode_units")
    assert "useful_pct" not in units.evidence and units.evidence["executed_tflops"] > 0  # no shapes


def test_at_least_ten_bounded_findings_grouped_by_stage_ordered_by_bound(example):
    for version in ("v1", "v2"):
        inputs, result = example[version]
        findings = [f for f in result.findings if f.kind == "finding" and not f.abstained]
        assert len([f for f in findings if f.bound is not None]) >= 10
        stages = [f.stage for f in findings]
        order = ["all", *dict.fromkeys(inputs.kernel_summary["stage"])]
        assert stages == sorted(stages, key=order.index)  # the whole capture first, then capture order
        for stage in set(stages):
            savings = [f.bound.saving_ns for f in findings if f.stage == stage]
            assert savings == sorted(savings, reverse=True)


@pytest.fixture(scope="module")
def llm_decode():
    """examples/llm-decode: v1 eager decode (llm-decode-eager), v2 CUDA-graph decode (llm-decode-graph)."""
    report = Path(__file__).parent.parent / "examples" / "llm-decode" / "report.yaml"
    config = load_report(report)
    with InputCache() as cache:
        return {v.id: analyze_version(v.id, version_inputs(v, cache, report, i), AnalysisSettings(rule="sol"))
                for i, v in enumerate(config.versions)}


def test_llm_decode_silences(llm_decode):
    eager, graph = llm_decode["v1"].findings, llm_decode["v2"].findings
    # the split-K reduce does FP32 adds at < 1 FLOP/byte: moving data, not a product on CUDA cores
    assert not _by(eager, "precision_fallback") and not _by(graph, "precision_fallback")
    assert _by(eager, "launch_overhead", "decode")[0].evidence["idle_pct"] == 92.1
    assert not _by(graph, "launch_overhead", "decode")  # graph replays leave the GPU idle < 30 %
    (shapes,) = _by(eager, "matmul_shapes", "decode")
    assert shapes.evidence["min_flop_per_byte"] == 0.5 and "min_rows" not in shapes.evidence


def test_abstentions_name_what_is_missing(example):
    """Without run parameters and timeline the bandwidth area abstains and says which input is missing;
    with no ncu kernels the decode-units area does; EN and ZH quote the same numbers."""
    import re

    from generator.render.findings import render_finding

    bare = dataclasses.replace(_inputs(example, "v2"), params={}, timeline=None)
    found = {f.id: f for f in F.hardware(bare)}
    assert found["hw_bandwidth_none"].evidence["tokens"] == 0
    assert found["hw_bandwidth_none"].evidence["timeline"] is False
    no_ncu = dataclasses.replace(bare, kernels=example["v2"][1].ncu_metrics.iloc[0:0])
    assert {f.id for f in F.hardware(no_ncu)} >= {"hw_decode_units_none", "hw_core_balance_none"}
    for finding in [*F.hardware(bare), *F.hardware(no_ncu), *F.launch_overhead(bare)]:
        en, zh = (sorted(re.findall(r"\d+(?:\.\d+)?", render_finding(finding, lang))) for lang in ("en", "zh"))
        assert en == zh, finding.id
