"""Per-kernel values of each metric the report draws a histogram of (the chart bins them).

Each dataset holds one row per profiled kernel that has a value: ``name``, ``friendly_name``,
``class``, ``value`` in the dataset's display unit (``HISTOGRAMS[key][2]``).
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

#: dataset key → (canonical column, scale into the display unit, display unit)
HISTOGRAMS: dict[str, tuple[str, float, str]] = {
    "sm_throughput_pct": ("sm_throughput_pct", 1.0, "%"),
    "dram_throughput_pct": ("dram_throughput_pct", 1.0, "%"),
    "memory_throughput_pct": ("memory_throughput_pct", 1.0, "%"),
    "memory_throughput_gbps": ("memory_throughput_bytes_per_s", 1e-9, "GB/s"),
    "l1_hit_rate_pct": ("l1_hit_rate_pct", 1.0, "%"),
    "l1_throughput_pct": ("l1_throughput_pct", 1.0, "%"),
    "l2_hit_rate_pct": ("l2_hit_rate_pct", 1.0, "%"),
    "l2_throughput_pct": ("l2_throughput_pct", 1.0, "%"),
    "achieved_occupancy_pct": ("achieved_occupancy_pct", 1.0, "%"),
    "theoretical_occupancy_pct": ("theoretical_occupancy_pct", 1.0, "%"),
    "duration_us": ("duration_ns", 1e-3, "µs"),
    "memory_busy_pct": ("memory_busy_pct", 1.0, "%"),
    "max_bandwidth_pct": ("max_bandwidth_pct", 1.0, "%"),
}
DEFAULT_BINS = 10


def histogram_datasets(kernels: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Dataset key → per-kernel values (kernels without a value for that metric left out)."""
    out: dict[str, pd.DataFrame] = {}
    for key, (column, scale, _) in HISTOGRAMS.items():
        values = pd.to_numeric(kernels[column], errors="coerce") if column in kernels \
            else pd.Series(np.nan, index=kernels.index)
        keep = values.notna()
        out[key] = pd.DataFrame({
            "name": kernels.loc[keep, "name"].to_numpy(),
            "friendly_name": kernels.loc[keep, "friendly_name"].to_numpy(),
            "class": kernels.loc[keep, "class"].to_numpy() if "class" in kernels else None,
            "value": values[keep].to_numpy(dtype=float) * scale,
        })
    return out


def bin_edges(values: Iterable[float], bins: int = DEFAULT_BINS) -> list[float]:
    """``bins`` + 1 equal-width edges from the smallest to the largest value ([] when none)."""
    finite = pd.to_numeric(pd.Series(list(values), dtype=float), errors="coerce").dropna()
    if finite.empty:
        return []
    low, high = float(finite.min()), float(finite.max())
    if high == low:
        high = low + 1.0
    return [float(x) for x in np.linspace(low, high, bins + 1)]
