"""Charts of the real H200 example: data traced to the result, roofs, ids, determinism, SVG, inline JSON."""
from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path

import pytest
import vl_convert
from helpers_pages import example_result

from generator.errors import InputError
from generator.render import charts as ch
from generator.render import svg
from generator.render.chart_table import build_charts
from generator.render.fonts import pin_fonts
from generator.render.svg import svg_batch
from generator.render.translations import translator
from generator.text_safety import clean_tree


@pytest.fixture(scope="module")
def result():
    return example_result()[0]


@pytest.fixture(scope="module", params=["en", "zh"])
def charts(request, result):
    return request.param, build_charts(result, translator(request.param))


def _values(spec: dict) -> list[dict]:
    """Every inline data row of a (layered) spec."""
    rows = list(spec.get("data", {}).get("values", []))
    for layer in spec.get("layer", []):
        rows += layer.get("data", {}).get("values", [])
    return rows


def test_every_dataset_has_its_chart(charts, result) -> None:
    _, built = charts
    assert {f"top-{i}" for i in range(len(result.stages))} <= set(built)
    assert {f"hist-{k}" for k, v in result.histograms.items() if len(v)} <= {k for k, c in built.items() if c}
    assert all(built[k] is not None for k in ("roofline-normalized", "roofline-physical",
                                              "roofline-per-kernel"))


def test_ids_have_the_prefix_and_are_unique(charts) -> None:
    _, built = charts
    ids = [c.element_id for c in built.values() if c]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"kr-chart-[a-z0-9-]+", i) for i in ids)


def test_top_kernel_bars_are_the_result_rows(charts, result) -> None:
    _, built = charts
    decode = result.stages.index("decode")
    rows = _values(built[f"top-{decode}"].spec)
    top = result.top_kernels["decode"]
    assert [r["friendly_name"] for r in rows] == list(top["friendly_name"])
    for row, pct in zip(rows, top["time_pct"]):
        assert row["time_pct"] == pytest.approx(pct, rel=1e-5)


def test_histogram_cells_are_the_kernels(charts, result) -> None:
    lang, built = charts
    for key, values in result.histograms.items():
        if not len(values):
            continue
        rows = _values(built[f"hist-{key}"].spec)
        assert sorted(r["value"] for r in rows) == pytest.approx(sorted(values["value"]), rel=1e-5)
        assert {r["class_label"] for r in rows} <= {translator(lang)(f"classes.{c}") for c in values["class"]}


def test_physical_roofline_roofs_and_datapath_shapes(charts, result) -> None:
    lang, built = charts
    t = translator(lang)
    spec = built["roofline-physical"].spec
    roofs = result.roofline["roofs"]
    lines = [r for r in _values(spec) if "roof" in r and "label" not in r]
    bandwidth = roofs["peak_dram_bytes_per_s"]
    # every roof named in the SVG with its peak, the slope with the DRAM bandwidth (4.81 TB/s on the H200)
    labels = sorted(r["label"] for r in _values(spec) if "label" in r)
    assert len(labels) == len(roofs["ceilings"]) + 1
    assert t("charts.bandwidth_label", bandwidth="4.81 TB/s") in labels
    assert t("charts.roof_label", roof=t("datapaths.fp32"), peak="66.9 TFLOP/s") in labels
    assert {r["datapath_label"] for r in lines} == {t(f"datapaths.{d}") for d in roofs["ceilings"]}
    for datapath, peak in roofs["ceilings"].items():
        low, ridge, high = sorted((r for r in lines if r["datapath_label"] == t(f"datapaths.{datapath}")),
                                  key=lambda r: r["order"])
        assert low["flops"] == pytest.approx(low["ai"] * bandwidth, rel=1e-5)  # bandwidth slope
        assert ridge["flops"] == pytest.approx(peak, rel=1e-5) == high["flops"]  # flat compute roof
        assert ridge["ai"] == pytest.approx(peak / bandwidth, rel=1e-5)
    points = [r for r in _values(spec) if "arithmetic_intensity" in r]
    physical = result.roofline["physical"]
    assert len(points) == int(((physical["arithmetic_intensity"] > 0) & (physical["achieved_flop_per_s"] > 0)).sum())
    assert {"tensor", "fp32"} <= set(physical["datapath"])  # the H200 capture has both
    shapes = [layer["encoding"]["shape"]["scale"] for layer in spec["layer"] if "shape" in layer["encoding"]]
    scale = shapes[0]
    shape_of = dict(zip(scale["domain"], scale["range"]))
    assert shape_of[t("datapaths.tensor")] != shape_of[t("datapaths.fp32")]
    x = spec["layer"][-1]["encoding"]["x"]
    assert x["scale"]["type"] == "log"


def test_per_kernel_roofline_selects_by_a_named_param(charts) -> None:
    _, built = charts
    spec = built["roofline-per-kernel"].spec
    assert [p["name"] for p in spec["params"]] == ["kr_kernel"]
    options = spec["params"][0]["bind"]["options"]
    assert options == sorted(options) and spec["params"][0]["value"] == options[0]


def test_tooltips_name_class_and_metrics(charts) -> None:
    _, built = charts
    spec = built["roofline-normalized"].spec
    tooltip = [f["field"] for f in spec["layer"][1]["encoding"]["tooltip"]]
    assert tooltip[:2] == ["friendly_name", "class_label"] and "sm_throughput_pct" in tooltip


def test_specs_are_deterministic_and_json_stable(result) -> None:
    first = build_charts(result, translator("en"))
    second = build_charts(result, translator("en"))
    for key, chart in first.items():
        if chart is None:
            continue
        text = json.dumps(chart.spec, sort_keys=True)
        assert text == json.dumps(second[key].spec, sort_keys=True)
        assert "param_" not in text and "view_" not in text  # no counter-generated names
        for row in _values(chart.spec):
            for value in row.values():
                if isinstance(value, float):
                    assert math.isfinite(value) and float(f"{value:.6g}") == value


def test_inline_block_cannot_close_its_script(result, tmp_path: Path) -> None:
    chart = build_charts(result, translator("en"))["roofline-normalized"]
    spec = json.loads(json.dumps(chart.spec))
    spec["layer"][1]["data"]["values"][0]["friendly_name"] = "</script><script>alert(1)</script>&"
    block = ch.chart_block(ch.Chart(chart.slug, spec), "en", "alt")
    payload = re.search(r'<script type="application/json" id="kr-spec-[^"]+">(.*)</script>', block)[1]
    assert "<" not in payload and ">" not in payload and "&" not in payload
    assert json.loads(payload) == spec
    assert f'id="{chart.element_id}" data-spec-ref="kr-spec-{chart.slug}"' in block
    assert f"](assets/charts/{chart.slug}-en.svg)" in block


def test_svgs_render(result, tmp_path: Path) -> None:
    charts = build_charts(result, translator("zh"))
    keys = ("roofline-physical", "hist-duration_us")
    with svg_batch() as svgs:
        paths = {key: ch.write_svg(charts[key], "zh", tmp_path, svgs) for key in keys}
    for key, path in paths.items():
        assert path == tmp_path / "assets" / "charts" / f"{charts[key].slug}-zh.svg"
        svg = path.read_text(encoding="utf-8")
        assert svg.startswith("<svg") and translator("zh")("charts.kernels" if key.startswith("hist")
                                                          else "charts.ai_axis") in svg
        pin_fonts()  # as the worker does
        assert svg == vl_convert.vegalite_to_svg(clean_tree(charts[key].spec))  # as drawn in this process


def test_a_chart_the_renderer_rejects_is_one_line_naming_its_svg(result, tmp_path: Path) -> None:
    chart = build_charts(result, translator("en"))["stage-time"]
    failed = r"bad-en\.svg: chart renderer failed \(Vega-Lite to SVG conversion failed"
    with pytest.raises(InputError, match=failed), svg_batch() as svgs:
        ch.write_svg(chart, "en", tmp_path, svgs)
        ch.write_svg(ch.Chart("bad", {**chart.spec, "mark": "nonsense"}), "en", tmp_path, svgs)
    assert (tmp_path / chart.svg_path("en")).read_text(encoding="utf-8").startswith("<svg")
    with svg_batch() as svgs:  # the worker still serves the next version's charts
        ch.write_svg(chart, "zh", tmp_path, svgs)
    assert (tmp_path / chart.svg_path("zh")).read_text(encoding="utf-8").startswith("<svg")


def test_an_error_inside_a_batch_comes_out_as_itself(result, tmp_path: Path) -> None:
    """A page failing while charts are still queued for the worker: the page's error, one line (the
    worker is ended with lines still buffered for it; that must not turn into a broken pipe)."""
    chart = build_charts(result, translator("en"))["stage-time"]
    with pytest.raises(InputError, match=r"page\.md: the page failed"), svg_batch() as svgs:
        ch.write_svg(chart, "en", tmp_path, svgs)  # smaller than the pipe's buffer: it waits there
        time.sleep(0.5)
        raise InputError(tmp_path / "page.md", "the page failed")
    with svg_batch() as svgs:  # and the next batch gets a worker
        ch.write_svg(chart, "en", tmp_path, svgs)
    assert (tmp_path / chart.svg_path("en")).read_text(encoding="utf-8").startswith("<svg")


def test_a_worker_that_died_is_one_line_and_the_next_batch_gets_a_new_one(result, tmp_path: Path) -> None:
    chart = build_charts(result, translator("en"))["stage-time"]
    with pytest.raises(InputError, match=r"stage-time-en\.svg: chart renderer failed \(worker exited with status -9\)"), \
            svg_batch() as svgs:
        svg._worker.process.kill()  # as the kernel's OOM killer would
        svg._worker.process.wait()
        ch.write_svg(chart, "en", tmp_path, svgs)
    with svg_batch() as svgs:
        ch.write_svg(chart, "en", tmp_path, svgs)
    assert (tmp_path / chart.svg_path("en")).read_text(encoding="utf-8").startswith("<svg")


def test_spec_compiles_to_vega(charts) -> None:
    _, built = charts
    for chart in built.values():
        if chart is not None:
            assert vl_convert.vegalite_to_vega(chart.spec)["$schema"].startswith("https://vega.github.io")


def test_icicle_boxes_carry_their_module_names(charts) -> None:
    """Each box's label is its module's last name (``layers.3`` for a list entry), cut to its width;
    the chart draws it only where the box holds it at the drawn width."""
    from generator.render.module_tree import _box_label

    _, built = charts
    spec = built["modules-0"].spec
    rects, texts = spec["layer"]
    assert rects["mark"]["type"] == "rect" and texts["mark"]["type"] == "text"
    assert texts["encoding"]["text"]["field"] == "label" and "width" in texts["transform"][0]["filter"]
    rows = _values(spec)
    assert rows and all(r["label"] == _box_label(r["key"], (r["x1"] - r["x0"]) * 5.6) for r in rows)
    assert _box_label("llm.model.layers.3", 560) == "layers.3"
    assert _box_label("llm.model.layers.3.self_attn [Attention]", 560) == "self_attn"
    assert _box_label("vision.encoder", 40) == "enco…" and _box_label("vision.encoder", 20) == ""
