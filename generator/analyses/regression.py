"""The regression gate: pair kernels of a baseline and a current profile and judge each kernel.

A kernel table has one row per kernel: ``name`` and metrics in display units (WATCHABLE keys).
Kernels pair as generator.analyses.kernel_match.match_kernels says (raw name, then equal kernel
identity, then a unique agreeing identity; different template instantiations never pair). The
kernel's duration decides: slower beyond the threshold (relative, % of the baseline) is a
regression, faster an improvement. Throughput, occupancy and hit rates are context (status
``context``): a kernel that got faster while its throughput % dropped did not regress.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from generator.analyses.kernel_match import match_kernels
from generator.metric_table import DISPLAY_METRICS, LOWER

#: DisplayMetric key → which direction is better, for every metric the registry gives one (time up
#: is worse; throughput, occupancy and cache hit rates down are worse).
WATCHABLE: dict[str, str] = {m.key: m.better for m in DISPLAY_METRICS if m.better}
DEFAULT_METRICS: tuple[str, ...] = ("duration_us", "sm_throughput_pct", "memory_throughput_pct",
                                    "achieved_occupancy_pct")
DEFAULT_THRESHOLD_PCT = 5.0
#: the one metric whose change is a verdict
VERDICT_METRIC = "duration_us"
REGRESSION, IMPROVEMENT, UNCHANGED, UNKNOWN, CONTEXT = "regression", "improvement", "unchanged", "unknown", "context"
ROW_COLUMNS = ["kernel", "baseline_kernel", "matched_by", "metric", "better", "baseline", "current",
               "abs", "rel_pct", "status"]


@dataclass
class Comparison:
    """Every (matched kernel, watched metric) row and the kernels only one side has."""

    metrics: list[str]
    threshold_pct: float
    rows: pd.DataFrame  # ROW_COLUMNS, worst regression first
    only_baseline: list[str]
    only_current: list[str]

    @property
    def regressions(self) -> pd.DataFrame:
        return self.rows[self.rows["status"] == REGRESSION]

    def failed(self) -> bool:
        return bool(len(self.regressions))

    def as_dict(self) -> dict[str, Any]:
        """The JSON report (stable keys; NaN stays NaN for the writer to null)."""
        statuses = self.rows["status"].value_counts()
        return {
            "metrics": {m: WATCHABLE[m] + " is better" for m in self.metrics},
            "threshold_pct": self.threshold_pct,
            "matched_kernels": int(self.rows["kernel"].nunique()),
            "only_baseline": self.only_baseline,
            "only_current": self.only_current,
            "counts": {s: int(statuses.get(s, 0)) for s in (REGRESSION, IMPROVEMENT, UNCHANGED, UNKNOWN, CONTEXT)},
            "failed": self.failed(),
            "rows": self.rows.to_dict("records"),
        }


def _status(metric: str, rel_pct: float, threshold_pct: float) -> str:
    if metric != VERDICT_METRIC:
        return CONTEXT
    better = WATCHABLE[metric]
    if math.isnan(rel_pct):
        return UNKNOWN
    worse = rel_pct > threshold_pct if better == LOWER else rel_pct < -threshold_pct
    gained = rel_pct < -threshold_pct if better == LOWER else rel_pct > threshold_pct
    return REGRESSION if worse else IMPROVEMENT if gained else UNCHANGED


def _value(table: pd.DataFrame, name: str, metric: str) -> float:
    return float(table.at[name, metric]) if metric in table.columns else math.nan


def compare(baseline: pd.DataFrame, current: pd.DataFrame, metrics: Iterable[str] = DEFAULT_METRICS,
            threshold_pct: float = DEFAULT_THRESHOLD_PCT) -> Comparison:
    """Judge every watched metric of every matched kernel (tables: ``name`` + WATCHABLE columns)."""
    metrics = list(metrics)
    unknown = [m for m in metrics if m not in WATCHABLE]
    if unknown:
        raise ValueError(f"not a watchable metric: {', '.join(unknown)} (one of {', '.join(WATCHABLE)})")
    base, cur = baseline.set_index("name"), current.set_index("name")
    pairs = match_kernels(base.index, cur.index)
    rows = []
    for left, right, how in pairs:
        for metric in metrics:
            before, after = _value(base, left, metric), _value(cur, right, metric)
            rel = (after - before) * 100.0 / abs(before) if before and not math.isnan(before) else math.nan
            rows.append({"kernel": right, "baseline_kernel": left, "matched_by": how, "metric": metric,
                         "better": WATCHABLE[metric], "baseline": before, "current": after,
                         "abs": after - before, "rel_pct": rel,
                         "status": _status(metric, rel, threshold_pct)})
    table = pd.DataFrame(rows, columns=ROW_COLUMNS)
    if len(table):
        worse = [abs(r) if s == REGRESSION else -1.0 for r, s in zip(table["rel_pct"], table["status"])]
        table = table.assign(_order=worse).sort_values(["_order", "kernel", "metric"], ascending=[False, True, True],
                                                       kind="stable").drop(columns="_order").reset_index(drop=True)
    matched_left, matched_right = {p[0] for p in pairs}, {p[1] for p in pairs}
    return Comparison(metrics, threshold_pct, table,
                      sorted(n for n in base.index if n not in matched_left),
                      sorted(n for n in cur.index if n not in matched_right))
