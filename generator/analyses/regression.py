"""The regression gate: match kernels of a baseline and a current profile and judge each watched metric.

A kernel table has one row per kernel: ``name`` and metrics in display units (WATCHABLE keys).
Kernels match by raw name, then by base name + canonical template arguments, then by base name
alone (:func:`generator.analyses.join.base_name`); a key that several kernels of one side share
matches nothing. A change beyond the threshold (relative, % of the baseline value) in the metric's
worse direction is a regression, in its better direction an improvement.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from generator.analyses.join import base_name
from generator.analyses.cpp_names import canonical, parse_name

LOWER, HIGHER = "lower", "higher"
#: Metric → which direction is better. Time up is worse; throughput, occupancy and cache hit
#: rates down are worse.
WATCHABLE: dict[str, str] = {
    "duration_us": LOWER,
    "sm_throughput_pct": HIGHER,
    "memory_throughput_pct": HIGHER,
    "dram_throughput_pct": HIGHER,
    "achieved_occupancy_pct": HIGHER,
    "l1_hit_rate_pct": HIGHER,
    "l2_hit_rate_pct": HIGHER,
}
DEFAULT_METRICS: tuple[str, ...] = ("duration_us", "sm_throughput_pct", "memory_throughput_pct",
                                    "achieved_occupancy_pct")
DEFAULT_THRESHOLD_PCT = 5.0
REGRESSION, IMPROVEMENT, UNCHANGED, UNKNOWN = "regression", "improvement", "unchanged", "unknown"
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

    @property
    def improvements(self) -> pd.DataFrame:
        return self.rows[self.rows["status"] == IMPROVEMENT]

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
            "counts": {s: int(statuses.get(s, 0)) for s in (REGRESSION, IMPROVEMENT, UNCHANGED, UNKNOWN)},
            "failed": self.failed(),
            "rows": self.rows.to_dict("records"),
        }


def _signature(name: str) -> str:
    parsed = parse_name(name)
    return f"{parsed.base}<{canonical(','.join(parsed.template_args))}>"


def _unique_keys(names: Iterable[str], key: Callable[[str], str]) -> dict[str, str]:
    """key → name for the keys exactly one of ``names`` has."""
    found: dict[str, list[str]] = {}
    for name in names:
        found.setdefault(key(name), []).append(name)
    return {k: v[0] for k, v in found.items() if len(v) == 1}


def match_kernels(baseline: Iterable[str], current: Iterable[str]) -> list[tuple[str, str, str]]:
    """(baseline name, current name, how) pairs: "name", then "signature", then "base name"."""
    left, right = list(dict.fromkeys(baseline)), list(dict.fromkeys(current))
    pairs = [(n, n, "name") for n in left if n in set(right)]
    for how, key in (("signature", _signature), ("base name", base_name)):
        matched_left = {p[0] for p in pairs}
        matched_right = {p[1] for p in pairs}
        a = _unique_keys((n for n in left if n not in matched_left), key)
        b = _unique_keys((n for n in right if n not in matched_right), key)
        pairs += [(a[k], b[k], how) for k in a if k in b]
    return pairs


def _status(better: str, rel_pct: float, threshold_pct: float) -> str:
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
                         "status": _status(WATCHABLE[metric], rel, threshold_pct)})
    table = pd.DataFrame(rows, columns=ROW_COLUMNS)
    if len(table):
        worse = [abs(r) if s == REGRESSION else -1.0 for r, s in zip(table["rel_pct"], table["status"])]
        table = table.assign(_order=worse).sort_values(["_order", "kernel", "metric"], ascending=[False, True, True],
                                                       kind="stable").drop(columns="_order").reset_index(drop=True)
    matched_left, matched_right = {p[0] for p in pairs}, {p[1] for p in pairs}
    return Comparison(metrics, threshold_pct, table,
                      sorted(n for n in base.index if n not in matched_left),
                      sorted(n for n in cur.index if n not in matched_right))
