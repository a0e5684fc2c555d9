"""Launch overhead and idle gaps per stage, from the nsys GPU timeline: idle share of the stage's
span, median gap, mean kernel, median launch call made in the stage (host launch gaps of an eager
loop are the harness's, and the text says so)."""
from __future__ import annotations

import pandas as pd

from generator.analyses.findings.context import FindingInputs, make, removal_bound, share, us
from generator.analyses.result import Finding
from generator.model import ALL_STAGES

IDLE_SHARE_PCT = 30.0  # idle time at/above this share of a stage's span → a finding
LAUNCH_BOUND_PCT = 50.0  # idle at/above this share: the GPU waits more than it works (launch-bound)


def launch_overhead(inputs: FindingInputs) -> list[Finding]:
    """Per measured stage whose GPU sits idle ≥ IDLE_SHARE_PCT of its span; abstains without a timeline."""
    timeline = inputs.timeline
    if timeline is None or not len(timeline):
        return [make("launch_overhead_abstain", ALL_STAGES, {}, abstained=True)]
    # no stage named: the whole capture is the one stage measured (as the Overview shows it)
    stages = inputs.measured_stages() or [ALL_STAGES]
    timeline = timeline[timeline["stage"].isin(stages)]
    span_total = float(timeline["span_ns"].sum())
    found = []
    for stage in stages:
        row = timeline[timeline["stage"] == stage]
        if not len(row):
            continue
        row = row.iloc[0]
        idle, span = float(row["idle_ns"]), float(row["span_ns"])
        if not span or 100.0 * idle / span < IDLE_SHARE_PCT:
            continue
        evidence = {"idle_pct": (share(idle, span), "%"), "idle_ms": (round(idle / 1e6, 2), "ms"),
                    "span_ms": (round(span / 1e6, 2), "ms"), "launches": (int(row["launches"]), "launches"),
                    "mean_kernel_us": (us(row["kernel_ns"] / row["launches"]), "µs"),
                    "median_gap_us": (us(row["idle_med_ns"]), "µs"),
                    "launch_bound": (100.0 * idle / span >= LAUNCH_BOUND_PCT, "")}
        if pd.notna(row.get("launch_call_med_ns")):
            evidence["median_launch_us"] = (us(row["launch_call_med_ns"]), "µs")
        found.append(make("launch_overhead", stage, evidence, None,
                          removal_bound(idle, span, span_total), "high"))
    return found
