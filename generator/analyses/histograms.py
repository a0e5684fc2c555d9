"""Per-kernel values of each metric the report draws a histogram of (the chart bins them).

Each dataset holds one row per profiled kernel that has a value: ``name``, ``friendly_name``,
``class``, ``value`` in the metric's display unit. Which metrics, in which order, and their units
and scales: the registry's DISPLAY_METRICS with ``histogram`` set (generator.metric_table).
"""
from __future__ import annotations

import pandas as pd

from generator.analyses.registry import Analysis
from generator.metric_table import DISPLAY, DISPLAY_METRICS

#: dataset keys (DisplayMetric keys) in page order
HISTOGRAMS: tuple[str, ...] = tuple(m.key for m in DISPLAY_METRICS if m.histogram)


def histogram_datasets(kernels: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Dataset key → per-kernel values (kernels without a value for that metric left out)."""
    out: dict[str, pd.DataFrame] = {}
    for key in HISTOGRAMS:
        metric = DISPLAY[key]
        values = metric.values(kernels)
        keep = values.notna()
        out[key] = pd.DataFrame({
            "name": kernels.loc[keep, "name"].to_numpy(),
            "friendly_name": kernels.loc[keep, "friendly_name"].to_numpy(),
            "class": kernels.loc[keep, "class"].to_numpy() if "class" in kernels else None,
            "value": values[keep].to_numpy(dtype=float) * metric.scale,
        })
    return out


def version_histograms(ncu_metrics: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """:func:`histogram_datasets` of the version's profiled kernels."""
    return histogram_datasets(ncu_metrics)


ANALYSES = [Analysis("histograms", version_histograms)]
