"""Elementwise, copy/cast, concatenation and reduction kernels inside the measured stages:
what a fusion (producer/consumer) engine would absorb, with the kernels named; the saving is theirs
down to their physical floors (context.floor_bound), not their whole time."""
from __future__ import annotations

from generator.analyses.findings.context import (
    MIN_KERNEL_STAGE_PCT,
    FindingInputs,
    floor_bound,
    make,
    ms,
    share,
)
from generator.analyses.result import Finding

FUSABLE = {"elementwise": frozenset({"elementwise"}), "copy_cast": frozenset({"copy", "cat"}),
           "reduction": frozenset({"reduce", "norm"})}
FUSION_SHARE_PCT = 15.0  # fusable kernels at/above this share of a stage → a fusion finding
NAMED_KERNELS = 5  # the largest this many are named


def fusion(inputs: FindingInputs) -> list[Finding]:
    """Per measured stage with ≥ FUSION_SHARE_PCT of fusable kernel time: the share of each group."""
    found = []
    every = frozenset().union(*FUSABLE.values())
    for stage in inputs.measured_stages():
        rows = inputs.rows(stage)
        stage_ns = inputs.stage_ns(stage)
        hit = rows[rows["category"].isin(every)]
        if 100.0 * hit["total_ns"].sum() / stage_ns < FUSION_SHARE_PCT:
            continue
        evidence: dict[str, tuple] = {"share_pct": (share(float(hit["total_ns"].sum()), stage_ns), "%"),
                                      "kernels": (len(hit), "kernels"),
                                      "launches": (int(hit["count"].sum()), "launches")}
        for group, categories in FUSABLE.items():
            part = hit[hit["category"].isin(categories)]
            evidence[f"{group}_pct"] = (share(float(part["total_ns"].sum()), stage_ns), "%")
        named = hit[100.0 * hit["total_ns"] / stage_ns >= MIN_KERNEL_STAGE_PCT].head(NAMED_KERNELS)
        bound = floor_bound(hit, stage_ns, inputs.total_ns, inputs)
        evidence["saving_ms"] = (ms(bound.saving_ns), "ms")
        found.append(make("fusion", stage, evidence, named, bound, "medium"))
    return found
