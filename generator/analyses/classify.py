"""Profiled kernels, what bounds each one by a selectable, documented rule, and how often that
agrees with Nsight Compute's own verdict.

A *profiled kernel* is one distinct kernel **in one stage**: the nsys kernel its ncu launches joined
to (else the ncu name) and the stage the launches were profiled in (``stage``; ALL_STAGES when the
launch carries no stage the summary knows). Metrics are stage-true: a launch profiled in prefill
never feeds decode's row. Its launches are aggregated by the **mean** of every canonical metric
(means over the launches that carry a value; nothing is summed), with ``launches`` the number of
launches averaged and ``max_duration_ns`` the longest one.

Rules (``rule=``), each applied to a kernel's means:

``sol`` (default) — Nsight Compute's Speed-of-Light bottleneck rule (``SOLBottleneck``) on SM
  throughput (the busiest SM pipe/unit) and memory throughput (the busiest memory unit: DRAM, L2,
  L1/shared), checked in this order:
  1. SM or memory throughput missing → ``unknown``.
  2. max(SM, memory) ≥ 80 % → the higher one's class (``compute-bound`` / ``memory-bound``; equal →
     ``balanced``).
  3. SM < 60 % **and** memory < 60 % → ``latency-bound`` (neither unit is busy).
  4. |SM − memory| ≥ 10 points → the higher one's class; else ``balanced``.
``roofline`` — placement under the FLOP roofline: 1–3 as ``sol`` checks 1 and 3; then no FLOP
  count or no DRAM bytes → ``unknown``; zero FLOP → the busier unit's class; else arithmetic
  intensity (all FLOP / DRAM byte) ≥ ridge of the datapath with most FLOP → ``compute-bound``, below
  → ``memory-bound``; ridge unknown → ``unknown``.
``sm_dram_margin`` — SM % − DRAM % > margin → ``compute-bound``; < −margin → ``memory-bound``;
  else (including exactly ±margin) ``balanced``.

Every kernel carries its evidence: ``busiest_unit`` (SM, DRAM, L2 or L1 — the unit ncu would send
you to), its roofline position (``arithmetic_intensity``, ``roof_pct``) and ``ncu_class``, the
verdict ncu's own rule left on its launches. ``latency-bound`` kernels get the qualifier
``small grid`` when waves per SM < 1 (ncu's "Small Grid": the grid does not fill the GPU once).
"""
from __future__ import annotations

import math
import re
from typing import Any

import pandas as pd

from generator.analyses.naming import KernelName
from generator.analyses.registry import Analysis
from generator.analyses.roofline import Peaks, as_float, kernel_intensity, roof_position
from generator.analyses.settings import DEFAULT_MARGIN, DEFAULT_RULE, AnalysisSettings
from generator.metric_table import CANONICAL_METRIC_NAMES, DISPLAY, NCU_BOTTLENECK_COLUMN
from generator.model import ALL_STAGES

RULES = ("sol", "roofline", "sm_dram_margin")
COMPUTE, MEMORY, LATENCY, BALANCED, UNKNOWN = (
    "compute-bound", "memory-bound", "latency-bound", "balanced", "unknown")
#: the classes each rule can give, in display order
RULE_CLASSES: dict[str, tuple[str, ...]] = {
    "sol": (COMPUTE, MEMORY, LATENCY, BALANCED, UNKNOWN),
    "roofline": (COMPUTE, MEMORY, LATENCY, UNKNOWN),
    "sm_dram_margin": (COMPUTE, MEMORY, BALANCED, UNKNOWN),
}
SMALL_GRID = "small grid"

LATENCY_MAX_PCT = 60.0  # both SM and memory below this → latency-bound
SOL_HIGH_PCT = 80.0  # max(SM, memory) at or above this → bound by the higher one
SOL_APART_PCT = 10.0  # SM and memory at least this many points apart → bound by the higher one
SMALL_GRID_WAVES = 1.0  # waves per SM below this → "small grid"

#: DisplayMetric keys of the class and overall means (summary.json, classification page), in page order
MEAN_METRICS: tuple[str, ...] = ("sm_throughput_pct", "dram_throughput_pct", "memory_throughput_pct",
                                 "achieved_occupancy_pct", "l1_hit_rate_pct", "l2_hit_rate_pct", "duration_us")

#: per-launch columns carried as the first value seen (identity / nsys join results)
_FIRST_COLUMNS = ("short_name", "grid", "block", "stage_time_pct", "total_ns", "count")
#: the units ncu's bottleneck rule names (SM: a compute pipe; L1: L1/TEX and shared memory)
SM_UNIT, DRAM_UNIT, L2_UNIT, L1_UNIT = "SM", "DRAM", "L2", "L1"
#: a memory unit within this many points of memory throughput is the busiest one (ncu's memory
#: throughput is the maximum over its memory units, so the unit that sets it is named by it)
UNIT_MATCH_PCT = 0.05
#: ncu's SOLBottleneck messages (report and details CSV wording, ncu 2022.3–2025.3) → class, unit
_NCU_VERDICTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"too small to fill the available resources"), LATENCY),
    (re.compile(r"low compute throughput and memory bandwidth"), LATENCY),
    (re.compile(r"Compute and Memory are well-balanced"), BALANCED),
    (re.compile(r"Compute is more heavily utilized than Memory"), COMPUTE),
    (re.compile(r"Memory is more heavily utilized than Compute"), MEMORY),
    (re.compile(r"greater than [\d.]+% of the available compute or memory"), "high"),
)
_NCU_UNIT = re.compile(r"identify the (\w+) bottleneck|Start by analyzing (\w+)")


def ncu_verdict(message: object) -> tuple[str | None, str | None]:
    """(class, unit) that ncu's SOLBottleneck message states; (None, None) for no or unknown text.

    "High Throughput" (≥ 80 %) names the unit to start with: "workloads" (compute) → compute-bound,
    a memory unit → memory-bound. Latency verdicts name no unit."""
    if not isinstance(message, str):
        return None, None
    for pattern, verdict in _NCU_VERDICTS:
        if pattern.search(message):
            found = _NCU_UNIT.search(message)
            unit = (found[1] or found[2]) if found else None
            if verdict == "high":
                verdict = COMPUTE if unit in (None, "workloads") else MEMORY
            return verdict, {COMPUTE: SM_UNIT, MEMORY: unit}.get(verdict)
    return None, None


def busiest_unit(row: dict[str, Any]) -> str | None:
    """SM when SM throughput ≥ memory throughput; else the memory unit that sets memory throughput:
    DRAM when its % equals it (within UNIT_MATCH_PCT), else the busier of L2 and L1; None if unknown."""
    sm, mem = as_float(row.get("sm_throughput_pct")), as_float(row.get("memory_throughput_pct"))
    if math.isnan(sm) or math.isnan(mem):
        return None
    if sm >= mem:
        return SM_UNIT
    if abs(as_float(row.get("dram_throughput_pct")) - mem) <= UNIT_MATCH_PCT:
        return DRAM_UNIT
    caches = {unit: as_float(row.get(column)) for unit, column in
              ((L2_UNIT, "l2_throughput_pct"), (L1_UNIT, "l1_throughput_pct"))}
    caches = {unit: value for unit, value in caches.items() if not math.isnan(value)}
    return max(caches, key=lambda unit: caches[unit]) if caches else None


def _most_common(values: pd.Series) -> str | None:
    values = values.dropna()
    return values.value_counts(sort=True).index[0] if len(values) else None


def profiled_kernels(metrics: pd.DataFrame, names: dict[str, Any] | None = None) -> pd.DataFrame:
    """One row per distinct kernel and stage: mean of each canonical metric over its launches.

    ``name`` is the nsys name the launches joined to (``summary_name``, see join.attach_stage_time)
    when there is one, else the ncu name; ``stage`` the stage they were profiled in (the join's
    ``summary_stage``, else the launch's own stage, else ALL_STAGES); ``ncu_name`` the ncu name of
    the first launch. Adds ``launches``, ``max_duration_ns``, ``ncu_class`` (the verdict ncu's rule
    gave most of its launches, None where no launch has one), and from ``names`` (name → KernelName)
    ``friendly_name``, ``library`` and ``category`` (the raw name / None when not named). Other
    per-launch identity and join columns are the first launch's. Rows are in first-launch order.
    """
    names = names or {}
    if metrics.empty:
        return pd.DataFrame(columns=["name", "stage", "friendly_name", "library", "category", "ncu_name", "launches",
                                     "max_duration_ns", "ncu_class", *CANONICAL_METRIC_NAMES])
    ordered = metrics.sort_values("launch_id", kind="stable") if "launch_id" in metrics else metrics
    missing = [c for c in CANONICAL_METRIC_NAMES if c not in ordered]
    ordered = ordered.reindex(columns=[*ordered.columns, *missing])
    name = ordered["summary_name"].fillna(ordered["name"]) if "summary_name" in ordered else ordered["name"]
    stage = ordered["summary_stage"] if "summary_stage" in ordered else ordered.get("stage")
    stage = (stage if stage is not None else pd.Series(None, index=ordered.index, dtype=object)).fillna(ALL_STAGES)
    keys = [name.rename("name"), stage.rename("stage")]
    numeric = ordered[CANONICAL_METRIC_NAMES].apply(pd.to_numeric, errors="coerce")
    by_kernel = numeric.groupby(keys, sort=False)
    out = by_kernel.mean()
    out.insert(0, "ncu_name", ordered["name"].groupby(keys, sort=False).first())
    out.insert(1, "launches", by_kernel.size())
    out.insert(2, "max_duration_ns", by_kernel["duration_ns"].max())
    verdicts = ordered.get(NCU_BOTTLENECK_COLUMN, pd.Series(None, index=ordered.index, dtype=object))
    verdict_class = pd.Series([ncu_verdict(m)[0] for m in verdicts], index=ordered.index, dtype=object)
    out.insert(3, "ncu_class", verdict_class.groupby(keys, sort=False).agg(_most_common))
    groups = ordered.groupby(keys, sort=False)
    for col in _FIRST_COLUMNS:
        if col in ordered:
            out[col] = groups[col].first()
    out = out.reset_index()
    kn = [names.get(n) for n in out["name"]]
    out.insert(2, "friendly_name", [getattr(k, "friendly_name", None) or n for k, n in zip(kn, out["name"])])
    out.insert(3, "library", [getattr(k, "source_lib", None) for k in kn])
    out.insert(4, "category", [getattr(k, "category", None) for k in kn])
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


def classify_row(row: dict[str, Any], rule: str, margin: float = DEFAULT_MARGIN,
                 peaks: Peaks | None = None) -> str:
    """The class ``rule`` gives one kernel (or one launch) row."""
    if rule == "roofline":
        return classify_roofline(row, peaks or Peaks())
    if rule == "sol":
        return classify_sol(row)
    return classify_margin(row, margin)


def classify(kernels: pd.DataFrame, rule: str = DEFAULT_RULE, *, margin: float = DEFAULT_MARGIN,
             peaks: Peaks | None = None) -> pd.DataFrame:
    """A copy of ``kernels`` with ``class``, ``qualifier`` (``small grid`` or None) and the evidence:
    ``busiest_unit``, ``arithmetic_intensity``, ``roof_pct`` (see roofline.roof_position)."""
    if rule not in RULES:
        raise ValueError(f"unknown classification rule {rule!r} (one of {', '.join(RULES)})")
    peaks = peaks or Peaks()
    out = kernels.copy()
    classes, qualifiers, units, intensity, roof = [], [], [], [], []
    for row in out.to_dict("records"):
        cls = classify_row(row, rule, margin, peaks)
        classes.append(cls)
        qualifiers.append(SMALL_GRID if cls == LATENCY and as_float(row.get("waves_per_sm")) < SMALL_GRID_WAVES
                          else None)
        units.append(busiest_unit(row))
        position = roof_position(row, peaks)
        intensity.append(position["arithmetic_intensity"])
        roof.append(position["roof_pct"])
    out["class"] = classes
    out["qualifier"] = qualifiers
    out["busiest_unit"] = units
    out["arithmetic_intensity"] = pd.Series(intensity, index=out.index, dtype="float64")
    out["roof_pct"] = pd.Series(roof, index=out.index, dtype="float64")
    return out


AGREEMENT_COLUMNS = ["launch_id", "name", "stage", "class", "ncu_class", "busiest_unit", "ncu_unit",
                     "sm_throughput_pct", "memory_throughput_pct"]


def ncu_agreement(launches: pd.DataFrame, rule: str, *, margin: float = DEFAULT_MARGIN,
                  peaks: Peaks | None = None) -> dict[str, Any]:
    """How often ``rule``, applied to each profiled launch's own metrics, gives the class ncu's
    SOLBottleneck rule stated for that launch.

    ``{"rule", "compared", "agree", "pct", "units_compared", "units_agree", "disagreements"}``:
    ``compared`` counts launches with an ncu verdict; ``units_*`` compare ``busiest_unit`` with the
    unit ncu names for launches both call compute- or memory-bound; ``disagreements`` lists each
    launch where the classes differ (AGREEMENT_COLUMNS; ``name`` the joined nsys name, else ncu's).
    """
    rows = []
    messages = launches.get(NCU_BOTTLENECK_COLUMN, pd.Series(None, index=launches.index, dtype=object))
    for row, message in zip(launches.to_dict("records"), messages):
        theirs, their_unit = ncu_verdict(message)
        if theirs is None:
            continue
        summary = row.get("summary_name")
        rows.append({
            "launch_id": row.get("launch_id"),
            "name": summary if isinstance(summary, str) else row.get("name"),
            "stage": row.get("summary_stage") or row.get("stage"),
            "class": classify_row(row, rule, margin, peaks),
            "ncu_class": theirs,
            "busiest_unit": busiest_unit(row),
            "ncu_unit": their_unit,
            "sm_throughput_pct": row.get("sm_throughput_pct"),
            "memory_throughput_pct": row.get("memory_throughput_pct"),
        })
    table = pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)
    agree = table["class"] == table["ncu_class"]
    bound = agree & table["ncu_class"].isin([COMPUTE, MEMORY])
    return {
        "rule": rule,
        "compared": len(table),
        "agree": int(agree.sum()),
        "pct": float(agree.mean() * 100.0) if len(table) else None,
        "units_compared": int(bound.sum()),
        "units_agree": int((bound & (table["busiest_unit"] == table["ncu_unit"])).sum()),
        "disagreements": table[~agree].reset_index(drop=True),
    }


def _means(frame: pd.DataFrame, weighted: bool = False) -> dict[str, float | None]:
    """Mean of each MEAN_METRICS key over the kernels that have a value; None when none has.
    ``weighted``: each kernel counts for its nsys time in its stage (``total_ns``; None without any)."""
    means: dict[str, float | None] = {}
    weights = (pd.to_numeric(frame["total_ns"], errors="coerce") if "total_ns" in frame
               else pd.Series(float("nan"), index=frame.index))
    for key in MEAN_METRICS:
        values = DISPLAY[key].values(frame).dropna()
        if weighted:
            w = weights.reindex(values.index).fillna(0.0)
            means[key] = float((values * w).sum() / w.sum()) * DISPLAY[key].scale if w.sum() > 0 else None
        else:
            means[key] = float(values.mean()) * DISPLAY[key].scale if len(values) else None
    return means


def class_stats(classified: pd.DataFrame, rule: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """``{"rule", "params", "counts", "percent", "time_ns", "time_percent", "class_means", "overall_means",
    "class_time_means", "overall_time_means"}``.

    Every class the rule can give is listed (count 0 included); ``percent`` is of all profiled
    kernels, ``time_ns`` their time in their stage (nsys) and ``time_percent`` its share of all profiled
    time; class means are over that class's kernels, overall means over all profiled kernels; the
    ``*_time_means`` weigh each kernel by its time (what the pages show).
    """
    total = len(classified)
    counts = {c: int((classified["class"] == c).sum()) if total else 0 for c in RULE_CLASSES[rule]}
    times = classified["total_ns"] if "total_ns" in classified else pd.Series(float("nan"), index=classified.index)
    time_ns = {c: float(times[classified["class"] == c].sum()) if total else 0.0 for c in counts}
    all_ns = sum(time_ns.values())
    return {
        "rule": rule,
        "params": params or {},
        "counts": counts,
        "percent": {c: (100.0 * n / total if total else None) for c, n in counts.items()},
        "time_ns": time_ns,
        "time_percent": {c: (100.0 * ns / all_ns if all_ns else None) for c, ns in time_ns.items()},
        "class_means": {c: _means(classified[classified["class"] == c]) for c, n in counts.items() if n},
        "overall_means": _means(classified),
        "class_time_means": {c: _means(classified[classified["class"] == c], weighted=True)
                             for c, n in counts.items() if n},
        "overall_time_means": _means(classified, weighted=True),
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


def version_kernels(metrics: pd.DataFrame, names: dict[str, KernelName], settings: AnalysisSettings,
                    peaks: Peaks) -> pd.DataFrame:
    """The version's profiled kernels, classified by the configured rule."""
    return classify(profiled_kernels(metrics, names), settings.rule, margin=settings.margin, peaks=peaks)


def version_agreement(metrics: pd.DataFrame, names: dict[str, KernelName], settings: AnalysisSettings,
                      peaks: Peaks) -> dict[str, Any]:
    """:func:`ncu_agreement` per launch; its disagreements table gains ``friendly_name``."""
    agreement = ncu_agreement(metrics, settings.rule, margin=settings.margin, peaks=peaks)
    agreement["disagreements"]["friendly_name"] = [
        names[n].friendly_name if n in names else n for n in agreement["disagreements"]["name"]]
    return agreement


def version_classification(ncu_metrics: pd.DataFrame, settings: AnalysisSettings, peaks: Peaks) -> dict[str, Any]:
    """:func:`class_stats` of the classified kernels, with the rule's parameters."""
    return class_stats(ncu_metrics, settings.rule, method_params(settings.rule, settings.margin, peaks))


ANALYSES = [Analysis("ncu_metrics", version_kernels), Analysis("ncu_agreement", version_agreement),
            Analysis("classification", version_classification)]
