"""Summaries of SQLite rows without Python row objects: ADBC's SQLite driver → Arrow batches → DuckDB.

SQLite itself computes medians slowly (a temporary B-tree upsert per event: 6–7 s for 10 M kernel
launches); here SQLite only scans (``mode=ro&immutable=1``, as :mod:`.sqlite_file` opens it), the
ADBC driver hands the rows over as Arrow record batches, and DuckDB streams them through its
aggregate — count, total, mean, median (the mean of the two middle values for even counts, as
nsys prints it), min, max and the sample variance, exact: ``(n·Σd² − (Σd)²) / (n(n−1))`` in 128-bit
integers, rounded once to a double.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import adbc_driver_manager
import adbc_driver_sqlite
import duckdb
import pandas as pd

#: DuckDB's threads (the default of :meth:`Columnar.stats`).
THREADS = 2
#: Rows per Arrow batch the driver produces (its default of 1024 costs a call per thousand rows).
BATCH_ROWS = 1 << 16

#: Per k of the view ``src`` (k, grp, key, aux, d), in k order: grp, key, aux and the statistics.
AGGREGATE = """
SELECT max(grp) AS grp, max(key) AS key, max(aux) AS aux, count(*) AS count,
       sum(d)::DOUBLE AS total_ns, sum(d)::DOUBLE / count(*) AS avg_ns, median(d)::DOUBLE AS med_ns,
       min(d)::DOUBLE AS min_ns, max(d)::DOUBLE AS max_ns,
       CASE WHEN count(*) > 1
            THEN (count(*)::HUGEINT * sum(d::HUGEINT * d) - sum(d)::HUGEINT * sum(d))::DOUBLE
                 / (count(*)::DOUBLE * (count(*) - 1))
            ELSE 0.0 END AS var
FROM src WHERE d IS NOT NULL GROUP BY k ORDER BY k
"""


class Columnar:
    """A read-only ADBC connection to one SQLite file and an in-memory DuckDB that aggregates."""

    def __init__(self, path: Path) -> None:
        self._db = adbc_driver_sqlite.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1")
        self._open: list[adbc_driver_manager.AdbcConnection | adbc_driver_manager.AdbcStatement] = []
        self.duck = duckdb.connect(config={"threads": THREADS})

    def view(self, name: str, sql: str) -> None:
        """Make the rows of the SQLite query ``sql`` DuckDB's view ``name`` (scanned once, streamed)."""
        conn = adbc_driver_manager.AdbcConnection(self._db)  # one per stream: scans may run side by side
        statement = adbc_driver_manager.AdbcStatement(conn)
        self._open += [conn, statement]
        statement.set_options(**{"adbc.sqlite.query.batch_rows": str(BATCH_ROWS)})
        statement.set_sql_query(sql)
        stream, _ = statement.execute_query()
        self.duck.from_arrow(stream).create_view(name)

    def table(self, name: str, sql: str) -> None:
        """Make the rows of the SQLite query ``sql`` DuckDB's temporary table ``name`` (for queries
        that read them more than once)."""
        self.view(f"{name}_stream", sql)
        self.duck.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT * FROM {name}_stream")

    def rows(self, sql: str) -> list[tuple]:
        """The rows of the SQLite query ``sql`` (a small result: a pragma's)."""
        self.view("result", sql)
        return self.duck.execute("SELECT * FROM result").fetchall()

    def stats(self, sql: str, threads: int = THREADS) -> pd.DataFrame:
        """:data:`AGGREGATE` over the DuckDB query ``sql`` of (k, grp, key, aux, d) rows, on ``threads``
        (one for a single stream: it is scanned by one thread anyway, and a second thread's partial
        medians, every duration again until combined, cost 8-15 MiB at 10 M launches)."""
        self.duck.execute(f"CREATE OR REPLACE TEMP VIEW src AS {sql}")
        if threads != THREADS:
            self.duck.execute(f"SET threads = {threads}")
        try:
            return self.duck.execute(AGGREGATE).df()
        finally:
            if threads != THREADS:
                self.duck.execute(f"SET threads = {THREADS}")

    def close(self) -> None:
        self.duck.close()
        for handle in reversed(self._open):
            handle.close()
        self._db.close()


@contextmanager
def columnar(path: Path) -> Iterator[Columnar]:
    """A :class:`Columnar` over ``path`` for the block."""
    reader = Columnar(path)
    try:
        yield reader
    finally:
        reader.close()
