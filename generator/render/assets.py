"""The site's own JavaScript: the offline vega bundle and the script that draws the charts.

``assets/js/vega-bundle.js`` is ``vl_convert.javascript_bundle()`` (Vega, Vega-Lite and
vega-embed with every dependency; no CDN), wrapped in a function so that its top-level names stay
its own; it sets ``window.vegaEmbed``. ``assets/js/kr-charts.js`` finds every
``div.kr-chart[data-spec-ref]``, reads the spec from the referenced ``<script
type="application/json">`` and embeds it as SVG; the static SVG inside the div is removed once the
chart is drawn. It runs again on Material's instant navigation (``document$``). Both are classic
scripts, loaded in that order (``extra_javascript``): browsers refuse ES modules on pages opened
from disk (``file://``), classic scripts they run.
"""
from __future__ import annotations

import os
import shutil
from functools import cache
from pathlib import Path

import vl_convert

from generator.resources import TEMPLATES

JS_DIR = Path("assets") / "js"
BUNDLE = JS_DIR / "vega-bundle.js"
CHARTS = JS_DIR / "kr-charts.js"
#: the tables' sorting and filtering, and the site's table, chart and print styles: files of
#: generator/templates/site/ copied as they are (kr-tables.js is a classic script too)
TABLES_JS = JS_DIR / "kr-tables.js"
TABLES_CSS = Path("assets") / "css" / "kr-tables.css"

KR_CHARTS_JS = """\
(function () {
"use strict";
const CHARTS = "div.kr-chart[data-spec-ref]";

async function draw(div) {
  const holder = document.getElementById(div.dataset.specRef);
  if (!holder || div.dataset.krState) return;
  div.dataset.krState = "drawing";
  const fallback = Array.from(div.children);
  const target = document.createElement("div");
  div.append(target);
  try {
    await window.vegaEmbed(target, JSON.parse(holder.textContent), {renderer: "svg", actions: false});
    fallback.forEach((node) => node.remove());
    div.dataset.krState = "drawn";
  } catch (error) {
    target.remove();
    div.dataset.krState = "failed";
    console.error("kr-charts: " + div.id + ": " + error);
  }
}

function drawAll() {
  document.querySelectorAll(CHARTS).forEach(draw);
}

if (window.document$ && typeof window.document$.subscribe === "function") {
  window.document$.subscribe(drawAll);
} else if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", drawAll);
} else {
  drawAll();
}
})();
"""


def _cache_file() -> Path:
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "kernel-report" / f"vega-bundle-{vl_convert.__version__}.js"


@cache
def vega_bundle() -> str:
    """The bundled Vega + Vega-Lite + vega-embed source.

    Bundling takes seconds, and its output depends only on the vl-convert version, so it is kept
    in the user's cache folder (``$XDG_CACHE_HOME/kernel-report/``) and rebuilt when missing.
    """
    cached = _cache_file()
    try:
        return cached.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        pass
    bundle = vl_convert.javascript_bundle()
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(bundle, encoding="utf-8")
        os.replace(partial, cached)
    except OSError:
        pass  # no writable cache folder: bundle again next time
    return bundle


def write_assets(docs_dir: Path) -> None:
    """Write the vega bundle, kr-charts.js and kr-tables.js under ``docs_dir/assets/js/``, and
    kr-tables.css under ``docs_dir/assets/css/``."""
    (docs_dir / JS_DIR).mkdir(parents=True, exist_ok=True)
    (docs_dir / BUNDLE).write_text(f'(function () {{\n"use strict";\n{vega_bundle()}\n}})();\n', encoding="utf-8")
    (docs_dir / CHARTS).write_text(KR_CHARTS_JS, encoding="utf-8")
    for asset in (TABLES_JS, TABLES_CSS):
        (docs_dir / asset).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(TEMPLATES / "site" / asset.name, docs_dir / asset)
