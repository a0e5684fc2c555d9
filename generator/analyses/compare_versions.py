"""What changed from the previous report version to this one.

Kernels are paired across versions by kernel identity (kernel_match.match_kernels: name, then equal
identity, then a unique agreeing identity), so one kernel spelled differently by two captures is one
kernel, and compared stage by stage (a profiled kernel is one kernel in one stage). "Newly
classified" is a paired kernel whose class in a stage went from unknown to known; "newly profiled" a
kernel with no partner profiled in that stage of the previous version. Relative changes are
(current − previous) / previous × 100, None when either side is unknown or previous is 0. The
longest kernel's change is given only when both versions' longest kernel is the same kernel
(``same_kernel``); else the page says the longest kernel changed from one to the other. These are
ncu figures (one profiled launch per kernel, clocks as ncu left them): context, never a verdict.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from generator.analyses.classify import UNKNOWN
from generator.analyses.kernel_match import match_kernels
from generator.analyses.registry import Analysis
from generator.analyses.result import VersionResult


@dataclass(frozen=True)
class VersionFacts:
    """What a comparison reads of a version (a VersionResult has the same attributes)."""

    version_id: str
    ncu_metrics: pd.DataFrame
    top_by_duration: pd.DataFrame
    classification: dict[str, Any]
    coverage: dict[str, Any]


Compared = VersionResult | VersionFacts


def change(previous: float | None, current: float | None) -> dict[str, float | None]:
    """``{"previous", "current", "abs", "rel_pct"}`` for one number."""
    known = previous is not None and current is not None
    return {
        "previous": previous,
        "current": current,
        "abs": current - previous if known else None,
        "rel_pct": (current - previous) / previous * 100.0 if known and previous != 0 else None,
    }


def _classes(result: Compared) -> dict[tuple[str, str], str]:
    """(stage, name) → class: a kernel's class in each stage it was profiled in."""
    frame = result.ncu_metrics
    return dict(zip(zip(frame["stage"], frame["name"]), frame["class"])) if len(frame) else {}


def _friendly(result: Compared) -> dict[str, str]:
    frame = result.ncu_metrics
    return dict(zip(frame["name"], frame["friendly_name"])) if len(frame) else {}


def _longest(result: Compared) -> dict[str, Any] | None:
    top: pd.DataFrame = result.top_by_duration
    if top.empty:
        return None
    first = top.iloc[0]
    return {"name": first["name"], "friendly_name": first["friendly_name"],
            "duration_us": float(first["duration_us"])}


def _mean_changes(prev: dict[str, float | None], cur: dict[str, float | None]) -> dict[str, dict]:
    return {key: change(prev.get(key), cur.get(key)) for key in sorted(set(prev) | set(cur))}


def compare_versions(previous: Compared, current: Compared) -> dict[str, Any]:
    """Coverage, newly profiled / newly classified kernels, class changes, mean changes, longest kernel."""
    prev_cls, cur_cls = _classes(previous), _classes(current)
    friendly = {**_friendly(previous), **_friendly(current)}
    partner_name = {cur: prev for prev, cur, _ in
                    match_kernels([n for _, n in prev_cls], [n for _, n in cur_cls])}
    partner = {key: (key[0], partner_name[key[1]]) for key in cur_cls
               if key[1] in partner_name and (key[0], partner_name[key[1]]) in prev_cls}
    newly_profiled = [key for key in cur_cls if key not in partner]
    newly_classified = [key for key, c in cur_cls.items()
                        if key in partner and c != UNKNOWN and prev_cls[partner[key]] == UNKNOWN]
    class_changes = [
        {"name": key[1], "stage": key[0], "friendly_name": friendly.get(key[1]),
         "previous": prev_cls[partner[key]], "current": c}
        for key, c in cur_cls.items()
        if key in partner and prev_cls[partner[key]] != c
    ]
    prev_c, cur_c = previous.classification, current.classification
    classes = sorted(set(prev_c["class_means"]) | set(cur_c["class_means"]))
    prev_long, cur_long = _longest(previous), _longest(current)
    same = bool(prev_long and cur_long and match_kernels([prev_long["name"]], [cur_long["name"]]))
    return {
        "previous_version": previous.version_id,
        "rule_changed": prev_c["rule"] != cur_c["rule"],
        "coverage": {
            "top_n": change(previous.coverage.get("top_n"), current.coverage.get("top_n")),
            "profiled": change(previous.coverage.get("profiled"), current.coverage.get("profiled")),
        },
        "kernels_profiled": change(len(prev_cls), len(cur_cls)),
        "newly_profiled": [{"name": n, "stage": s, "friendly_name": friendly.get(n)} for s, n in newly_profiled],
        "newly_classified": [
            {"name": key[1], "stage": key[0], "friendly_name": friendly.get(key[1]),
             "previous": prev_cls[partner[key]], "current": cur_cls[key]}
            for key in newly_classified
        ],
        "class_changes": class_changes,
        "counts": {c: change(prev_c["counts"].get(c, 0), cur_c["counts"].get(c, 0))
                   for c in sorted(set(prev_c["counts"]) | set(cur_c["counts"]))},
        "overall_means": _mean_changes(prev_c["overall_means"], cur_c["overall_means"]),
        "class_means": {c: _mean_changes(prev_c["class_means"].get(c, {}), cur_c["class_means"].get(c, {}))
                        for c in classes},
        "longest_kernel": {
            "previous": prev_long,
            "current": cur_long,
            "same_kernel": same,
            "duration_us": change(prev_long["duration_us"] if same else None,
                                  cur_long["duration_us"] if same else None),
        },
    }


def version_comparison(previous: VersionResult | None, version_id: str, ncu_metrics: pd.DataFrame,
                       top_by_duration: pd.DataFrame, classification: dict[str, Any],
                       coverage: dict[str, Any]) -> dict[str, Any] | None:
    """:func:`compare_versions` against the previous version; None for the first."""
    if previous is None:
        return None
    return compare_versions(previous, VersionFacts(version_id, ncu_metrics, top_by_duration, classification,
                                                   coverage))


ANALYSES = [Analysis("comparison", version_comparison,
                     previous=("ncu_metrics", "top_by_duration", "classification", "coverage"))]
