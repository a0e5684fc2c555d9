"""Issue 43: names are inert everywhere. A stage named ``[click me](javascript:alert(document.domain))``
was a live link in the Overview's largest savings and the Findings text (17 links, EN and ZH):
through ``build FILE --stages``, a run directory's stages and a report.yaml ``stage:``.

The inputs are made here from committed files: the gemm capture's nsys export with its NVTX range
renamed to a payload (sqlite3), and the compiled-block run directory with its stage renamed in
the export and the manifest. Every page of the site (both languages) holds no ``javascript:`` link
and no element a payload carries; the browser test opens every page and clicks every link."""
from __future__ import annotations

import functools
import http.server
import json
import lzma
import shutil
import sqlite3
import threading
from html.parser import HTMLParser
from pathlib import Path

import pytest

from generator.cli import main

ROOT = Path(__file__).resolve().parent.parent
GEMM_SQLITE = ROOT / "tests" / "data" / "gemm" / "nsys" / "report.sqlite.xz"
RUN = ROOT / "examples" / "runs" / "compiled-block-h200"
#: A Markdown link, raw HTML, an attribute list and emphasis/table characters: no "/" (a stage
#: spec's instance separator) and no "," (the --stages separator).
LINK = "[click me](javascript:alert(document.domain))"


def payload(tag: str) -> str:
    return f"{LINK}<img src=x data-xss onerror=alert('{tag}')>{{: onclick=alert('{tag}') data-xss }}*_|`{tag}"


def _renamed_export(source: Path, old: str, new: str, out: Path) -> Path:
    """``source`` (an .xz nsys export) with every NVTX range ``old`` renamed ``new``."""
    out.write_bytes(lzma.decompress(source.read_bytes()))
    with sqlite3.connect(out) as con:
        con.execute("UPDATE NVTX_EVENTS SET text = ? WHERE text = ?", (new, old))
        con.execute("UPDATE StringIds SET value = ? WHERE value = ?", (new, old))
    return out


def _evil_run(root: Path, stage: str) -> Path:
    """compiled-block-h200 with its stage ``block`` renamed ``stage`` (export and manifest)."""
    run = root / "run"
    shutil.copytree(RUN, run)
    (run / "nsys" / "report.sqlite.xz").unlink()
    _renamed_export(RUN / "nsys" / "report.sqlite.xz", "block", stage, run / "nsys" / "report.sqlite")
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    manifest["stages"] = [stage]
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return run


REPORT = """\
id: inert
title: {{en: names, zh: names}}
versions:
  - id: file
    title: {{en: stage, zh: stage}}
    date: 2026-12-01
    inputs:
      nsys: [{{path: {sqlite}, stage: {stage}}}]
  - id: run
    title: {{en: run, zh: run}}
    date: 2026-12-02
    runs: [{run}]
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("inert")
    sqlite = _renamed_export(GEMM_SQLITE, "gemm", payload("file"), root / "evil.sqlite")
    run = _evil_run(root, payload("run"))
    (root / "report.yaml").write_text(REPORT.format(sqlite=sqlite, run=run, stage=json.dumps(payload("file"))),
                                      encoding="utf-8")
    assert main(["build", str(root / "report.yaml"), "--out", str(root / "site"), "--no-cache"]) == 0
    return root / "site"


def _pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


class _Live(HTMLParser):
    """Collects javascript: links and the attributes a payload would add (data-xss, event handlers)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name == "data-xss" or (name in ("onerror", "onclick", "onload") and "alert" in (value or "")):
                self.found.append(f"<{tag} {name}>")
            if name in ("href", "src", "action") and (value or "").strip().lower().startswith("javascript:"):
                self.found.append(f"<{tag} {name}={value}>")


def _live(html: str) -> list[str]:
    """javascript: links and elements a payload carries."""
    parser = _Live()
    parser.feed(html)
    return parser.found


def test_no_name_makes_a_link_or_an_element(site: Path) -> None:
    pages = _pages(site)
    assert len(pages) > 20
    found = {str(p.relative_to(site)): _live(p.read_text(encoding="utf-8")) for p in pages}
    assert {k: v for k, v in found.items() if v} == {}
    for version, tag in (("file", "file"), ("run", "run")):
        for lang in ("", "zh/"):
            findings = (site / version / lang / "findings.html").read_text(encoding="utf-8")
            # the stage is quoted in the findings text, literally
            assert f"[click me](javascript:alert(document.domain))&lt;img src=x data-xss onerror=alert('{tag}')" \
                in findings.replace("&#39;", "'"), (version, lang)
    search = next(site.rglob("search_index.json")).read_text(encoding="utf-8")
    assert "<a href=\\\"javascript" not in search and "<img src" not in search


def test_build_file_with_a_payload_stage_is_inert(tmp_path: Path) -> None:
    """``build evil.sqlite --stages PAYLOAD``, the audit's reproduction."""
    sqlite = _renamed_export(GEMM_SQLITE, "gemm", LINK, tmp_path / "evil.sqlite")
    assert main(["build", str(sqlite), "--stages", LINK, "--out", str(tmp_path / "site"), "--no-cache"]) == 0
    pages = _pages(tmp_path / "site")
    assert [p for p in pages if _live(p.read_text(encoding="utf-8"))] == []
    overview = (tmp_path / "site" / "v1" / "index.html").read_text(encoding="utf-8")
    assert "[click me](javascript:alert(document.domain))" in overview  # shown as text


#: Clicks every link of the page in place: a link to a page or an anchor is kept from navigating
#: (its default prevented); a javascript: link is clicked as it is, so its script would run.
CLICK_ALL = """() => {
  document.addEventListener('click', e => {
    const a = e.target.closest('a');
    if (a && !/^\\s*javascript:/i.test(a.getAttribute('href') || '')) e.preventDefault();
  }, true);
  const links = [...document.querySelectorAll('a[href]')];
  links.forEach(a => a.click());
  return links.length;
}"""


@pytest.mark.browser
def test_clicking_every_link_runs_nothing(site: Path) -> None:
    """Every page in both languages opened in headless Chromium, every link on it clicked: no
    dialog opens and no page ever holds a javascript: link."""
    playwright_api = pytest.importorskip("playwright.sync_api")
    from test_browser import CHROMIUM, CHROMIUM_ARGS, PREFIX, _free_port, _PrefixHandler

    port = _free_port()
    base = f"http://127.0.0.1:{port}{PREFIX}"
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port),
                                             functools.partial(_PrefixHandler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    dialogs: list[str] = []
    clicked = 0
    try:
        with playwright_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for version in ("file", "run"):
                for lang in ("", "zh/"):
                    for name in ("index", "findings", "top-kernels", "durations", "appendix"):
                        url = f"{base}{version}/{lang}{name}.html"
                        page = browser.new_page()  # a fresh page: the clicks of the last one may still navigate
                        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
                        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(base) else r.abort())
                        page.goto(url)
                        page.wait_for_load_state("networkidle")
                        hrefs = page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))")
                        assert [h for h in hrefs if h.strip().lower().startswith("javascript:")] == [], url
                        clicked += page.evaluate(CLICK_ALL)
                        page.wait_for_timeout(200)  # a script a click started would have run
                        assert dialogs == [], (url, dialogs)
                        page.close()
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    assert dialogs == [] and clicked > 500
