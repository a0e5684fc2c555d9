"""Did it get faster? Per stage and per kernel, previous version → this one, from the nsys
durations of every launch (launch_stats says how: ratio with a 95 % bootstrap interval against a
noise band measured inside the captures).

A stage has two measures kept apart: kernel time (the sum of its launch durations) and span (first
kernel start to last kernel end per NVTX range instance, what the stage takes on the GPU's clock).
A CUDA graph can add kernel time and still cut the span, so neither alone says "slower". A stage
that ran no CUDA graph in either version is an eager loop: its span is mostly host launch gaps
(``host_dominated``), shown but never a gate. Kernels pair by kernel identity
(kernel_match.match_kernels) within each stage. Two versions of different workloads or models
(like_with_like) get no verdict ("not compared"); on different GPUs (gpu_change) every row says so
(``gpu_changed``) and the page names both GPUs.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pandas as pd

from generator.analyses import launch_stats as ls
from generator.analyses.kernel_match import match_kernels
from generator.analyses.naming import KernelName
from generator.analyses.registry import Analysis
from generator.analyses.result import VersionResult
from generator.model import ALL_STAGES, VersionInputs, whole_graphs

#: the verdict of every row when the two versions ran different workloads or models
NOT_COMPARED = "not compared"
#: a span's verdict below launch_stats.MIN_LAUNCHES range instances (one span per instance)
TOO_FEW_INSTANCES = "not enough instances"
MOVERS = 10
_MEASURE = ["prev_ns", "ns", "rel_pct", "low_pct", "high_pct", "noise_pct", "verdict"]
STAGE_SPEED_COLUMNS = ["stage", *(f"kernel_{c}" for c in _MEASURE), *(f"span_{c}" for c in _MEASURE),
                       "prev_launches", "launches", "prev_instances", "instances", "host_dominated", "gpu_changed"]
KERNEL_SPEED_COLUMNS = ["stage", "prev_name", "name", "friendly_name", "prev_launches", "launches",
                        "prev_median_ns", "median_ns", "rel_pct", "low_pct", "high_pct", "noise_pct", "verdict"]
KERNEL_CHANGE_COLUMNS = ["status", "prev_name", "name", "friendly_name", "prev_count", "count",
                         "prev_total_ns", "total_ns", "abs_ns", "rel_pct"]


def _rel(previous: float, current: float) -> float:
    return (current - previous) * 100.0 / previous if previous and not math.isnan(previous) else float("nan")


def _pct(ratio: float) -> float:
    return (ratio - 1.0) * 100.0


def _measure(prefix: str, change: ls.Change, comparable: bool) -> dict[str, Any]:
    return {f"{prefix}prev_ns": change.previous, f"{prefix}ns": change.current,
            f"{prefix}rel_pct": _pct(change.ratio), f"{prefix}low_pct": _pct(change.low),
            f"{prefix}high_pct": _pct(change.high), f"{prefix}noise_pct": change.noise * 100.0,
            f"{prefix}verdict": change.verdict if comparable else NOT_COMPARED}


def _kernels(launches: pd.DataFrame) -> dict[str, np.ndarray]:
    """kernel name → its launch durations (ns) in start order."""
    ordered = launches.sort_values(["start_ns", "name"], kind="stable")
    return {name: group["duration_ns"].to_numpy(dtype=float) for name, group in ordered.groupby("name", sort=True)}


def _aligned(previous: pd.DataFrame, current: pd.DataFrame) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Each side's launch durations per kernel (:func:`_kernels`) of every stage, aligned: the i-th
    arrays are one kernel paired by identity within a stage, an empty array where a side lacks it."""
    previous_kernels, current_kernels = [], []
    for stage in dict.fromkeys([*previous["stage"], *current["stage"]]):
        before = _kernels(previous[previous["stage"] == stage])
        after = _kernels(current[current["stage"] == stage])
        pairs = [(left, right) for left, right, _ in match_kernels(list(before), list(after))]
        lefts, rights = {left for left, _ in pairs}, {right for _, right in pairs}
        none = np.array([], dtype=float)
        rows = [(before[left], after[right]) for left, right in pairs]
        rows += [(none, durations) for name, durations in after.items() if name not in rights]
        rows += [(durations, none) for name, durations in before.items() if name not in lefts]
        previous_kernels += [row[0] for row in rows]
        current_kernels += [row[1] for row in rows]
    return previous_kernels, current_kernels


def _spans(launches: pd.DataFrame) -> np.ndarray:
    """The span of each NVTX range instance (first start to last end, ns), in start order."""
    ends = launches["start_ns"] + launches["duration_ns"]
    frame = launches.assign(end=ends).groupby("instance").agg(start=("start_ns", "min"), end=("end", "max"))
    return (frame.sort_values("start")["end"] - frame.sort_values("start")["start"]).to_numpy(dtype=float)


def _stage_launches(launches: pd.DataFrame, stage: str) -> pd.DataFrame:
    """The launches of ``stage``; for ALL_STAGES the whole capture's where an input gave it, else the
    measured stages together (a capture run's ALL_STAGES, as its kernel summary counts it)."""
    if stage != ALL_STAGES:
        return launches[launches["stage"] == stage]
    whole = launches[launches["stage"] == ALL_STAGES]
    return whole if len(whole) else launches


def tick_of(*launches: pd.DataFrame) -> float:
    """The coarsest timer step of the captures (launch_stats.timer_tick)."""
    return max(ls.timer_tick(frame["duration_ns"].to_numpy()) for frame in launches)


def _missing() -> ls.Change:
    return ls.Change(*(float("nan"),) * 6, ls.TOO_FEW)


def stage_speed(previous: pd.DataFrame, current: pd.DataFrame, graph_stages: set[str] = frozenset(),
                comparable: bool = True, gpu_changed: bool = False, same_session: bool = True) -> pd.DataFrame:
    """STAGE_SPEED_COLUMNS for every stage of either version's launches (nsys_sqlite.LAUNCH_COLUMNS;
    this version's order, then stages only the previous one had) and ALL_STAGES, the measured stages
    together; a stage missing on one side has no verdict. ``graph_stages``: stages that ran CUDA
    graphs in either version (their span is not host-dominated). Captures not of one session
    (like_with_like): kernel time's band is at least launch_stats.SESSION_NOISE."""
    floor = 0.0 if same_session else ls.SESSION_NOISE
    tick = tick_of(previous, current)
    stages = [s for s in dict.fromkeys([*current["stage"], *previous["stage"]]) if s != ALL_STAGES]
    rows = []
    for stage in [*stages, ALL_STAGES]:
        before, after = _stage_launches(previous, stage), _stage_launches(current, stage)
        kernel = ls.total_change(*_aligned(before, after), tick, floor) if len(before) and len(after) else _missing()
        span = (ls.median_change(_spans(before), _spans(after), tick)
                if len(before) and len(after) and stage != ALL_STAGES else _missing())
        if span.verdict == ls.TOO_FEW:
            span = dataclasses.replace(span, verdict=TOO_FEW_INSTANCES)
        rows.append({"stage": stage, **_measure("kernel_", kernel, comparable), **_measure("span_", span, comparable),
                     "prev_launches": len(before), "launches": len(after),
                     "prev_instances": before["instance"].nunique() if stage != ALL_STAGES else 0,
                     "instances": after["instance"].nunique() if stage != ALL_STAGES else 0,
                     "host_dominated": stage != ALL_STAGES and stage not in graph_stages, "gpu_changed": gpu_changed})
    return pd.DataFrame(rows, columns=STAGE_SPEED_COLUMNS)


def kernel_speed(previous: pd.DataFrame, current: pd.DataFrame, names: dict[str, KernelName],
                 comparable: bool = True) -> pd.DataFrame:
    """KERNEL_SPEED_COLUMNS of every kernel paired by identity within a stage of both versions'
    launches: the change of its median launch duration; slower first (largest interval bound),
    then faster, then the rest by stage and name."""
    tick = tick_of(previous, current)
    rows = []
    for stage in dict.fromkeys(current["stage"]):
        before = _kernels(previous[previous["stage"] == stage])
        after = _kernels(current[current["stage"] == stage])
        for left, right, _ in match_kernels(list(before), list(after)):
            change = ls.median_change(before[left], after[right], tick)
            rows.append({"stage": stage, "prev_name": left, "name": right,
                         "friendly_name": names[right].friendly_name if right in names else right,
                         "prev_launches": len(before[left]), "launches": len(after[right]),
                         "prev_median_ns": change.previous, "median_ns": change.current,
                         "rel_pct": _pct(change.ratio), "low_pct": _pct(change.low), "high_pct": _pct(change.high),
                         "noise_pct": change.noise * 100.0,
                         "verdict": change.verdict if comparable else NOT_COMPARED})
    frame = pd.DataFrame(rows, columns=KERNEL_SPEED_COLUMNS)
    order = {ls.SLOWER: 0, ls.FASTER: 1}
    frame = frame.assign(_o=frame["verdict"].map(order).fillna(2),
                         _m=-frame["low_pct"].where(frame["verdict"] == ls.SLOWER, -frame["high_pct"]).fillna(0))
    return frame.sort_values(["_o", "_m", "stage", "name"], kind="stable").drop(columns=["_o", "_m"]).reset_index(
        drop=True)


def stage_movers(previous: pd.DataFrame, current: pd.DataFrame, stage: str, count: int = 3) -> pd.DataFrame:
    """The ``count`` kernels of one stage whose summed launch time moved most (paired by identity,
    else added or removed): ``prev_name``, ``name`` (None where absent), ``prev_ns``, ``ns``, ``abs_ns``."""
    before = previous[previous["stage"] == stage].groupby("name")["duration_ns"].sum()
    after = current[current["stage"] == stage].groupby("name")["duration_ns"].sum()
    pairs = {p: c for p, c, _ in match_kernels(list(before.index), list(after.index))}
    rows = [(p, c, float(before[p]), float(after[c])) for p, c in pairs.items()]
    rows += [(None, c, 0.0, float(after[c])) for c in after.index if c not in set(pairs.values())]
    rows += [(p, None, float(before[p]), 0.0) for p in before.index if p not in pairs]
    frame = pd.DataFrame(rows, columns=["prev_name", "name", "prev_ns", "ns"])
    frame["abs_ns"] = frame["ns"] - frame["prev_ns"]
    order = frame["abs_ns"].abs().sort_values(ascending=False, kind="stable").index
    return frame.loc[order].head(count).reset_index(drop=True)


def kernel_changes(previous: pd.DataFrame, current: pd.DataFrame, names: dict[str, KernelName]) -> pd.DataFrame:
    """KERNEL_CHANGE_COLUMNS over the measured stages together (the "all" rows of two kernel
    summaries, without CUDA graphs traced as whole graphs: their ids name no kernels): each kernel
    "added", "removed" or "paired" (by identity), paired ones by the size of their change, most
    first; added and removed by their time."""
    prev, cur = (s[(s["stage"] == ALL_STAGES) & ~whole_graphs(s["name"])].set_index("name")
                 for s in (previous, current))
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


def stage_gate(stages: pd.DataFrame) -> dict[str, Any]:
    """What a gate concludes from STAGE_SPEED_COLUMNS rows: ``status`` "fail" when a stage's kernel
    time (the measured stages' together included) is "slower", or has too few launches for a verdict
    and grew by more than launch_stats.UNJUDGED_LIMIT; else "not judged" when the measured stages
    together have too few launches for a verdict; else "ok". ``slower``, ``over_limit`` and
    ``not_judged`` name the stages (``not_judged``: too few launches, within the limit or unknown)."""
    rows = stages.to_dict("records")
    slower = [r["stage"] for r in rows if r["kernel_verdict"] == ls.SLOWER]
    unjudged = [r for r in rows if r["kernel_verdict"] == ls.TOO_FEW]
    over = [r["stage"] for r in unjudged if r["kernel_rel_pct"] > ls.UNJUDGED_LIMIT * 100.0]
    status = "fail" if slower or over else \
        "not judged" if any(r["stage"] == ALL_STAGES for r in unjudged) else "ok"
    return {"status": status, "slower": slower, "over_limit": over,
            "not_judged": [r["stage"] for r in unjudged if r["stage"] not in over],
            "limit_pct": ls.UNJUDGED_LIMIT * 100.0}


def _graph_stages(*tables: pd.DataFrame) -> set[str]:
    """Stages that ran kernels inside CUDA graphs (stage_time tables)."""
    return {s for t in tables if len(t) for s, ns in zip(t["stage"], t["graph_kernel_ns"]) if ns and ns == ns}


def version_stage_speed(previous: VersionResult | None, launches: pd.DataFrame | None, stage_time: pd.DataFrame,
                        gpu_change: dict[str, Any] | None, like_with_like: dict[str, Any] | None) -> pd.DataFrame:
    """:func:`stage_speed` against the previous version; no rows for the first or without launches."""
    before = previous.values.get("launches") if previous is not None else None
    if before is None or launches is None:
        return pd.DataFrame(columns=STAGE_SPEED_COLUMNS)
    return stage_speed(before, launches, _graph_stages(previous.stage_time, stage_time),
                       bool(like_with_like and like_with_like["comparable"]), bool(gpu_change and gpu_change["changed"]),
                       bool(like_with_like and like_with_like["same_session"]))


def version_kernel_speed(previous: VersionResult | None, launches: pd.DataFrame | None,
                         names: dict[str, KernelName], like_with_like: dict[str, Any] | None) -> pd.DataFrame:
    """:func:`kernel_speed` against the previous version; no rows for the first or without launches."""
    before = previous.values.get("launches") if previous is not None else None
    if before is None or launches is None:
        return pd.DataFrame(columns=KERNEL_SPEED_COLUMNS)
    known = {**previous.values.get("names", {}), **names}
    return kernel_speed(before, launches, known, bool(like_with_like and like_with_like["comparable"]))


def version_timer_tick(previous: VersionResult | None, launches: pd.DataFrame | None) -> float | None:
    """The timer step the verdicts against the previous version use (:func:`tick_of`); None without them."""
    before = previous.values.get("launches") if previous is not None else None
    return None if before is None or launches is None else tick_of(before, launches)


def launches_of(inputs: VersionInputs) -> pd.DataFrame | None:
    """Every kernel launch of the version's measured stages, kept for the next version's comparison."""
    return inputs.launches


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
            Analysis("launches", launches_of),
            Analysis("timer_tick", version_timer_tick, previous=("launches",)),
            Analysis("stage_speed", version_stage_speed, publish=True,
                     previous=("launches", "stage_time")),
            Analysis("kernel_speed", version_kernel_speed, publish=True,
                     previous=("launches", "names")),
            Analysis("kernel_changes", version_kernel_changes, publish=True,
                     previous=("kernel_summary", "names"))]
