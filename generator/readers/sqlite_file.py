"""Opening a user's SQLite file: read-only and immutable, integrity-checked once per file.

``mode=ro&immutable=1`` makes SQLite read the file as it is: no ``-wal``/``-shm`` files appear
beside it (a WAL-mode export would otherwise get them) and read-only media work. A file that fails
``PRAGMA quick_check`` (truncated, overwritten pages) or carries bytes after its last page is
refused before any query trusts it.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

from generator.errors import InputError

_CHECKED: set[tuple[str, int, int]] = set()


def connect_readonly(path: Path) -> sqlite3.Connection:
    """A read-only, immutable connection to ``path``; InputError if the file fails quick_check."""
    path = path.resolve()
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro&immutable=1", uri=True)
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key in _CHECKED:
        return conn
    try:
        problems = [row[0] for row in conn.execute("PRAGMA quick_check(3)")]
        pages, page_size = (conn.execute(f"PRAGMA {name}").fetchone()[0] for name in ("page_count", "page_size"))
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise InputError(path, f"unreadable nsys SQLite export ({exc})") from None
    if problems == ["ok"] and stat.st_size != pages * page_size:
        conn.close()
        raise InputError(path, f"unreadable nsys SQLite export ({stat.st_size - pages * page_size} bytes of "
                               f"garbage after its {pages} pages)")
    if problems != ["ok"]:
        conn.close()
        detail = " ".join(" ".join(problems).split())[:200]
        raise InputError(path, f"unreadable nsys SQLite export (quick_check: {detail})")
    _CHECKED.add(key)
    return conn
