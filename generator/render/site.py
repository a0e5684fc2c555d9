"""The site around a version's pages: its mkdocs.yml, the report's versions.json and index pages."""
from __future__ import annotations

import html
import json
from pathlib import Path

import jinja2

from generator.model import ReportMeta, VersionMeta
from generator.render.assets import BUNDLE as VEGA_BUNDLE
from generator.render.assets import MODULE as CHARTS_MODULE
from generator.render.html_config import yaml_html_text
from generator.render.translations import translator
from generator.resources import TEMPLATES

_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
    autoescape=jinja2.select_autoescape(["html.j2"]),
)
_ENV.filters["yaml_html_text"] = yaml_html_text


def write_version_index(meta: ReportMeta, out: Path) -> None:
    """``out/versions.json`` and ``out/index.html`` (redirect to the latest version)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "versions.json").write_text(versions_json(meta), encoding="utf-8")
    (out / "index.html").write_text(
        _ENV.get_template("site/index.html.j2").render(
            lang=meta.langs[0], links=[{"href": f"{meta.latest.id}/index.html", "title": meta.title[meta.langs[0]]}]
        ),
        encoding="utf-8",
    )


def write_mkdocs_config(report_file: Path, meta: ReportMeta, version: VersionMeta, version_dir: Path,
                        nav: list[str]) -> Path:
    """Write ``<version_dir>/mkdocs.yml`` for the pages (``nav``: files in order) in ``<version_dir>/docs``."""
    docs = version_dir / "docs"
    text = _ENV.get_template("mkdocs.yml.j2").render(
        report_file=report_file.name,
        title=meta.title,
        site_url=f"{meta.site_url}{version.id}/" if meta.site_url else None,
        langs=list(meta.langs),
        language_names={lang: translator(lang)("language_name") for lang in meta.langs},
        nav=nav,
        # the offline vega bundle, then the module that draws the charts with it (it imports the
        # bundle too: one URL, so the browser runs it once)
        javascript=[js.as_posix() for js in (VEGA_BUNDLE, CHARTS_MODULE) if (docs / js).is_file()],
    )
    path = version_dir / "mkdocs.yml"
    path.write_text(text, encoding="utf-8")
    return path


def versions_json(meta: ReportMeta) -> str:
    """mike's versions.json: newest first, alias "latest" on the newest; titles HTML-escaped
    (Material's version selector inserts them as HTML)."""
    entries = [
        {"version": v.id, "title": html.escape(v.title[meta.langs[0]]), "aliases": ["latest"] if v is meta.latest else []}
        for v in reversed(meta.versions)
    ]
    return json.dumps(entries, ensure_ascii=False, indent=2) + "\n"


def write_report_index(out: Path, reports: list[tuple[str, dict[str, str]]], lang: str) -> None:
    """``out/index.html`` listing several reports: (folder prefix, {lang: title}) each."""
    links = [{"href": f"{prefix}index.html", "title": title[lang]} for prefix, title in reports]
    (out / "index.html").write_text(
        _ENV.get_template("site/index.html.j2").render(lang=lang, links=links), encoding="utf-8"
    )
