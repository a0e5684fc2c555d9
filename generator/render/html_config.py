"""Report text for MkDocs config values that Material prints into HTML.

Material prints ``site_name`` both raw (``{{ config.site_name }}``) and escaped
(``{{ config.site_name | e }}``), so a plain string is either injected or shown double-escaped.
Text that HTML would read differently becomes a ``markupsafe.Markup`` of its escaped form (the
YAML tag below; mkdocs' loader builds it): printed raw it is escaped once, and ``| e`` leaves it be.
"""
from __future__ import annotations

import html
import json


def yaml_html_text(text: str) -> str:
    """A YAML scalar for ``text`` that Material shows literally wherever it prints it."""
    escaped = html.escape(text, quote=True)
    if escaped == text:
        return json.dumps(text, ensure_ascii=False)
    return f"!!python/object/apply:markupsafe.Markup [{json.dumps(escaped, ensure_ascii=False)}]"


def front_matter_title(text: str) -> str:
    """A page's ``title:`` front-matter value: HTML-escaped, since Material prints it raw (and a
    title taken from the heading would be unescaped by ``striptags`` inside ``<title>``)."""
    return json.dumps(html.escape(" ".join(text.split()), quote=True), ensure_ascii=False)
