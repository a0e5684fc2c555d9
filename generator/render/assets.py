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

import hashlib
import os
import shutil
import sys
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


#: ends the cached bundle: the sha256 of what precedes it
_SEAL = "\n// kernel-report bundle sha256 "


def _cache_file() -> Path:
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "kernel-report" / f"vega-bundle-{vl_convert.__version__}.sealed.js"


def _sealed(bundle: str) -> str:
    """What the cache file holds for ``bundle``: the bundle, then its seal."""
    return f"{bundle}{_SEAL}{hashlib.sha256(bundle.encode('utf-8')).hexdigest()}\n"


def _unsealed(text: str) -> str | None:
    """The bundle a cached file holds, None unless its seal matches it."""
    bundle = text.rpartition(_SEAL)[0]
    return bundle if _sealed(bundle) == text else None


@cache
def vega_bundle() -> str:
    """The bundled Vega + Vega-Lite + vega-embed source.

    Bundling takes a second or more, and its output depends only on the vl-convert version, so it
    is kept in the user's cache folder (``$XDG_CACHE_HOME/kernel-report/``), sealed with its
    sha256, and bundled again when missing, or, with one line saying so, when the file does not
    match its seal (cut short, edited, not ours).
    """
    cached = _cache_file()
    try:
        bundle = _unsealed(cached.read_text(encoding="utf-8"))
        if bundle is not None:
            return bundle
        print(f"build cache: {cached} does not match its seal; bundled again", file=sys.stderr)
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError) as exc:
        print(f"build cache: {cached} is unreadable ({type(exc).__name__}); bundled again", file=sys.stderr)
    bundle = vl_convert.javascript_bundle()
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(_sealed(bundle), encoding="utf-8")
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
