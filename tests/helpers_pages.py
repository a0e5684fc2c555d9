"""Shared by the page/chart tests: the H200 example version analyzed as the build does it."""
from __future__ import annotations

from functools import cache
from pathlib import Path

from generator.analyses.result import VersionResult
from generator.analyses.version import AnalysisSettings, analyze_version
from generator.model import ReportMeta
from generator.pipeline.config import load_report, report_meta
from generator.pipeline.inputs import InputCache, version_inputs

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "small-vlm-h200" / "report.yaml"


@cache
def example_result() -> tuple[VersionResult, ReportMeta]:
    """v1 of the bundled example (real H200 nsys + ncu files) and its ReportMeta."""
    config = load_report(EXAMPLE)
    version = config.versions[0]
    settings = AnalysisSettings(top_n=config.top_n, rule=config.classification.rule,
                                margin=config.classification.margin, peaks=config.gpu.as_settings())
    inputs = version_inputs(version, InputCache(), EXAMPLE, 0)
    return analyze_version(version.id, inputs, settings), report_meta(config, None, ["en", "zh"])
