"""Safe Markdown pieces: escaping of data text, name cells, tables, and number formatting.

Every text that comes from an input file (kernel names, stage names, paths) goes through
:func:`escape_text` (Markdown/HTML text) or :func:`escape_attr` (HTML attribute values) so that
``| < > * _ [ ] ` \\`` show literally and no markup or script is ever produced from data.
"""
from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

#: Characters that are Markdown syntax anywhere in a line (code, emphasis, links, attr_list,
#: table cells, heading closers); each is one Python-Markdown accepts after a backslash.
_MD_INLINE = frozenset("\\`*_{}[]|#")
#: Block markers that only matter where a line starts: list items and ordered lists.
_MD_LINE_START = re.compile(r"^([-+]|\d+(?=\.(?: |$)))")

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")

#: Names longer than this are shortened in tables (the full name is on hover and in the appendix).
NAME_MAX_CHARS = 64


def _one_line(text: str) -> str:
    """Whitespace runs → one space; other control characters → U+FFFD (never markup)."""
    words = str(text).split()
    return " ".join(_CONTROL.sub("\ufffd", w) for w in words)


def escape_text(text: str) -> str:
    """Text for a Markdown paragraph, heading or table cell that renders exactly as given.

    HTML-escapes ``& < >`` first, then backslash-escapes the Markdown syntax characters (and a
    leading list marker: ``-``, ``+``, ``1.``).
    Line breaks and runs of whitespace become one space (a table row is one line); other
    control characters become U+FFFD.
    """
    escaped = html.escape(_one_line(text), quote=False)
    escaped = "".join("\\" + c if c in _MD_INLINE else c for c in escaped)
    return _MD_LINE_START.sub(lambda m: "\\" + m[0] if m[0] in "-+" else m[0] + "\\", escaped, count=1)


_CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def inline_markdown(text: str) -> str:
    """Author text (report.yaml notes) with its backtick code spans rendered as code and everything else
    escaped as :func:`escape_text` does: no other markup, links or HTML reach the page."""
    out, pos = [], 0
    for match in _CODE_SPAN.finditer(text):
        out += [escape_text(text[pos:match.start()]) if match.start() > pos else "",
                f"<code>{html.escape(_one_line(match[2]).strip(), quote=False)}</code>"]
        pos = match.end()
    out.append(escape_text(text[pos:]) if pos < len(text) else "")
    return "".join(out)


def escape_attr(text: str) -> str:
    """Text for a double-quoted HTML attribute inside Markdown: every ASCII punctuation as a
    numeric character reference, so neither the HTML nor the Markdown/table parser sees it."""
    return "".join(
        f"&#{ord(c)};" if (c.isascii() and not c.isalnum() and c != " ") else c
        for c in _one_line(text)
    )


def name_cell(name: str | None, unknown: str, max_chars: int = NAME_MAX_CHARS, title: str | None = None,
              href: str | None = None) -> str:
    """A kernel name for a table cell: escaped, shortened with "…" when long; on hover the full
    name (or ``title``, e.g. the raw profiler name behind a friendly one); a link to ``href`` (the
    kernel's appendix entry) when given."""
    if is_missing(name):
        return escape_text(unknown)
    full = _one_line(name)
    shown = full if len(full) <= max_chars else full[: max_chars - 1] + "…"
    hover = full if title is None else _one_line(title)
    if href is None:
        return f'<span class="kr-name" title="{escape_attr(hover)}">{escape_text(shown)}</span>'
    return f'<a class="kr-name" href="{escape_attr(href)}" title="{escape_attr(hover)}">{escape_text(shown)}</a>'


def code_cell(text: str | None, unknown: str) -> str:
    """A long raw name shown in full, wrapping anywhere (appendix)."""
    if is_missing(text):
        return escape_text(unknown)
    return f'<span class="kr-raw" style="word-break: break-all">{escape_text(text)}</span>'


#: characters of a raw name shown before it expands on demand (appendix)
RAW_SHOWN = 90


def expandable_code_cell(text: str | None, unknown: str, shown: int = RAW_SHOWN) -> str:
    """A raw name: in full when short, else its first ``shown`` characters that open to the whole
    name on a click (an HTML ``details`` on one line, so it stays one table cell)."""
    if is_missing(text) or len(str(text)) <= shown:
        return code_cell(text, unknown)
    head = escape_text(str(text)[:shown])
    return (f'<details class="kr-raw-name"><summary><span class="kr-raw">{head}…</span></summary>'
            f"{code_cell(text, unknown)}</details>")


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], align: str | None = None) -> str:
    """A Markdown table from already-escaped cells; ``align`` is one of ``l r c`` per column."""
    align = align or "l" * len(headers)
    marks = {"l": "---", "r": "--:", "c": ":-:"}
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(marks[a] for a in align) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def is_missing(value: Any) -> bool:
    """None, NaN, pandas NA/NaT, or an empty string."""
    if isinstance(value, str):
        return value == ""
    return value is None or (pd.api.types.is_scalar(value) and bool(pd.isna(value)))


_SI = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


@dataclass(frozen=True)
class Numbers:
    """Fixed-precision number formatting; a missing value prints as ``unknown`` (per language)."""

    unknown: str

    def num(self, value: Any, digits: int = 2) -> str:
        return self.unknown if is_missing(value) else f"{float(value):,.{digits}f}"

    def int(self, value: Any) -> str:
        return self.unknown if is_missing(value) else f"{round(float(value)):,d}"

    def pct(self, value: Any, digits: int = 2) -> str:
        """A 0–100 percentage."""
        return self.unknown if is_missing(value) else f"{float(value):.{digits}f}%"

    def signed(self, value: Any, digits: int = 2, suffix: str = "") -> str:
        return self.unknown if is_missing(value) else f"{float(value):+,.{digits}f}{suffix}"

    def us(self, ns: Any, digits: int = 2) -> str:
        """Nanoseconds shown in microseconds."""
        return self.unknown if is_missing(ns) else f"{float(ns) / 1e3:,.{digits}f} µs"

    def ms(self, ns: Any, digits: int = 3) -> str:
        """Nanoseconds shown in milliseconds."""
        return self.unknown if is_missing(ns) else f"{float(ns) / 1e6:,.{digits}f} ms"

    def si(self, value: Any, unit: str, digits: int = 2) -> str:
        """``1.23 TFLOP/s``, ``4.80 TB/s``: decimal SI prefixes."""
        if is_missing(value):
            return self.unknown
        number = float(value)
        for scale, prefix in _SI:
            if abs(number) >= scale:
                return f"{number / scale:.{digits}f} {prefix}{unit}"
        return f"{number:.{digits}f} {unit}"

    def cell(self, value: Any, scale: float = 1.0, signed: bool = False) -> str:
        """A table number whose unit is in the column header: ``value / scale`` with two decimals,
        or two significant digits below 1 (``0.50``, ``0.0043``), thousands separated."""
        if is_missing(value):
            return self.unknown
        number = float(value) / scale
        digits = 2 if number == 0 or abs(number) >= 1 else max(2, 1 - math.floor(math.log10(abs(number))))
        return f"{number:{'+' if signed else ''},.{digits}f}"

    def cell_us(self, ns: Any) -> str:
        """Nanoseconds as a µs table number."""
        return self.cell(ns, 1e3)

    def cell_ms(self, ns: Any) -> str:
        """Nanoseconds as a ms table number."""
        return self.cell(ns, 1e6)

    def text(self, value: Any) -> str:
        """Data text (escaped) or ``unknown``."""
        return escape_text(self.unknown if is_missing(value) else str(value))
