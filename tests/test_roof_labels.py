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
        if layer["mark"]["type"] == "text" and layer["mark"].get("align") == "right":
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
