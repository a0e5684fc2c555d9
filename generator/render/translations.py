"""The words of the pages and charts: generator/templates/i18n/<lang>.yaml, looked up by dotted key."""
from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import yaml

from generator.resources import TEMPLATES


@cache
def _words(lang: str) -> dict[str, Any]:
    return yaml.safe_load((TEMPLATES / "i18n" / f"{lang}.yaml").read_text(encoding="utf-8"))


def translator(lang: str) -> Callable[..., str]:
    """``t("a.b", **fields)``: the words at key ``a.b`` of generator/templates/i18n/<lang>.yaml, formatted
    with ``fields``; a missing key is an error unless ``default`` is given."""
    words = _words(lang)

    def t(key: str, default: str | None = None, **fields: Any) -> str:
        node: Any = words
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                if default is not None:
                    return default
                raise KeyError(f"generator/templates/i18n/{lang}.yaml has no {key!r}")
            node = node[part]
        return str(node).format(**fields) if fields else str(node)

    return t
