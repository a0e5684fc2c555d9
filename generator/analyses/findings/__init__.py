"""Findings: evidence-backed, bounded claims over one version's results, one module per rule family.

Every rule is a pure function FindingInputs → list[Finding]; a Finding's words live in
generator/templates/findings/<id>.<lang>.md.j2. :func:`find` runs every rule and orders the findings
by their bound on end-to-end time (largest saving first), hardware areas last.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from generator.analyses.findings.attention import attention
from generator.analyses.findings.context import FindingInputs
from generator.analyses.findings.efficiency import cache, memory_bandwidth, occupancy
from generator.analyses.findings.fusion import fusion
from generator.analyses.findings.hardware import hardware
from generator.analyses.findings.launch import launch_overhead
from generator.analyses.findings.matmul import matmul_shapes
from generator.analyses.findings.precision import old_arch, precision_fallback
from generator.analyses.findings.stages import few_kernels, stage_split
from generator.analyses.registry import Analysis
from generator.analyses.result import Finding
from generator.analyses.roofline import Peaks
from generator.analyses.settings import AnalysisSettings
from generator.model import VersionInputs

#: Every rule family; a new one is a function here and its templates.
RULES: tuple[Callable[[FindingInputs], list[Finding]], ...] = (
    stage_split, few_kernels, matmul_shapes, fusion, precision_fallback, old_arch, attention,
    launch_overhead, memory_bandwidth, occupancy, cache, hardware,
)

KIND_ORDER = {"finding": 0, "hardware": 1}


def order_key(finding: Finding) -> tuple:
    """Findings before hardware areas, then the largest end-to-end saving, then the affected time."""
    bound = finding.bound
    return (KIND_ORDER.get(finding.kind, 2), finding.abstained, -(bound.saving_ns if bound else 0.0),
            -(bound.affected_ns if bound else 0.0))


def find(inputs: FindingInputs) -> list[Finding]:
    """Every rule over one version, ordered by bound (stable: rule order breaks ties)."""
    return sorted((f for rule in RULES for f in rule(inputs)), key=order_key)


def version_findings(ncu_metrics: pd.DataFrame, inputs: VersionInputs, names: dict[str, Any], peaks: Peaks,
                     settings: AnalysisSettings) -> list[Finding]:
    """:func:`find` over the version: its summary, classified kernels, GPU timeline, API calls and
    run parameters (data/findings.json is written from it with the rendered claims, render.data_files)."""
    params = dict((inputs.manifest or {}).get("params") or {})
    return find(FindingInputs(inputs.kernel_summary, ncu_metrics, names, peaks, inputs.gpus[0] if inputs.gpus else None,
                              inputs.timeline, inputs.api_summary, params, settings.top_n))


ANALYSES = [Analysis("findings", version_findings)]
