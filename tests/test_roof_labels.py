"""The physical roofline's roof labels never overlap each other or a point: on the log axes Vega draws
(whole decades; the plot HEIGHT px tall at every page width, WIDTH px wide or 278 px as kr-charts.js
lays it out in a 400 px page) each label stands left of its ridge and above the bandwidth slope, where
no kernel can be, one text box apart from the next (an 11 px label's box is 13 px tall in Chromium,
the browser tests' measure), in English and Chinese. tests/test_browser_decision.py measures the
drawn boxes."""
from __future__ import annotations

import math

import pytest
from helpers_pages import example_result

from generator.render import charts as ch
from generator.render.translations import translator

TEXT_BOX_PX = 13
#: a label's glyphs at 11 px, at most this wide each (an ASCII glyph is about 6.5 px; a CJK one 11 px)
GLYPH_PX = {False: 7.0, True: 11.0}
#: a point's mark (size 80: a diamond's half diagonal is 6.3 px), as its box
POINT_PX = 6.3
#: the plot's width on the 1400 px page and on the 400 px one (the column less kr-charts.js's AXES)
WIDTHS = (ch.WIDTH, 278)


def _chart(lang: str) -> tuple[dict, dict]:
    result, _ = example_result()
    roof = result.roofline
    return ch.physical_roofline_chart("roofline-physical", roof["physical"], roof["roofs"], translator(lang)).spec, roof


def _decades(values: list[float]) -> tuple[int, int]:
    return math.floor(math.log10(min(values))), math.ceil(math.log10(max(values)))


def _px(value: float, span: tuple[int, int], size: float, flip: bool) -> float:
    share = (math.log10(value) - span[0]) / (span[1] - span[0])
    return size * (1 - share) if flip else size * share


def _layout(spec: dict) -> tuple[list[tuple[dict, dict]], list[tuple[float, float]], tuple[int, int], tuple[int, int]]:
    """The labels (row, mark), the points (AI, FLOP/s) and the x and y decades the chart spans."""
    xs, ys, points, labels = [], [], [], []
    for layer in spec["layer"]:
        rows, enc, mark = layer["data"]["values"], layer["encoding"], layer["mark"]
        xs += [float(r[enc["x"]["field"]]) for r in rows]
        ys += [float(r[enc["y"]["field"]]) for r in rows]
        if mark["type"] == "point":
            points += [(float(r[enc["x"]["field"]]), float(r[enc["y"]["field"]])) for r in rows]
        if mark["type"] == "text":
            labels += [(r, mark) for r in rows]
    return labels, points, _decades(xs), _decades(ys)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_roof_labels_stand_a_text_box_apart(lang):
    spec, roof = _chart(lang)
    labels, _, _, y_span = _layout(spec)
    assert len(labels) == len(roof["roofs"]["ceilings"]) + 1 >= 5  # tensor, FP16, FP32, FP64 and DRAM on the H200
    pixels = sorted(_px(float(row["label_flops"]), y_span, ch.HEIGHT, True) for row, _ in labels)
    gaps = [b - a for a, b in zip(pixels, pixels[1:], strict=False)]
    assert min(gaps) >= TEXT_BOX_PX, gaps


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_roof_labels_stand_above_the_slope_clear_of_the_points(lang, width):
    """Each label's text box lies left of and above the corner it names, above the bandwidth slope
    (which rises to the right: the box's bottom right corner is the one nearest to it), right of the
    y axis, and holds no point's box. Once the roofs were named at their right ends, over the points."""
    spec, roof = _chart(lang)
    labels, points, x_span, y_span = _layout(spec)
    bandwidth = roof["roofs"]["peak_dram_bytes_per_s"]
    assert len(points) >= 10
    for row, mark in labels:
        assert mark["align"] == "right" and mark["baseline"] == "bottom"
        right = _px(float(row["ai"]), x_span, width, False) + mark.get("dx", 0)
        bottom = _px(float(row["label_flops"]), y_span, ch.HEIGHT, True) + mark.get("dy", 0)
        left = right - sum(GLYPH_PX[ord(c) > 0x2E80] for c in row["label"])
        assert left >= 0, (row["label"], left)
        slope_at_right = bandwidth * 10 ** (x_span[0] + right / width * (x_span[1] - x_span[0]))
        assert _px(slope_at_right, y_span, ch.HEIGHT, True) >= bottom, row["label"]
        inside = [(ai, f) for ai, f in points
                  if left - POINT_PX <= _px(ai, x_span, width, False) <= right + POINT_PX
                  and bottom - TEXT_BOX_PX - POINT_PX <= _px(f, y_span, ch.HEIGHT, True) <= bottom + POINT_PX]
        assert inside == [], (row["label"], inside)


def test_each_roof_is_named_with_its_peak():
    """A reader tells the roofs apart: each label names its datapath and peak, in the roof's colour."""
    spec, roof = _chart("en")
    labels, *_ = _layout(spec)
    texts = sorted(row["label"] for row, _ in labels)
    assert texts == ["DRAM: 4.81 TB/s", "FP16: 134 TFLOP/s", "FP32: 66.9 TFLOP/s", "FP64: 33.5 TFLOP/s",
                     "Tensor Core: 1.07 PFLOP/s"], texts
    assert all(row["datapath_label"] in ("Tensor Core", "FP16 (non-Tensor Core)", "FP32", "FP64")
               for row, mark in labels if "datapath_label" in row)
