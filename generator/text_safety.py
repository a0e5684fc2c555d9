"""Text from inputs made safe before it meets a native library, a terminal or a spreadsheet.

Control characters (C0 except tab/newline, DEL, C1) and lone surrogates from a profiler file are
replaced by U+FFFD at the reader boundary: the chart renderer (vl-convert) aborts the process on
ESC, BEL or NUL, a terminal obeys escape sequences, and UTF-8 cannot encode a lone surrogate.
CSV cells a spreadsheet would read as a formula (``= + - @``, tab, CR first) get a leading quote.
"""
from __future__ import annotations

import re
from typing import Any

import pandas as pd

UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
REPLACEMENT = "\ufffd"
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def clean_text(text: str) -> str:
    """``text`` with control characters and lone surrogates replaced by U+FFFD."""
    return UNSAFE.sub(REPLACEMENT, text)


def clean_tree(value: Any) -> Any:
    """``value`` (JSON-like: dicts, lists, strings, numbers) with :func:`clean_text` on every string."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_tree(k): clean_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_tree(v) for v in value]
    return value


def first_unsafe(text: str) -> str | None:
    """``U+XXXX`` of the first control character or lone surrogate in ``text``, or None."""
    match = UNSAFE.search(text)
    return f"U+{ord(match[0]):04X}" if match else None


def text_columns(frame: pd.DataFrame) -> list:
    """Columns that can hold text (object or string dtype)."""
    return [c for c in frame.columns
            if pd.api.types.is_object_dtype(frame[c].dtype) or pd.api.types.is_string_dtype(frame[c].dtype)]


def clean_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with :func:`clean_text` applied to every text cell (other cells unchanged)."""
    columns = text_columns(frame)
    if not columns:
        return frame
    cleaned = {c: frame[c].map(lambda v: clean_text(v) if isinstance(v, str) else v) for c in columns}
    return frame.assign(**cleaned)


def csv_cell(value: object) -> object:
    """A text cell a spreadsheet shows as text, not as a formula; other values unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def csv_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with :func:`csv_cell` applied to every text cell and to the column names."""
    safe = frame.assign(**{c: frame[c].map(csv_cell) for c in text_columns(frame)})
    return safe.rename(columns=lambda c: csv_cell(c) if isinstance(c, str) else c)
