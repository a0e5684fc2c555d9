"""The site's languages, declared once.

A language is its translation file ``generator/templates/i18n/<code>.yaml`` (every key of en.yaml, plus
``language_name``: the language's own name for the language selector) and its code in LANGS.
Words that live outside the translation files — finding texts (generator/templates/findings/<id>.<code>.md.j2)
and kernel-family descriptions (generator/templates/kernel_families.yaml) — fall back to the default language
until they are translated. report.yaml then gives titles and notes in the new language too.
"""
from __future__ import annotations

#: Language codes (mkdocs-static-i18n locales), the default language first.
LANGS: tuple[str, ...] = ("en", "zh")
