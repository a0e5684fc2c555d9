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
#: the terms a launch's floor comes from (floors; "unknown": no shapes and no ncu record of its own)
FLOOR_BASES = ("useful_flop", "ideal_bytes", "dram_bytes", "shortest_kernel", "unknown")
#: what kernel time above the floor is made of: launches whose floor is the shortest kernel
#: (launch-bound small kernels), under the bandwidth floor, under the tensor floor, collectives
#: (multi-rank captures; 0 on one rank) and launches without a floor of their own
GAP_CAUSES = ("launch_bound", "memory", "compute", "communication", "unprofiled")
_CAUSE = {"shortest_kernel": "launch_bound", "ideal_bytes": "memory", "dram_bytes": "memory",
          "useful_flop": "compute", "unknown": "unprofiled"}
#: one row per measured stage; ns, and shares in percent (idle/kernel of the span, limiters of kernel time)
STAGE_DECOMPOSITION_COLUMNS = [
    "stage",
    "span_ns",  # first kernel start to last kernel end, summed over the stage's range instances
    "idle_ns",  # gaps inside the span with no kernel running (host launch gaps in an eager loop)
    "idle_pct",  # idle_ns / span_ns × 100
    "kernel_ns",  # summed kernel durations
    *(f"{limiter}_ns" for limiter in LIMITERS),
    *(f"{limiter}_pct" for limiter in LIMITERS),  # of kernel_ns
    "floor_ns",  # Σ of every launch's floor (launch_floors, the lower end of a range): ≤ kernel_ns
    "floor_hi_ns",  # the upper end where some floors are ranges (shapes unknown)
    *(f"floor_{basis}_pct" for basis in FLOOR_BASES),  # of floor_ns, by the term that set each floor
    "gap_ns",  # kernel_ns − floor_ns, split into the GAP_CAUSES below (they add up to it)
    *(f"gap_{cause}_ns" for cause in GAP_CAUSES),
]
COMM_CATEGORY = "comm"
COMM_NAME = "nccl"  # a kernel whose name holds it is a collective (its gap is communication)


def _limiter(cls: object, category: object) -> str:
    if category == COMM_CATEGORY:
        return "communication"
    return next((lim for lim, classes in LIMITERS.items() if cls in classes), "unclassified")


def floor_split(groups: pd.DataFrame, kernel_ns: float) -> dict[str, float]:
    """The floor columns of one stage from its launch groups (launch_floors.LAUNCH_FLOOR_COLUMNS):
    the floor (never above ``kernel_ns``), its shares by basis, and the gap by cause, adding up (kernel
    time no launch group counts is unprofiled)."""
    floor = min(float(groups["floor_ns"].sum()), kernel_ns) if len(groups) else 0.0
    by_basis = groups.groupby("basis")["floor_ns"].sum() if len(groups) else pd.Series(dtype=float)
    gap = dict.fromkeys(GAP_CAUSES, 0.0)
    for g in groups.to_dict("records"):
        cause = _CAUSE.get(g["basis"], "unprofiled")
        if g["name"] and COMM_NAME in str(g["name"]).lower():
            cause = "communication"
        gap[cause] += max(float(g["measured_ns"]) - float(g["floor_ns"]), 0.0)
    gap["unprofiled"] += kernel_ns - floor - sum(gap.values())  # launches the groups miss
    gap = {cause: round(ns, 3) + 0.0 for cause, ns in gap.items()}  # no float dust (−0.0 → 0.0)
    return {"floor_ns": floor, "floor_hi_ns": min(float(groups["floor_hi_ns"].sum()), kernel_ns) if len(groups) else 0.0,
            **{f"floor_{b}_pct": float(by_basis.get(b, 0.0)) * 100.0 / floor if floor else float("nan")
               for b in FLOOR_BASES},
            "gap_ns": kernel_ns - floor, **{f"gap_{c}_ns": ns for c, ns in gap.items()}}


def stage_decomposition(stage_time: pd.DataFrame, ncu_metrics: pd.DataFrame, launch_floors: pd.DataFrame,
                        stages: list[str]) -> pd.DataFrame:
    """STAGE_DECOMPOSITION_COLUMNS for the measured stages ("all" only when it is the only one): span
    and idle from the timeline (NaN without one), kernel time from the kernel summary, split by the
    class of each (stage, kernel) ncu profiled, by its time in that stage; the stage's floor (Σ of its
    launches' floors) and the gap to it by cause (:func:`floor_split`)."""
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
            **floor_split(launch_floors[launch_floors["stage"] == stage] if len(launch_floors) else launch_floors,
                          kernel_ns),
        })
    return pd.DataFrame(rows, columns=STAGE_DECOMPOSITION_COLUMNS)


ANALYSES = [Analysis("stage_decomposition", stage_decomposition, publish=True)]
