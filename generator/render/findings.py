"""Findings and classification-method text: generator/templates/findings/<id>.<lang>.md.j2 over their evidence."""
from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import jinja2

from generator.analyses.result import Finding
from generator.languages import LANGS
from generator.render.translations import term
from generator.resources import TEMPLATES


@cache
def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES / "findings"),
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=False, autoescape=False)


def _template(stem: str, lang: str) -> jinja2.Template:
    """``<stem>.<lang>.md.j2``, else (a language not yet translated here) the default language's."""
    return _env().select_template([f"{stem}.{lang}.md.j2", f"{stem}.{LANGS[0]}.md.j2"])


def render_finding(finding: Finding, lang: str) -> str:
    """The finding's Markdown text in ``lang`` from its template and evidence."""
    return _template(finding.id, lang).render(**finding.evidence, kernel_names=list(finding.kernels),
                                              term=_terms(lang)).strip()


def render_method(rule: str, params: dict[str, Any], lang: str) -> str:
    """The classification method section for ``rule`` in ``lang``, quoting its thresholds."""
    return _template(f"method_{rule}", lang).render(**params, term=_terms(lang)).strip()


def _terms(lang: str) -> Callable[[str], str]:
    """``term("classes.compute-bound")`` inside a template: the glossary's word in ``lang``."""
    return lambda key: term(key, lang)
