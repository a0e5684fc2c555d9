"""ncu figures of two profiles side by side: the context of ``generator compare``, never its verdict.

A kernel table has one row per kernel: ``name`` and metrics in display units (WATCHABLE keys).
Kernels pair as generator.analyses.kernel_match.match_kernels says (raw name, then equal kernel
identity, then a unique agreeing identity; different template instantiations never pair). ncu
profiles one launch per kernel with the clocks as ncu left them, so its durations, throughputs,
occupancy and hit rates explain a change that nsys durations of every launch decide
(analyses.speed_change); each row says which direction of the metric is better.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from generator.analyses.kernel_match import match_kernels
from generator.metric_table import DEFAULT_METRICS, WATCHABLE

ROW_COLUMNS = ["kernel", "stage", "baseline_kernel", "matched_by", "metric", "better", "baseline", "current",
               "abs", "rel_pct"]


@dataclass
class Comparison:
    """Every (matched kernel, metric) row and the kernels only one side has."""

    metrics: list[str]
    rows: pd.DataFrame  # ROW_COLUMNS, by kernel and metric
    only_baseline: list[str]
    only_current: list[str]

    def as_dict(self) -> dict[str, Any]:
        """The JSON report (stable keys; NaN stays NaN for the writer to null)."""
        return {
            "metrics": {m: WATCHABLE[m] + " is better" for m in self.metrics},
            "matched_kernels": int(len(self.rows[["kernel", "stage"]].drop_duplicates())),
            "only_baseline": self.only_baseline,
            "only_current": self.only_current,
            "rows": self.rows.to_dict("records"),
        }


def _value(table: pd.DataFrame, name: str, metric: str) -> float:
    return float(table.at[name, metric]) if metric in table.columns else math.nan


def _by_stage(baseline: pd.DataFrame, current: pd.DataFrame) -> list[tuple[str | None, pd.DataFrame, pd.DataFrame]]:
    """(stage, baseline rows, current rows) to pair kernels in: stage by stage when both tables
    carry ``stage`` and share one (a kernel's prefill launches never pair with its decode ones);
    else one group with each kernel's stages averaged (two profiles of different stages)."""
    shared = ([s for s in dict.fromkeys(current["stage"]) if s in set(baseline["stage"])]
              if "stage" in baseline and "stage" in current else [])
    if shared:
        return [(s, baseline[baseline["stage"] == s], current[current["stage"] == s]) for s in shared]
    def merged(table: pd.DataFrame) -> pd.DataFrame:
        return table.drop(columns="stage", errors="ignore").groupby("name", sort=False).mean(numeric_only=True).reset_index()
    return [(None, merged(baseline), merged(current))]


def compare(baseline: pd.DataFrame, current: pd.DataFrame, metrics: Iterable[str] = DEFAULT_METRICS) -> Comparison:
    """Every matched kernel's metrics (tables: ``name``, optional ``stage``, WATCHABLE columns); the
    kernels only one side has are listed as "stage: name" when pairing went stage by stage."""
    metrics = list(metrics)
    unknown = [m for m in metrics if m not in WATCHABLE]
    if unknown:
        raise ValueError(f"not a watchable metric: {', '.join(unknown)} (one of {', '.join(WATCHABLE)})")
    rows, only_baseline, only_current = [], [], []
    for stage, left_rows, right_rows in _by_stage(baseline, current):
        base, cur = left_rows.set_index("name"), right_rows.set_index("name")
        pairs = match_kernels(base.index, cur.index)
        for left, right, how in pairs:
            for metric in metrics:
                before, after = _value(base, left, metric), _value(cur, right, metric)
                rel = (after - before) * 100.0 / abs(before) if before and not math.isnan(before) else math.nan
                rows.append({"kernel": right, "stage": stage, "baseline_kernel": left, "matched_by": how,
                             "metric": metric, "better": WATCHABLE[metric], "baseline": before, "current": after,
                             "abs": after - before, "rel_pct": rel})
        prefix = f"{stage}: " if stage is not None else ""
        matched_left, matched_right = {p[0] for p in pairs}, {p[1] for p in pairs}
        only_baseline += [prefix + n for n in base.index if n not in matched_left]
        only_current += [prefix + n for n in cur.index if n not in matched_right]
    if "stage" in baseline and "stage" in current and rows and rows[0]["stage"] is not None:
        kept = set(dict.fromkeys(current["stage"])) & set(baseline["stage"])
        only_baseline += [f"{s}: {n}" for s, n in zip(baseline["stage"], baseline["name"]) if s not in kept]
        only_current += [f"{s}: {n}" for s, n in zip(current["stage"], current["name"]) if s not in kept]
    table = pd.DataFrame(rows, columns=ROW_COLUMNS).sort_values(["kernel", "metric"], kind="stable")
    return Comparison(metrics, table.reset_index(drop=True), sorted(only_baseline), sorted(only_current))
