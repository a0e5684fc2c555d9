"""The bundled example's report as a reader opens it in headless Chromium (EN and ZH, over http and from
disk, at 1400 and 400 px): the Overview opens with where each stage's time goes and the largest savings,
linked to their evidence; every chart carries labels in its SVG; roof labels and header controls overlap
nothing; no table is wider than the content column at 1400 px; the ZH version selector shows ZH titles;
search returns the page's language only; the comparison's ncu means say they are context."""
from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import test_browser
from conftest import BuiltSite

from generator.render.translations import translator

pytestmark = pytest.mark.browser
playwright_api = pytest.importorskip("playwright.sync_api")
browser = test_browser.browser
#: the latest version and its pages (a comparison page: it has a previous version)
VERSION = "v3"
PAGES = (*test_browser.PAGES, "modules")
TITLES = {"en": "V3: SDPA recaptured", "zh": "第三版：SDPA 重新采集"}
#: charts whose SVG must carry text marks of their own (box and roof labels), not only axes
LABELLED = ("kr-chart-modules-", "kr-chart-roofline-physical", "kr-chart-roofline-per-kernel")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def http_base(example_site: BuiltSite) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(example_site.site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def _url(base: str, lang: str, page: str) -> str:
    return f"{base}{VERSION}/{'' if lang == 'en' else lang + '/'}{page}.html"


def _bases(example_site: BuiltSite, http_base: str) -> dict[str, str]:
    return {"http": http_base, "file": example_site.site.as_uri() + "/"}


@pytest.fixture
def page_at(browser) -> Iterator:
    contexts = []
    problems: list[str] = []

    def open_page(url: str, width: int):
        context = browser.new_context(viewport={"width": width, "height": 900})
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda error: problems.append(f"{url}: {error}"))
        page.on("console", lambda m: problems.append(f"{url}: {m.text}") if m.type == "error" else None)
        page.goto(url)
        page.wait_for_load_state("networkidle")
        page.wait_for_function("() => [...document.querySelectorAll('div.kr-chart')].every(e => e.dataset.krState)")
        return page

    yield open_page
    for context in contexts:
        context.close()
    assert problems == []


@pytest.mark.parametrize("width", [1400, 400])
@pytest.mark.parametrize("scheme", ["http", "file"])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_overview_opens_with_the_decision(example_site: BuiltSite, http_base: str, page_at, lang: str,
                                              scheme: str, width: int) -> None:
    t = translator(lang)
    base = _bases(example_site, http_base)[scheme]
    page = page_at(_url(base, lang, "index"), width)
    headings = page.eval_on_selector_all("article h2", "hs => hs.map(h => h.textContent.replace('¶', '').trim())")
    assert headings[:3] == [t("decision.heading"), t("floors.heading"), t("decision.savings")]
    lines = page.eval_on_selector_all("article h2 ~ ul:first-of-type > li", "ls => ls.map(l => l.textContent)")
    assert [line.split("：" if lang == "zh" else ":")[0] for line in lines] == ["sam", "clip", "projector", "prefill",
                                                                              "decode"]
    links = page.eval_on_selector_all("article ol > li a[href*='findings.html#finding-']", "as => as.map(a => a.href)")
    assert 3 <= len(links) <= 5
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    if width == 1400:  # each link lands on its finding
        findings = page_at(links[0].split("#")[0], width)
        ids = findings.eval_on_selector_all("article [id^='finding-']", "es => es.map(e => e.id)")
        assert {link.split("#")[1] for link in links} <= set(ids)


@pytest.mark.parametrize("width", [1400, 400])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_chart_without_labels(example_site: BuiltSite, http_base: str, page_at, lang: str, width: int) -> None:
    checked = labelled = 0
    for name in ("index", "modules", "roofline", "histograms"):
        page = page_at(_url(http_base, lang, name), width)
        charts = page.eval_on_selector_all("div.kr-chart", """ds => ds.map(d => {
            const svg = d.querySelector('svg.marks');
            const texts = svg ? [...svg.querySelectorAll('g.mark-text text')].map(t => t.textContent).filter(Boolean) : [];
            const titles = svg ? [...svg.querySelectorAll('.role-axis-title text')].map(t => t.textContent) : [];
            return {id: d.id, drawn: !!svg, texts: texts.length, titles: titles.length,
                    width: svg ? svg.getBoundingClientRect().width : 0, box: d.clientWidth,
                    scale: svg ? svg.getBoundingClientRect().width / svg.width.baseVal.value : 0};
        })""")
        for chart in charts:
            assert chart["drawn"] and chart["titles"] >= 1, chart
            assert chart["width"] <= chart["box"] + 1, chart  # re-laid out, never wider than the column
            assert chart["scale"] == pytest.approx(1.0, abs=0.02), chart  # drawn at its size: text keeps its size
            if chart["id"].startswith(LABELLED):
                assert chart["texts"] >= 2, chart
                labelled += 1
            checked += 1
    assert checked >= 20 and labelled >= 8


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_table_wider_than_the_column_at_1400_px(example_site: BuiltSite, http_base: str, page_at,
                                                   lang: str) -> None:
    for name in PAGES:
        page = page_at(_url(http_base, lang, name), 1400)
        page.wait_for_timeout(100)  # kr-tables.js measures on the next frame
        wide = page.evaluate("""() => { const column = document.querySelector('article').clientWidth;
            return [...document.querySelectorAll('article table')].map(t => {
                const box = t.closest('.md-typeset__scrollwrap') || t.parentElement;
                return [t.className, Math.round(t.getBoundingClientRect().width), box.clientWidth, column]; })
              .filter(([, w, box, col]) => w > box + 1 || w > col + 1); }""")
        assert wide == [], (name, wide)


def test_the_zh_version_selector_shows_zh_titles(http_base: str, page_at) -> None:
    for lang in ("en", "zh"):
        page = page_at(_url(http_base, lang, "roofline"), 1400)
        page.wait_for_selector(".md-version__link", state="attached")
        first_text = "e => [...e.childNodes].filter(n => n.nodeType === 3).map(n => n.nodeValue.trim()).join('')"
        page.wait_for_function(f"t => ({first_text})(document.querySelector('.md-version__current')) === t",
                               arg=TITLES[lang])
        shown = page.eval_on_selector_all(".md-version__link", f"as => as.map({first_text})")
        older = (["V2: SDPA attention", "V1: eager attention"] if lang == "en"
                 else ["第二版：SDPA 注意力", "第一版：eager 注意力"])
        assert shown == [TITLES[lang], *older]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_search_returns_only_the_pages_language(http_base: str, page_at, lang: str) -> None:
    page = page_at(_url(http_base, lang, "index"), 1400)
    page.locator("input.md-search__input").click()
    page.keyboard.type("decode")  # Material searches on key events
    page.wait_for_selector(".md-search-result__item a", state="attached", timeout=20_000)
    hrefs = page.eval_on_selector_all(".md-search-result__item a", "as => as.map(a => a.href)")
    assert len(hrefs) >= 3
    in_zh = [f"/{VERSION}/zh/" in href for href in hrefs]
    assert all(in_zh) if lang == "zh" else not any(in_zh), hrefs


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_overview_screenshots(example_site: BuiltSite, page_at, lang: str, tmp_path_factory) -> None:
    folder = Path(tmp_path_factory.getbasetemp()) / "overview-shots"
    folder.mkdir(exist_ok=True)
    page = page_at(_url(example_site.site.as_uri() + "/", lang, "index"), 1400)
    page.screenshot(path=str(folder / f"overview-{lang}-1400.png"), full_page=True)
    assert (folder / f"overview-{lang}-1400.png").stat().st_size > 50_000


#: the boxes (left, top, right, bottom) of each physical roofline's roof labels, points, axis labels and
#: legends, as drawn
_ROOFLINE_BOXES = """() => [...document.querySelectorAll('div.kr-chart[id^="kr-chart-roofline-p"]')].map(div => {
  const svg = div.querySelector('svg.marks');
  const box = e => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  return {id: div.id, svg: box(svg),
    labels: [...svg.querySelectorAll('g.mark-text.role-mark text')].filter(t => t.textContent)
      .map(t => [t.textContent, ...box(t)]),
    points: [...svg.querySelectorAll('g.mark-symbol.role-mark path')].map(box).filter(b => b[2] > b[0]),
    others: [...svg.querySelectorAll('g.role-axis-label text, g.role-legend')].map(box)};
})"""


def _overlap(a: list[float], b: list[float]) -> bool:
    """Two boxes (left, top, right, bottom) share more than half a pixel each way."""
    return a[0] < b[2] - 0.5 and b[0] < a[2] - 0.5 and a[1] < b[3] - 0.5 and b[1] < a[3] - 0.5


@pytest.mark.parametrize("width", [1400, 400])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_roof_labels_overlap_nothing(http_base: str, page_at, lang: str, width: int) -> None:
    """On the physical rooflines (all kernels, and one highlighted) each roof label's drawn box stands
    apart from the other labels, every point's mark, the axes' numbers and the legends, inside the SVG
    (once the flat roofs were named at their right ends, on the points)."""
    page = page_at(_url(http_base, lang, "roofline"), width)
    charts = page.evaluate(_ROOFLINE_BOXES)
    assert [c["id"] for c in charts] == ["kr-chart-roofline-physical", "kr-chart-roofline-per-kernel"]
    for chart in charts:
        labels = [box for _, *box in chart["labels"]]
        assert len(labels) == 5 and len(chart["points"]) >= 100, chart["labels"]  # 4 roofs and DRAM; v3's kernels
        hits = [(a[0], b[0]) for i, a in enumerate(chart["labels"]) for b in chart["labels"][i + 1:]
                if _overlap(a[1:], b[1:])]
        hits += [(name, point) for name, *box in chart["labels"] for point in chart["points"] + chart["others"]
                 if _overlap(box, point)]
        assert hits == [], (chart["id"], hits)
        left, top, right, bottom = chart["svg"]
        assert all(left <= b[0] and b[2] <= right and top <= b[1] and b[3] <= bottom for b in labels), chart


#: the header's visible controls (site title, version picker, language button, search), each as
#: [name, left, top, right, bottom]; the page title that replaces the site title on scrolling is hidden
_HEADER = """() => [['title', '.md-header__topic:first-child .md-ellipsis'], ['version', '.md-version'],
  ['language', '.md-header__option'], ['search', '.md-search__inner'], ['search', 'label.md-header__button[for="__search"]'],
  ['logo', '.md-header__button.md-logo'], ['menu', 'label.md-header__button[for="__drawer"]']]
  .flatMap(([name, s]) => [...document.querySelectorAll('.md-header ' + s)].map(e => [name, e.getBoundingClientRect()]))
  .filter(([, b]) => b.width > 0 && b.height > 0).map(([name, b]) => [name, b.left, b.top, b.right, b.bottom])"""


@pytest.mark.parametrize("width", [1400, 400])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_header_controls_overlap_nothing(http_base: str, page_at, lang: str, width: int) -> None:
    """The site title, version picker, language button and search stand apart in the header (the
    version picker once ran under the language button at 400 px)."""
    for name in ("index", "roofline"):
        page = page_at(_url(http_base, lang, name), width)
        page.wait_for_selector(".md-version", state="attached")
        boxes = page.evaluate(_HEADER)
        assert {b[0] for b in boxes} >= {"title", "version", "language", "search"}, boxes
        hits = [(a[0], b[0]) for i, a in enumerate(boxes) for b in boxes[i + 1:] if _overlap(a[1:], b[1:])]
        assert hits == [], (name, boxes)
        assert all(b[3] <= width for b in boxes), boxes


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_ncu_means_say_they_are_context(http_base: str, page_at, lang: str) -> None:
    """The comparison's Nsight Compute means move (v2 → v3: Duration +11 %) under stages the nsys verdict
    calls unchanged: the line under their heading says they are context, not the verdict."""
    t = translator(lang)
    page = page_at(_url(http_base, lang, "comparison"), 1400)
    below = page.evaluate("""h => { const e = [...document.querySelectorAll('article h2')]
        .find(e => e.textContent.replace('¶', '').trim() === h); return e && e.nextElementSibling.textContent; }""",
                          t("comparison.means"))
    assert below is not None and " ".join(below.split()) == " ".join(t("means_context.text").split())
