"""Profiled kernels and what bounds each one, by a selectable, documented rule.

A *profiled kernel* is one distinct kernel: the nsys kernel its ncu launches joined to, else the ncu
name. Its profiled launches (from every stage and ncu file) are aggregated by the **mean** of every
canonical metric (percentages, durations, bytes, FLOP — means over the launches that carry a value;
nothing is summed), with ``launches`` the number of launches averaged and ``max_duration_ns`` the
longest one.

Rules (``rule=``), each applied to a kernel's means:

``roofline`` (default), checks in this order:
  1. SM or memory throughput missing → ``unknown``.
  2. SM throughput < 60 % **and** memory throughput < 60 % of peak → ``latency-bound`` (ncu's
     SpeedOfLight rule: neither unit is busy, so neither roof bounds it). Exactly 60 % is not < 60.
  3. No FLOP count, no DRAM bytes (missing or zero) → ``unknown``.
  4. Zero FLOP → nothing for the FLOP roofline to place: bound by the busier unit, ``memory-bound``
     when memory % ≥ SM %, else ``compute-bound`` (SM busy with integer, conversion or special-
     function work that FLOP counters do not count).
  5. Arithmetic intensity (all FLOP / DRAM byte) ≥ ridge of the datapath with most FLOP
     (tensor-core FLOP against the dense tensor peak; ridge = peak FLOP/s / peak DRAM bytes/s)
     → ``compute-bound``; below → ``memory-bound``; ridge unknown (no peak) → ``unknown``.
``sol`` — ncu's SpeedOfLight rule on SM % and memory %:
  max ≥ 80 → the higher one's class (``compute-bound`` / ``memory-bound``; equal → ``balanced``);
  else both < 60 → ``latency-bound``; else |SM − memory| ≥ 10 points → the higher one's class;
  else ``balanced``.
``sm_dram_margin`` — SM % − DRAM % > margin → ``compute-bound``; < −margin → ``memory-bound``;
  else (including exactly ±margin) ``balanced``.

``latency-bound`` kernels get the qualifier ``small grid`` when waves per SM < 1 (the grid does
not fill the GPU once).
"""
from __future__ import annotations

import math
from typing import Any

import pandas as pd

from generator.analyses.roofline import Peaks, as_float, kernel_intensity
from generator.metric_table import CANONICAL_METRIC_NAMES, DISPLAY

RULES = ("roofline", "sol", "sm_dram_margin")
COMPUTE, MEMORY, LATENCY, BALANCED, UNKNOWN = (
    "compute-bound", "memory-bound", "latency-bound", "balanced", "unknown")
#: the classes each rule can give, in display order
RULE_CLASSES: dict[str, tuple[str, ...]] = {
    "roofline": (COMPUTE, MEMORY, LATENCY, UNKNOWN),
    "sol": (COMPUTE, MEMORY, LATENCY, BALANCED, UNKNOWN),
    "sm_dram_margin": (COMPUTE, MEMORY, BALANCED, UNKNOWN),
}
SMALL_GRID = "small grid"

LATENCY_MAX_PCT = 60.0  # both SM and memory below this → latency-bound
SOL_HIGH_PCT = 80.0  # max(SM, memory) at or above this → bound by the higher one
SOL_APART_PCT = 10.0  # SM and memory at least this many points apart → bound by the higher one
SMALL_GRID_WAVES = 1.0  # waves per SM below this → "small grid"
DEFAULT_MARGIN = 5.0

#: DisplayMetric keys of the class and overall means (summary.json, classification page), in page order
MEAN_METRICS: tuple[str, ...] = ("sm_throughput_pct", "dram_throughput_pct", "memory_throughput_pct",
                                 "achieved_occupancy_pct", "l1_hit_rate_pct", "l2_hit_rate_pct", "duration_us")

#: per-launch columns carried as the first value seen (identity / nsys join results)
_FIRST_COLUMNS = ("short_name", "stage", "grid", "block", "summary_stage", "stage_time_pct", "total_ns", "count")


def profiled_kernels(metrics: pd.DataFrame, names: dict[str, Any] | None = None) -> pd.DataFrame:
    """One row per distinct kernel: mean of each canonical metric over its launches.

    ``name`` is the nsys name the launches joined to (``summary_name``, see join.attach_stage_time)
    when there is one, else the ncu name; ``ncu_name`` the ncu name of the first launch. Adds
    ``launches``, ``max_duration_ns``, and from ``names`` (name → KernelName) ``friendly_name``,
    ``library`` and ``category`` (the raw name / None when not named). Per-launch identity and join
    columns (stage, stage_time_pct, …) are the first launch's. Rows are in first-launch order.
    """
    names = names or {}
    if metrics.empty:
        return pd.DataFrame(columns=["name", "friendly_name", "library", "category", "ncu_name", "launches",
                                     "max_duration_ns", *CANONICAL_METRIC_NAMES])
    ordered = metrics.sort_values("launch_id", kind="stable") if "launch_id" in metrics else metrics
    missing = [c for c in CANONICAL_METRIC_NAMES if c not in ordered]
    ordered = ordered.reindex(columns=[*ordered.columns, *missing])
    key = ordered["summary_name"].fillna(ordered["name"]) if "summary_name" in ordered else ordered["name"]
    key = key.rename("name")
    numeric = ordered[CANONICAL_METRIC_NAMES].apply(pd.to_numeric, errors="coerce")
    by_kernel = numeric.groupby(key, sort=False)
    out = by_kernel.mean()
    out.insert(0, "ncu_name", ordered["name"].groupby(key, sort=False).first())
    out.insert(1, "launches", by_kernel.size())
    out.insert(2, "max_duration_ns", by_kernel["duration_ns"].max())
    groups = ordered.groupby(key, sort=False)
    for col in _FIRST_COLUMNS:
        if col in ordered:
            out[col] = groups[col].first()
    out = out.reset_index()
    kn = [names.get(n) for n in out["name"]]
    out.insert(1, "friendly_name", [getattr(k, "friendly_name", None) or n for k, n in zip(kn, out["name"])])
    out.insert(2, "library", [getattr(k, "source_lib", None) for k in kn])
    out.insert(3, "category", [getattr(k, "category", None) for k in kn])
    return out


def classify_roofline(row: dict[str, Any], peaks: Peaks) -> str:
    """The ``roofline`` rule for one kernel (see the module docstring for the order of checks)."""
    sm, mem = as_float(row.get("sm_throughput_pct")), as_float(row.get("memory_throughput_pct"))
    if math.isnan(sm) or math.isnan(mem):
        return UNKNOWN
    if sm < LATENCY_MAX_PCT and mem < LATENCY_MAX_PCT:
        return LATENCY
    point = kernel_intensity(row, peaks)
    ai = point["arithmetic_intensity"]
    if math.isnan(ai):
        return UNKNOWN
    if ai == 0:
        return MEMORY if mem >= sm else COMPUTE
    if point["ridge"] is None:
        return UNKNOWN
    return COMPUTE if ai >= point["ridge"] else MEMORY


def classify_sol(row: dict[str, Any]) -> str:
    """ncu's SpeedOfLight rule on SM % and memory %."""
    sm, mem = as_float(row.get("sm_throughput_pct")), as_float(row.get("memory_throughput_pct"))
    if math.isnan(sm) or math.isnan(mem):
        return UNKNOWN
    higher = COMPUTE if sm > mem else MEMORY if mem > sm else BALANCED
    if max(sm, mem) >= SOL_HIGH_PCT:
        return higher
    if sm < LATENCY_MAX_PCT and mem < LATENCY_MAX_PCT:
        return LATENCY
    return higher if abs(sm - mem) >= SOL_APART_PCT else BALANCED


def classify_margin(row: dict[str, Any], margin: float = DEFAULT_MARGIN) -> str:
    """SM % − DRAM % against ± margin (strict: exactly ± margin is balanced)."""
    sm, dram = as_float(row.get("sm_throughput_pct")), as_float(row.get("dram_throughput_pct"))
    if math.isnan(sm) or math.isnan(dram):
        return UNKNOWN
    diff = sm - dram
    return COMPUTE if diff > margin else MEMORY if diff < -margin else BALANCED


def classify(kernels: pd.DataFrame, rule: str = "roofline", *, margin: float = DEFAULT_MARGIN,
             peaks: Peaks | None = None) -> pd.DataFrame:
    """A copy of ``kernels`` with ``class`` and ``qualifier`` (``small grid`` or None) columns."""
    if rule not in RULES:
        raise ValueError(f"unknown classification rule {rule!r} (one of {', '.join(RULES)})")
    peaks = peaks or Peaks()
    out = kernels.copy()
    classes, qualifiers = [], []
    for row in out.to_dict("records"):
        if rule == "roofline":
            cls = classify_roofline(row, peaks)
        elif rule == "sol":
            cls = classify_sol(row)
        else:
            cls = classify_margin(row, margin)
        classes.append(cls)
        qualifiers.append(SMALL_GRID if cls == LATENCY and as_float(row.get("waves_per_sm")) < SMALL_GRID_WAVES
                          else None)
    out["class"] = classes
    out["qualifier"] = qualifiers
    return out


def _means(frame: pd.DataFrame) -> dict[str, float | None]:
    """Mean of each MEAN_METRICS key over the kernels that have a value; None when none has."""
    means: dict[str, float | None] = {}
    for key in MEAN_METRICS:
        values = DISPLAY[key].values(frame).dropna()
        means[key] = float(values.mean()) * DISPLAY[key].scale if len(values) else None
    return means


def class_stats(classified: pd.DataFrame, rule: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """``{"rule", "params", "counts", "percent", "class_means", "overall_means"}``.

    Every class the rule can give is listed (count 0 included); ``percent`` is of all profiled
    kernels; class means are over that class's kernels, overall means over all profiled kernels.
    """
    total = len(classified)
    counts = {c: int((classified["class"] == c).sum()) if total else 0 for c in RULE_CLASSES[rule]}
    return {
        "rule": rule,
        "params": params or {},
        "counts": counts,
        "percent": {c: (100.0 * n / total if total else None) for c, n in counts.items()},
        "class_means": {c: _means(classified[classified["class"] == c]) for c, n in counts.items() if n},
        "overall_means": _means(classified),
    }


def method_params(rule: str, margin: float, peaks: Peaks) -> dict[str, Any]:
    """The thresholds (and, for ``roofline``, the peaks and ridges) the method text quotes."""
    if rule == "sm_dram_margin":
        return {"margin": margin}
    if rule == "sol":
        return {"high_pct": SOL_HIGH_PCT, "latency_pct": LATENCY_MAX_PCT, "apart_pct": SOL_APART_PCT,
                "small_grid_waves": SMALL_GRID_WAVES}
    return {
        "latency_pct": LATENCY_MAX_PCT,
        "small_grid_waves": SMALL_GRID_WAVES,
        "peak_dram_gbps": peaks.dram_bytes_per_s / 1e9 if peaks.dram_bytes_per_s else None,
        "peak_tflops": {dp: v / 1e12 for dp, v in sorted(peaks.flop_per_s.items())},
        "ridges": {dp: peaks.ridge(dp) for dp in sorted(peaks.flop_per_s)},
        "peak_source": dict(sorted(peaks.source.items())),
    }
