"""The comparison page's like-with-like differences (analyses.like_with_like) in words: each key by its
name in the page's language, each value as a word, a number or data (never a raw key or a Python value)."""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from generator.render.markdown import Numbers, escape_text

#: keys whose values are command-line option values or program names: shown as code
_CODE_VALUES = ("ncu_clock_control", "nsys_cuda_graph_trace", "workload")


def difference_item(key: str, t: Callable[..., str]) -> str:
    """The difference's name: its words (``differences.keys.<key>``), or for a workload parameter
    ``params.NAME`` the parameter's name as code."""
    if key.startswith("params."):
        return t("differences.keys.param", name=_code(key.removeprefix("params.")))
    return t(f"differences.keys.{key}", default=escape_text(key))


def difference_value(key: str, value: Any, t: Callable[..., str], numbers: Numbers,
                     stage_name: Callable[[str], str]) -> str:
    """One side's value: yes/no, "not stated", a number, the stage list, or the text (code for option values)."""
    if value is None:
        return t("differences.values.none")
    if isinstance(value, bool):
        return t("differences.values.yes" if value else "differences.values.no")
    if isinstance(value, int | float):
        return numbers.num(value, 0) if float(value).is_integer() else numbers.num(value, 2)
    if key == "stages":
        try:
            stages = json.loads(value)
        except (TypeError, ValueError):
            stages = None
        if isinstance(stages, list):
            return t("list_sep").join(stage_name(str(s)) for s in stages) or t("differences.values.none")
    if key in _CODE_VALUES or key.startswith("params.") or str(value).startswith(("{", "[")):
        return _code(str(value))
    return escape_text(str(value))


def _code(text: str) -> str:
    fence = "``" if "`" in text else "`"
    return f"{fence} {text} {fence}" if fence == "``" else f"`{text}`"
