"""Opening a user's SQLite file: read-only and immutable, integrity-checked once per file.

``mode=ro&immutable=1`` makes SQLite read the file as it is: no ``-wal``/``-shm`` files appear
beside it (a WAL-mode export would otherwise get them) and read-only media work. A file that fails
``PRAGMA quick_check`` (truncated, overwritten pages) or carries bytes after its last page is
refused before any result of a query is used (:func:`checked_while_read` checks while the
queries run, on the second core).
"""
from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from generator.errors import InputError

_CHECKED: set[tuple[str, int, int]] = set()


def _open(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.as_uri()}?mode=ro&immutable=1", uri=True, check_same_thread=False)


def _key(path: Path) -> tuple[str, int, int]:
    stat = path.stat()
    return str(path), stat.st_size, stat.st_mtime_ns


def _check(path: Path) -> None:
    """InputError if ``path`` fails quick_check or has bytes after its last page."""
    conn = _open(path)
    try:
        problems = [row[0] for row in conn.execute("PRAGMA quick_check(3)")]
        pages, page_size = (conn.execute(f"PRAGMA {name}").fetchone()[0] for name in ("page_count", "page_size"))
    except sqlite3.DatabaseError as exc:
        raise InputError(path, f"unreadable nsys SQLite export ({exc})") from None
    finally:
        conn.close()
    size = path.stat().st_size
    if problems == ["ok"] and size != pages * page_size:
        raise InputError(path, f"unreadable nsys SQLite export ({size - pages * page_size} bytes of "
                               f"garbage after its {pages} pages)")
    if problems != ["ok"]:
        detail = " ".join(" ".join(problems).split())[:200]
        raise InputError(path, f"unreadable nsys SQLite export (quick_check: {detail})")


def connect_readonly(path: Path) -> sqlite3.Connection:
    """A read-only, immutable connection to ``path``; InputError if the file fails quick_check."""
    path = path.resolve()
    key = _key(path)
    if key not in _CHECKED:
        _check(path)
        _CHECKED.add(key)
    return _open(path)


@contextmanager
def checked_while_read(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only, immutable connection to ``path`` while quick_check runs beside the block (a
    thread; SQLite releases the GIL). What the block computed stands only if the check passes: a
    failing check raises its InputError when the block ends, also in place of the block's own error
    (a damaged file's queries fail too, and the check names the damage best)."""
    path = path.resolve()
    key = _key(path)
    failure: list[InputError] = []

    def check() -> None:
        try:
            _check(path)
        except InputError as exc:
            failure.append(exc)

    worker = None if key in _CHECKED else threading.Thread(target=check, name="sqlite-quick-check", daemon=True)
    if worker is not None:
        worker.start()
    conn = _open(path)
    try:
        yield conn
    except Exception:
        if worker is not None:
            worker.join()
        if failure:
            raise failure[0] from None
        raise
    finally:
        conn.close()
    if worker is not None:
        worker.join()
        if failure:
            raise failure[0]
        _CHECKED.add(key)
