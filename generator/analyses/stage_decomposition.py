"""Where each measured stage's span goes: host gaps (no kernel running) against GPU kernel time, and
the kernel time by what limits it (memory, compute, latency, balanced, communication), weighted by
time: each profiled kernel's time in the stage counts for its class; kernels without ncu metrics are
"unclassified"; NCCL kernels are communication whatever their class."""
from __future__ import annotations

import pandas as pd

from generator.analyses.registry import Analysis
from generator.model import ALL_STAGES

#: limiter → the classification classes it gathers (communication is the kernel's category instead)
LIMITERS: dict[str, tuple[str, ...]] = {
    "memory": ("memory-bound",),
    "compute": ("compute-bound",),
    "latency": ("latency-bound",),
    "balanced": ("balanced",),
    "communication": (),
    "unclassified": ("unknown",),
}
#: one row per measured stage; ns, and shares in percent (idle/kernel of the span, limiters of kernel time)
STAGE_DECOMPOSITION_COLUMNS = [
    "stage",
    "span_ns",  # first kernel start to last kernel end, summed over the stage's range instances
    "idle_ns",  # gaps inside the span with no kernel running (host launch gaps in an eager loop)
    "idle_pct",  # idle_ns / span_ns × 100
    "kernel_ns",  # summed kernel durations
    *(f"{limiter}_ns" for limiter in LIMITERS),
    *(f"{limiter}_pct" for limiter in LIMITERS),  # of kernel_ns
]
COMM_CATEGORY = "comm"


def _limiter(cls: object, category: object) -> str:
    if category == COMM_CATEGORY:
        return "communication"
    return next((lim for lim, classes in LIMITERS.items() if cls in classes), "unclassified")


def stage_decomposition(stage_time: pd.DataFrame, ncu_metrics: pd.DataFrame, stages: list[str]) -> pd.DataFrame:
    """STAGE_DECOMPOSITION_COLUMNS for the measured stages ("all" only when it is the only one): span
    and idle from the timeline (NaN without one), kernel time from the kernel summary, split by the
    class of each (stage, kernel) ncu profiled, by its time in that stage."""
    measured = [s for s in stages if s != ALL_STAGES] or [s for s in stages if s == ALL_STAGES]
    times = stage_time.set_index("stage") if len(stage_time) else pd.DataFrame()
    rows = []
    for stage in measured:
        if stage not in times.index:
            continue
        kernel_ns = float(times.at[stage, "kernel_ns"])
        by: dict[str, float] = dict.fromkeys(LIMITERS, 0.0)
        profiled = ncu_metrics[ncu_metrics["stage"] == stage] if len(ncu_metrics) else ncu_metrics
        for r in profiled.to_dict("records"):
            ns = float(r.get("total_ns") or 0.0)
            by[_limiter(r.get("class"), r.get("category"))] += ns if ns == ns else 0.0
        by["unclassified"] += max(kernel_ns - sum(by.values()), 0.0)
        span, idle = float(times.at[stage, "span_ns"]), float(times.at[stage, "idle_ns"])
        rows.append({
            "stage": stage, "span_ns": span, "idle_ns": idle,
            "idle_pct": idle * 100.0 / span if span else float("nan"), "kernel_ns": kernel_ns,
            **{f"{lim}_ns": ns for lim, ns in by.items()},
            **{f"{lim}_pct": ns * 100.0 / kernel_ns if kernel_ns else float("nan") for lim, ns in by.items()},
        })
    return pd.DataFrame(rows, columns=STAGE_DECOMPOSITION_COLUMNS)


ANALYSES = [Analysis("stage_decomposition", stage_decomposition, publish=True)]
