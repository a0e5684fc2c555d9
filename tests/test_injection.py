"""Text from report.yaml and inputs escaped per context, without a browser: CSV cells, MkDocs config,
front matter, versions.json, ids that would collide with the site's own files, control characters."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from markupsafe import Markup
from mkdocs.utils.yaml import get_yaml_loader

from generator.errors import InputError
from generator.pipeline.config import load_report
from generator.render.html_config import front_matter_title, yaml_html_text
from generator.text_safety import clean_text, csv_cell, csv_safe

DATA = Path(__file__).parent / "data"
HOSTILE = "T<script>alert(1)</script>&amp;\"'"


def test_csv_cells_that_start_a_formula_are_neutralized() -> None:
    names = ["=HYPERLINK(\"http://x\",\"y\")", "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\tx",
             "void gemm<float>(int)", "ampere_sgemm_128x64_nn"]
    frame = pd.DataFrame({"name": names, "count": range(len(names)), "total_ns": [-1.5] * len(names)})
    text = csv_safe(frame).to_csv(index=False, lineterminator="\n")
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert [r["name"] for r in rows] == ["'" + n for n in names[:5]] + names[5:]
    assert [r["count"] for r in rows] == [str(i) for i in range(7)]  # numbers untouched, even negative ones
    assert {r["total_ns"] for r in rows} == {"-1.5"}
    assert csv_cell("\rcmd") == "'\rcmd" and csv_cell(-3) == -3


def test_site_name_reads_back_literally_in_every_material_use() -> None:
    loaded = yaml.load(f"site_name: {yaml_html_text(HOSTILE)}", Loader=get_yaml_loader())["site_name"]
    assert isinstance(loaded, Markup) and str(loaded) == "T&lt;script&gt;alert(1)&lt;/script&gt;&amp;amp;&quot;&#x27;"
    assert loaded.unescape() == HOSTILE  # shown as typed, escaped once raw and once under `| e`
    assert yaml.safe_load(f"site_name: {yaml_html_text('OCR VLM (H200)')}")["site_name"] == "OCR VLM (H200)"
    assert yaml.safe_load(f"title: {front_matter_title(HOSTILE)}")["title"] == (
        "T&lt;script&gt;alert(1)&lt;/script&gt;&amp;amp;&quot;&#x27;")


@pytest.mark.parametrize("bad_id", ["index.html", "versions.json", "latest", "Index.HTML", "llms.txt", "x" * 101])
def test_version_ids_that_collide_with_site_files_are_refused(bad_id: str, tmp_path: Path) -> None:
    report = tmp_path / "report.yaml"
    report.write_text(f"""
id: r
title: {{en: R, zh: R}}
versions:
  - id: {json.dumps(bad_id)}
    title: {{en: V, zh: V}}
    date: 2026-11-20
    inputs: {{ncu: [{DATA}/ESMM-Research/metrics.csv]}}
""", encoding="utf-8")
    with pytest.raises(InputError, match=r"versions\[0\]\.id: "):
        load_report(report)


@pytest.mark.parametrize("title", ["a\\x1b[31mred", "bell\\x07", "nul\\x00", "\\ud800 lone", "c1\\x9b"])
def test_titles_with_control_characters_are_refused(title: str, tmp_path: Path) -> None:
    report = tmp_path / "report.yaml"
    report.write_text(f'id: r\ntitle: {{en: "{title}", zh: ok}}\nversions: [{{id: v, title: {{en: V, zh: V}}, '
                      f'date: 2026-11-20, inputs: {{ncu: ["{DATA}/ESMM-Research/metrics.csv"]}}}}]\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"title\.en: contains the control character or lone surrogate U\+"):
        load_report(report)


def test_clean_text_replaces_what_native_code_and_terminals_obey() -> None:
    assert clean_text("k\x1b[2Jernel\x07\x00\ud800\x9b ok\tx") == "k\ufffd[2Jernel\ufffd\ufffd\ufffd\ufffd ok\tx"
