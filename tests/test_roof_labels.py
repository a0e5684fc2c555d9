"""The physical roofline's roof labels never overlap: on the log axis Vega draws (whole decades, the
plot HEIGHT px tall at every page width) consecutive labels stand at least one text box apart (an
11 px label's box is 13 px tall in Chromium, the browser tests' measure), in English and Chinese."""
from __future__ import annotations

import math

import pytest
from helpers_pages import example_result

from generator.render import charts as ch
from generator.render.translations import translator

TEXT_BOX_PX = 13


def _labels_and_domain(spec: dict) -> tuple[list[float], list[float]]:
    """The y values (FLOP/s) of the roof labels of the right end, and every y value the chart draws."""
    labels, values = [], []
    for layer in spec["layer"]:
        rows = layer["data"]["values"]
        field = layer["encoding"]["y"]["field"]
        values += [float(r[field]) for r in rows if r.get(field)]
        if layer["mark"]["type"] == "text" and all(r["order"] == 2 for r in rows):  # the flat roofs' ends
            labels = [float(r["label_flops"]) for r in rows]
    return labels, values


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_roof_labels_stand_a_text_box_apart(lang):
    result, _ = example_result()
    roof = result.roofline
    chart = ch.physical_roofline_chart("roofline-physical", roof["physical"], roof["roofs"], translator(lang))
    labels, values = _labels_and_domain(chart.spec)
    assert len(labels) == len(roof["roofs"]["ceilings"]) >= 4  # tensor, FP16, FP32, FP64 on the H200
    low, high = math.floor(math.log10(min(values))), math.ceil(math.log10(max(values)))
    pixels = sorted(ch.HEIGHT * (1 - (math.log10(v) - low) / (high - low)) for v in labels)
    gaps = [b - a for a, b in zip(pixels, pixels[1:], strict=False)]
    assert min(gaps) >= TEXT_BOX_PX, gaps


#: a label's glyphs at 11 px, at most this wide each (an ASCII glyph is about 6.5 px; a CJK one 11 px)
GLYPH_PX = {False: 7.0, True: 11.0}
#: a point's mark (size 80: a radius of about 5 px) and the label's text box above its baseline
POINT_RADIUS_PX, BOX_PX = 5, TEXT_BOX_PX


def _px(value: float, low: float, high: float, size: float, flip: bool) -> float:
    share = (math.log10(value) - low) / (high - low)
    return size * (1 - share) if flip else size * share


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_bandwidth_label_stands_clear_of_the_points(lang):
    """The DRAM label's text box (as Vega places it on the nice log scales) stands above the
    bandwidth slope, where no kernel can be (it once started at the slope's foot and ran right,
    under the rising slope, onto the points), and holds no point."""
    result, _ = example_result()
    roof = result.roofline
    chart = ch.physical_roofline_chart("roofline-physical", roof["physical"], roof["roofs"], translator(lang))
    xs, ys, points, label = [], [], [], None
    for layer in chart.spec["layer"]:
        rows, enc = layer["data"]["values"], layer["encoding"]
        xs += [float(r[enc["x"]["field"]]) for r in rows]
        ys += [float(r[enc["y"]["field"]]) for r in rows]
        if layer["mark"]["type"] == "point":
            points += [(float(r[enc["x"]["field"]]), float(r[enc["y"]["field"]])) for r in rows]
        if layer["mark"]["type"] == "text" and rows[0]["label"].startswith("DRAM"):
            label, mark, y_field = rows[0], layer["mark"], enc["y"]["field"]
    assert label is not None and len(points) >= 10
    x_low, x_high = math.floor(math.log10(min(xs))), math.ceil(math.log10(max(xs)))
    y_low, y_high = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
    x = _px(float(label["ai"]), x_low, x_high, ch.WIDTH, False)
    bottom = _px(float(label[y_field]), y_low, y_high, ch.HEIGHT, True) + mark.get("dy", 0)
    width = sum(GLYPH_PX[ord(c) > 0x2E80] for c in label["label"])
    left, right = (x - width, x) if mark["align"] == "right" else (x, x + width)
    assert left >= -60 and right <= ch.WIDTH  # in the plot, or over the y axis' numbers at most
    # the slope rises to the right: the box's bottom right corner is the one nearest to it
    slope_at_right = roof["roofs"]["peak_dram_bytes_per_s"] * 10 ** (x_low + right / ch.WIDTH * (x_high - x_low))
    assert _px(slope_at_right, y_low, y_high, ch.HEIGHT, True) >= bottom, label["label"]
    inside = [(ai, f) for ai, f in points
              if left - POINT_RADIUS_PX <= _px(ai, x_low, x_high, ch.WIDTH, False) <= right + POINT_RADIUS_PX
              and bottom - BOX_PX - POINT_RADIUS_PX <= _px(f, y_low, y_high, ch.HEIGHT, True) <= bottom + POINT_RADIUS_PX]
    assert inside == [], (label["label"], inside)
