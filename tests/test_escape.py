"""Data text in Markdown tables renders literally: real kernel names from the fixtures + hypothesis."""
from __future__ import annotations

import csv
import html
import io
import lzma
import re
import sqlite3
from html.parser import HTMLParser
from pathlib import Path

import markdown
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.render.markdown import escape_attr, escape_text, name_cell, table

DATA = Path(__file__).parent / "data"
#: The Markdown extensions the site is built with (tables, attr_list, md_in_html, toc).
EXTENSIONS = ["tables", "attr_list", "md_in_html", "toc"]


class _Cells(HTMLParser):
    """Collects each <td>'s text and the title attributes of spans inside it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.cells: list[str] = []
        self.titles: list[str] = []
        self.tags: list[str] = []
        self._in_td = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "td":
            self._in_td = True
            self.cells.append("")
        if tag == "span":
            self.titles.append(dict(attrs).get("title") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._in_td = False

    def handle_data(self, data: str) -> None:
        if self._in_td:
            self.cells[-1] += data


def _literal(text: str) -> str:
    """What the page shows for ``text``: one line, control characters as U+FFFD."""
    return " ".join(re.sub(r"[\x00-\x1f\x7f-\x9f]", "\ufffd", w) for w in text.split())


def _render(cells: list[str]) -> _Cells:
    source = table(["a", "b"], [[c, "x"] for c in cells])
    parser = _Cells()
    parser.feed(markdown.markdown(source, extensions=EXTENSIONS))
    return parser


def _real_names() -> list[str]:
    """Every kernel name of the H200 nsys export and the public ncu CSVs (read with sqlite3/csv)."""
    names: set[str] = set()
    raw = lzma.decompress((DATA / "h200-small/small_vlm.nsys.sqlite.xz").read_bytes())
    db = sqlite3.connect(":memory:")
    db.deserialize(raw)
    names.update(r[0] for r in db.execute(
        "SELECT DISTINCT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k"
        " JOIN StringIds s ON s.id IN (k.demangledName, k.shortName)"))
    for path in ("leleucas-apc/gpt2_flashattn_nsight.csv.xz", "leleucas-apc/bert_torch_nsight.csv.xz"):
        text = lzma.decompress((DATA / path).read_bytes()).decode()
        names.update(row["Kernel Name"] for row in csv.DictReader(io.StringIO(text)))
    with open(DATA / "ESMM-Research/metrics.csv", newline="") as f:
        names.update(row["Kernel Name"] for row in csv.DictReader(f))
    return sorted(names)


REAL_NAMES = _real_names()


def test_real_names_cover_the_hard_characters() -> None:
    joined = "".join(REAL_NAMES)
    assert len(REAL_NAMES) > 50
    for char in "<>_*(),:":
        assert char in joined, char


def test_real_names_render_literally_in_tables() -> None:
    rendered = _render([escape_text(n) for n in REAL_NAMES])
    assert rendered.cells[0::2] == [" ".join(n.split()) for n in REAL_NAMES]
    assert set(rendered.tags) <= {"table", "thead", "tbody", "tr", "th", "td"}


def test_name_cells_shorten_and_keep_the_full_name_on_hover() -> None:
    long_names = [n for n in REAL_NAMES if len(n) > 64]
    assert long_names
    rendered = _render([name_cell(n, "unknown") for n in long_names])
    assert rendered.titles == long_names
    for shown, full in zip(rendered.cells[0::2], long_names):
        assert shown.endswith("…") and len(shown) == 64 and full.startswith(shown[:-1])


def test_script_and_pipe_in_a_name_stay_text() -> None:
    name = 'evil<script>alert("x")</script>|kernel_[1]*`\\'
    rendered = _render([name_cell(name, "unknown"), escape_text(name)])
    assert rendered.cells[0::2] == [name, name]
    assert "script" not in rendered.tags
    assert rendered.titles == [name]


def test_missing_name_shows_unknown() -> None:
    assert _render([name_cell(None, "未知")]).cells[0] == "未知"


NAMEISH = st.text(
    alphabet=st.sampled_from(list("abcXYZ019 _*`[]()<>|\\&#;:!.-+{}~'\"/=$%^@")) | st.characters(),
    min_size=1,
    max_size=60,
).filter(lambda s: s.strip())


@settings(max_examples=300, deadline=None)
@given(NAMEISH)
def test_any_text_renders_literally(text: str) -> None:
    rendered = _render([escape_text(text)])
    assert rendered.cells[0] == _literal(text)
    assert set(rendered.tags) <= {"table", "thead", "tbody", "tr", "th", "td"}


@settings(max_examples=300, deadline=None)
@given(NAMEISH)
def test_any_text_survives_an_attribute(text: str) -> None:
    rendered = _render([f'<span title="{escape_attr(text)}">x</span>'])
    assert rendered.titles == [_literal(text)]


@pytest.mark.parametrize("text", ["# heading", "- item", "1. item", "> quote", "---", "    code"])
def test_block_markup_at_line_start_is_text(text: str) -> None:
    rendered = markdown.markdown(escape_text(text), extensions=EXTENSIONS)
    assert rendered == f"<p>{html.escape(text.strip(), quote=False)}</p>"


@settings(max_examples=300, deadline=None)
@given(NAMEISH)
def test_any_text_renders_literally_as_a_paragraph(text: str) -> None:
    parser = _Cells()
    parser.feed(markdown.markdown("x\n\n" + escape_text(text), extensions=EXTENSIONS))
    assert set(parser.tags) == {"p"}
    rendered = markdown.markdown(escape_text(text), extensions=EXTENSIONS)
    assert html.unescape(rendered.removeprefix("<p>").removesuffix("</p>")) == _literal(text)
