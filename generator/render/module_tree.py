"""The Modules page's pieces: the collapsible module tree (HTML ``details``) and the icicle chart.

Every name is HTML-escaped (the tree is a raw HTML block Markdown leaves alone), so ``<``, ``|``,
``.`` and ``*`` show literally; words come from the caller's translator.
"""
from __future__ import annotations

import hashlib
import html
from collections.abc import Callable
from typing import Any

import altair as alt
import pandas as pd

from generator.analyses.modules import OUTSIDE, ModulesResult
from generator.model import ALL_STAGES
from generator.render import charts as ch
from generator.render.markdown import Numbers, is_missing

ICICLE_DEPTH = 6  # levels drawn
ICICLE_MIN_PCT = 0.2  # narrower modules are left out of the chart (the tree lists them)


def kernel_anchor(raw_name: str) -> str:
    """The appendix anchor of a kernel (its names-table row)."""
    return "k-" + hashlib.sha256(raw_name.encode("utf-8")).hexdigest()[:12]


def _records(tree: pd.DataFrame) -> list[dict[str, Any]]:
    """Tree rows as dicts, a root's parent None (pandas may hold it as NaN)."""
    return [{**row, "parent": row["parent"] if isinstance(row["parent"], str) else None}
            for row in tree.to_dict("records")]


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _module_label(row: dict[str, Any], t: Callable[..., str]) -> str:
    name = t("modules.outside") if row["key"] == OUTSIDE else row["key"]
    return _e(name)


def tree_html(modules: ModulesResult, stage: str, t: Callable[..., str], n: Numbers,
              friendly: dict[str, str], profiled: dict[Any, dict[str, Any]]) -> str:
    """Nested ``details`` per module of ``stage`` (depth 0 open): numbers in the summary, then the
    module's top kernels (linked to the appendix and, when profiled, the roofline page) and its
    submodules. ``profiled``: (stage, raw name) → the kernel's ncu_metrics row (for ALL_STAGES: the
    stage holding most of its time)."""
    tree = modules.tree[modules.tree["stage"] == stage]
    kernels = modules.kernels[modules.kernels["stage"] == stage]
    by_key = dict(iter(kernels.groupby("key", sort=False)))
    children: dict[Any, list[dict[str, Any]]] = {}
    for row in _records(tree):
        children.setdefault(row["parent"], []).append(row)
    out: list[str] = ['<div class="kr-modules">']

    def summary(row: dict[str, Any]) -> str:
        parts = [f"<code>{_module_label(row, t)}</code>"]
        if row["cls"]:
            parts.append(f"<em>{_e(row['cls'])}</em>")
        parts.append(_e(t("modules.summary", ms=n.ms(row["gpu_ns"]), pct=n.pct(row["share_pct"]),
                          launches=n.int(row["launches"]))))
        if row["instances"] > 1:
            parts.append(_e(t("modules.instances", count=n.int(row["instances"]), median=n.ms(row["inst_median_ns"]),
                              min=n.ms(row["inst_min_ns"]), max=n.ms(row["inst_max_ns"]))))
            if row["outliers"]:
                block = row["key"].rsplit("*", 1)[0].rstrip(".").rsplit(".", 1)[-1]
                shown = t("list_sep").join(t("modules.outlier", instance=f"{block}.{label}", ratio=n.num(ratio))
                                           for label, ratio in row["outliers"])
                parts.append(f"<strong>{_e(t('modules.outliers', list=shown))}</strong>")
        return " · ".join(parts)

    def kernel_table(key: str) -> str:
        part = by_key.get(key)
        if part is None or not len(part):
            return ""
        head = "".join(f"<th>{_e(t(k))}</th>" for k in ("columns.kernel", "columns.total_ms", "columns.count",
                                                        "modules.of_module", "columns.class", "columns.roof_pct",
                                                        "modules.sm_mem"))
        body = []
        for k in part.to_dict("records"):
            name = friendly.get(k["name"], k["name"])
            cell = (f'<a href="appendix.html#{kernel_anchor(k["name"])}" title="{_e(k["name"])}">{_e(name)}</a>'
                    if k["name"] in friendly else f'<span title="{_e(k["name"])}">{_e(name)}</span>')
            p = profiled.get((stage, k["name"])) or (profiled.get(k["name"]) if stage == ALL_STAGES else None)
            if p is None:
                measured = f'<td colspan="3">{_e(t("top.not_profiled"))}</td>'
            else:
                klass = p.get("class")
                label = t("unknown") if is_missing(klass) else t(f"classes.{klass}", default=str(klass))
                measured = (f'<td><a href="roofline.html">{_e(label)}</a></td><td>{_e(n.pct(p.get("roof_pct"), 1))}</td>'
                            f'<td>{_e(n.pct(p.get("sm_throughput_pct"), 0))} / '
                            f'{_e(n.pct(p.get("memory_throughput_pct"), 0))}</td>')
            body.append(f"<tr><td>{cell}</td><td>{_e(n.num(k['gpu_ns'] / 1e6, 3))}</td><td>{_e(n.int(k['launches']))}</td>"
                        f"<td>{_e(n.pct(k['module_pct'], 1))}</td>{measured}</tr>")
        return f'<table class="kr-module-kernels"><tr>{head}</tr>{"".join(body)}</table>'

    def visit(row: dict[str, Any]) -> None:
        opened = " open" if row["depth"] == 0 else ""
        out.append(f"<details{opened}><summary>{summary(row)}</summary>")
        out.append(kernel_table(row["key"]))
        for kid in children.get(row["key"], []):
            visit(kid)
        out.append("</details>")

    for root in children.get(None, []):
        visit(root)
    out.append("</div>")
    return "\n".join(line for line in out if line) + "\n"


def icicle_rows(modules: ModulesResult, stage: str) -> pd.DataFrame:
    """One rectangle per folded module of ``stage`` down to ICICLE_DEPTH: x0/x1 in % of the stage
    (children laid side by side inside their parent, in tree order), level = depth."""
    tree = modules.tree[modules.tree["stage"] == stage]
    total = modules.stage_ns.get(stage) or 0
    if not total:
        return pd.DataFrame(columns=["key", "cls", "level", "x0", "x1", "ms", "pct"])
    start: dict[Any, float] = {None: 0.0}
    rects = []
    for row in _records(tree):  # tree order: a parent comes before its children
        x0 = start.get(row["parent"], 0.0)
        width = row["gpu_ns"] * 100.0 / total
        start[row["parent"]] = x0 + width
        start[row["key"]] = x0
        if row["depth"] < ICICLE_DEPTH and width >= ICICLE_MIN_PCT:
            rects.append({"key": row["key"], "cls": row["cls"], "level": int(row["depth"]), "x0": x0,
                          "x1": x0 + width, "ms": row["gpu_ns"] / 1e6, "pct": width})
    return pd.DataFrame(rects, columns=["key", "cls", "level", "x0", "x1", "ms", "pct"])


def icicle_chart(chart_slug: str, rects: pd.DataFrame, t: Callable[..., str]) -> ch.Chart:
    """Icicle: each module a bar as wide as its share of the stage, submodules beneath their parent."""
    data = rects.assign(key=[t("modules.outside") if k == OUTSIDE else k for k in rects["key"]])
    data = data.assign(label=[_box_label(k, (x1 - x0) * ch.WIDTH / 100) for k, x0, x1 in
                              zip(data["key"], data["x0"], data["x1"])], xm=(data["x0"] + data["x1"]) / 2)
    boxes = alt.Chart(ch.inline_data(ch.chart_records(data)))
    chart = boxes.mark_rect(stroke="white", strokeWidth=0.5).encode(
        x=alt.X("x0:Q", title=t("modules.chart_x"), scale=alt.Scale(domain=[0, 100])),
        x2=alt.X2("x1:Q"),
        y=alt.Y("level:O", title=t("modules.chart_y")),
        color=alt.Color("level:O", legend=None, scale=alt.Scale(scheme="blues", reverse=True)),
        tooltip=[alt.Tooltip("key:N", title=t("modules.module")), alt.Tooltip("cls:N", title=t("columns.class")),
                 alt.Tooltip("ms:Q", title=t("columns.total_ms"), format=".3f"),
                 alt.Tooltip("pct:Q", title=t("modules.chart_x"), format=".2f")],
    )
    # each box wide enough for a few characters carries its module's name, in the SVG itself
    labels = boxes.mark_text(fontSize=10).encode(
        x=alt.X("xm:Q", scale=alt.Scale(domain=[0, 100])), y=alt.Y("level:O"), text=alt.Text("label:N"),
        color=alt.condition(alt.datum.level < 2, alt.value("white"), alt.value("black")),  # on dark / light blue
        tooltip=[alt.Tooltip("key:N", title=t("modules.module"))],
    ).transform_filter(  # drawn only where the box holds it at the width the chart is drawn at
        f"datum.label != '' && (datum.x1 - datum.x0) * width / 100 >= length(datum.label) * {LABEL_CHAR_PX}")
    height = 40 * max(1, int(rects["level"].max()) + 1) if len(rects) else 40
    return ch.Chart(chart_slug, ch.chart_spec(alt.layer(chart, labels).properties(width=ch.WIDTH, height=height)))


#: average width of a 10 px label character, in px (for the box labels of the icicle)
LABEL_CHAR_PX = 6.0


def _box_label(key: str, width_px: float) -> str:
    """The module's last name (with its parent's where the last is a list index, ``layers.3``), cut to
    what ``width_px`` holds; "" below three characters."""
    parts = str(key).split(" [")[0].split(".")
    name = ".".join(parts[-2:]) if len(parts) > 1 and parts[-1].isdigit() else parts[-1]
    room = int(width_px / LABEL_CHAR_PX) - 1
    if room < 3:
        return ""
    return name if len(name) <= room else name[: room - 1] + "…"
