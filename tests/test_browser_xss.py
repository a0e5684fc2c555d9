"""Nothing injected runs: every string a report can carry holds an XSS payload; no page obeys one.

The report's titles, notes, sweep labels and parameters, and (through a copy of the real decode ncu
CSV) kernel, process and GPU names all carry payloads aimed at each context the text lands in: HTML
text and attributes, ``<title>``, Markdown, the MkDocs config, JSON in script tags, Vega specs and
tooltips, the search index and the version selector (versions.json). Every page of every version in
both languages is opened in headless Chromium: no dialog may open, no element a payload carries
(``data-xss``) may exist, ``window.__xss`` stays unset, and the payload text shows literally.
"""
from __future__ import annotations

import csv
import functools
import http.server
import io
import lzma
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_browser import CHROMIUM, CHROMIUM_ARGS, PREFIX, _free_port, _PrefixHandler

pytestmark = pytest.mark.browser
playwright_api = pytest.importorskip("playwright.sync_api")

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "h200-small"
VIT = ROOT / "examples" / "runs" / "vit-sweep"


def payload(tag: str) -> str:
    """Text that runs script (or adds a ``data-xss`` element) in every context it is not escaped for."""
    return (f"{tag}<script>alert('{tag}');window.__xss=1</script><img src=x data-xss onerror=\"alert('{tag}')\">"
            f"\"'><svg data-xss onload=alert('{tag}')></title></script><script>alert('{tag}')</script>"
            f"[md](javascript:alert('{tag}')){{: onclick=alert('{tag}') data-xss }}*_`|")


def _json(text: str) -> str:
    import json
    return json.dumps(text, ensure_ascii=False)


REPORT = """\
id: xss-test
title: {{en: {t_en}, zh: {t_zh}}}
top_n: 20
versions:
  - id: v1
    title: {{en: {v1_en}, zh: {v1_zh}}}
    date: 2026-11-20
    notes: {{en: {n_en}, zh: {n_zh}}}
    inputs:
      nsys: [{data}/small_vlm.nsys.sqlite.xz]
      ncu: [{data}/small_vlm_prefill.ncu-rep.xz, {evil}]
  - id: sweep
    title: {{en: {s_en}, zh: {s_zh}}}
    date: 2026-11-21
    sweep:
      - label: {l1}
        params: {{image_size: 224, note: {p1}}}
        runs: [{vit}/image-size224_batch1]
      - label: {l2}
        params: {{image_size: 448, note: {p2}}}
        runs: [{vit}/image-size448_batch1]
"""
PAGES = ("index", "top-kernels", "classification", "durations", "histograms", "roofline", "findings",
         "comparison", "appendix", "downloads", "sweep")


def _evil_csv(out: Path) -> None:
    """The real decode raw CSV with its three busiest kernels, the process and the GPU renamed to payloads."""
    rows = list(csv.reader(io.StringIO(lzma.decompress(
        (DATA / "small_vlm_decode_ncu_raw.csv.xz").read_bytes()).decode("utf-8"))))
    header = rows[0]
    kernel, process, gpu = (header.index(c) for c in ("Kernel Name", "Process Name", "device__attribute_display_name"))
    names = list(dict.fromkeys(row[kernel] for row in rows[2:]))[:3]
    for row in rows[2:]:
        if row[kernel] in names:
            row[kernel] = f"=HYPERLINK(\"x\")k{names.index(row[kernel])}" + payload(f"kernel{names.index(row[kernel])}")
        row[process], row[gpu] = payload("process"), payload("gpu")
    with open(out, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from generator.cli import main

    root = tmp_path_factory.mktemp("xss")
    _evil_csv(root / "decode_evil.csv")
    fields = {k: _json(payload(k)) for k in ("t_en", "t_zh", "v1_en", "v1_zh", "n_en", "n_zh", "s_en", "s_zh",
                                             "l1", "l2", "p1", "p2")}
    (root / "report.yaml").write_text(REPORT.format(data=DATA, evil=root / "decode_evil.csv", vit=VIT, **fields),
                                      encoding="utf-8")
    port = _free_port()
    base = f"http://127.0.0.1:{port}{PREFIX}"
    assert main(["build", str(root / "report.yaml"), "--out", str(root / "site"), "--src", str(root / "src"),
                 "--site-url", base]) == 0
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", port), functools.partial(_PrefixHandler, directory=str(root / "site")))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield base
    finally:
        server.shutdown()
        server.server_close()


def _check(page, dialogs: list[str], url: str) -> None:
    assert dialogs == [], (url, dialogs)
    assert page.evaluate("window.__xss") is None, url
    assert page.locator("[data-xss]").count() == 0, url
    scripts = page.eval_on_selector_all('script:not([type="application/json"])', "els => els.map(e => e.textContent)")
    assert not [s for s in scripts if "alert(" in s], url  # data specs may quote a payload; code may not


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_payload_runs_on_any_page(site: str, lang: str) -> None:
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(site) else r.abort())
        lang_dir = "" if lang == "en" else f"{lang}/"
        page.goto(site)  # the root index.html redirects to the latest version
        page.wait_for_load_state("networkidle")
        _check(page, dialogs, site)
        opened = 0
        for version, pages in (("v1", PAGES[:-2] + ("downloads",)), ("sweep", PAGES)):
            for name in pages:
                url = f"{site}{version}/{lang_dir}{name}.html"
                response = page.goto(url)
                if response is None or response.status == 404:
                    continue
                page.wait_for_load_state("networkidle")
                page.wait_for_selector(".md-version__link", state="attached")  # versions.json inserted
                _check(page, dialogs, url)
                opened += 1
            # the search: results are rendered from the index as HTML
            page.locator("input.md-search__input").focus()
            page.keyboard.type("alert")
            page.wait_for_selector(".md-search-result__item", state="attached")
            _check(page, dialogs, f"{version} search")
        header = page.locator(".md-header__topic").first.inner_text()
        assert "<script>alert(" in header  # shown literally
        browser.close()
    assert opened >= 17
