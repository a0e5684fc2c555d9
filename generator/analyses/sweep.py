"""Parameter sweeps: per-configuration GPU time, launches and ncu means, deltas against a baseline
configuration, and the launch-overhead analysis (short kernels, idle gaps, break-even).

Pure functions over what the readers produced for each configuration: the nsys kernel summary and
GPU timeline of its measured stages, and its per-launch ncu metrics. A finding is emitted only when
its numbers are known; its evidence holds every number the page quotes (words: templates).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from generator.analyses.result import Finding, SweepResult
from generator.metric_table import DISPLAY
from generator.model import whole_graphs

#: A kernel (by name) whose median launch is shorter than this is "short" (ns).
SHORT_KERNEL_NS = 10_000.0
#: GPU idle between kernels at/above this share of the measured span → the config is launch-bound.
LAUNCH_BOUND_IDLE_PCT = 30.0
#: Break-even is weighed only between configs whose launch counts differ by at least this share of
#: the smaller count (a few kernels more from another GEMM choice is not a launch strategy).
BREAK_EVEN_MIN_EXTRA_PCT = 5.0
#: ncu metrics (DisplayMetric keys) averaged over a configuration's profiled launches.
NCU_MEANS: tuple[str, ...] = ("sm_throughput_pct", "memory_throughput_pct", "achieved_occupancy_pct",
                              "l1_hit_rate_pct", "l2_hit_rate_pct")
#: One row per configuration (:func:`config_row`).
CONFIG_COLUMNS: list[str] = [
    "label", "params", "stages", "baseline",
    "gpu_time_ns",  # sum of kernel time in the measured stages (nsys)
    "kernels",  # distinct kernel names
    "launches",
    *NCU_MEANS,  # mean over the profiled launches (ncu)
    "profiled_launches",
    "span_ns", "busy_ns", "idle_ns", "idle_count",  # GPU timeline (nsys timestamps)
    "idle_med_ns",  # median gap; known only for one stage on one device
    "idle_pct",  # idle share of the span
    "launches_per_ms",  # launches per ms of span
    "short_kernels", "short_launches", "short_launch_pct", "short_time_ns", "short_time_pct",
    "short_mean_ns",  # mean launch duration of the short kernels
    "launch_cost_ns",  # idle_med_ns + short_mean_ns: what one more small launch costs
]
#: Metrics the delta table compares against the baseline, in page order.
DELTA_METRICS: tuple[str, ...] = ("gpu_time_ns", "kernels", "launches", *NCU_MEANS, "span_ns", "idle_ns",
                                  "idle_pct", "launches_per_ms", "short_launch_pct")
DELTA_COLUMNS: list[str] = ["label", "metric", "baseline", "value", "abs", "rel_pct"]


@dataclass(frozen=True)
class SweepConfig:
    """What one configuration's inputs were read into."""

    label: str
    params: dict[str, Any]
    stages: tuple[str, ...]  # measured NVTX stages (model.ALL_STAGES: the whole capture)
    kernel_summary: pd.DataFrame  # model.KERNEL_SUMMARY_COLUMNS; rows of other stages are ignored
    timeline: pd.DataFrame | None  # nsys_sqlite.TIMELINE_COLUMNS of ``stages``; None without an nsys export
    kernel_metrics: pd.DataFrame  # per profiled launch: canonical ncu metrics


def _ratio(part: float, whole: float, scale: float = 100.0) -> float:
    return part * scale / whole if whole and not math.isnan(whole) and not math.isnan(part) else math.nan


def _mean(frame: pd.DataFrame, column: str) -> float:
    values = pd.to_numeric(frame[column], errors="coerce") if column in frame else pd.Series(dtype=float)
    return float(values.mean()) if values.notna().any() else math.nan


def _timeline_figures(timeline: pd.DataFrame | None) -> dict[str, float]:
    names = ("span_ns", "busy_ns", "idle_ns", "idle_count")
    if timeline is None or not len(timeline):
        return dict.fromkeys((*names, "idle_med_ns"), math.nan)
    figures = {name: float(timeline[name].sum()) for name in names}
    # a median of several stages/devices is not the median of their medians
    figures["idle_med_ns"] = float(timeline["idle_med_ns"].iloc[0]) if len(timeline) == 1 else math.nan
    return figures


def config_row(config: SweepConfig) -> dict[str, Any]:
    """CONFIG_COLUMNS of one configuration (``baseline`` False; NaN where an input is missing)."""
    rows = config.kernel_summary[config.kernel_summary["stage"].isin(config.stages)]
    gpu_time = float(rows["total_ns"].sum())
    kernels = rows[~whole_graphs(rows["name"])]  # a graph traced as a whole is GPU time, not a kernel
    launches = int(kernels["count"].sum())
    short = kernels[kernels["med_ns"] < SHORT_KERNEL_NS]
    short_launches = int(short["count"].sum())
    short_time = float(short["total_ns"].sum())
    short_mean = short_time / short_launches if short_launches else math.nan
    timeline = _timeline_figures(config.timeline)
    return {
        "label": config.label,
        "params": dict(config.params),
        "stages": list(config.stages),
        "baseline": False,
        "gpu_time_ns": gpu_time,
        "kernels": int(kernels["name"].nunique()),
        "launches": launches,
        **{key: _mean(config.kernel_metrics, DISPLAY[key].source) * DISPLAY[key].scale for key in NCU_MEANS},
        "profiled_launches": len(config.kernel_metrics),
        **timeline,
        "idle_pct": _ratio(timeline["idle_ns"], timeline["span_ns"]),
        "launches_per_ms": _ratio(launches, timeline["span_ns"], 1e6),
        "short_kernels": int(short["name"].nunique()),
        "short_launches": short_launches,
        "short_launch_pct": _ratio(short_launches, launches),
        "short_time_ns": short_time,
        "short_time_pct": _ratio(short_time, gpu_time),
        "short_mean_ns": short_mean,
        "launch_cost_ns": timeline["idle_med_ns"] + short_mean,
    }


def deltas(configs: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """DELTA_COLUMNS: every non-baseline config's DELTA_METRICS against the baseline config."""
    base = configs.set_index("label").loc[baseline]
    rows = []
    for row in configs.to_dict("records"):
        if row["label"] == baseline:
            continue
        for metric in DELTA_METRICS:
            before, after = float(base[metric]), float(row[metric])
            rows.append({"label": row["label"], "metric": metric, "baseline": before, "value": after,
                         "abs": after - before, "rel_pct": _ratio(after - before, abs(before))})
    return pd.DataFrame(rows, columns=DELTA_COLUMNS)


def launch_bound(row: dict[str, Any]) -> list[Finding]:
    """The config's GPU idles between kernels for at least LAUNCH_BOUND_IDLE_PCT of its span."""
    if math.isnan(row["idle_pct"]) or row["idle_pct"] < LAUNCH_BOUND_IDLE_PCT:
        return []
    evidence = {key: row[key] for key in ("label", "idle_pct", "idle_ns", "idle_count", "idle_med_ns", "span_ns",
                                          "launches", "launches_per_ms", "short_launch_pct", "short_time_pct")}
    return [Finding("sweep_launch_bound", "finding", {**evidence, "threshold_pct": LAUNCH_BOUND_IDLE_PCT})]


def break_even(a: dict[str, Any], b: dict[str, Any]) -> list[Finding]:
    """Two configs where one launches at least BREAK_EVEN_MIN_EXTRA_PCT more kernels but spends less
    GPU time on them: is the work it saves worth its extra launches (extra launches × the per-launch
    cost measured on it)?"""
    more, fewer = (a, b) if a["launches"] > b["launches"] else (b, a)
    extra = more["launches"] - fewer["launches"]
    saved = fewer["gpu_time_ns"] - more["gpu_time_ns"]
    cost = more["launch_cost_ns"]
    if extra <= 0 or _ratio(extra, fewer["launches"]) < BREAK_EVEN_MIN_EXTRA_PCT or saved <= 0 or not cost > 0:
        return []  # no trade-off, or no measured per-launch cost (NaN)
    overhead = extra * cost
    evidence = {
        "more": more["label"], "fewer": fewer["label"], "extra_launches": extra,
        "extra_pct": _ratio(extra, fewer["launches"]), "saved_ns": saved,
        "cost_ns": cost, "gap_ns": more["idle_med_ns"], "short_mean_ns": more["short_mean_ns"],
        "overhead_ns": overhead, "net_ns": saved - overhead, "break_even_launches": saved / cost,
        "pays_off": saved > overhead, "span_change_ns": more["span_ns"] - fewer["span_ns"],
    }
    return [Finding("sweep_break_even", "finding", evidence)]


def _one_factor(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """The two configs' params differ in exactly one parameter."""
    keys = set(a["params"]) | set(b["params"])
    return sum(a["params"].get(k) != b["params"].get(k) for k in keys) == 1


def trade_off_pairs(rows: list[dict[str, Any]], base: dict[str, Any]) -> list[tuple[dict, dict]]:
    """Config pairs weighed for break-even: those differing in one parameter (e.g. a variant at the
    same size), else each config against the baseline."""
    pairs = [(a, b) for i, a in enumerate(rows) for b in rows[i + 1:] if _one_factor(a, b)]
    return pairs or [(base, row) for row in rows if row is not base]


def analyze_sweep(configs: list[SweepConfig], baseline: str | None = None) -> SweepResult:
    """Every table and finding of a sweep; ``baseline`` is a config label (default: the first)."""
    labels = [c.label for c in configs]
    if len(set(labels)) != len(labels):
        raise ValueError(f"sweep config labels must be unique: {labels}")
    baseline = labels[0] if baseline is None else baseline
    if baseline not in labels:
        raise ValueError(f"baseline {baseline!r} is not a config of the sweep")
    rows = [config_row(c) for c in configs]
    for row in rows:
        row["baseline"] = row["label"] == baseline
    base = rows[labels.index(baseline)]
    findings = [f for row in rows for f in launch_bound(row)]
    findings += [f for a, b in trade_off_pairs(rows, base) for f in break_even(a, b)]
    table = pd.DataFrame(rows, columns=CONFIG_COLUMNS)
    return SweepResult(baseline, table, deltas(table, baseline), findings, SHORT_KERNEL_NS, LAUNCH_BOUND_IDLE_PCT,
                       BREAK_EVEN_MIN_EXTRA_PCT)
