"""The sweep page's chart: one small bar chart per metric across the configurations (facets)."""
from __future__ import annotations

import altair as alt
import pandas as pd

from generator.analyses.result import SweepResult
from generator.render.charts import Chart, Translate, chart_records, chart_spec, inline_data

CHART_SLUG = "sweep-metrics"
#: Charted CONFIG_COLUMNS in panel order; ns columns are shown in ms.
CHARTED: tuple[str, ...] = ("gpu_time_ns", "kernels", "launches", "sm_throughput_pct", "memory_throughput_pct",
                            "achieved_occupancy_pct", "l1_hit_rate_pct", "l2_hit_rate_pct", "idle_pct",
                            "launches_per_ms", "short_launch_pct", "span_ns")
BASELINE_COLOR, OTHER_COLOR = "#f58518", "#4c78a8"


def sweep_charts(sweep: SweepResult | None, t: Translate) -> dict[str, Chart | None]:
    """``{"sweep-metrics": chart}`` for a version with a sweep, else nothing."""
    return {} if sweep is None else {CHART_SLUG: sweep_chart(sweep, t)}


def sweep_chart(sweep: SweepResult, t: Translate) -> Chart:
    """Bars per configuration (baseline highlighted), one panel per metric, each with its own scale."""
    labels = list(sweep.configs["label"])
    titles = [t(f"sweep.metrics.{metric}") for metric in CHARTED]
    long = pd.DataFrame([
        {"config": row["label"], "metric": title,
         "value": row[metric] / 1e6 if metric.endswith("_ns") else row[metric],
         "role": t("sweep.baseline") if row["baseline"] else t("sweep.config")}
        for row in sweep.configs.to_dict("records") for metric, title in zip(CHARTED, titles)
    ])
    roles = [t("sweep.baseline"), t("sweep.config")]
    bars = alt.Chart().mark_bar().encode(
        x=alt.X("config:N", sort=labels, title=None, axis=alt.Axis(labelAngle=-30, labelLimit=120)),
        y=alt.Y("value:Q", title=None),
        color=alt.Color("role:N", title=None, scale=alt.Scale(domain=roles, range=[BASELINE_COLOR, OTHER_COLOR])),
        tooltip=[alt.Tooltip("config:N", title=t("sweep.columns.label")),
                 alt.Tooltip("metric:N", title=t("columns.metric")),
                 alt.Tooltip("value:Q", title=t("columns.value"), format=",.3f")],
    ).properties(width=150, height=110)
    chart = alt.FacetChart(
        data=inline_data(chart_records(long)), spec=bars,
        facet=alt.Facet("metric:N", sort=titles, title=None, header=alt.Header(labelFontWeight="bold")),
        columns=3,
    ).resolve_scale(y="independent")
    return Chart(CHART_SLUG, chart_spec(chart))
