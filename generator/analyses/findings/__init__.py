"""Findings: evidence-backed, bounded claims over one version's results, one module per rule family.

Every rule is a pure function FindingInputs → list[Finding]; a Finding's words live in
generator/templates/findings/<id>.<lang>.md.j2. :func:`find` runs every rule, then makes the findings
of each stage add up: ordered by saving, a finding's kernels already claimed by a larger one of the
same stage are its shared time (Bound.shared_ns), duplicates (same kernels, same saving) are merged
into the first, and confidence is high only where the floor comes from shapes and is within 2×.
Findings are grouped by stage (capture order, the whole capture first), hardware areas last.
"""
from __future__ import annotations

import dataclasses
import json
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
from generator.analyses.findings.ranks import collective_wait
from generator.analyses.findings.stages import few_kernels, stage_split
from generator.analyses.floors import FROM_SHAPES
from generator.analyses.launch_floors import waiting_floors
from generator.analyses.registry import Analysis
from generator.analyses.result import Finding
from generator.analyses.roofline import Peaks
from generator.analyses.settings import AnalysisSettings
from generator.analyses.setup import workload_setup
from generator.analyses.useful_work import with_useful_work
from generator.model import ALL_STAGES, VersionInputs
from generator.workload_params import generated_tokens

#: Every rule family; a new one is a function here and its templates.
RULES: tuple[Callable[[FindingInputs], list[Finding]], ...] = (
    stage_split, few_kernels, matmul_shapes, fusion, precision_fallback, old_arch, attention,
    launch_overhead, memory_bandwidth, occupancy, cache, collective_wait, hardware,
)

KIND_ORDER = {"finding": 0, "hardware": 1}
EARNED_HEADROOM = 2.0  # a floor from shapes within this factor of the measured time earns "high"


def order_key(finding: Finding, stages: list[str]) -> tuple:
    """Findings before hardware areas (those in rule order), then by stage (the whole capture first,
    then capture order), then the largest saving, then the affected time."""
    if finding.kind != "finding":
        return (KIND_ORDER.get(finding.kind, 2), finding.abstained)
    bound = finding.bound
    stage = -1 if finding.stage in (None, ALL_STAGES) else (stages.index(finding.stage) if finding.stage in stages
                                                          else len(stages))
    return (KIND_ORDER.get(finding.kind, 2), finding.abstained, stage, -(bound.saving_ns if bound else 0.0),
            -(bound.affected_ns if bound else 0.0))


def earned(finding: Finding) -> str | None:
    """The finding's confidence, lowered to medium where it claims a saving of kernel time whose floor
    is not from shapes or not within EARNED_HEADROOM of the measured time (idle time and measurements
    without a saving keep theirs)."""
    bound = finding.bound
    if finding.confidence != "high" or bound is None or bound.basis != "gpu_time" or not bound.saving_ns:
        return finding.confidence
    within = bound.affected_ns <= EARNED_HEADROOM * (bound.affected_ns - bound.saving_ns)
    return "high" if bound.floor_basis in FROM_SHAPES and within else "medium"


def add_up(findings: list[Finding]) -> list[Finding]:
    """Per stage, in order: the time a finding shares with larger findings of its stage (the least
    of its and their saving on each kernel), duplicates merged into the first, confidence earned."""
    out: list[Finding] = []
    claimed: dict[tuple[str | None, str], float] = {}  # (stage, kernel) → the largest saving claimed on it
    first: dict[tuple, int] = {}  # (stage, kernels, saving) → index in out
    for finding in findings:
        bound = finding.bound
        if bound is None or finding.kind != "finding" or not bound.parts:
            out.append(dataclasses.replace(finding, confidence=earned(finding)))
            continue
        key = (finding.stage, tuple(sorted(k for k, _ in bound.parts)), round(bound.saving_ns))
        if key in first:
            kept = out[first[key]]
            out[first[key]] = dataclasses.replace(kept, merged=(*kept.merged, finding))
            continue
        shared = sum(min(saving, claimed.get((finding.stage, kernel), 0.0)) for kernel, saving in bound.parts)
        for kernel, saving in bound.parts:
            claimed[(finding.stage, kernel)] = max(saving, claimed.get((finding.stage, kernel), 0.0))
        first[key] = len(out)
        out.append(dataclasses.replace(finding, bound=dataclasses.replace(bound, shared_ns=min(shared, bound.saving_ns)),
                                       confidence=earned(finding)))
    return out


def find(inputs: FindingInputs) -> list[Finding]:
    """Every rule over one version, grouped and ordered (stable: rule order breaks ties), adding up."""
    stages = inputs.stages
    return add_up(sorted((f for rule in RULES for f in rule(inputs)), key=lambda f: order_key(f, stages)))


def fp32_calls(op_calls: pd.DataFrame | None) -> frozenset[tuple[str, str]]:
    """(stage, kernel) whose profiled launch's call (readers.op_calls.JOINED_COLUMNS) has float32 as
    every floating-point input: FP32 by the model's request, not a fallback."""
    if op_calls is None or not len(op_calls):
        return frozenset()
    found = set()
    for stage, name, dtypes in zip(op_calls["stage"], op_calls["name"], op_calls["input_dtypes"]):
        try:
            floats = [d for d in json.loads(dtypes) if "float" in str(d).lower() or "half" in str(d).lower()]
        except (TypeError, ValueError):
            continue
        if floats and all(str(d).lower() in ("float32", "float") for d in floats):
            found.add((stage, name))
    return frozenset(found)


def version_findings(ncu_metrics: pd.DataFrame, useful_work: pd.DataFrame, launch_floors: pd.DataFrame,
                     inputs: VersionInputs, names: dict[str, Any], peaks: Peaks, settings: AnalysisSettings,
                     ranks: pd.DataFrame | None = None, rank_overview: dict | None = None,
                     collective_instances: pd.DataFrame | None = None) -> list[Finding]:
    """:func:`find` over the version: its summary, classified kernels with their useful work, GPU
    timeline, API calls and run parameters (data/findings.json is written from it with the rendered
    claims, render.data_files); kernel bounds never count a collective's waiting (waiting_floors)."""
    params = dict((inputs.manifest or {}).get("params") or {})
    kernels = with_useful_work(ncu_metrics, useful_work)
    setup = workload_setup(inputs.manifest) or {}
    l2 = (setup.get("gpus") or [{}])[0].get("l2_cache_bytes")
    return find(FindingInputs(inputs.kernel_summary, kernels, names, peaks, inputs.gpus[0] if inputs.gpus else None,
                              inputs.timeline, params, settings.top_n,
                              generated_tokens(inputs.manifest),
                              l2 if isinstance(l2, int) and not isinstance(l2, bool) and l2 > 0 else None,
                              setup.get("energy"), ranks, rank_overview,
                              waiting_floors(launch_floors, collective_instances), fp32_calls(inputs.op_calls)))


ANALYSES = [Analysis("findings", version_findings)]
