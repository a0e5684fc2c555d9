"""Subcommands of `python -m generator`, one module each; what their reports share."""
from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

#: the width of a report printed to a pipe or a file (a CI log) when $COLUMNS does not say one
PIPED_WIDTH = 80


def report_console(**options: Any) -> Console:
    """A console for a command's report: on a terminal, its width; piped, tables $COLUMNS wide
    (else PIPED_WIDTH) and lines of text left whole, for the reader's pager to wrap."""
    from rich.console import Console

    if sys.stdout.isatty():
        return Console(**options)
    columns = os.environ.get("COLUMNS", "")
    width = int(columns) if columns.isdigit() and int(columns) > 0 else PIPED_WIDTH
    return Console(width=width, soft_wrap=True, **options)


def report_table(*headers: str, title: str) -> Table:
    """A report table whose cells wrap, never cut: a figure too wide for its column folds onto the
    next line rather than ending in "…"."""
    from rich.table import Table

    made = Table(*headers, title=title)
    for column in made.columns:
        column.overflow = "fold"
    return made
