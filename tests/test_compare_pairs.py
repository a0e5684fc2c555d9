"""`compare` on older committed H200 capture pairs (examples/runs; the back-to-back pairs of one
preset are in test_compare_h200_pairs):

- ocr-vlm-eager → ocr-vlm-eager-v2: one workload, same parameters, captured hours apart (v2 adds
  module ranges): no stage changes, exit 0.
- ocr-vlm-sdpa-h200 → ocr-vlm-eager-v2: SDPA → eager attention, a real change: exit 1, the stages
  and kernels that changed named with intervals; the bundled example's site says the same.
- ocr-vlm-sdpa-h200 → llm-decode-eager: different workloads: one line, no verdict, exit 0.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from generator.cli import main

RUNS = Path(__file__).parent.parent / "examples" / "runs"


def _run(tmp_path: Path, baseline: str, current: str) -> tuple[int, dict]:
    out = tmp_path / "cmp.json"
    code = main(["compare", str(RUNS / baseline), str(RUNS / current), "--json", str(out)])
    return code, json.loads(out.read_text(encoding="utf-8"))


def test_one_workload_captured_twice_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _run(tmp_path, "ocr-vlm-eager", "ocr-vlm-eager-v2")
    assert code == 0 and report["failed"] is False
    stages = {r["stage"]: r for r in report["stages"]}
    assert {s: r["kernel_verdict"] for s, r in stages.items()} == {
        "sam": "unchanged", "clip": "unchanged", "projector": "not enough launches", "prefill": "unchanged",
        "decode": "unchanged", "all": "unchanged"}
    assert all(r["span_verdict"] == "not enough instances" for r in report["stages"])  # one instance each
    like = report["like_with_like"]
    assert like["comparable"] is True
    assert [d["key"] for d in like["differences"]] == ["module_ranges", "module_depth", "module_overhead_runs"]
    # 176 kernels paired within stages; the two whose medians moved beyond their capture's own noise
    # are small MoE routing kernels (reduce +7.2 %, sort −2.1 %): shown, not the gate
    verdicts = [k["verdict"] for k in report["kernels"]]
    assert verdicts.count("slower") + verdicts.count("faster") <= 2
    out = capsys.readouterr().out
    assert "OK: no stage's kernel time got slower" in out and "differs (capture): module_ranges: False → True" in out


def test_eager_attention_instead_of_sdpa_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _run(tmp_path, "ocr-vlm-sdpa-h200", "ocr-vlm-eager-v2")
    assert code == 1 and report["failed"] is True
    assert [(d["kind"], d["key"], d["previous"], d["current"]) for d in report["like_with_like"]["differences"]][0] \
        == ("parameter", "params.attn_impl", "sdpa", "eager")
    stages = {r["stage"]: r for r in report["stages"]}
    # prefill too: +3.1 % [+2.5 %, +3.7 %] against a 2.4 % band (its attention kernels swapped as well)
    assert [s for s, r in stages.items() if r["kernel_verdict"] == "slower"] == [
        "sam", "clip", "prefill", "decode", "all"]
    for stage in ("sam", "clip", "prefill", "decode"):
        row = stages[stage]
        assert row["kernel_low_pct"] > row["kernel_noise_pct"] and row["kernel_low_pct"] < row["kernel_rel_pct"]
    # the longest profiled kernel is another kernel in each: named, no change computed between them
    longest = report["longest_kernel"]
    assert longest["same_kernel"] is False and longest["duration_us"]["rel_pct"] is None
    out = capsys.readouterr().out
    assert "FAIL: kernel time got slower in sam, clip, prefill, decode, all." in out
    assert "sam slower; most of it: Direct Copy (FP32, unrolled) (added) +2.566 ms" in out
    assert "(added)" in out.split("clip slower")[0]


def test_different_workloads_get_one_line_and_no_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _run(tmp_path, "ocr-vlm-sdpa-h200", "llm-decode-eager")
    assert code == 0 and report["failed"] is False
    assert report["like_with_like"]["comparable"] is False
    assert {r["kernel_verdict"] for r in report["stages"]} == {"not compared"}
    assert {k["verdict"] for k in report["kernels"]} <= {"not compared"}
    assert capsys.readouterr().out.splitlines() == [
        "different workloads (workload: ocr-vlm → llm-decode): no faster/slower verdict."]


def test_the_site_page_says_what_compare_says(tmp_path: Path) -> None:
    """The bundled example (examples/ocr-vlm: v1 eager-v2, v2 sdpa-h200) analysed as the build does,
    its v2 comparison page rendered: every stage row carries compare's numbers, interval and verdict."""
    from generator.analyses.version import AnalysisSettings, analyze_version
    from generator.pipeline.config import load_report, report_meta
    from generator.pipeline.inputs import InputCache, version_inputs
    from generator.render.pages import render_page

    example = RUNS.parent / "ocr-vlm" / "report.yaml"
    config = load_report(example)
    settings = AnalysisSettings(top_n=config.top_n, rule=config.classification.rule,
                                margin=config.classification.margin, peaks=config.gpu.as_settings())
    with InputCache() as cache:
        first = analyze_version("v1", version_inputs(config.versions[0], cache, example, 0), settings)
        second = analyze_version("v2", version_inputs(config.versions[1], cache, example, 1), settings, previous=first)
    page = render_page("comparison", second, report_meta(config, None, ["en", "zh"]), "en", {})
    code, report = _run(tmp_path, "ocr-vlm-eager-v2", "ocr-vlm-sdpa-h200")
    assert code == 0  # SDPA is the faster side: nothing got slower
    words = {"faster": "faster", "unchanged": "unchanged (within noise)", "not enough launches": "not enough launches"}
    for row in report["stages"]:
        label = "all stages" if row["stage"] == "all" else row["stage"]
        line = next(ln for ln in page.splitlines() if ln.startswith(f"| {label} |"))
        assert f"| {row['kernel_rel_pct']:+.2f} |" in line and f"| {words[row['kernel_verdict']]} |" in line
        if row["kernel_low_pct"] is not None:
            assert f"| [{row['kernel_low_pct']:+.1f}%, {row['kernel_high_pct']:+.1f}%] |" in line
    assert [r["kernel_verdict"] for r in report["stages"]] == [
        "faster", "faster", "not enough launches", "faster", "faster", "faster"]
    assert "params.attn\\_impl: eager → sdpa" in page  # Markdown-escaped
    longest = next(ln for ln in page.splitlines() if ln.startswith("The longest profiled kernel changed from"))
    assert longest.index("Softmax-1 (FP32)") < longest.index("cuDNN Conv Forward (BF16)")
