"""The words of the pages and charts: generator/templates/i18n/<lang>.yaml, looked up by dotted key, and the
terms of generator/templates/glossary.yaml (classes, qualifiers, datapaths, metrics, stages, units, terms),
one word per concept and language, shared by the page, chart and finding templates."""
from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from generator.languages import LANGS
from generator.resources import TEMPLATES, read_yaml

GLOSSARY_FILE = "glossary.yaml"


@cache
def _words(lang: str) -> dict[str, Any]:
    return read_yaml(TEMPLATES / "i18n" / f"{lang}.yaml")


def words(lang: str) -> dict[str, Any]:
    """Every entry of generator/templates/i18n/<lang>.yaml."""
    return _words(lang)


@cache
def glossary() -> dict[str, dict[str, dict[str, Any]]]:
    """generator/templates/glossary.yaml: section → key → {en, zh, avoid?}."""
    return read_yaml(TEMPLATES / GLOSSARY_FILE)


def load_words() -> None:
    """Load every language's words and the glossary now: a child forked afterwards inherits them."""
    for lang in LANGS:
        _words(lang)
    glossary()


def term(key: str, lang: str, default: str | None = None) -> str:
    """The glossary's word for ``section.key`` in ``lang`` (the default language's where it has none)."""
    section, _, name = key.partition(".")
    entry = glossary().get(section, {}).get(name)
    if entry is None:
        if default is not None:
            return default
        raise KeyError(f"generator/templates/{GLOSSARY_FILE} has no {key!r}")
    return str(entry.get(lang, entry[LANGS[0]]))


def translator(lang: str) -> Callable[..., str]:
    """``t("a.b", **fields)``: the words at key ``a.b`` of generator/templates/i18n/<lang>.yaml, or the glossary's
    term when ``a`` is one of its sections, formatted with ``fields``; a missing key is an error unless
    ``default`` is given."""
    words = _words(lang)
    sections = glossary().keys()

    def t(key: str, default: str | None = None, **fields: Any) -> str:
        if key.partition(".")[0] in sections:
            found = term(key, lang, default)
            return found.format(**fields) if fields else found
        node: Any = words
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                if default is not None:
                    return default
                raise KeyError(f"generator/templates/i18n/{lang}.yaml has no {key!r}")
            node = node[part]
        return str(node).format(**fields) if fields else str(node)

    return t
