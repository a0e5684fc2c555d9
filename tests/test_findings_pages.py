"""Findings pages: every finding's evidence equals the table values it cites, and the EN and ZH
texts quote the same numbers (v2 of tests/data/ocr-vlm-eager-vs-sdpa: examples/runs/ocr-vlm-sdpa)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from generator.analyses.version import AnalysisSettings, analyze_version
from generator.pipeline.config import load_report
from generator.pipeline.inputs import InputCache, version_inputs
from generator.render.data_files import write_version_data
from generator.render.findings import render_finding

REPORT = Path(__file__).parent / "data" / "ocr-vlm-eager-vs-sdpa" / "report.yaml"
NUMBER = re.compile(r"\d+(?:\.\d+)?")


@pytest.fixture(scope="module")
def v2():
    config = load_report(REPORT)
    with InputCache() as cache:
        inputs = version_inputs(config.versions[1], cache, REPORT, 1)
    return inputs, analyze_version("v2", inputs, AnalysisSettings(rule="sol"))


def _numbers(text: str) -> list[str]:
    return sorted(NUMBER.findall(text.replace(",", "")))


def test_en_and_zh_quote_the_same_numbers(v2):
    _, result = v2
    for finding in result.findings:
        en, zh = render_finding(finding, "en"), render_finding(finding, "zh")
        assert _numbers(en) == _numbers(zh), finding.id


def test_evidence_equals_the_rows_it_cites(v2):
    inputs, result = v2
    k = result.ncu_metrics
    summary = inputs.kernel_summary
    for finding in result.findings:
        e = finding.evidence
        rows = k[(k["stage"] == finding.stage) & k["name"].isin(finding.kernel_ids)]
        if finding.id in ("old_arch", "precision_fallback"):
            row = rows.iloc[0]
            assert e["launches"] == int(row["count"])
            if "total_us" in e:
                assert e["total_us"] == round(row["total_ns"] / 1e3, 1)
                assert e["sm_pct"] == round(row["sm_throughput_pct"], 2)
            else:
                assert e["duration_us"] == round(row["duration_ns"] / 1e3, 1)
                assert e["flop_fp32_g"] == round(row["flop_fp32"] / 1e9, 2)
        if finding.id == "few_kernels":
            stage = summary[summary["stage"] == finding.stage].set_index("name")
            for i, name in enumerate(finding.kernel_ids, 1):
                assert e[f"k{i}.us"] == round(stage.loc[name, "total_ns"] / 1e3, 1)
                assert e[f"k{i}.launches"] == int(stage.loc[name, "count"])
        if finding.id == "cache":
            row = rows.iloc[0]
            assert e["l2_hit_pct"] == round(row["l2_hit_rate_pct"], 1)
            assert e["dram_mib"] == round(row["dram_bytes"] / 2**20, 2)
        if finding.id == "stage_split":
            for stage in result.stages[1:]:
                assert e[f"{stage}.ms"] == round(summary.loc[summary["stage"] == stage, "total_ns"].sum() / 1e6, 2)
        if finding.bound is not None and finding.bound.basis == "gpu_time" and finding.kernel_ids and \
                finding.id not in ("fusion", "memory_bandwidth", "occupancy", "matmul_shapes"):
            assert finding.bound.affected_ns == pytest.approx(rows["total_ns"].sum())


def test_findings_json_is_deterministic_and_complete(v2, tmp_path):
    _, result = v2
    write_version_data(result, tmp_path / "a")
    write_version_data(result, tmp_path / "b")
    a = (tmp_path / "a" / "data" / "findings.json").read_bytes()
    assert a == (tmp_path / "b" / "data" / "findings.json").read_bytes()
    records = json.loads(a)["findings"]
    assert len(records) == len(result.findings)
    bounded = [r for r in records if r["bound"] and not r["abstained"] and r["kind"] == "finding"]
    assert len(bounded) >= 10
    for record in records:
        assert set(record["claim"]) == {"en", "zh"}
        assert all(set(v) == {"value", "unit"} for v in record["evidence"].values())
