"""Altair charts of a version's datasets, their inline HTML block, and static SVG copies.

Each chart is a Vega-Lite spec built from the VersionResult's tables only. Pages inline the spec
as JSON (drawn in the browser by ``assets/js/kr-charts.js`` with the bundled vega-embed) and show
the SVG rendered by vl-convert as the fallback inside the same ``div``. Specs are deterministic:
named params, sorted keys, numbers rounded to 6 significant digits.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import altair as alt
import pandas as pd

from generator.render.svg import SvgBatch
from generator.text_safety import clean_tree

#: Element id prefixes; headings (section slugs) never start with "kr-".
CHART_ID_PREFIX = "kr-chart-"
SPEC_ID_PREFIX = "kr-spec-"
SVG_DIR = Path("assets") / "charts"
WIDTH, HEIGHT = 560, 300
#: class → colour, so a class keeps its colour on every chart
CLASS_COLORS = {
    "compute-bound": "#e45756",
    "memory-bound": "#4c78a8",
    "latency-bound": "#54a24b",
    "balanced": "#b279a2",
    "unknown": "#9d9d9d",
}
DATAPATH_SHAPES = {"tensor": "diamond", "fp32": "circle", "fp16": "square", "fp64": "triangle-up"}
DATAPATH_COLORS = {"tensor": "#f58518", "fp32": "#4c78a8", "fp16": "#72b7b2", "fp64": "#9d755d"}

Translate = Callable[..., str]
_TITLE = "\u0000title"  # placeholder for a per-dataset title in a shared spec
#: Labels are our own short texts: no truncation (measuring it is most of the SVG time).
CONFIG = {"axis": {"labelLimit": 0}, "legend": {"labelLimit": 0}}


@dataclass(frozen=True)
class Chart:
    """One chart: ``slug`` names its element ids and SVG file; ``spec`` is the Vega-Lite dict."""

    slug: str
    spec: dict[str, Any]

    @property
    def element_id(self) -> str:
        return CHART_ID_PREFIX + self.slug

    def svg_path(self, lang: str) -> Path:
        """Relative to docs_dir; ``-<lang>`` (not ``.<lang>``) so i18n does not treat it as a
        localized copy of another file."""
        return SVG_DIR / f"{self.slug}-{lang}.svg"


def slug(text: str) -> str:
    """Lower-case ASCII letters, digits and single hyphens (for ids and file names)."""
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-") or "x"


def _round(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isnan(value) or math.isinf(value) else float(f"{value:.6g}")
    return value


def chart_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as JSON-ready dicts: NaN → None, floats at 6 significant digits."""
    rows = frame.astype(object).where(frame.notna(), None).to_dict("records")
    return [{k: _round(v) for k, v in row.items()} for row in rows]


class _Rows:
    """A chart's data rows, out of Altair's sight: it copies and walks every value of them at each
    step of building a chart (most of the time charts took); :func:`chart_spec` puts them in."""

    __slots__ = ("rows",)

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows


_ROWS = "\u0000rows"  # the key of the one row standing for the rows until chart_spec


def inline_data(rows: list[dict[str, Any]]) -> alt.Data:
    """``alt.Data(values=rows)`` for a chart that :func:`chart_spec` turns into its spec."""
    return alt.Data(values=[{_ROWS: _Rows(rows)}])


def chart_spec(chart: alt.TopLevelMixin) -> dict[str, Any]:
    """The Vega-Lite dict, normalized through sorted-key JSON (stable bytes)."""
    spec = _put_rows(chart.configure(**CONFIG).to_dict(validate=False))
    return json.loads(json.dumps(spec, sort_keys=True, allow_nan=False))


def _put_rows(value: Any) -> Any:
    """``value`` with the rows of each :func:`inline_data` in place of the row standing for them."""
    if isinstance(value, dict):
        return {k: _put_rows(v) for k, v in value.items()}
    if isinstance(value, list):
        if len(value) == 1 and isinstance(value[0], dict) and isinstance(value[0].get(_ROWS), _Rows):
            return value[0][_ROWS].rows
        return [_put_rows(v) for v in value]
    return value


def _class_column(frame: pd.DataFrame, t: Translate) -> pd.DataFrame:
    out = frame.copy()
    out["class_label"] = [t(f"classes.{c}", default=str(c)) if c is not None else t("unknown")
                          for c in out.get("class", pd.Series([None] * len(out), index=out.index))]
    return out


def _class_scale(t: Translate, labels: Iterable[Any]) -> dict[str, list[str]]:
    """Colour scale of the classes among ``labels`` only (a legend lists what is drawn), in class order."""
    present = {str(label) for label in labels}
    pairs = [(t(f"classes.{c}"), color) for c, color in CLASS_COLORS.items() if t(f"classes.{c}") in present]
    return {"domain": [label for label, _ in pairs], "range": [color for _, color in pairs]}


def _datapath_labels(t: Translate, present: Iterable[Any]) -> tuple[list[str], list[str], list[str]]:
    """Labels, shapes and colours of the datapaths among ``present`` (points or roofs drawn) only."""
    drawn = {str(d) for d in present}
    keys = [d for d in DATAPATH_SHAPES if d in drawn]
    return ([t(f"datapaths.{d}") for d in keys], [DATAPATH_SHAPES[d] for d in keys],
            [DATAPATH_COLORS[d] for d in keys])


def _base(data: list[dict[str, Any]]) -> alt.Chart:
    return alt.Chart(inline_data(data)).properties(width=WIDTH, height=HEIGHT)


def top_kernels_chart(chart_slug: str, top: pd.DataFrame, t: Translate) -> Chart:
    """Horizontal bars: share of the stage's kernel time per top kernel, coloured by library."""
    data = chart_records(top.reindex(columns=["rank", "friendly_name", "library", "time_pct", "total_ns",
                                         "count", "avg_ns"]).assign(
        total_ms=lambda d: pd.to_numeric(d["total_ns"], errors="coerce") / 1e6,
        avg_us=lambda d: pd.to_numeric(d["avg_ns"], errors="coerce") / 1e3,
    ).drop(columns=["total_ns", "avg_ns"]))
    chart = _base(data).mark_bar().encode(
        y=alt.Y("friendly_name:N", sort=alt.EncodingSortField("rank", order="ascending"),
                title=None),
        x=alt.X("time_pct:Q", title=t("charts.time_pct")),
        color=alt.Color("library:N", title=t("columns.library")),
        tooltip=[
            alt.Tooltip("friendly_name:N", title=t("columns.kernel")),
            alt.Tooltip("library:N", title=t("columns.library")),
            alt.Tooltip("time_pct:Q", title=t("columns.time_pct"), format=".2f"),
            alt.Tooltip("total_ms:Q", title=t("columns.total_ms"), format=",.3f"),
            alt.Tooltip("count:Q", title=t("columns.count"), format=",d"),
            alt.Tooltip("avg_us:Q", title=t("columns.avg_us"), format=",.2f"),
        ],
    ).properties(height=max(120, 18 * len(data)))
    return Chart(chart_slug, chart_spec(chart))


def stage_time_chart(chart_slug: str, libraries: pd.DataFrame, stage_labels: Mapping[str, str],
                     t: Translate) -> Chart:
    """Horizontal bars: GPU time of each stage (capture order), stacked by library."""
    order = list(stage_labels.values())
    frame = libraries[libraries["stage"].isin(list(stage_labels))]
    data = chart_records(pd.DataFrame({
        "stage": [stage_labels[s] for s in frame["stage"]],
        "library": frame["library"].to_list(),
        "total_ms": (pd.to_numeric(frame["kernel_ns"]) / 1e6).to_list(),
        "pct": frame["pct"].to_list(),
    }))
    chart = _base(data).mark_bar().encode(
        y=alt.Y("stage:N", sort=order, title=None),
        x=alt.X("total_ms:Q", stack="zero", title=t("charts.gpu_time_ms")),
        color=alt.Color("library:N", title=t("columns.library")),
        order=alt.Order("total_ms:Q", sort="descending"),
        tooltip=[
            alt.Tooltip("stage:N", title=t("columns.stage")),
            alt.Tooltip("library:N", title=t("columns.library")),
            alt.Tooltip("total_ms:Q", title=t("columns.total_ms"), format=",.3f"),
            alt.Tooltip("pct:Q", title=t("columns.pct_of_stage"), format=".2f"),
        ],
    ).properties(height=max(80, 40 * len(order)))
    return Chart(chart_slug, chart_spec(chart))


def stage_floor_chart(decomposition: pd.DataFrame, stage_labels: Mapping[str, str], t: Translate) -> alt.Chart:
    """Horizontal bars per stage (capture order): its kernel time beside the sum of its launches'
    floors (stage_decomposition ``floor_ns``)."""
    order = list(stage_labels.values())
    frame = decomposition[decomposition["stage"].isin(list(stage_labels))]
    kinds = [t("floors.measured"), t("floors.floor")]
    data = chart_records(pd.DataFrame({
        "stage": [stage_labels[s] for s in frame["stage"] for _ in kinds],
        "kind": kinds * len(frame),
        "ms": [v / 1e6 for a, b in zip(frame["kernel_ns"], frame["floor_ns"]) for v in (float(a), float(b))],
    }))
    return _base(data).mark_bar().encode(
        y=alt.Y("stage:N", sort=order, title=None),
        yOffset=alt.YOffset("kind:N", sort=kinds),
        x=alt.X("ms:Q", title=t("charts.gpu_time_ms")),
        color=alt.Color("kind:N", sort=kinds, title=None),
        tooltip=[alt.Tooltip("stage:N", title=t("columns.stage")), alt.Tooltip("kind:N", title=None),
                 alt.Tooltip("ms:Q", title=t("columns.total_ms"), format=",.3f")],
    ).properties(height=max(80, 50 * len(order)))


def histogram_charts(datasets: Mapping[str, tuple[pd.DataFrame, str]], t: Translate) -> dict[str, Chart]:
    """Histograms (slug → (values, axis title)) built of one stacked cell per kernel, so each
    cell carries that kernel's tooltip. One Altair spec is built and filled per dataset."""
    template = chart_spec(_base([]).transform_bin(
        ["bin_start", "bin_end"], "value", bin=alt.Bin(maxbins=20)
    ).transform_window(
        stack="row_number()", groupby=["bin_start"], sort=[alt.SortField("value")]
    ).transform_calculate(stack_low="datum.stack - 1").mark_rect(stroke="white", strokeWidth=0.5).encode(
        x=alt.X("bin_start:Q", bin="binned", title=_TITLE),
        x2=alt.X2("bin_end:Q"),
        y=alt.Y("stack_low:Q", title=t("charts.kernels"), axis=alt.Axis(tickMinStep=1)),
        y2=alt.Y2("stack:Q"),
        color=alt.Color("class_label:N", title=t("columns.class"), scale=alt.Scale(**_class_scale(t, []))),
        tooltip=[
            alt.Tooltip("friendly_name:N", title=t("columns.kernel")),
            alt.Tooltip("class_label:N", title=t("columns.class")),
            alt.Tooltip("value:Q", title=_TITLE, format=",.2f"),
        ],
    ).properties(height=220))
    text = json.dumps(template, sort_keys=True)
    charts = {}
    for chart_slug, (values, axis_title) in datasets.items():
        spec = json.loads(text.replace(json.dumps(_TITLE), json.dumps(axis_title)))
        frame = _class_column(values.reindex(columns=["friendly_name", "class", "value"]), t)
        spec["data"]["values"] = chart_records(frame)
        spec["encoding"]["color"]["scale"] = _class_scale(t, frame["class_label"])
        charts[chart_slug] = Chart(chart_slug, spec)
    return charts


def _metric_tooltips(t: Translate) -> list[alt.Tooltip]:
    return [
        alt.Tooltip("friendly_name:N", title=t("columns.kernel")),
        alt.Tooltip("class_label:N", title=t("columns.class")),
        alt.Tooltip("sm_throughput_pct:Q", title=t("metrics.sm_throughput_pct"), format=".2f"),
        alt.Tooltip("memory_throughput_pct:Q", title=t("metrics.memory_throughput_pct"), format=".2f"),
        alt.Tooltip("dram_throughput_pct:Q", title=t("metrics.dram_throughput_pct"), format=".2f"),
    ]


def normalized_roofline_chart(chart_slug: str, points: pd.DataFrame, t: Translate) -> Chart:
    """SM throughput % of peak against memory throughput % of peak, one point per kernel."""
    cols = ["friendly_name", "class", "sm_throughput_pct", "memory_throughput_pct", "dram_throughput_pct"]
    frame = _class_column(points.reindex(columns=cols), t)
    data = chart_records(frame)
    axis = alt.Scale(domain=[0, 100])
    diagonal = alt.Chart(inline_data([{"v": 0}, {"v": 100}])).mark_line(
        strokeDash=[4, 4], color="#999999").encode(x=alt.X("v:Q"), y=alt.Y("v:Q"))
    dots = _base(data).mark_point(filled=True, size=70, opacity=0.85).encode(
        x=alt.X("memory_throughput_pct:Q", scale=axis, title=t("charts.memory_pct_axis")),
        y=alt.Y("sm_throughput_pct:Q", scale=axis, title=t("charts.sm_pct_axis")),
        color=alt.Color("class_label:N", title=t("columns.class"),
                        scale=alt.Scale(**_class_scale(t, frame["class_label"]))),
        tooltip=_metric_tooltips(t),
    )
    return Chart(chart_slug, chart_spec(alt.layer(diagonal, dots).properties(width=WIDTH, height=HEIGHT)))


def _roof_lines(points: pd.DataFrame, roofs: Mapping[str, Any], t: Translate) -> list[dict[str, Any]]:
    """Polylines (AI, FLOP/s) of each datapath's roof: bandwidth slope up to the ridge, then flat."""
    bandwidth = roofs.get("peak_dram_bytes_per_s")
    ceilings = roofs.get("ceilings") or {}
    if not bandwidth or not ceilings:
        return []
    ridges = [c / bandwidth for c in ceilings.values()]
    ais = [a for a in pd.to_numeric(points.get("arithmetic_intensity", pd.Series(dtype=float)),
                                    errors="coerce").dropna() if a > 0]
    low = min([*ais, *ridges]) / 10
    high = max([*ais, *ridges]) * 10
    lines = []
    for datapath, peak in sorted(ceilings.items()):
        label = t(f"datapaths.{datapath}", default=datapath)
        ridge = peak / bandwidth
        for order, ai in enumerate((low, ridge, high)):
            lines.append({"datapath": datapath, "datapath_label": label, "roof": t("charts.roof", datapath=label),
                          "order": order, "ai": _round(float(ai)), "flops": _round(float(min(peak, ai * bandwidth)))})
    return lines


def _si(value: float, unit: str) -> str:
    """``989 TFLOP/s``: three significant digits and a decimal SI prefix."""
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


#: a roof label's height in the physical roofline (its 11 px text box is 13 px tall, plus a margin), as a
#: share of the plot's height
LABEL_HEIGHT = 15 / HEIGHT
#: px between a roof label's box and the corner it names (left of it and above): more than a point's
#: half width (a size-80 diamond's is 6.3 px), so no point under the bandwidth slope reaches the box
LABEL_OFFSET = 7


def _stacked(labels: list[dict[str, Any]], values: list[float]) -> list[dict[str, Any]]:
    """Roof labels (lowest roof first) each at its roof (``label_flops``), or higher where the label
    below would overlap it: one label height apart on the log axis that ``values`` span, as Vega
    draws it (its log scale is nice: whole decades). Raised, a label stays left of its ridge, above
    the bandwidth slope."""
    out, below, gap = [], 0.0, _label_gap(values)
    for label in sorted(labels, key=lambda r: r["flops"]):
        at = max(label["flops"], below * gap)
        out.append({**label, "label_flops": _round(at)})
        below = at
    return out


def _label_gap(values: list[float]) -> float:
    """The factor on the y axis that ``values`` span that one label height stands for."""
    positive = [v for v in values if v > 0]
    decades = max(math.ceil(math.log10(max(positive))) - math.floor(math.log10(min(positive))), 1) if positive else 1
    return 10 ** (decades * LABEL_HEIGHT)


def _physical_layers(points: pd.DataFrame, roofs: Mapping[str, Any], t: Translate,
                     kernel_filter: alt.Parameter | None = None) -> alt.LayerChart:
    frame = _class_column(points.reindex(columns=["friendly_name", "class", "datapath", "work",
                                                  "arithmetic_intensity", "achieved_flop_per_s",
                                                  "flop", "dram_bytes"]), t)
    frame["work_label"] = [t(f"charts.work_{w}", default=str(w)) for w in frame["work"].fillna("executed")]
    frame["datapath_label"] = [t(f"datapaths.{d}", default=str(d)) for d in frame["datapath"]]
    frame = frame[(pd.to_numeric(frame["arithmetic_intensity"]) > 0)
                  & (pd.to_numeric(frame["achieved_flop_per_s"]) > 0)]
    lines = _roof_lines(frame, roofs, t)
    labels, shapes, colors = _datapath_labels(t, [*frame["datapath"], *((roofs.get("ceilings") or {}) if lines
                                                                         else ())])
    x_title, y_title = t("charts.ai_axis"), t("charts.flops_axis")
    encode = {
        "x": alt.X("arithmetic_intensity:Q", scale=alt.Scale(type="log"), title=x_title),
        "y": alt.Y("achieved_flop_per_s:Q", scale=alt.Scale(type="log"), title=y_title,
                   axis=alt.Axis(format="~s")),
        "shape": alt.Shape("datapath_label:N", title=t("columns.datapath"),
                           scale=alt.Scale(domain=labels, range=shapes)),
        "color": alt.Color("datapath_label:N", title=t("columns.datapath"),
                           scale=alt.Scale(domain=labels, range=colors)),
        "tooltip": [
            alt.Tooltip("friendly_name:N", title=t("columns.kernel")),
            alt.Tooltip("class_label:N", title=t("columns.class")),
            alt.Tooltip("datapath_label:N", title=t("columns.datapath")),
            alt.Tooltip("arithmetic_intensity:Q", title=x_title, format=",.3f"),
            alt.Tooltip("achieved_flop_per_s:Q", title=y_title, format=".3~s"),
        ],
    }
    if (frame["work"] == "useful").any():  # useful work (operator shapes) solid, executed (ncu) faint
        work = [t("charts.work_useful"), t("charts.work_executed")]
        encode["opacity"] = alt.Opacity("work_label:N", title=t("charts.work"),
                                        scale=alt.Scale(domain=work, range=[0.95, 0.25]))
        encode["tooltip"].append(alt.Tooltip("work_label:N", title=t("charts.work")))
    layers: list[alt.Chart] = []
    if lines:
        layers.append(alt.Chart(inline_data(lines)).mark_line(strokeWidth=1.5).encode(
            x=alt.X("ai:Q", scale=alt.Scale(type="log"), title=x_title),
            y=alt.Y("flops:Q", scale=alt.Scale(type="log"), title=y_title, axis=alt.Axis(format="~s")),
            color=encode["color"],
            order=alt.Order("order:Q"),
            detail=alt.Detail("roof:N"),
            tooltip=[alt.Tooltip("roof:N", title=t("charts.roofs"))],
        ))
        # each roof named at its ridge, left of it and above (the DRAM slope one label lower on the slope):
        # in the SVG, not only on hover, where no point can be (no kernel runs faster than DRAM feeds it)
        values = [p["flops"] for p in lines] + list(pd.to_numeric(frame["achieved_flop_per_s"], errors="coerce").dropna())
        ridges = _stacked([{**line, "label": t("charts.roof_label", peak=_si(line["flops"], "FLOP/s"),
                                               roof=t(f"roof_names.{line['datapath']}", default=line["datapath_label"]))}
                           for line in lines if line["order"] == 1], values)
        bandwidth = roofs["peak_dram_bytes_per_s"]
        under = ridges[0]["label_flops"] / _label_gap(values)
        slope = [{"ai": _round(under / bandwidth), "label_flops": _round(under),
                  "label": t("charts.bandwidth_label", bandwidth=_si(bandwidth, "B/s"))}]
        for rows, color in ((ridges, encode["color"]), (slope, alt.ColorValue("#555555"))):
            layers.append(alt.Chart(inline_data(rows)).mark_text(
                align="right", baseline="bottom", dx=-LABEL_OFFSET, dy=-LABEL_OFFSET, fontSize=11).encode(
                x=alt.X("ai:Q", scale=alt.Scale(type="log"), title=x_title),
                y=alt.Y("label_flops:Q", scale=alt.Scale(type="log"), title=y_title, axis=alt.Axis(format="~s")),
                color=color,
                text=alt.Text("label:N"),
            ))
    dots = alt.Chart(inline_data(chart_records(frame))).mark_point(filled=True, size=80, opacity=0.9)
    if kernel_filter is None:
        layers.append(dots.encode(**encode))
    else:
        layers.append(dots.encode(**{**encode, "color": alt.ColorValue("#dddddd"), "shape": encode["shape"],
                                     "tooltip": encode["tooltip"]}))
        layers.append(dots.encode(**encode).transform_filter(kernel_filter))
    return alt.layer(*layers).properties(width=WIDTH, height=HEIGHT)


def physical_roofline_chart(chart_slug: str, points: pd.DataFrame, roofs: Mapping[str, Any],
                            t: Translate) -> Chart:
    """Log-log roofline: FLOP/s against FLOP per DRAM byte; tensor vs FP32 points by shape."""
    return Chart(chart_slug, chart_spec(_physical_layers(points, roofs, t)))


def per_kernel_roofline_chart(chart_slug: str, points: pd.DataFrame, roofs: Mapping[str, Any],
                              t: Translate) -> Chart | None:
    """The physical roofline with one kernel (chosen in a drop-down) highlighted; None if no points."""
    kernels = sorted({str(k) for k in points.get("friendly_name", pd.Series(dtype=object)).dropna()})
    if not kernels:
        return None
    pick = alt.param(name="kr_kernel", value=kernels[0],
                     bind=alt.binding_select(options=kernels, name=t("charts.pick_kernel") + " "))
    chart = _physical_layers(points, roofs, t, kernel_filter=alt.datum.friendly_name == pick)
    return Chart(chart_slug, chart_spec(chart.add_params(pick)))


def chart_block(chart: Chart, lang: str, alt_text: str) -> str:
    """Markdown/HTML: the chart ``div`` (SVG fallback inside) and its spec as inline JSON."""
    spec_id = SPEC_ID_PREFIX + chart.slug
    payload = json.dumps(chart.spec, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    payload = payload.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return (
        f'<div class="kr-chart" id="{chart.element_id}" data-spec-ref="{spec_id}" markdown="1">\n\n'
        f"![{alt_text}]({chart.svg_path(lang).as_posix()})\n\n</div>\n\n"
        f'<script type="application/json" id="{spec_id}">{payload}</script>\n'
    )


def write_svg(chart: Chart, lang: str, docs_dir: Path, svgs: SvgBatch) -> Path:
    """Have ``svgs`` render the static SVG into ``docs_dir/assets/charts/`` (by the end of its
    block), its text laid out with the fonts of ``generator/fonts/`` (:mod:`generator.render.fonts`)."""
    path = docs_dir / chart.svg_path(lang)
    svgs.submit(clean_tree(chart.spec), path)  # the renderer aborts on XML-invalid characters: none reach it
    return path
