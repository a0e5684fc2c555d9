"""Every launch's floor from that launch (analyses.launch_floors) on the committed captures, and each
stage against the sum of its floors (data/stage_decomposition.csv).

- examples/runs/compiled-block-h200 (torch.compile): its two ``aten.addmm`` calls in ops/calls.csv
  (4096×16384×4096, 549.8 GFLOP each) bound the two nvjet launches at 549.8 GFLOP / 989.5 TFLOP/s
  (the H200 datasheet's dense BF16 peak, generator/chips/h200.yaml): at most 0.25 ms can be saved.
- examples/runs/llm-decode-graph-h200 (CUDA graphs): every decode launch is a graph node whose
  call is the one open when the graph was captured; the four projection GEMVs are ``aten.linear``
  calls with their own shapes.
- a capture without ops/calls.csv: an ncu record bounds only the launch it profiled (a range);
  the other launches get the shortest kernel up to their own time, never a borrowed floor.
"""
from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pandas as pd
import pytest

from generator.analyses.findings import fp32_calls
from generator.analyses.launch_floors import NCU, SHAPES, UNKNOWN
from generator.analyses.stage_decomposition import FLOOR_BASES, GAP_CAUSES
from generator.analyses.version import AnalysisSettings, analyze_version
from generator.pipeline.chips import shipped_chips
from generator.pipeline.config import load_report, report_meta
from generator.pipeline.inputs import InputCache, version_inputs
from generator.render import chart_table
from generator.render.pages import render_page
from generator.render.translations import translator

RUNS = Path(__file__).resolve().parent.parent / "examples" / "runs"
H200_BF16 = 989.5e12  # generator/chips/h200.yaml tensor_bf16_tflops (datasheet, dense)
ADDMM_FLOP = 2 * 4096 * 16384 * 4096


def _analyzed(run: Path):
    """(inputs, result) of a one-version report of ``run``, with the shipped chip files as the build has."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.yaml"
        report.write_text(f"id: one\ntitle: {{en: One, zh: One}}\nversions:\n  - {{id: a, title: {{en: A, zh: A}}, "
                          f"date: 2026-11-29, runs: [{run}]}}\n", encoding="utf-8")
        config = load_report(report)
        settings = AnalysisSettings(top_n=config.top_n, chip_basis=tuple(shipped_chips()))
        with InputCache() as cache:
            inputs = version_inputs(config.versions[0], cache, report, 0)
            return inputs, analyze_version("a", inputs, settings)


@pytest.fixture(scope="module", params=["compiled-block-h200", "llm-decode-graph-h200", "llm-decode-small"])
def analyzed(request):
    return request.param, *_analyzed(RUNS / request.param)


def test_floors_use_the_datasheet_peak_of_the_chip_file(analyzed) -> None:
    name, _, result = analyzed
    peaks = result.values["peaks"]
    if name.endswith("h200"):
        assert peaks.flop_per_s["tensor"] == H200_BF16 and peaks.dram_bytes_per_s == 4.8e12
        assert peaks.source["tensor"] == "chip" and peaks.chip == "NVIDIA H200 SXM"


def test_compiled_addmm_launches_use_their_recorded_shapes(analyzed) -> None:
    name, _, result = analyzed
    if name != "compiled-block-h200":
        pytest.skip("compiled capture only")
    groups = result.values["launch_floors"]
    nvjet = groups[groups["name"].str.startswith("nvjet")]
    assert list(nvjet["source"]) == [SHAPES, SHAPES] and list(nvjet["basis"]) == ["useful_flop"] * 2
    assert nvjet["shape"].str.startswith("addmm").all()
    assert list(nvjet["floor_ns"]) == pytest.approx([1e9 * ADDMM_FLOP / H200_BF16] * 2)  # 555.6 µs each
    (matmul,) = [f for f in result.findings if f.id == "matmul_shapes"]
    assert "verdict" in matmul.evidence  # shapes known: never "the capture recorded no operator shapes"
    # 1.362 ms measured against 2 × 555.6 µs: 0.25 ms at most (it said 1.049 ms, 4.35x, before)
    assert round(matmul.bound.saving_ns / 1e6, 2) == 0.25 and matmul.bound.saving_hi_ns is None
    assert sum(k["measured_ns"] - k["floor_ns"] for k in matmul.bound.kernels) == pytest.approx(
        matmul.bound.saving_ns, abs=2)


def test_cuda_graph_decode_launches_use_their_recorded_calls(analyzed) -> None:
    name, inputs, result = analyzed
    if name != "llm-decode-graph-h200":
        pytest.skip("CUDA-graph capture only")
    decode = inputs.launch_calls[inputs.launch_calls["stage"] == "decode"]
    assert decode["node"].notna().all() and decode["call"].notna().all() and len(decode) == 26080
    assert set(decode["iteration"]) == {"op-first"}  # the iteration the graph was captured in
    nvjet = decode[decode["name"].str.startswith("nvjet")]
    assert set(nvjet["op"]) == {"aten.linear.default"} and (nvjet["m"] == 1).all()
    groups = result.values["launch_floors"]
    assert set(groups.loc[groups["stage"] == "decode", "source"]) == {SHAPES}
    for finding in result.findings:
        if finding.id == "matmul_shapes":
            assert "verdict" in finding.evidence, finding.stage


def test_without_calls_an_ncu_record_bounds_only_its_own_launch(analyzed) -> None:
    name, inputs, result = analyzed
    if name != "llm-decode-small":
        pytest.skip("capture without ops/calls.csv only")
    assert inputs.launch_calls is None
    groups = result.values["launch_floors"]
    profiled = groups[groups["source"] == NCU]
    assert len(profiled) and (profiled["launches"] == 1).all()
    unknown = groups[groups["source"] == UNKNOWN]
    assert len(unknown) and (unknown["floor_hi_ns"] == unknown["measured_ns"]).all()
    assert (groups["floor_ns"] <= groups["floor_hi_ns"]).all()


def test_each_stage_floor_is_below_its_kernel_time_and_the_gap_adds_up(analyzed) -> None:
    _, _, result = analyzed
    frame = result.values["stage_decomposition"]
    groups = result.values["launch_floors"]
    assert len(frame)
    for row in frame.to_dict("records"):
        assert 0 < row["floor_ns"] <= row["floor_hi_ns"] <= row["kernel_ns"]
        assert row["gap_ns"] == pytest.approx(row["kernel_ns"] - row["floor_ns"])
        assert sum(row[f"gap_{c}_ns"] for c in GAP_CAUSES) == pytest.approx(row["gap_ns"])
        assert all(row[f"gap_{c}_ns"] >= -1.0 for c in GAP_CAUSES) and row["gap_communication_ns"] == 0.0
        assert sum(row[f"floor_{b}_pct"] for b in FLOOR_BASES) == pytest.approx(100.0)
        mine = groups[groups["stage"] == row["stage"]]
        assert float(mine["floor_ns"].sum()) == pytest.approx(row["floor_ns"], rel=1e-6)


def test_measured_time_of_the_groups_is_the_stage_kernel_time(analyzed) -> None:
    _, _, result = analyzed
    groups = result.values["launch_floors"]
    times = result.values["stage_decomposition"].set_index("stage")["kernel_ns"]
    measured = groups.groupby("stage")["measured_ns"].sum()
    for stage, ns in measured.items():
        assert ns == pytest.approx(times[stage], rel=1e-3), stage
    assert isinstance(groups, pd.DataFrame)


def test_fp32_by_the_models_request_is_no_fallback(analyzed) -> None:
    """A call whose floating inputs are all float32 asked for FP32 (the MoE router's aten.linear);
    the compiled block's addmm calls are bfloat16."""
    name, inputs, _ = analyzed
    if name != "compiled-block-h200":
        pytest.skip("compiled capture only")
    assert fp32_calls(inputs.op_calls) == frozenset()
    as_fp32 = inputs.op_calls.assign(input_dtypes='["float32", "float32", "float32", "float32"]')
    assert fp32_calls(as_fp32) == frozenset(zip(inputs.op_calls["stage"], inputs.op_calls["name"]))


def test_the_overview_states_each_stage_against_its_floor(analyzed) -> None:
    """One line per stage with its kernel time, floor and ratio, the peaks' source named once, the
    measured-vs-floor chart, EN and ZH; the harness's host gaps are never a numbered GPU saving."""
    name, _, result = analyzed
    meta = report_meta(load_report(_report_of(name)), None, ["en", "zh"])
    frame = result.values["stage_decomposition"]
    for lang, words in (("en", "of kernel time against a"), ("zh", "下限")):
        page = render_page("index", result, meta, lang, {})
        for row in frame.to_dict("records"):
            floor = f"{row['floor_ns'] / 1e6:,.2f} ms"
            assert any(f"**{row['stage']}**" in line and floor in line and words in line
                       for line in page.splitlines()), (name, lang, row["stage"])
        if name.endswith("h200"):
            assert page.count("NVIDIA H200 SXM") == 1, lang
        numbered = [line for line in page.splitlines() if re.match(r"\d+\. ", line)]
        assert not any("launch-overhead" in line for line in numbered), lang
    assert chart_table.entries_on("index")[0].build(result, translator("en")) is not None


def _report_of(name: str) -> Path:
    report = Path(tempfile.mkdtemp()) / "report.yaml"
    report.write_text(f"id: one\ntitle: {{en: One, zh: One}}\nversions:\n  - {{id: a, title: {{en: A, zh: A}}, "
                      f"date: 2026-11-29, runs: [{RUNS / name}]}}\n", encoding="utf-8")
    return report


@pytest.fixture(scope="module")
def ocr_vlm():
    return _analyzed(RUNS / "ocr-vlm-sdpa-h200-a")


def test_sam_attention_launches_each_have_their_own_floor(ocr_vlm) -> None:
    """SAM's cuDNN attention: 4 global launches (4096 tokens, a 12×4096×4096 bias: 402 MB ideal) and
    8 windowed ones (25 windows of 196 tokens) share one grid; each gets its own call's floor, so at
    most 0.67 ms (2.5×) can be saved, not the 0.99 ms (9.1×) of one borrowed 11 µs floor."""
    _, result = ocr_vlm
    groups = result.values["launch_floors"]
    sam = groups[(groups["stage"] == "sam") & groups["name"].str.contains("cudnn") & groups["shape"].str.contains(
        "scaled_dot_product")]
    assert sorted(sam["launches"]) == [4, 8] and set(sam["source"]) == {SHAPES}
    per_launch = (sam["floor_ns"] / sam["launches"]).round(-3).tolist()
    assert per_launch[sam["launches"].tolist().index(4)] > 5 * per_launch[sam["launches"].tolist().index(8)]
    (attention,) = [f for f in result.findings if f.id == "attention" and f.stage == "sam"]
    assert round(attention.bound.saving_ns / 1e6, 2) == 0.67 and round(attention.bound.headroom, 1) == 2.5
