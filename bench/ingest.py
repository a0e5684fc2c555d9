"""Benchmark: our nsys kernel summary vs the plain sqlite3 stats query and a bare scan, ≥ 10 M kernel rows.

    .venv/bin/python bench/ingest.py [--rows 10000000] [--jitter 0] [--source FILE.sqlite[.xz]]

Builds /tmp/…/bench.sqlite by replicating the kernel rows of a real capture with shifted
timestamps (INSERT … SELECT inside SQLite); ``--jitter N`` adds 0…N-1 ns to each copy's durations
so that fewer durations repeat. Each query runs in a fresh process (time, peak RSS); ours and the
plain query must give the same numbers (stddev: the largest relative difference is printed). The
floor is the bare scan of the same table in SQLite (``count(*), sum(end - start)``), the least any
reader that goes through SQLite pays. Ours uses a file's rows once the tables it reads pass
``PRAGMA quick_check(TABLE)`` (here the kernel table, nearly the whole file, and StringIds), which
runs beside the summary on the second core; the check alone and the summary of a file already
checked (a second call in one process) are timed too: ours costs about the larger of the two when
the second core is free, their sum when another process holds it.
The database is deleted afterwards.
Targets: ours ≤ 0.1× plain, ≤ 3× the floor, peak RSS ≤ 256 MiB.
"""
from __future__ import annotations

import argparse
import json
import lzma
import math
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = ROOT / "tests/data/h200-small/small_vlm.nsys.sqlite.xz"

#: The cuda_gpu_kern_sum numbers the straightforward way: window-function median, then GROUP BY.
PLAIN_SQL = """
WITH k AS (SELECT demangledName AS nid, end - start AS d FROM CUPTI_ACTIVITY_KIND_KERNEL),
r AS (SELECT nid, d, row_number() OVER (PARTITION BY nid ORDER BY d) AS rn,
             count(*) OVER (PARTITION BY nid) AS cnt FROM k),
m AS (SELECT nid, avg(d) AS med FROM r WHERE rn IN ((cnt + 1) / 2, cnt / 2 + 1) GROUP BY nid),
s AS (SELECT nid, count(*) AS num, sum(d) AS total, avg(d) AS av, min(d) AS mn, max(d) AS mx,
             sum(d * d) AS sq FROM k GROUP BY nid)
SELECT ids.value, num, total, av, m.med, mn, mx,
       CASE WHEN num > 1 THEN (sq - total * 1.0 * total / num) / (num - 1) ELSE 0.0 END
FROM s JOIN m USING (nid) JOIN StringIds AS ids ON ids.id = s.nid
ORDER BY total DESC
"""


def build(source: Path, target: Path, rows: int, jitter: int) -> int:
    """Copy ``source`` to ``target`` and replicate its kernel rows until there are ≥ ``rows``."""
    if source.suffix == ".xz":
        with lzma.open(source) as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    else:
        shutil.copy(source, target)
    con = sqlite3.connect(target)
    con.execute("PRAGMA journal_mode = OFF")
    con.execute("PRAGMA synchronous = OFF")
    n, t0, t1, corr = con.execute("SELECT count(*), min(start), max(end), max(correlationId) "
                                  "FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    copies = math.ceil(rows / n) - 1
    cols = [r[1] for r in con.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")]
    shifted = {"start": f"s.start + c.i * {t1 - t0 + 1}",
               "end": f"s.end + c.i * {t1 - t0 + 1} + (c.i * 7919 + s.rowid) % {max(jitter, 1)}",
               "correlationId": f"s.correlationId + c.i * {corr + 1}"}
    select = ", ".join(shifted.get(c, f"s.{c}") for c in cols)
    con.execute("CREATE TEMP TABLE src AS SELECT rowid, * FROM CUPTI_ACTIVITY_KIND_KERNEL")
    con.execute(f"""INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT {select} FROM temp.src AS s,
                    (WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < {copies})
                     SELECT i FROM r) AS c""")
    con.commit()
    total = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    con.close()
    return total


def measure(which: str, db: str) -> None:
    """Child process: time one summary (wall and CPU, imports excluded), print them with the peak
    RSS of the process and the result rows as JSON."""
    sys.path.insert(0, str(ROOT))
    from generator.readers.nsys_sqlite import KERNEL_SUMMARY_TABLES, kernel_summary
    from generator.readers.sqlite_file import connect_readonly

    if which == "summary":
        kernel_summary(db)  # checks the file: the timed call below reads it as the build's later readers do
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    if which == "floor":
        con = sqlite3.connect(db)
        rows = [list(con.execute("SELECT count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone())]
        con.close()
    elif which == "check":
        connect_readonly(Path(db), KERNEL_SUMMARY_TABLES).close()  # as kernel_summary checks beside its queries
        rows = []
    elif which in ("ours", "summary"):
        frame = kernel_summary(db)
        rows = [[r.name, int(r.count), int(r.total_ns), float(r.med_ns), int(r.min_ns), int(r.max_ns),
                 float(r.stddev_ns)] for r in frame.itertuples()]
    else:
        con = sqlite3.connect(db)
        rows = [[name, num, total, med, mn, mx, math.sqrt(max(var, 0.0))]
                for name, num, total, _, med, mn, mx, var in con.execute(PLAIN_SQL)]
        con.close()
    seconds = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime - before.ru_utime - before.ru_stime
    print(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "rss_bytes": usage.ru_maxrss * 1024, "rows": rows}))


def run_child(which: str, db: Path) -> dict:
    out = subprocess.run([sys.executable, __file__, "--measure", which, str(db)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def same(a: list, b: list) -> tuple[bool, float]:
    """Whether name, count, total, median, min and max agree exactly and the stddevs within 1e-9
    relative (the plain query's Σd² − (Σd)²/n loses digits), and the largest relative stddev difference."""
    key = {r[0]: r for r in b}
    if len(a) != len(b) or any(r[:6] != key.get(r[0], [None])[:6] for r in a):
        return False, math.inf
    rel = max((abs(r[6] - key[r[0]][6]) / key[r[0]][6] for r in a if key[r[0]][6]), default=0.0)
    return rel <= 1e-9, rel


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--jitter", type=int, default=0, help="spread copied durations over N ns")
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--measure", nargs=2, metavar=("WHICH", "DB"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(*args.measure)
        return 0
    with tempfile.TemporaryDirectory(prefix="kernel-report-bench-", dir="/tmp") as tmp:
        db = Path(tmp) / "bench.sqlite"
        start = time.perf_counter()
        rows = build(args.source, db, args.rows, args.jitter)
        print(f"built {db.name}: {rows:,} kernel rows from {args.source.name} (jitter {args.jitter} ns) "
              f"in {time.perf_counter() - start:.1f} s, {db.stat().st_size / 2**20:,.0f} MiB")
        floor, ours, plain = run_child("floor", db), run_child("ours", db), run_child("plain", db)
        checked, summary = run_child("check", db), run_child("summary", db)
    for label, r in (("floor (bare SQLite scan)", floor), ("ours (ADBC → Arrow → DuckDB)", ours),
                     ("plain sqlite3 query", plain), ("  of ours: quick_check alone", checked),
                     ("  of ours: summary, file checked", summary)):
        print(f"{label:34s} {r['seconds']:7.2f} s wall  {r['cpu_seconds']:7.2f} s CPU  "
              f"peak RSS {r['rss_bytes'] / 2**20:6.0f} MiB")
    ratio, over_floor = ours["seconds"] / plain["seconds"], ours["seconds"] / floor["seconds"]
    agree, rel = same(ours["rows"], plain["rows"])
    agree = agree and summary["rows"] == ours["rows"]
    launches = sum(r[1] for r in ours["rows"])
    print(f"ours/plain {ratio:.3f} wall, {ours['cpu_seconds'] / plain['cpu_seconds']:.3f} CPU (target ≤ 0.1); "
          f"ours/floor {over_floor:.2f} (target ≤ 3); peak RSS target ≤ 256 MiB; {launches:,} launches "
          f"({floor['rows'][0][0]:,} in the table), {len(ours['rows'])} kernel names; same counts, totals, "
          f"medians, min, max: {agree}; stddev largest relative difference {rel:.1e}; "
          f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"bounds: the quick_check alone is {checked['seconds'] / plain['seconds']:.3f}× plain and "
          f"{checked['seconds'] / floor['seconds']:.2f}× the floor; the summary of a checked file "
          f"{summary['seconds'] / plain['seconds']:.3f}× and {summary['seconds'] / floor['seconds']:.2f}× "
          "(ours costs at least the larger of the two; bench/INGEST.md)")
    ok = agree and ratio <= 0.1 and over_floor <= 3 and ours["rss_bytes"] <= 256 * 2**20
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
