"""Longest kernels by single-launch duration as ncu measured it (not nsys total time)."""
from __future__ import annotations

import pandas as pd

from generator.analyses.registry import Analysis

#: How many kernels the durations page lists.
TOP_BY_DURATION_N = 10
TOP_BY_DURATION_COLUMNS = ["rank", "name", "friendly_name", "class", "duration_us",
                           "max_duration_us", "launches"]


def top_by_duration(kernels: pd.DataFrame, n: int = 10) -> pd.DataFrame:
    """The ``n`` profiled kernels with the longest mean profiled launch, longest first.

    ``duration_us`` is the mean over the kernel's profiled launches, ``max_duration_us`` the
    longest one; kernels without a duration are left out; ties keep profiling order.
    """
    known = kernels.dropna(subset=["duration_ns"])
    top = known.sort_values("duration_ns", ascending=False, kind="stable").head(n)
    out = pd.DataFrame({
        "rank": range(1, len(top) + 1),
        "name": top["name"].to_numpy(),
        "friendly_name": top["friendly_name"].to_numpy(),
        "class": top["class"].to_numpy() if "class" in top else None,
        "duration_us": top["duration_ns"].to_numpy(dtype=float) / 1e3,
        "max_duration_us": top["max_duration_ns"].to_numpy(dtype=float) / 1e3,
        "launches": top["launches"].to_numpy(),
    })
    return out[TOP_BY_DURATION_COLUMNS]


def longest_kernels(ncu_metrics: pd.DataFrame) -> pd.DataFrame:
    """The version's TOP_BY_DURATION_N longest profiled kernels (:func:`top_by_duration`)."""
    return top_by_duration(ncu_metrics, TOP_BY_DURATION_N)


ANALYSES = [Analysis("top_by_duration", longest_kernels)]
