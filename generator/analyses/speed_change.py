"""Did it get faster? GPU time per stage, previous version → this one, with a verdict on two
measures kept apart: kernel time (the sum of kernel durations) and span (first kernel start to last
kernel end, what the stage takes on the GPU's clock). A CUDA graph can add kernel time and still cut
the span (launch gaps go), so neither alone says "slower".

A change counts only beyond the run-to-run noise measured on two captures of one workload
(ocr-vlm-eager and ocr-vlm-eager-v2, H200, same parameters, hours apart): per stage, kernel time
moved by at most KERNEL_NOISE_PCT and span by at most SPAN_NOISE_PCT (stages of ≥ 1 ms span);
the thresholds sit above those. Kernels added and removed are paired by kernel identity
(kernel_match.match_kernels), over the measured stages together. Where the versions ran on different
GPUs (gpu_change), every row says so (``gpu_changed``): its verdicts then compare two captures whose
differences mix hardware and code, and the page qualifies them.
"""
from __future__ import annotations

import math
from typing import Any

import pandas as pd

from generator.analyses.kernel_match import match_kernels
from generator.analyses.naming import KernelName
from generator.analyses.registry import Analysis
from generator.analyses.result import VersionResult
from generator.model import ALL_STAGES, VersionInputs

#: Largest run-to-run change of a stage's kernel time / span (%), two captures of one workload.
KERNEL_NOISE_PCT = 1.03
SPAN_NOISE_PCT = 33.27
#: A relative change beyond ± these is a verdict; within, "unchanged".
KERNEL_THRESHOLD_PCT = 2.0
SPAN_THRESHOLD_PCT = 35.0
MOVERS = 10

STAGE_SPEED_COLUMNS = [
    "stage",
    "kernel_prev_ns", "kernel_ns", "kernel_abs_ns", "kernel_rel_pct", "kernel_verdict",
    "span_prev_ns", "span_ns", "span_abs_ns", "span_rel_pct", "span_verdict", "gpu_changed",
]
KERNEL_CHANGE_COLUMNS = ["status", "prev_name", "name", "friendly_name", "prev_count", "count",
                         "prev_total_ns", "total_ns", "abs_ns", "rel_pct"]


def verdict(rel_pct: float, threshold_pct: float) -> str:
    """"faster" / "slower" beyond ± ``threshold_pct``, "unchanged" within, "unknown" without a number."""
    if rel_pct is None or math.isnan(rel_pct):
        return "unknown"
    return "faster" if rel_pct <= -threshold_pct else "slower" if rel_pct >= threshold_pct else "unchanged"


def _rel(previous: float, current: float) -> float:
    return (current - previous) * 100.0 / previous if previous and not math.isnan(previous) else float("nan")


def stage_speed(previous: pd.DataFrame, current: pd.DataFrame, gpu_changed: bool = False) -> pd.DataFrame:
    """STAGE_SPEED_COLUMNS for every stage of either version's stage_time table (this version's
    order, then stages only the previous one had); a stage missing on one side is unknown there.
    ``gpu_changed``: the versions ran on different GPUs (each verdict then mixes hardware and code)."""
    prev, cur = previous.set_index("stage"), current.set_index("stage")
    stages = list(dict.fromkeys([*cur.index, *prev.index]))
    rows = []
    for stage in stages:
        row: dict[str, object] = {"stage": stage, "gpu_changed": gpu_changed}
        for measure, threshold in (("kernel", KERNEL_THRESHOLD_PCT), ("span", SPAN_THRESHOLD_PCT)):
            before = float(prev.at[stage, f"{measure}_ns"]) if stage in prev.index else float("nan")
            after = float(cur.at[stage, f"{measure}_ns"]) if stage in cur.index else float("nan")
            rel = _rel(before, after)
            row.update({f"{measure}_prev_ns": before, f"{measure}_ns": after,
                        f"{measure}_abs_ns": after - before, f"{measure}_rel_pct": rel,
                        f"{measure}_verdict": verdict(rel, threshold)})
        rows.append(row)
    return pd.DataFrame(rows, columns=STAGE_SPEED_COLUMNS)


def kernel_changes(previous: pd.DataFrame, current: pd.DataFrame, names: dict[str, KernelName]) -> pd.DataFrame:
    """KERNEL_CHANGE_COLUMNS over the measured stages together (the "all" rows of two kernel
    summaries): each kernel "added", "removed" or "paired" (by identity), paired ones by the size
    of their change, most first; added and removed by their time."""
    prev = previous[previous["stage"] == ALL_STAGES].set_index("name")
    cur = current[current["stage"] == ALL_STAGES].set_index("name")
    pairs = {p: c for p, c, _ in match_kernels(prev.index, cur.index)}
    rows = []
    for p, c in pairs.items():
        rows.append(("paired", p, c, int(prev.at[p, "count"]), int(cur.at[c, "count"]),
                     float(prev.at[p, "total_ns"]), float(cur.at[c, "total_ns"])))
    paired = set(pairs.values())
    rows += [("added", None, c, 0, int(cur.at[c, "count"]), 0.0, float(cur.at[c, "total_ns"]))
             for c in cur.index if c not in paired]
    rows += [("removed", p, None, int(prev.at[p, "count"]), 0, float(prev.at[p, "total_ns"]), 0.0)
             for p in prev.index if p not in pairs]
    frame = pd.DataFrame(rows, columns=["status", "prev_name", "name", "prev_count", "count",
                                        "prev_total_ns", "total_ns"])
    kernel = [n if isinstance(n, str) else p for n, p in zip(frame["name"], frame["prev_name"])]
    frame["friendly_name"] = [names[k].friendly_name if k in names else k for k in kernel]
    frame["abs_ns"] = frame["total_ns"] - frame["prev_total_ns"]
    frame["rel_pct"] = [_rel(a, b) if s == "paired" else float("nan")
                        for s, a, b in zip(frame["status"], frame["prev_total_ns"], frame["total_ns"])]
    order = {"removed": 1, "added": 0, "paired": 2}
    frame = frame.assign(_o=frame["status"].map(order), _m=-frame["abs_ns"].abs()).sort_values(
        ["_o", "_m", "friendly_name"], kind="stable").drop(columns=["_o", "_m"])
    return frame.reset_index(drop=True)[KERNEL_CHANGE_COLUMNS]


def version_stage_speed(previous: VersionResult | None, stage_time: pd.DataFrame,
                        gpu_change: dict[str, Any] | None) -> pd.DataFrame:
    """:func:`stage_speed` against the previous version; no rows for the first."""
    if previous is None:
        return pd.DataFrame(columns=STAGE_SPEED_COLUMNS)
    return stage_speed(previous.stage_time, stage_time, bool(gpu_change and gpu_change["changed"]))


def version_kernel_changes(previous: VersionResult | None, inputs: VersionInputs,
                           names: dict[str, KernelName]) -> pd.DataFrame:
    """:func:`kernel_changes` against the previous version; no rows for the first."""
    if previous is None:
        return pd.DataFrame(columns=KERNEL_CHANGE_COLUMNS)
    known = {**previous.values.get("names", {}), **names}
    return kernel_changes(previous.values["kernel_summary"], inputs.kernel_summary, known)


def kernel_summary_of(inputs: VersionInputs) -> pd.DataFrame:
    """The version's kernel summary, kept for the next version's comparison."""
    return inputs.kernel_summary


ANALYSES = [Analysis("kernel_summary", kernel_summary_of),
            Analysis("stage_speed", version_stage_speed, publish=True),
            Analysis("kernel_changes", version_kernel_changes, publish=True)]
