"""The site's languages, declared once: by their translation files.

A language is its translation file ``generator/templates/i18n/<code>.yaml`` (every key of en.yaml, plus
``language_name``: the language's own name for the language selector); nothing else names it.
Words that live outside the translation files — finding texts (generator/templates/findings/<id>.<code>.md.j2)
and kernel-family descriptions (generator/templates/kernel_families.yaml) — fall back to the default language
until they are translated. report.yaml then gives titles and notes in the new language too.
"""
from __future__ import annotations

from generator import resources

#: The default language (the site's root pages; the fallback for words not yet translated).
DEFAULT_LANG = "en"


def declared_languages() -> tuple[str, ...]:
    """The codes of the translation files of generator/templates/i18n/, the default first, then by code."""
    codes = sorted(path.stem for path in (resources.TEMPLATES / "i18n").glob("*.yaml"))
    return (DEFAULT_LANG, *(code for code in codes if code != DEFAULT_LANG))


#: Language codes (mkdocs-static-i18n locales), the default language first.
LANGS: tuple[str, ...] = declared_languages()
