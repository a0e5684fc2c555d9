"""The ranks of an Nsight Systems SQLite export: each process that ran kernels, with its GPU.

A rank is one (process ``globalPid``, GPU ``deviceId``) pair that ran kernels. :func:`rank_processes`
lists them with what orders them; :func:`read_rank` reads one rank's small tables (its kernels with
the call that launched each, its NVTX ranges, its host threads' CUDA calls). Both are pure functions
of (file, rank), so ranks can be read in parallel by any pool of workers.

Launcher rank, where known: ``RANK=`` in the environment nsys recorded (TARGET_INFO_SYSTEM_ENV),
which is that rank's own only in an export made per rank (each rank's process running ``nsys
profile``); otherwise the process start order (its first CUDA call, on the UTC clock of the
session), which :data:`RANK_SOURCES` names. NCCL's NVTX payloads carry the communicator rank, but
nsys 2025.3's SQLite export holds their schemas only (``binaryData`` empty), so they are not read.
"""
from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pandas as pd

from generator.errors import InputError
from generator.model import RankTables
from generator.readers.nsys_sqlite import KERNEL_TABLE, NVTX_TABLE, RUNTIME_TABLE, require_sqlite
from generator.readers.sqlite_file import checked_while_read

#: One row per rank of an export (:func:`rank_processes`).
RANK_COLUMNS = [
    "path",  # the export
    "global_pid",  # nsys' globalPid of the process
    "pid",  # the OS process id
    "gpu",  # deviceId the rank's kernels ran on
    "launches",  # its kernels
    "first_call_ns",  # its first CUDA call (else first kernel), on the session's clock
    "session_utc_ns",  # the session's start (TARGET_INFO_SESSION_START_TIME), 0 when not stated
    "env_rank",  # RANK= of the environment nsys ran in, for an export of one rank; else None
]
#: How the ranks of a version were ordered.
RANK_SOURCES = ("environment", "process start order")

_TABLES = (KERNEL_TABLE, RUNTIME_TABLE, NVTX_TABLE, "StringIds")
#: NVTX push/pop and start/end ranges (nsys' eventType 59 and 60).
_RANGE_TYPES = (59, 60)


def _connect(path: Path, tables: tuple[str, ...] = _TABLES):
    require_sqlite(path)
    return checked_while_read(path, tables)


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}


def rank_processes(path: str | Path) -> pd.DataFrame:
    """RANK_COLUMNS of every (process, GPU) of ``path`` that ran kernels, in start order (the CUDA
    calls are read only where there are several: a single-GPU export costs one grouped count)."""
    path = Path(path)
    try:
        with _connect(path, (KERNEL_TABLE,)) as conn:
            if KERNEL_TABLE not in _tables(conn):
                return pd.DataFrame(columns=RANK_COLUMNS)
            rows = _kernel_processes(conn)
        with _connect(path, (RUNTIME_TABLE,) if len(rows) > 1 else ()) as conn:
            tables = _tables(conn)
            first_calls = {}
            if RUNTIME_TABLE in tables and len(rows) > 1:
                first_calls = dict(conn.execute(f"SELECT globalTid >> 24, MIN(start) FROM {RUNTIME_TABLE} "
                                                "GROUP BY globalTid >> 24").fetchall())
            session = 0
            if "TARGET_INFO_SESSION_START_TIME" in tables:
                found = conn.execute("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME").fetchone()
                session = int(found[0]) if found and found[0] is not None else 0
            # the CLI's environment is one rank's only where the export holds one rank
            env_rank = _cli_rank(conn, tables) if len(rows) == 1 else None
    except sqlite3.DatabaseError as exc:
        raise InputError(path, f"unreadable nsys SQLite export ({str(exc).strip()})") from None
    frame = pd.DataFrame(
        [(str(path), int(gp), int(gp) >> 24 & 0xFFFFFF, int(dev), int(n),
          int(first_calls.get(int(gp) >> 24, first)), session, env_rank)
         for gp, dev, n, first in rows], columns=RANK_COLUMNS)
    return frame.sort_values(["first_call_ns", "pid", "gpu"], kind="stable").reset_index(drop=True)


def several_ranks(path: str | Path) -> bool:
    """Whether kernels of ``path`` ran in more than one (process, GPU) pair: one scan that stops at
    the first kernel of a pair other than the first row's (0.85 s for 10 M launches of one pair,
    half of :func:`rank_processes`' count of them)."""
    path = Path(path)
    try:
        with _connect(path, (KERNEL_TABLE,)) as conn:
            if KERNEL_TABLE not in _tables(conn):
                return False
            first = conn.execute(f"SELECT globalPid, deviceId FROM {KERNEL_TABLE} LIMIT 1").fetchone()
            return first is not None and conn.execute(
                f"SELECT 1 FROM {KERNEL_TABLE} WHERE NOT ({_PAIR}) LIMIT 1", _pair(first)).fetchone() is not None
    except sqlite3.DatabaseError as exc:
        raise InputError(path, f"unreadable nsys SQLite export ({str(exc).strip()})") from None


#: A kernel row of the pair :func:`_pair` binds.
_PAIR = "globalPid IS :pid AND deviceId IS :gpu"


def _pair(row: tuple) -> dict[str, object]:
    return {"pid": row[0], "gpu": row[1]}


def _kernel_processes(conn: sqlite3.Connection) -> list[tuple]:
    """(globalPid, deviceId, kernels, first kernel start) per pair that ran kernels, in (globalPid,
    deviceId) order. One scan counts the first row's pair and whether any row has another; only
    those rows are then grouped (SQLite groups by sorting: 6.4 s for 10 M launches of one pair,
    against 1.5 s for the scan)."""
    first = conn.execute(f"SELECT globalPid, deviceId FROM {KERNEL_TABLE} LIMIT 1").fetchone()
    if first is None:
        return []
    n, start, total = conn.execute(f"SELECT count(CASE WHEN {_PAIR} THEN 1 END), min(CASE WHEN {_PAIR} THEN start END), "
                                   f"count(*) FROM {KERNEL_TABLE}", _pair(first)).fetchone()
    rows = [(*first, n, start)]
    if total > n:
        rows += conn.execute(f"SELECT globalPid, deviceId, count(*), min(start) FROM {KERNEL_TABLE} "
                             f"WHERE NOT ({_PAIR}) GROUP BY globalPid, deviceId", _pair(first)).fetchall()
    return sorted(rows, key=lambda r: (r[0] is not None, r[0] or 0, r[1] is not None, r[1] or 0))


_RANK_ENV = re.compile(r"(?:^|;)RANK=(\d+)(?:;|$)")


def _cli_rank(conn: sqlite3.Connection, tables: set[str]) -> int | None:
    """``RANK=`` of the environment nsys was started in (TARGET_INFO_SYSTEM_ENV's DeviceEnvironment),
    None where it has none: an export made per rank (``nsys profile`` run by each rank's process)."""
    if "TARGET_INFO_SYSTEM_ENV" not in tables:
        return None
    for (text,) in conn.execute("SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'DeviceEnvironment'"):
        match = _RANK_ENV.search(str(text))
        if match:
            return int(match[1])
    return None


def read_rank(path: str | Path, global_pid: int, gpu: int) -> RankTables:
    """The kernels, NVTX ranges and CUDA calls of one rank (process ``global_pid`` on ``gpu``)."""
    path = Path(path)
    pid_key = int(global_pid) >> 24
    try:
        with _connect(path) as conn:
            tables = _tables(conn)
            runtime = RUNTIME_TABLE in tables
            launch = (f"LEFT JOIN {RUNTIME_TABLE} AS r ON r.correlationId = k.correlationId "
                      "AND r.globalTid >> 24 = k.globalPid >> 24") if runtime else ""
            kernels = pd.DataFrame(conn.execute(
                f"SELECT k.start, k.end, k.streamId, COALESCE(s.value, d.value), "
                f"{'r.start, r.globalTid' if runtime else 'NULL, NULL'} FROM {KERNEL_TABLE} AS k "
                f"LEFT JOIN StringIds AS s ON s.id = k.shortName LEFT JOIN StringIds AS d ON d.id = k.demangledName "
                f"{launch} WHERE k.globalPid = ? AND k.deviceId = ? ORDER BY k.start, k.end",
                (int(global_pid), int(gpu))).fetchall(),
                columns=["start", "end", "stream", "name", "call_start", "call_tid"])
            ranges = pd.DataFrame(columns=["name", "start", "end", "tid"])
            if NVTX_TABLE in tables:
                ranges = pd.DataFrame(conn.execute(
                    f"SELECT COALESCE(n.text, s.value), n.start, n.end, n.globalTid FROM {NVTX_TABLE} AS n "
                    "LEFT JOIN StringIds AS s ON s.id = n.textId WHERE n.globalTid >> 24 = ? "
                    f"AND n.eventType IN {_RANGE_TYPES} AND n.end IS NOT NULL ORDER BY n.start, n.end",
                    (pid_key,)).fetchall(), columns=["name", "start", "end", "tid"])
            calls = pd.DataFrame(columns=["name", "start", "end", "tid"])
            if runtime:
                calls = pd.DataFrame(conn.execute(
                    f"SELECT s.value, r.start, r.end, r.globalTid FROM {RUNTIME_TABLE} AS r "
                    "LEFT JOIN StringIds AS s ON s.id = r.nameId WHERE r.globalTid >> 24 = ? ORDER BY r.start",
                    (pid_key,)).fetchall(), columns=["name", "start", "end", "tid"])
    except sqlite3.DatabaseError as exc:
        raise InputError(path, f"unreadable nsys SQLite export ({str(exc).strip()})") from None
    kernels = kernels.astype({"start": "int64", "end": "int64", "stream": "int64"})
    return RankTables(str(path), int(global_pid), pid_key & 0xFFFFFF, int(gpu), kernels, ranges, calls)


def order_ranks(processes: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The ranks of one version (RANK_COLUMNS rows of its exports) numbered 0… in launcher order:
    by ``RANK=`` where every process has one, else by start on the UTC clock; and which order it is."""
    frame = processes.reset_index(drop=True).copy()
    frame["start_utc_ns"] = frame["session_utc_ns"] + frame["first_call_ns"]
    if len(frame) and frame["env_rank"].notna().all() and not frame["env_rank"].duplicated().any():
        frame = frame.sort_values("env_rank", kind="stable")
        source = RANK_SOURCES[0]
    else:
        frame = frame.sort_values(["start_utc_ns", "pid", "gpu"], kind="stable")
        source = RANK_SOURCES[1]
    frame = frame.reset_index(drop=True)
    frame["rank"] = range(len(frame))
    return frame, source


def shifted(tables: RankTables, offset: int) -> RankTables:
    """``tables`` with every time ``offset`` ns later (onto another session's clock)."""
    if not offset:
        return tables
    kernels = tables.kernels.assign(start=tables.kernels["start"] + offset, end=tables.kernels["end"] + offset,
                                    call_start=tables.kernels["call_start"] + offset)
    ranges = tables.ranges.assign(start=tables.ranges["start"] + offset, end=tables.ranges["end"] + offset)
    calls = tables.calls.assign(start=tables.calls["start"] + offset, end=tables.calls["end"] + offset)
    return RankTables(tables.path, tables.global_pid, tables.pid, tables.gpu, kernels, ranges, calls)
