"""Globs of report.yaml, bounded: no recursion from / or the home directory, at most MAX_MATCHES."""
from __future__ import annotations

import glob
import itertools
from pathlib import Path

MAX_MATCHES = 10_000


def literal_base(pattern: Path) -> Path:
    """The folder a glob starts in: ``pattern``'s leading parts without wildcards, resolved."""
    parts = list(itertools.takewhile(lambda part: not glob.has_magic(part), pattern.parts[:-1]))
    return Path(*parts).resolve() if parts else Path.cwd()


def expand(value: str, base: Path) -> tuple[Path, ...]:
    """The files ``value`` (a glob relative to ``base``) matches, sorted; ValueError when the glob
    recurses from / or the home directory, or matches more than MAX_MATCHES paths."""
    pattern = base / value
    start = literal_base(pattern)
    if "**" in value and start in {Path("/"), Path.home().resolve(), *Path.home().resolve().parents}:
        raise ValueError(f"{value!r} searches all of {start} recursively; give a narrower folder")
    found = list(itertools.islice(glob.iglob(str(pattern), recursive=True), MAX_MATCHES + 1))
    if len(found) > MAX_MATCHES:
        raise ValueError(f"{value!r} matches more than {MAX_MATCHES} paths; give a narrower glob")
    return tuple(Path(p) for p in sorted(found) if Path(p).is_file())
