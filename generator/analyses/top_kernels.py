"""Top kernels of a stage by total GPU time, with friendly names, library and a description per language."""
from __future__ import annotations

import pandas as pd

from generator.analyses.naming import KernelName
from generator.languages import LANGS

TOP_KERNEL_COLUMNS = [
    "rank", "name", "friendly_name", "library", "category", *(f"description_{lang}" for lang in LANGS),
    "count", "total_ns", "avg_ns", "time_pct",
]


def top_kernels(summary: pd.DataFrame, stage: str, n: int, names: dict[str, KernelName]) -> pd.DataFrame:
    """The ``n`` kernels of ``stage`` with the most total time (ties by name), ranked from 1.

    ``time_pct`` is the summary's own share of the stage's kernel time. ``names`` (from
    :func:`name_kernels` over the summary's names) must name every kernel listed.
    """
    rows = summary[summary["stage"] == stage].sort_values(["total_ns", "name"], ascending=[False, True]).head(n)
    missing = [name for name in rows["name"] if name not in names]
    if missing:
        raise ValueError(f"top_kernels: {len(missing)} kernel(s) not in names, e.g. {missing[0][:80]!r}")
    kernels = [names[name] for name in rows["name"]]
    return pd.DataFrame(
        {
            "rank": range(1, len(rows) + 1),
            "name": rows["name"].to_list(),
            "friendly_name": [k.friendly_name for k in kernels],
            "library": [k.source_lib for k in kernels],
            "category": [k.category for k in kernels],
            **{f"description_{lang}": [k.description[lang] for k in kernels] for lang in LANGS},
            "count": rows["count"].to_list(),
            "total_ns": rows["total_ns"].to_list(),
            "avg_ns": rows["avg_ns"].to_list(),
            "time_pct": rows["time_pct"].to_list(),
        },
        columns=TOP_KERNEL_COLUMNS,
    )
