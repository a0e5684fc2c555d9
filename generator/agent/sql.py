"""Read-only SQL over one version's data files: each ``data/<name>.csv`` a DuckDB table ``<name>``.

The tables are copied into an in-memory database; then DuckDB's file system, extension loading and
spilling are switched off and its configuration locked, so a query reads those tables and nothing
else, and writes nowhere. One SELECT per query, at most ``MAX_QUERY_CHARS`` characters, answered
within ``TIME_LIMIT_S`` (interrupted after) and ``MEMORY_LIMIT``.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import duckdb

from generator.agent.site_index import Refused, plain

MAX_QUERY_CHARS = 20_000
MAX_ROWS = 500
DEFAULT_ROWS = 100
TIME_LIMIT_S = 10.0
MEMORY_LIMIT = "512MB"
#: set once the tables are in: nothing outside them is reachable, and the settings cannot change back
_LOCKDOWN = ("SET temp_directory = ''", "SET autoinstall_known_extensions = false",
             "SET autoload_known_extensions = false", "SET allow_community_extensions = false",
             f"SET memory_limit = '{MEMORY_LIMIT}'", "SET threads = 1",
             "SET enable_external_access = false", "SET lock_configuration = true")


class Tables:
    """An in-memory DuckDB database holding ``tables`` (name → CSV file), locked down."""

    def __init__(self, tables: dict[str, Path]) -> None:
        self.names = list(tables)
        self._db = duckdb.connect(":memory:")
        for name, path in tables.items():
            self._db.execute(f'CREATE TABLE "{name}" AS SELECT * FROM read_csv(?, header = true, sample_size = -1)',
                             [str(path)])
        for statement in _LOCKDOWN:
            self._db.execute(statement)
        self._lock = threading.Lock()

    def query(self, text: object, limit: int = DEFAULT_ROWS) -> dict[str, Any]:
        """``{"columns", "rows", "row_count", "truncated"}`` of one SELECT; Refused otherwise."""
        if not isinstance(text, str) or not text.strip():
            raise Refused("the query is empty; give one SELECT statement over this version's tables")
        if len(text) > MAX_QUERY_CHARS or "\x00" in text:
            raise Refused(f"the query is longer than {MAX_QUERY_CHARS:,} characters or holds a NUL character")
        limit = max(1, min(int(limit), MAX_ROWS))
        with self._lock:
            try:
                statements = self._db.extract_statements(text)
            except duckdb.Error as exc:
                raise Refused(f"the query does not parse: {_first_line(exc)}") from None
            if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
                raise Refused("only one SELECT statement is answered (no COPY, ATTACH, INSTALL, LOAD, SET, "
                              "PRAGMA or writes)")
            timer = threading.Timer(TIME_LIMIT_S, self._db.interrupt)
            timer.start()
            try:
                cursor = self._db.execute(text)
                columns = [d[0] for d in cursor.description or []]
                rows = cursor.fetchmany(limit + 1)
            except duckdb.InterruptException:
                raise Refused(f"the query ran longer than {TIME_LIMIT_S:g} s and was stopped") from None
            except duckdb.PermissionException:
                raise Refused("the query may read only this version's tables "
                              f"({', '.join(self.names)}); files, network and extensions are off") from None
            except duckdb.Error as exc:
                raise Refused(f"the query failed: {_first_line(exc)}") from None
            finally:
                timer.cancel()
        return {"columns": columns, "rows": [dict(zip(columns, map(_cell, row))) for row in rows[:limit]],
                "row_count": min(len(rows), limit), "truncated": len(rows) > limit}

    def close(self) -> None:
        self._db.close()


def _cell(value: Any) -> Any:
    value = plain(value)
    return value if value is None or isinstance(value, (str, int, float, bool)) else str(value)


def _first_line(exc: Exception) -> str:
    line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return line[:300]
