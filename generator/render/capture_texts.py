"""The capture's own words in a run's manifest (capture/run.py writes them in English) in the page's
language: each text the capture writes is an entry of ``capture_texts`` in the translation files, the
default language's entry being the text itself (``{field}`` matches any text, shown as data) and the
others its translation, in Markdown. A text no entry matches (another capture version's) is quoted
as it is, marked as English."""
from __future__ import annotations

import re
from functools import cache

from generator.languages import DEFAULT_LANG
from generator.render.markdown import escape_text
from generator.render.translations import translator, words

_FIELD = re.compile(r"\{(\w+)\}")


@cache
def _patterns() -> dict[str, re.Pattern[str]]:
    """Entry key → the pattern of the capture's text."""
    patterns = {}
    for key, text in words(DEFAULT_LANG)["capture_texts"].items():
        parts = _FIELD.split(str(text))  # text, field, text, …
        pattern = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>.+?)" for i, p in enumerate(parts))
        patterns[key] = re.compile(pattern + r"\Z", re.S)
    return patterns


def capture_text(text: object, lang: str) -> str:
    """``text`` (a manifest's text) in ``lang``, as Markdown: translated when it is a capture text,
    else quoted as it is in a ``kr-raw`` span marked ``lang="en"``."""
    value = str(text)
    if lang != DEFAULT_LANG:
        for key, pattern in _patterns().items():
            if found := pattern.match(value):
                fields = {k: escape_text(v) for k, v in found.groupdict().items()}
                return translator(lang)(f"capture_texts.{key}", **fields)
    return f'<span class="kr-raw" lang="{DEFAULT_LANG}">{escape_text(value)}</span>'
