"""Every chart of a version. Adding a chart is one :class:`ChartEntry` in :data:`CHARTS`.

An entry builds its chart from the version's VersionResult (``result.values[<analysis key>]`` holds
every registered analysis's result) and names its page: the chart goes at the end of that page in
every language (an SVG per language plus the interactive spec), with its alt text and optional
heading taken from the translation files (generator/templates/i18n/<lang>.yaml) — no template edit.
The charts below :func:`build_charts`' table are placed by the page templates themselves, by key
(``chart("top-0", …)``), where a page needs one at a chosen spot.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import altair as alt

from generator.analyses.result import VersionResult
from generator.model import ALL_STAGES
from generator.render import charts as ch
from generator.render.module_tree import icicle_chart, icicle_rows
from generator.render.sweep_charts import sweep_charts


@dataclass(frozen=True)
class ChartEntry:
    """One chart: ``build(result, t)`` makes it as an Altair chart (None: no data), placed at the end
    of ``page``; ``t`` gives its words (axis titles, legends) in the page's language."""

    key: str  # unique; names the chart's element ids and its SVG (assets/charts/<key>-<lang>.svg)
    page: str  # page stem (render.pages.PAGES), e.g. "durations"
    alt: str  # word key of its alt text, e.g. "charts.alt_top"
    build: Callable[[VersionResult, ch.Translate], alt.TopLevelMixin | None]
    title: str | None = None  # word key of a heading above it


def _stage_floor(result: VersionResult, t: ch.Translate) -> alt.TopLevelMixin | None:
    """Each measured stage's kernel time against the sum of its launches' floors."""
    frame = result.values.get("stage_decomposition")
    if frame is None or not len(frame) or "floor_ns" not in frame or not (frame["floor_ns"] > 0).any():
        return None
    return ch.stage_floor_chart(frame, {s: s for s in frame["stage"]}, t)


#: The table of charts placed by entry (in page order within a page).
CHARTS: list[ChartEntry] = [
    ChartEntry("stage-floor", "index", "floors.chart_alt", _stage_floor, "floors.chart_title"),
]


def entries_on(page: str) -> list[ChartEntry]:
    """The entries of :data:`CHARTS` that go on ``page``."""
    return [entry for entry in CHARTS if entry.page == page]


def build_charts(result: VersionResult, t: Callable[..., str]) -> dict[str, ch.Chart | None]:
    """Every chart of the version by key: the templates' own, then :data:`CHARTS` (None: no data)."""
    charts: dict[str, ch.Chart | None] = {}
    for index, stage in enumerate(result.stages):
        top = result.top_kernels.get(stage)
        key = f"top-{index}"
        charts[key] = (ch.top_kernels_chart(f"top-{index}-{ch.slug(stage)}", top, t)
                       if top is not None and len(top) else None)
    modules = result.module_tree
    for index, stage in enumerate(s for s in result.stages if s in modules.stage_ns):
        rects = icicle_rows(modules, stage)
        charts[f"modules-{index}"] = icicle_chart(f"modules-{index}-{ch.slug(stage)}", rects, t) if len(rects) else None
    staged = [s for s in result.stages if s != ALL_STAGES]
    libraries = result.stage_libraries
    charts["stage-time"] = (ch.stage_time_chart("stage-time", libraries, {s: s for s in staged}, t)
                            if staged and len(libraries) else None)
    histograms = ch.histogram_charts({f"hist-{ch.slug(key)}": (values, t(f"metrics.{key}", default=key))
                                      for key, values in result.histograms.items() if len(values)}, t)
    for key in result.histograms:
        charts[f"hist-{key}"] = histograms.get(f"hist-{ch.slug(key)}")
    roof = result.roofline
    normalized, physical = roof.get("normalized"), roof.get("physical")
    roofs = roof.get("roofs") or {}
    charts["roofline-normalized"] = (ch.normalized_roofline_chart("roofline-normalized", normalized, t)
                                     if normalized is not None and len(normalized) else None)
    has_physical = physical is not None and len(physical)
    charts["roofline-physical"] = (ch.physical_roofline_chart("roofline-physical", physical, roofs, t)
                                   if has_physical else None)
    charts["roofline-per-kernel"] = (ch.per_kernel_roofline_chart("roofline-per-kernel", physical, roofs, t)
                                     if has_physical else None)
    charts.update(sweep_charts(result.sweep, t))
    for entry in CHARTS:
        built = entry.build(result, t)
        charts[entry.key] = None if built is None else ch.Chart(entry.key, ch.chart_spec(built))
    return charts
