"""Tables of the built site in headless Chromium: fit at 1400 px, sort by number, filter, sticky
header, scroll inside their own box at 400 px, print on A4 landscape.

The site is test_browser's two-version report over the real H200 files (its ``served`` fixture);
the expected orders come from the version's own ``data/top_kernels.csv``. Screenshots (1400 and
400 px, EN and ZH) are written to ``$KR_SCREENSHOTS`` (default: a pytest temporary folder).
"""
from __future__ import annotations

import csv
import os
import re
from pathlib import Path

import pytest
import test_browser
from test_browser import Served, Tab, _open

from generator.render.translations import translator

pytestmark = pytest.mark.browser
#: test_browser's fixtures: its site, the browser and a tab that records every console problem
served, browser, tab = test_browser.served, test_browser.browser, test_browser.tab

#: the first table of the top-kernels page is the all-stages one
FIRST_TABLE = "article table >> nth=0"


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = Path(os.environ.get("KR_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _top_rows(served: Served, stage: str = "all") -> list[dict[str, str]]:
    with open(served.site / "v2" / "data" / "top_kernels.csv", encoding="utf-8", newline="") as f:
        return [r for r in csv.DictReader(f) if r["stage"] == stage]


def _column(tab: Tab, header: str) -> list[str]:
    """The visible cells of the first table's column headed ``header`` (its header text)."""
    return tab.page.eval_on_selector(FIRST_TABLE, """(table, header) => {
        const heads = [...table.tHead.rows[0].cells].map(th => th.textContent.trim());
        const i = heads.indexOf(header);
        if (i < 0) throw new Error("no column " + header + " in " + heads.join(" | "));
        return [...table.tBodies[0].rows].filter(r => !r.hidden).map(r => r.cells[i].textContent.trim());
    }""", header)


def _click_header(tab: Tab, header: str) -> None:
    tab.page.locator(FIRST_TABLE).locator("th", has_text=header).first.click()


def _number(cell: str) -> float:
    return float(re.match(r"[-+]?[\d,]*\.?\d+", cell)[0].replace(",", ""))


def _overflow(tab: Tab) -> dict:
    return tab.page.evaluate("""() => ({
        page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
        tables: [...document.querySelectorAll('article table')].map(t => {
            const box = t.closest('.md-typeset__scrollwrap') || t.parentElement;
            const row = t.tBodies[0] && t.tBodies[0].rows[0];
            return {table: t.getBoundingClientRect().width, box: box.clientWidth,
                    scrolls: box.scrollWidth > box.clientWidth, overflowX: getComputedStyle(box).overflowX,
                    // the header sits above the first row (it never covers rows of a table in view)
                    covers: !!row && t.tHead.rows[0].cells[0].getBoundingClientRect().bottom > row.getBoundingClientRect().top + 1};
        }),
    })""")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_top_kernels_fit_at_1400_px(tab: Tab, served: Served, shots: Path, lang: str) -> None:
    tab.page.set_viewport_size({"width": 1400, "height": 900})
    _open(tab, served.url("v2", lang, "top-kernels"))
    found = _overflow(tab)
    assert found["page"] == 0, found
    assert len(found["tables"]) == 3  # all stages, prefill, decode
    assert not any(t["scrolls"] for t in found["tables"]), found
    # numbers right-aligned with their unit in the header only
    t = translator(lang)
    assert _column(tab, t("columns.total_ms"))[0] == f"{float(_top_rows(served)[0]['total_ns']) / 1e6:.2f}"
    align = tab.page.eval_on_selector(FIRST_TABLE, "t => getComputedStyle(t.tBodies[0].rows[0].cells[4]).textAlign")
    assert align == "right"
    tab.page.screenshot(path=str(shots / f"top-kernels-{lang}-1400.png"), full_page=True)
    assert tab.problems == []


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_page_scrolls_sideways_at_1400_px(tab: Tab, served: Served, lang: str) -> None:
    """No table is wider than the content column: a page with a wide one (the classification page's 13
    columns) gives it the table of contents' room."""
    tab.page.set_viewport_size({"width": 1400, "height": 900})
    hidden = 0
    for page in test_browser.PAGES:
        _open(tab, served.url("v2", lang, page))
        tab.page.wait_for_timeout(50)  # kr-tables.js measures the tables on the next frame
        found = _overflow(tab)
        assert found["page"] == 0, (page, found)
        for table in found["tables"]:
            assert table["table"] <= table["box"] + 1, (page, found)
            assert not table["covers"], (page, found)
        hidden += tab.page.evaluate("document.body.classList.contains('kr-no-toc')")
    assert tab.problems == []
    if lang == "en":  # the classification page gave its kernel table the table of contents' room
        assert hidden >= 1


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_numeric_headers_sort_by_number(tab: Tab, served: Served, lang: str) -> None:
    t = translator(lang)
    rows = _top_rows(served)
    _open(tab, served.url("v2", lang, "top-kernels"))
    launches = t("columns.count")
    shown = [int(c.replace(",", "")) for c in _column(tab, launches)]
    assert sorted(shown) == sorted(int(r["count"]) for r in rows)
    texts = _column(tab, launches)
    assert sorted(texts, reverse=True) != sorted(texts, key=_number, reverse=True)  # text order would differ

    _click_header(tab, launches)  # first click: largest first
    by_count = sorted(rows, key=lambda r: (-int(r["count"]), int(r["rank"])))
    assert [int(c.replace(",", "")) for c in _column(tab, launches)] == [int(r["count"]) for r in by_count]
    names = tab.page.eval_on_selector(FIRST_TABLE, "t => [...t.tBodies[0].rows].map(r => r.cells[1].textContent.trim())")
    assert names == [r["friendly_name"] for r in by_count]
    header = tab.page.locator(FIRST_TABLE).locator("th", has_text=launches).first
    assert header.get_attribute("aria-sort") == "descending"

    _click_header(tab, launches)  # again: smallest first
    assert [int(c.replace(",", "")) for c in _column(tab, launches)] == sorted(int(r["count"]) for r in rows)

    avg = t("columns.avg_us")
    _click_header(tab, avg)
    expected = sorted((float(r["avg_ns"]) / 1e3 for r in rows), reverse=True)
    assert [_number(c) for c in _column(tab, avg)] == pytest.approx(expected, abs=0.006)

    # a cell without a number ("unknown", as a median over several stages is) sorts last either way
    median = t("columns.med_us")
    tab.page.eval_on_selector(FIRST_TABLE, "(t, word) => { t.tBodies[0].rows[0].cells[7].textContent = word; }",
                              t("unknown"))
    for _ in range(2):
        _click_header(tab, median)
        cells = _column(tab, median)
        assert cells[-1] == t("unknown") and t("unknown") not in cells[:-1]
    assert [_number(c) for c in cells[:-1]] == sorted(_number(c) for c in cells[:-1])
    assert tab.problems == []


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_filter_box_narrows_rows(tab: Tab, served: Served, lang: str) -> None:
    rows = _top_rows(served)
    _open(tab, served.url("v2", lang, "top-kernels"))
    box = tab.page.locator("input.kr-table-filter").first
    assert box.get_attribute("placeholder") == translator(lang)("tables.filter")
    kernel = translator(lang)("columns.kernel")
    assert len(_column(tab, kernel)) == len(rows) == 20
    box.fill("nvjet")  # a word of the raw names of the cuBLAS kernels only (their friendly names too)
    wanted = [r["friendly_name"] for r in rows if "nvjet" in (r["name"] + r["friendly_name"]).lower()]
    assert 0 < len(wanted) < len(rows)
    assert _column(tab, kernel) == wanted
    box.fill("gemm tnt")  # every word, anywhere in the row or the name on hover
    both = [r["friendly_name"] for r in rows
            if all(w in (r["name"] + " " + r["friendly_name"]).lower() for w in ("gemm", "tnt"))]
    assert 0 < len(both) < len(wanted)
    assert _column(tab, kernel) == both
    box.fill("")
    assert len(_column(tab, kernel)) == len(rows)
    assert tab.problems == []


def test_names_link_to_the_appendix_with_the_full_name_on_hover(tab: Tab, served: Served) -> None:
    rows = _top_rows(served)
    _open(tab, served.url("v2", "en", "top-kernels"))
    links = tab.page.eval_on_selector(FIRST_TABLE, """t => [...t.tBodies[0].rows].map(r => {
        const a = r.cells[1].querySelector('a.kr-name');
        return a && {text: a.textContent, title: a.title, href: a.getAttribute('href')};
    })""")
    assert [(a["text"], a["title"]) for a in links] == [(r["friendly_name"], r["name"]) for r in rows]
    first = links[0]["href"]
    assert first.startswith("appendix.html#k-")
    tab.page.locator(FIRST_TABLE).locator("a.kr-name").first.click()
    tab.page.wait_for_url(re.compile(re.escape(first) + "$"))
    target = tab.page.eval_on_selector(first[first.index("#"):], "el => el.closest('tr').textContent")
    assert rows[0]["friendly_name"] in target and rows[0]["name"] in target
    assert tab.problems == []


def test_header_is_sticky(tab: Tab, served: Served) -> None:
    tab.page.set_viewport_size({"width": 1400, "height": 900})
    _open(tab, served.url("v2", "en", "top-kernels"))
    th = tab.page.locator(FIRST_TABLE).locator("th").first
    assert th.evaluate("el => getComputedStyle(el).position") == "sticky"
    # scrolled to the middle of the table, the header is still on screen, below Material's header
    tab.page.evaluate("""() => {
        const t = document.querySelector('article table');
        window.scrollTo(0, t.getBoundingClientRect().top + window.scrollY + t.offsetHeight / 2);
    }""")
    top = th.evaluate("el => el.getBoundingClientRect().top")
    bar = tab.page.evaluate("() => document.querySelector('.md-header').getBoundingClientRect().bottom")
    assert abs(top - bar) < 2, (top, bar)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_narrow_screen_scrolls_tables_not_the_page(tab: Tab, served: Served, shots: Path, lang: str) -> None:
    tab.page.set_viewport_size({"width": 400, "height": 800})
    _open(tab, served.url("v2", lang, "top-kernels"))
    tab.page.wait_for_function("() => [...document.querySelectorAll('div.kr-chart')].every(e => e.dataset.krState)")
    found = _overflow(tab)
    assert found["page"] == 0, found
    wide = [t for t in found["tables"] if t["scrolls"]]
    assert wide and all(t["overflowX"] == "auto" for t in wide), found
    charts = tab.page.eval_on_selector_all(
        "div.kr-chart", "els => els.map(e => [e.getBoundingClientRect().right, document.documentElement.clientWidth])")
    assert charts and all(right <= width for right, width in charts), charts
    tab.page.screenshot(path=str(shots / f"top-kernels-{lang}-400.png"), full_page=True)
    assert tab.problems == []


def test_print_is_a4_landscape(tab: Tab, served: Served) -> None:
    _open(tab, served.url("v2", "en", "top-kernels"))
    tab.page.emulate_media(media="print")
    hidden = tab.page.evaluate("""() => ['.md-header', '.md-sidebar--primary', '.md-search', 'input.kr-table-filter']
        .map(s => document.querySelector(s)).map(el => el && getComputedStyle(el).display)""")
    assert hidden == ["none"] * 4
    sizes = tab.page.evaluate("""() => [...document.styleSheets].flatMap(s => { try { return [...s.cssRules]; }
        catch (e) { return []; } }).filter(r => r instanceof CSSPageRule).map(r => r.style.getPropertyValue('size'))""")
    assert "a4 landscape" in [size.lower() for size in sizes]
    pdf = tab.page.pdf(prefer_css_page_size=True)
    box = re.search(rb"/MediaBox \[0 0 ([\d.]+) ([\d.]+)\]", pdf)
    assert box and float(box[1]) == pytest.approx(841.89, abs=1) and float(box[2]) == pytest.approx(595.28, abs=1)
    assert tab.problems == []


def test_print_fits_every_table_on_a4_landscape(tab: Tab, served: Served) -> None:
    """A4 landscape less 12 mm margins is 273 mm wide, 1032 CSS px: every table of every page fits it."""
    tab.page.emulate_media(media="print")
    tab.page.set_viewport_size({"width": 1032, "height": 730})
    for lang in ("en", "zh"):
        for page in test_browser.PAGES:
            _open(tab, served.url("v2", lang, page))
            found = _overflow(tab)
            assert found["page"] == 0 and not any(t["table"] > t["box"] + 1 for t in found["tables"]), (page, found)
    assert tab.problems == []
