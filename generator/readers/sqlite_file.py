"""Opening a user's SQLite file: read-only and immutable, each table a read uses integrity-checked once.

``mode=ro&immutable=1`` makes SQLite read the file as it is: no ``-wal``/``-shm`` files appear
beside it (a WAL-mode export would otherwise get them) and read-only media work. A read names the
tables it takes rows from; before any result of its queries is used, each of them that the file
holds passes ``PRAGMA quick_check(TABLE)`` (the table's and its indexes' pages; the schema table,
which every read parses, too), once per process and file version, and the file's size is the page
count its header states times its page size, so a truncated file or bytes after the last page are
refused whatever the tables. Damage in a table no read takes rows from cannot change a result and
is not looked for (checking the whole file costs the CPU of every table in it).
:func:`checked_while_read` checks while the queries run, on the second core.
"""
from __future__ import annotations

import sqlite3
import threading
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

import adbc_driver_manager
import duckdb

from generator.errors import InputError
from generator.readers.sqlite_columnar import columnar

#: The schema table: every read parses it.
SCHEMA_TABLE = "sqlite_master"
_HEADER = 100

#: (path, size, mtime_ns, table) that passed quick_check in this process.
_CHECKED: set[tuple[str, int, int, str]] = set()


def _open(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.as_uri()}?mode=ro&immutable=1", uri=True, check_same_thread=False)


def _key(path: Path) -> tuple[str, int, int]:
    stat = path.stat()
    return str(path), stat.st_size, stat.st_mtime_ns


def _unread(key: tuple[str, int, int], tables: Collection[str]) -> list[str]:
    """The schema table and ``tables``, less those checked already (sorted, schema first)."""
    return [t for t in [SCHEMA_TABLE, *sorted(set(tables) - {SCHEMA_TABLE})] if (*key, t) not in _CHECKED]


def _check_size(path: Path, size: int) -> None:
    """InputError unless ``path`` is ``size`` bytes = the page count its header states × its page size.

    The count (header offset 28) holds only where the version-valid-for number (offset 92) equals
    the change counter (offset 24), as SQLite itself decides; where not (written by SQLite before
    3.7.0), SQLite takes the count from the size, and only a partial last page shows."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_HEADER)
    except OSError as exc:
        raise InputError(path, f"cannot read ({exc.strerror})") from None
    if len(head) < _HEADER:
        raise InputError(path, f"unreadable nsys SQLite export ({size} bytes, less than its {_HEADER}-byte header)")
    stated = int.from_bytes(head[16:18], "big")
    page_size = 65536 if stated == 1 else stated
    if page_size < 512 or page_size & (page_size - 1):
        raise InputError(path, f"unreadable nsys SQLite export (page size {stated} in its header)")
    pages = int.from_bytes(head[28:32], "big")
    if not pages or head[24:28] != head[92:96]:
        if size % page_size:
            raise InputError(path, f"unreadable nsys SQLite export ({size % page_size} bytes after its last "
                                   f"whole page of {page_size} bytes)")
    elif size < pages * page_size:
        raise InputError(path, f"unreadable nsys SQLite export (truncated: {size} bytes, its header states "
                               f"{pages} pages of {page_size} bytes)")
    elif size > pages * page_size:
        raise InputError(path, f"unreadable nsys SQLite export ({size - pages * page_size} bytes of "
                               f"garbage after its {pages} pages)")


def _check_tables(path: Path, tables: list[str]) -> None:
    """InputError naming the first of ``tables`` that ``path`` holds and that fails quick_check. The
    check runs in the SQLite of ADBC's driver (3.53 checks a 10 M-launch kernel table in 2.7 s CPU,
    Python's 3.40 in 3.2 s)."""
    try:
        with columnar(path) as reader:
            held = {name for (name,) in reader.rows(f"SELECT name FROM {SCHEMA_TABLE} WHERE type = 'table'")}
            for table in tables:
                if table != SCHEMA_TABLE and table not in held:
                    continue
                quoted = table.replace('"', '""')
                try:
                    problems = [row[0] for row in reader.rows(f'PRAGMA quick_check("{quoted}")')]
                except (adbc_driver_manager.Error, duckdb.Error) as exc:  # a page it cannot even parse
                    problems = [_first_line(exc)]
                if problems != ["ok"]:
                    detail = " ".join(" ".join(problems[:3]).split())[:200]
                    raise InputError(path, f"unreadable nsys SQLite export (quick_check of {table}: {detail})")
    except (adbc_driver_manager.Error, duckdb.Error) as exc:
        raise InputError(path, f"unreadable nsys SQLite export ({_first_line(exc)})") from None


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def connect_readonly(path: Path, tables: Collection[str]) -> sqlite3.Connection:
    """A read-only, immutable connection to ``path`` for reading ``tables``; InputError if the file's
    size or one of those tables (of those it holds) fails its check."""
    path = path.resolve()
    key = _key(path)
    _check_size(path, key[1])
    unread = _unread(key, tables)
    if unread:
        _check_tables(path, unread)
        _CHECKED.update((*key, t) for t in unread)
    return _open(path)


@contextmanager
def checked_while_read(path: Path, tables: Collection[str]) -> Iterator[sqlite3.Connection]:
    """A read-only, immutable connection to ``path`` for reading ``tables`` while their quick_check
    runs beside the block (a thread; SQLite releases the GIL). What the block computed stands only
    if the check passes: a failing check raises its InputError when the block ends, also in place of
    the block's own error (a damaged table's queries fail too, and the check names the damage best).
    The file's size is checked before the block."""
    path = path.resolve()
    key = _key(path)
    _check_size(path, key[1])
    unread = _unread(key, tables)
    failure: list[InputError] = []

    def check() -> None:
        try:
            _check_tables(path, unread)
        except InputError as exc:
            failure.append(exc)

    worker = threading.Thread(target=check, name="sqlite-quick-check", daemon=True) if unread else None
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
        _CHECKED.update((*key, t) for t in unread)
