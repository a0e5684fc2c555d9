"""The site's own JavaScript: the offline vega bundle and the script that draws the charts.

``assets/js/vega-bundle.js`` is ``vl_convert.javascript_bundle()`` (Vega, Vega-Lite and
vega-embed with every dependency; no CDN), wrapped in a function so that its top-level names stay
its own; it sets ``window.vegaEmbed``. ``assets/js/kr-charts.js`` finds every
``div.kr-chart[data-spec-ref]``, reads the spec from the referenced ``<script
type="application/json">`` and embeds it as SVG; the static SVG inside the div is removed once the
chart is drawn (``generator/templates/site/kr-charts.js``, copied as it is). It runs again on
Material's instant navigation (``document$``). Both are classic
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
#: the tables' sorting and filtering, and the site's table, chart and print styles
TABLES_JS = JS_DIR / "kr-tables.js"
TABLES_CSS = Path("assets") / "css" / "kr-tables.css"
#: the site's own scripts and styles: files of generator/templates/site/ copied as they are
SITE_FILES = (CHARTS, TABLES_JS, TABLES_CSS)


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
    for asset in SITE_FILES:
        (docs_dir / asset).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(TEMPLATES / "site" / asset.name, docs_dir / asset)
