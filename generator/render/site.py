"""The site around a version's pages: its mkdocs.yml and theme overrides, the report's versions.json,
index pages and ``latest/``."""
from __future__ import annotations

import html
import json
import shutil
from pathlib import Path

import jinja2

from generator.model import ReportMeta, VersionMeta
from generator.render.assets import BUNDLE as VEGA_BUNDLE
from generator.render.assets import CHARTS as CHARTS_SCRIPT
from generator.render.assets import TABLES_CSS, TABLES_JS
from generator.render.html_config import yaml_html_text
from generator.render.llms_txt import LLMS_TXT, report_llms_txt, reports_llms_txt
from generator.render.translations import translator
from generator.resources import TEMPLATES

_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
    autoescape=jinja2.select_autoescape(["html.j2"]),
)
_ENV.filters["yaml_html_text"] = yaml_html_text
#: Material theme overrides, copied next to each version's mkdocs.yml (its ``custom_dir``)
OVERRIDES = TEMPLATES / "overrides"
LATEST = "latest"


def write_version_index(meta: ReportMeta, out: Path) -> None:
    """``out/versions.json``, ``out/llms.txt``, ``out/index.html`` (redirect to the latest version) and
    ``out/latest/``: for every page of the latest version (built into ``out/<id>/``) a page that redirects to it."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "versions.json").write_text(versions_json(meta), encoding="utf-8")
    (out / LLMS_TXT).write_text(report_llms_txt(meta, out), encoding="utf-8")
    _write_redirect(out / "index.html", f"{meta.latest.id}/index.html", meta.title[meta.langs[0]], meta.langs[0])
    built = out / meta.latest.id
    for page in sorted(built.rglob("*.html")):
        path = page.relative_to(built)
        back = "../" * len(path.parts)
        _write_redirect(out / LATEST / path, f"{back}{meta.latest.id}/{path.as_posix()}", meta.title[meta.langs[0]],
                        meta.langs[0])


def _write_redirect(path: Path, href: str, title: str, lang: str) -> None:
    """A page that sends the visitor to ``href`` (relative, so it works from disk too)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_ENV.get_template("site/index.html.j2").render(lang=lang, links=[{"href": href, "title": title}]),
                    encoding="utf-8")


def write_mkdocs_config(report_file: Path, meta: ReportMeta, version: VersionMeta, version_dir: Path,
                        nav: list[str], latest_pages: list[str]) -> Path:
    """Write ``<version_dir>/mkdocs.yml`` for the pages (``nav``: files in order) in ``<version_dir>/docs``,
    and the theme overrides beside it; ``latest_pages``: the page stems of the latest version (an
    older version's banner links the same page there when it has one)."""
    docs = version_dir / "docs"
    shutil.copytree(OVERRIDES, version_dir / "overrides", dirs_exist_ok=True)
    text = _ENV.get_template("mkdocs.yml.j2").render(
        report_file=report_file.name,
        title=meta.title,
        site_url=f"{meta.site_url}{version.id}/" if meta.site_url else None,
        langs=list(meta.langs),
        language_names={lang: translator(lang)("language_name") for lang in meta.langs},
        nav=nav,
        # the offline vega bundle, then the script that draws the charts with it
        javascript=[js.as_posix() for js in (VEGA_BUNDLE, CHARTS_SCRIPT, TABLES_JS) if (docs / js).is_file()],
        kr=theme_extra(meta, version, latest_pages),
        stylesheets=[css.as_posix() for css in (TABLES_CSS,) if (docs / css).is_file()],
    )
    path = version_dir / "mkdocs.yml"
    path.write_text(text, encoding="utf-8")
    return path


def theme_extra(meta: ReportMeta, version: VersionMeta, latest_pages: list[str]) -> dict:
    """``extra.kr`` of a version's mkdocs.yml, read by generator/templates/overrides/main.html: the
    versions (newest first) for the version list of pages opened from disk, and on a version older
    than the latest the banner's words. Text is HTML-escaped here (the theme prints it as is)."""
    def title(v: VersionMeta, lang: str) -> str:
        return html.escape(v.title.get(lang) or v.title[meta.langs[0]])

    extra: dict = {
        "version": version.id,
        "default_lang": meta.langs[0],
        "latest": meta.latest.id,
        "latest_pages": latest_pages,
        "versions": [{"id": v.id, "title": {lang: title(v, lang) for lang in meta.langs}} for v in reversed(meta.versions)],
        "outdated": None,
        "outdated_link": None,
        # the version selector's alias of the newest version (versions.json's LATEST), in each language
        "latest_alias": {lang: html.escape(translator(lang)("version_alias.latest")) for lang in meta.langs},
    }
    if version is not meta.latest:
        words = {lang: translator(lang) for lang in meta.langs}
        extra["outdated"] = {lang: t("site.outdated", version=title(version, lang)) for lang, t in words.items()}
        extra["outdated_link"] = {lang: t("site.outdated_link", latest=title(meta.latest, lang))
                                  for lang, t in words.items()}
    return extra


def versions_json(meta: ReportMeta) -> str:
    """mike's versions.json: newest first, alias "latest" on the newest; titles HTML-escaped
    (Material's version selector inserts them as HTML)."""
    entries = [
        {"version": v.id, "title": html.escape(v.title[meta.langs[0]]), "aliases": ["latest"] if v is meta.latest else []}
        for v in reversed(meta.versions)
    ]
    return json.dumps(entries, ensure_ascii=False, indent=2) + "\n"


def write_report_index(out: Path, reports: list[tuple[str, dict[str, str]]], lang: str) -> None:
    """``out/index.html`` and ``out/llms.txt`` listing several reports: (folder prefix, {lang: title}) each."""
    (out / LLMS_TXT).write_text(reports_llms_txt(reports, lang), encoding="utf-8")
    links = [{"href": f"{prefix}index.html", "title": title[lang]} for prefix, title in reports]
    (out / "index.html").write_text(
        _ENV.get_template("site/index.html.j2").render(lang=lang, links=links), encoding="utf-8"
    )
