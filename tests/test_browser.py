"""The built site in headless Chromium: charts drawn offline, no errors, selectors, hostile names.

A two-version report over the real H200 files is built with ``python -m generator build``; v2's
decode ncu CSV is a copy of the real one with one kernel renamed to carry ``<script>`` and ``|``.
The site is served from 127.0.0.1 under its site-url prefix; any other request is aborted.
"""
from __future__ import annotations

import csv
import functools
import http.server
import io
import json
import lzma
import os
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

pytestmark = pytest.mark.browser
playwright_api = pytest.importorskip("playwright.sync_api")

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "h200-small"
ARTIFACTS = ROOT / "test-artifacts"
PREFIX = "/kernel-report/"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
EVIL = "evil|kernel<script>window.__krPwned=1</script>_[x]*`y`"
PAGES = ("index", "top-kernels", "classification", "durations", "histograms", "roofline", "findings",
         "comparison", "appendix", "downloads")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _evil_decode_csv(out: Path) -> str:
    """The real decode raw CSV with every launch of its first kernel renamed to EVIL."""
    rows = list(csv.reader(io.StringIO(lzma.decompress(
        (DATA / "small_vlm_decode_ncu_raw.csv.xz").read_bytes()).decode("utf-8"))))
    column = rows[0].index("Kernel Name")
    victim = rows[2][column]
    renamed = 0
    for row in rows[2:]:
        if row[column] == victim:
            row[column], renamed = EVIL, renamed + 1
    assert renamed > 0
    with open(out, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    return victim


REPORT = """\
id: browser-test
title: {{en: "Browser test report", zh: "浏览器测试报告"}}
top_n: 20
versions:
  - id: v1
    title: {{en: "V1", zh: "第一版"}}
    date: 2026-11-20
    inputs:
      nsys: &nsys
        - {{path: {data}/small_vlm.nsys.sqlite.xz}}
        - {{path: {data}/small_vlm.nsys.sqlite.xz, stage: prefill}}
        - {{path: {data}/small_vlm.nsys.sqlite.xz, stage: decode}}
      ncu: [{data}/small_vlm_prefill.ncu-rep.xz]
  - id: v2
    title: {{en: "V2", zh: "第二版"}}
    date: 2026-11-21
    inputs:
      nsys: *nsys
      ncu: [{data}/small_vlm_prefill.ncu-rep.xz, {evil}]
"""


@dataclass
class Served:
    base: str  # http://127.0.0.1:PORT/kernel-report/
    site: Path
    directory_urls: bool  # as the generated mkdocs.yml says
    outside: list[str] = field(default_factory=list)

    def url(self, version: str, lang: str, page: str) -> str:
        """Absolute URL of a page (``index`` = the version's or language's home)."""
        lang_dir = "" if lang == "en" else f"{lang}/"
        if self.directory_urls:
            return f"{self.base}{version}/{lang_dir}{'' if page == 'index' else page + '/'}"
        return f"{self.base}{version}/{lang_dir}{page}.html"


class _PrefixHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the site directory under PREFIX only."""

    def translate_path(self, path: str) -> str:
        clean = urlsplit(path).path
        if not clean.startswith(PREFIX):
            return str(Path(self.directory) / "__outside_prefix__")
        return super().translate_path("/" + clean[len(PREFIX):])

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    from generator.cli import main

    root = tmp_path_factory.mktemp("browser")
    _evil_decode_csv(root / "decode_evil.csv")
    (root / "report.yaml").write_text(REPORT.format(data=DATA, evil=root / "decode_evil.csv"), encoding="utf-8")
    port = _free_port()
    base = f"http://127.0.0.1:{port}{PREFIX}"
    site = root / "site"
    assert main(["build", str(root / "report.yaml"), "--out", str(site), "--src", str(root / "src"),
                 "--site-url", base]) == 0
    handler = functools.partial(_PrefixHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    mkdocs_yml = (root / "src" / "browser-test" / "v2" / "mkdocs.yml").read_text(encoding="utf-8")
    try:
        yield Served(base, site, "use_directory_urls: false" not in mkdocs_yml)
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Tab:
    page: object
    problems: list[str]


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def _watched_page(context) -> tuple[Any, list[str]]:
    """A new page of ``context`` and the list its page errors, console errors and warnings go to."""
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on("console", lambda msg: problems.append(f"console {msg.type}: {msg.text}")
            if msg.type in ("error", "warning") else None)
    return page, problems


@pytest.fixture
def tab(browser, served: Served) -> Iterator[Tab]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page, problems = _watched_page(context)
    page.on("response", lambda r: problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)

    def route(request_route) -> None:
        url = request_route.request.url
        if url.startswith("http://127.0.0.1:") and urlsplit(url).port == urlsplit(served.base).port:
            request_route.continue_()
        else:
            served.outside.append(url)
            request_route.abort()

    page.route("**/*", route)
    yield Tab(page, problems)
    context.close()


def _open(tab: Tab, url: str) -> None:
    tab.page.goto(url)
    tab.page.wait_for_load_state("networkidle")


def _charts(tab: Tab) -> list[dict]:
    return tab.page.eval_on_selector_all(
        "div.kr-chart",
        "els => els.map(e => ({id: e.id, state: e.dataset.krState || null,"
        " svg: !!e.querySelector('svg.marks'), img: !!e.querySelector('img')}))")


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("version", ["v1", "v2"])
def test_every_chart_is_drawn_offline_without_errors(tab: Tab, served: Served, version: str, lang: str) -> None:
    drawn = 0
    for page in PAGES:
        if page == "comparison" and version == "v1":
            continue
        path = served.url(version, lang, page)
        _open(tab, path)
        tab.page.wait_for_function(
            "() => [...document.querySelectorAll('div.kr-chart')].every(e => e.dataset.krState)")
        charts = _charts(tab)
        assert all(c["state"] == "drawn" and c["svg"] and not c["img"] for c in charts), (path, charts)
        drawn += len(charts)
        assert tab.page.evaluate("window.__krPwned") is None
    assert drawn >= 19  # 3 stages, 13 histograms, 3 rooflines
    assert tab.problems == []
    assert served.outside == []


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_hostile_kernel_name_shows_literally(tab: Tab, served: Served, lang: str) -> None:
    _open(tab, served.url("v2", lang, "appendix"))
    cells = tab.page.locator("span.kr-raw").all_inner_texts()
    assert EVIL in cells
    assert tab.page.evaluate("window.__krPwned") is None
    assert tab.page.locator("script", has_text="__krPwned").count() == 0
    _open(tab, served.url("v2", lang, "classification"))
    titles = tab.page.eval_on_selector_all(".kr-name", "els => els.map(e => e.title)")
    assert any("evil|kernel" in t for t in titles)
    assert tab.page.evaluate("window.__krPwned") is None
    assert tab.problems == []


def test_language_switcher_keeps_the_page(tab: Tab, served: Served) -> None:
    _open(tab, served.url("v2", "en", "roofline"))
    href = tab.page.eval_on_selector('a.md-select__link[hreflang="zh"]', "a => a.href")
    assert href == served.url("v2", "zh", "roofline")
    tab.page.eval_on_selector('a.md-select__link[hreflang="zh"]', "a => a.click()")
    tab.page.wait_for_url(served.url("v2", "zh", "roofline"))
    back = tab.page.eval_on_selector('a.md-select__link[hreflang="en"]', "a => a.href")
    assert back == served.url("v2", "en", "roofline")
    assert tab.problems == []


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_version_selector_keeps_the_page(tab: Tab, served: Served, lang: str) -> None:
    # Material keeps the page across versions only when the version root ("<version>/") is a
    # sitemap entry; the build adds it, since the site uses use_directory_urls: false.
    _open(tab, served.url("v2", lang, "roofline"))
    tab.page.wait_for_selector(".md-version__link", state="attached")
    links = tab.page.eval_on_selector_all(".md-version__link", "els => els.map(a => a.textContent.trim())")
    assert len(links) == 2
    tab.page.eval_on_selector_all(".md-version__link", "els => els.find(a => a.href.includes('/v1/')).click()")
    tab.page.wait_for_url(served.url("v1", lang, "roofline"), timeout=10_000)
    assert tab.problems == []


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("page", ["index", "roofline"])
def test_screenshots(tab: Tab, served: Served, page: str, lang: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    _open(tab, served.url("v2", lang, page))
    tab.page.wait_for_function(
        "() => [...document.querySelectorAll('div.kr-chart')].every(e => e.dataset.krState)")
    tab.page.screenshot(path=str(ARTIFACTS / f"{page}-{lang}.png"), full_page=True)
    for chart in _charts(tab):
        tab.page.locator("#" + chart["id"]).screenshot(path=str(ARTIFACTS / f"{chart['id']}-{lang}.png"))
    assert (ARTIFACTS / f"{page}-{lang}.png").stat().st_size > 10_000


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go: $KR_SCREENSHOTS (CI keeps it as an artifact), else a pytest folder."""
    folder = Path(os.environ["KR_SCREENSHOTS"]) if os.environ.get("KR_SCREENSHOTS") else tmp_path_factory.mktemp("shots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def disk_tab(browser) -> Iterator[Tab]:
    """A tab for pages opened from disk (file://): errors and warnings collected, any other request aborted."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page, problems = _watched_page(context)
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file://")
               else (problems.append(f"outside: {r.request.url}"), r.abort()))
    yield Tab(page, problems)
    context.close()


def _disk_url(served: Served, path: str) -> str:
    return (served.site / path).as_uri()


@pytest.mark.parametrize(("start", "lands"), [("index.html", "v2/index.html"), ("v1/index.html", "v1/index.html"),
                                              ("v1/zh/roofline.html", "v1/zh/roofline.html"),
                                              ("v2/zh/histograms.html", "v2/zh/histograms.html")])
def test_site_opened_from_disk_draws_charts_without_errors(disk_tab: Tab, served: Served, screenshots: Path,
                                                           start: str, lands: str) -> None:
    disk_tab.page.goto(_disk_url(served, start))
    disk_tab.page.wait_for_url(_disk_url(served, lands))
    disk_tab.page.wait_for_load_state("load")
    disk_tab.page.wait_for_function(
        "() => [...document.querySelectorAll('div.kr-chart')].every(e => e.dataset.krState)")
    charts = _charts(disk_tab)
    assert charts and all(c["state"] == "drawn" and c["svg"] for c in charts), charts
    # Material's version selector and search cannot work from disk: a plain version list instead
    versions = disk_tab.page.eval_on_selector_all(".md-version__link", "els => els.map(a => a.href)")
    lang_dir = "zh/" if "/zh/" in lands else ""
    assert versions == [_disk_url(served, f"{v}/{lang_dir}index.html") for v in ("v2", "v1")]
    assert disk_tab.page.locator(".md-search").count() == 0
    disk_tab.page.screenshot(path=str(screenshots / f"disk-{lands.replace('/', '-')}.png"), full_page=False)
    disk_tab.page.wait_for_timeout(300)  # a late failing request would show now
    assert disk_tab.problems == []


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_latest_resolves_over_http_and_from_disk(tab: Tab, disk_tab: Tab, served: Served, lang: str) -> None:
    lang_dir = "" if lang == "en" else f"{lang}/"
    tab.page.goto(f"{served.base}latest/")
    tab.page.wait_for_url(served.url("v2", "en", "index"))
    tab.page.goto(f"{served.base}latest/{lang_dir}roofline.html")
    tab.page.wait_for_url(served.url("v2", lang, "roofline"))
    disk_tab.page.goto(_disk_url(served, f"latest/{lang_dir}roofline.html"))
    disk_tab.page.wait_for_url(_disk_url(served, f"v2/{lang_dir}roofline.html"))
    disk_tab.page.wait_for_load_state("load")
    assert tab.problems == [] and disk_tab.problems == []


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_old_version_banner_links_the_same_page_of_the_newest(tab: Tab, disk_tab: Tab, served: Served,
                                                              screenshots: Path, lang: str) -> None:
    words = {"en": "older version", "zh": "旧版本"}[lang]
    for page in ("index", "roofline", "appendix"):
        _open(tab, served.url("v1", lang, page))
        banner = tab.page.locator("aside.kr-outdated")
        assert banner.count() == 1 and banner.is_visible()
        assert words in banner.inner_text() and ("第二版" if lang == "zh" else "V2") in banner.inner_text()
        assert banner.locator("a").evaluate("a => a.href") == served.url("v2", lang, page)
        _open(tab, served.url("v2", lang, page))
        assert tab.page.locator("aside.kr-outdated").count() == 0
    _open(tab, served.url("v1", lang, "roofline"))
    tab.page.locator("aside.kr-outdated a").click()
    tab.page.wait_for_url(served.url("v2", lang, "roofline"))
    lang_dir = "" if lang == "en" else f"{lang}/"
    disk_tab.page.goto(_disk_url(served, f"v1/{lang_dir}roofline.html"))
    disk_tab.page.screenshot(path=str(screenshots / f"banner-v1-{lang}.png"))
    disk_tab.page.locator("aside.kr-outdated a").click()
    disk_tab.page.wait_for_url(_disk_url(served, f"v2/{lang_dir}roofline.html"))
    assert tab.problems == [] and disk_tab.problems == []


@pytest.mark.parametrize(("lang", "word"), [("en", "latest"), ("zh", "最新")])
def test_latest_alias_reads_in_the_page_language(tab: Tab, served: Served, lang: str, word: str) -> None:
    """The version selector's alias of the newest version (versions.json says "latest") in the page's words."""
    _open(tab, served.url("v2", lang, "index"))
    tab.page.wait_for_selector(".md-version__alias", state="attached")
    tab.page.wait_for_function(f"() => [...document.querySelectorAll('.md-version__alias')]"
                               f".every(e => e.textContent === {json.dumps(word)})")
    assert set(tab.page.eval_on_selector_all(".md-version__alias", "els => els.map(e => e.textContent)")) == {word}
    assert tab.problems == []


@pytest.mark.parametrize(("query", "other"), [("内核", "内存"), ("内存", "内核")])
def test_zh_search_finds_words_not_characters(tab: Tab, served: Served, query: str, other: str) -> None:
    """内核 (kernel) and 内存 (memory) share one character; searching either finds that word only
    (Material's worker once cut 内核 to 内, which found 内存, 内容 ...)."""
    _open(tab, served.url("v2", "zh", "index"))
    # the search box says "initializing" (as the page was served) until the worker has read the
    # index; a query before that is answered by nothing
    initializing = tab.page.evaluate(
        "async () => new DOMParser().parseFromString(await (await fetch(location.href)).text(), 'text/html')"
        ".querySelector('.md-search-result__meta').textContent")
    tab.page.wait_for_function("t => document.querySelector('.md-search-result__meta').textContent !== t",
                               arg=initializing, timeout=120_000)
    tab.page.fill("input.md-search__input", query)
    tab.page.press("input.md-search__input", "End")  # Material reads the query on a key or focus, not on input
    tab.page.wait_for_selector(".md-search-result__item mark", state="attached", timeout=60_000)
    marks = set(tab.page.eval_on_selector_all(".md-search-result mark", "els => els.map(e => e.textContent)"))
    assert query in marks and all(mark.startswith(query) for mark in marks), marks
    texts = tab.page.eval_on_selector_all(".md-search-result__item", "els => els.map(e => e.textContent)")
    assert texts and all(query in text for text in texts), [t for t in texts if query not in t]
    assert other not in marks and tab.problems == []


#: each drawn chart's smallest text as shown (its font size times the SVG's scale on the page), px
_SMALLEST_CHART_TEXT = """() => [...document.querySelectorAll('div.kr-chart svg.marks')].map(svg => {
  const scale = svg.getBoundingClientRect().width / svg.width.baseVal.value;
  const sizes = [...svg.querySelectorAll('text')].filter(t => t.getBoundingClientRect().width)
    .map(t => parseFloat(getComputedStyle(t).fontSize) * scale);
  return [svg.closest('div.kr-chart').id, Math.min(...sizes)];
})"""
#: the header's visible controls, each as [name, left, top, right, bottom]
_HEADER_BOXES = """() => ['.md-header__button.md-logo', '.md-header__topic:first-child .md-ellipsis', '.md-version',
  '.md-header__option', 'label.md-header__button[for="__search"]', 'label.md-header__button[for="__drawer"]']
  .flatMap(s => [...document.querySelectorAll('.md-header ' + s)].map(e => [s, e.getBoundingClientRect()]))
  .filter(([s, b]) => b.width > 0 && b.height > 0).map(([s, b]) => [s, b.left, b.top, b.right, b.bottom])"""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_narrow_screen_keeps_text_readable_and_header_apart(browser, served: Served, lang: str) -> None:
    """At 400 px the header's controls do not overlap (the version picker once ran under the
    language button) and no chart text is shown below 10 px (wide charts scroll in their box)."""
    context = browser.new_context(viewport={"width": 400, "height": 800})
    page, problems = _watched_page(context)
    try:
        page.goto(served.url("v2", lang, "index"))
        page.wait_for_load_state("networkidle")
        page.wait_for_selector(".md-version", state="attached")
        boxes = page.evaluate(_HEADER_BOXES)
        assert {name for name, *_ in boxes} >= {".md-version", ".md-header__option"}, boxes
        overlaps = [(a[0], b[0]) for i, a in enumerate(boxes) for b in boxes[i + 1:]
                    if a[1] < b[3] - 0.5 and b[1] < a[3] - 0.5 and a[2] < b[4] - 0.5 and b[2] < a[4] - 0.5]
        assert overlaps == [], boxes
        smallest = []
        for name in ("top-kernels", "roofline", "histograms", "durations"):
            page.goto(served.url("v2", lang, name))
            page.wait_for_function("() => [...document.querySelectorAll('div.kr-chart')].every(e => e.dataset.krState)")
            smallest += page.evaluate(_SMALLEST_CHART_TEXT)
        assert len(smallest) >= 4 and min(size for _, size in smallest) >= 10, smallest
        assert problems == []
    finally:
        context.close()
