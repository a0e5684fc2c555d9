"""Remake the README's screenshot from a built site, in a real browser (`make screenshots`).

    python tools/screenshots.py [SITE] [PNG]

SITE (default ``site``, what `make site` builds) is served over HTTP on a free local port and its
comparison page of the second version (eager → SDPA attention in the bundled example) is captured
at 1280×760 by headless Chromium (the system's /usr/bin/chromium where present, else Playwright's)
into PNG (default docs/site-comparison.png).
"""
from __future__ import annotations

import functools
import http.server
import shutil
import sys
import threading
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
PAGE = "v2/comparison.html"
SIZE = {"width": 1280, "height": 760}


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass


def screenshot(site: Path, png: Path) -> None:
    report = site if (site / PAGE).is_file() else next((p.parents[1] for p in sorted(site.glob(f"*/{PAGE}"))), None)
    if report is None:
        sys.exit(f"error: {site}: no {PAGE} (build the bundled example first: make site)")
    handler = functools.partial(_Quiet, directory=str(report))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    chromium = shutil.which("chromium") or None
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport=SIZE, device_scale_factor=1)
            page.goto(f"http://127.0.0.1:{server.server_address[1]}/{PAGE}", wait_until="networkidle")
            page.wait_for_function("() => [...document.querySelectorAll('div.kr-chart')]"
                                   ".every(e => e.dataset.krState)")
            page.screenshot(path=str(png))
            browser.close()
    finally:
        server.shutdown()
    print(f"{png} written from {report / PAGE}")


if __name__ == "__main__":
    args = sys.argv[1:]
    screenshot(Path(args[0]) if args else ROOT / "site", Path(args[1]) if len(args) > 1 else ROOT / "docs" / "site-comparison.png")
