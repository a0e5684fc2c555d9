"""Where the GPU time goes: the split across stages with top-N coverage, and stages that a few
kernels dominate."""
from __future__ import annotations

from generator.analyses.findings.context import (
    FindingInputs,
    floor_bound,
    make,
    ms,
    share,
    us,
)
from generator.analyses.result import Bound, Finding
from generator.model import ALL_STAGES

FEW_KERNELS = 2  # this many kernels …
FEW_KERNELS_SHARE_PCT = 50.0  # … holding at least this share of a stage: the stage is dominated


def stage_split(inputs: FindingInputs) -> list[Finding]:
    """GPU time per measured stage, the largest one's share, and how much of each stage the top-N
    kernels and the ncu-profiled kernels cover."""
    stages = inputs.stages
    total = inputs.total_ns
    if not stages or not total:
        # one stage, the whole capture, when its kernel times are there (--stages all, a report.yaml naming none)
        evidence = {"stages": (len(stages), ""), "whole": (bool(total), "")}
        if total:
            evidence["total_ms"] = (ms(total), "ms")
        return [make("stage_split_abstain", ALL_STAGES, evidence, abstained=True)]
    evidence: dict[str, tuple] = {"total_ms": (ms(total), "ms")}
    for stage in stages:
        rows = inputs.rows(stage)
        stage_ns = inputs.stage_ns(stage)
        top = float(rows.head(inputs.top_n)["total_ns"].sum())
        profiled = inputs.profiled(stage)
        evidence[f"{stage}.ms"] = (ms(stage_ns), "ms")
        evidence[f"{stage}.pct"] = (share(stage_ns, total), "%")
        evidence[f"{stage}.top_pct"] = (share(top, stage_ns), "%")
        evidence[f"{stage}.profiled_pct"] = (share(float(profiled["total_ns"].sum()) if len(profiled) else 0.0,
                                                   stage_ns), "%")
    largest = max(stages, key=inputs.stage_ns)
    evidence["largest"] = (largest, "")
    evidence["top_n"] = (inputs.top_n, "kernels")
    bound = Bound(inputs.stage_ns(largest), inputs.stage_ns(largest), total, 0.0)
    return [make("stage_split", ALL_STAGES, evidence, bound=bound, confidence="high")]


def few_kernels(inputs: FindingInputs) -> list[Finding]:
    """Per measured stage: its FEW_KERNELS largest kernels hold ≥ FEW_KERNELS_SHARE_PCT of its time."""
    found = []
    for stage in inputs.measured_stages():
        rows = inputs.rows(stage)
        stage_ns = inputs.stage_ns(stage)
        top = rows.head(FEW_KERNELS)
        if len(rows) <= FEW_KERNELS or 100.0 * top["total_ns"].sum() / stage_ns < FEW_KERNELS_SHARE_PCT:
            continue
        evidence: dict[str, tuple] = {"stage_ms": (ms(stage_ns), "ms"), "kernels_in_stage": (len(rows), "kernels"),
                                      "share_pct": (share(float(top["total_ns"].sum()), stage_ns), "%")}
        profiled = inputs.profiled(stage)
        measured = profiled[profiled["name"].isin(top["name"])]
        for i, (_, row) in enumerate(top.iterrows(), 1):
            evidence[f"k{i}.us"] = (us(row["total_ns"]), "µs")
            evidence[f"k{i}.pct"] = (share(row["total_ns"], stage_ns), "%")
            evidence[f"k{i}.launches"] = (int(row["count"]), "launches")
        bound = floor_bound(top, stage_ns, inputs.total_ns, inputs)
        evidence["saving_us"] = (us(bound.saving_ns), "µs")
        confidence = "high" if len(measured) == len(top) else "medium"
        found.append(make("few_kernels", stage, evidence, top, bound, confidence))
    return found


