"""The ranks of an Nsight Systems SQLite export: each process that ran kernels, with its GPU.

A rank is one (process ``globalPid``, GPU ``deviceId``) pair that ran kernels. :func:`rank_processes`
lists them with what orders them; :func:`read_rank` reads what the rank analyses use of one rank as
numpy arrays (its kernels with the call that launched each, the NVTX ranges asked for), and
:func:`window_calls` its threads' CUDA calls in a few host windows only. All are pure functions of
(file, rank), so ranks can be read in parallel by any pool of workers.

Launcher rank, where known: ``RANK=`` in the environment nsys recorded (TARGET_INFO_SYSTEM_ENV),
which is that rank's own only in an export made per rank (each rank's process running ``nsys
profile``); otherwise the process start order (its first CUDA call, on the UTC clock of the
session), which :data:`RANK_SOURCES` names. NCCL's NVTX payloads carry the communicator rank, but
nsys 2025.3's SQLite export holds their schemas only (``binaryData`` empty), so they are not read.
"""
from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from generator.errors import InputError
from generator.readers.nsys_sqlite import KERNEL_TABLE, NVTX_TABLE, RUNTIME_TABLE, require_sqlite, string_values
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


@dataclass(frozen=True)
class RankRows:
    """One rank's kernels (in start, end order) and the NVTX ranges asked for, as numpy arrays (ns).

    Kernels: ``start``, ``end``, ``name`` (a code into ``names``: its short name, else its demangled
    name, None where the export names neither), ``call_start`` and ``call_tid`` of the CUDA call that
    launched it (:data:`NO_CALL` where none is known). Ranges: ``range_name`` (a code into
    ``range_names``), ``range_start``, ``range_end``, ``range_tid``, in start, end order.
    """

    start: np.ndarray
    end: np.ndarray
    name: np.ndarray
    names: list[str | None]
    call_start: np.ndarray
    call_tid: np.ndarray
    range_name: np.ndarray
    range_names: list[str]
    range_start: np.ndarray
    range_end: np.ndarray
    range_tid: np.ndarray


#: call_start / call_tid of a kernel whose launching call is not in the export.
NO_CALL = np.iinfo(np.int64).min
#: Rows fetched from SQLite at a time (what a read holds besides its arrays).
_CHUNK = 1 << 16


def read_rank(path: str | Path, global_pid: int, gpu: int, keep_range: Callable[[str], bool],
              offset: int = 0) -> RankRows:
    """The kernels of one rank (process ``global_pid`` on ``gpu``) and its NVTX ranges whose name
    ``keep_range`` accepts, every time ``offset`` ns later (onto another session's clock). Only the
    columns the rank analyses use are read, names as StringIds codes resolved once each; rows are
    fetched in chunks into preallocated arrays, so the read holds the arrays and one chunk."""
    path = Path(path)
    pid_key = int(global_pid) >> 24
    try:
        with _connect(path) as conn:
            tables = _tables(conn)
            runtime = RUNTIME_TABLE in tables
            where = "WHERE k.globalPid = ? AND k.deviceId = ?"
            args = (int(global_pid), int(gpu))
            count = conn.execute(f"SELECT COUNT(*) FROM {KERNEL_TABLE} AS k {where}", args).fetchone()[0]
            launch = (f"LEFT JOIN {RUNTIME_TABLE} AS r ON r.correlationId = k.correlationId "
                      "AND r.globalTid >> 24 = k.globalPid >> 24") if runtime else ""
            call = f"COALESCE(r.start, {NO_CALL}), COALESCE(r.globalTid, {NO_CALL})" if runtime \
                else f"{NO_CALL}, {NO_CALL}"
            # the name's StringIds id: the short name's (≥ 0) where StringIds holds it, else -2 − the
            # demangled name's, -1 where neither is given
            start, end, name_id, call_start, call_tid = _fetched(conn.execute(
                f"SELECT k.start, k.end, CASE WHEN s.value IS NOT NULL THEN k.shortName "
                f"ELSE COALESCE(-2 - k.demangledName, -1) END, {call} FROM {KERNEL_TABLE} AS k "
                f"LEFT JOIN StringIds AS s ON s.id = k.shortName {launch} {where} ORDER BY k.start, k.end",
                args), count, 5)
            ids, name = np.unique(name_id, return_inverse=True)
            del name_id
            strings = string_values(conn, np.where(ids >= 0, ids, -2 - ids))
            names = [strings.get(int(i) if i >= 0 else -2 - int(i)) if i != -1 else None for i in ids]
            ranges = _ranges(conn, pid_key, keep_range) if NVTX_TABLE in tables else ([], [])
    except sqlite3.DatabaseError as exc:
        raise InputError(path, f"unreadable nsys SQLite export ({str(exc).strip()})") from None
    range_names, rows = ranges
    codes = {n: i for i, n in enumerate(range_names)}
    known = call_start != NO_CALL
    if offset:
        start += offset
        end += offset
        call_start[known] += offset
    return RankRows(start, end, name.astype("int32"), names, call_start, call_tid,
                    np.array([codes[r[0]] for r in rows], dtype="int32"), range_names,
                    np.array([r[1] for r in rows], dtype="int64") + offset,
                    np.array([r[2] for r in rows], dtype="int64") + offset,
                    np.array([r[3] for r in rows], dtype="int64"))


def _fetched(cursor: sqlite3.Cursor, count: int, width: int) -> list[np.ndarray]:
    """The int64 columns of ``cursor``'s ``count`` rows of ``width`` integers, a chunk at a time."""
    columns = [np.empty(count, dtype="int64") for _ in range(width)]
    at = 0
    while rows := cursor.fetchmany(_CHUNK):
        chunk = np.array(rows, dtype="int64").reshape(len(rows), width)
        for column, values in zip(columns, chunk.T, strict=True):
            column[at:at + len(rows)] = values
        at += len(rows)
    if at != count:  # the file changed between the count and the read
        raise sqlite3.DatabaseError(f"{count} kernel rows counted, {at} read")
    return columns


def _ranges(conn: sqlite3.Connection, pid_key: int, keep: Callable[[str], bool]) -> tuple[list[str], list[tuple]]:
    """The names ``keep`` accepts among the process's closed NVTX push/pop and start/end ranges, and
    those ranges (name, start, end, globalTid) in start, end order: the names first (one pass), then
    only their ranges."""
    name = "COALESCE(n.text, s.value)"
    source = (f"FROM {NVTX_TABLE} AS n LEFT JOIN StringIds AS s ON s.id = n.textId WHERE n.globalTid >> 24 = ? "
              f"AND n.eventType IN {_RANGE_TYPES} AND n.end IS NOT NULL")
    names = [n for (n,) in conn.execute(f"SELECT DISTINCT {name} {source}", (pid_key,))
             if n is not None and keep(str(n))]
    rows: list[tuple] = []
    for at in range(0, len(names), 900):
        part = names[at:at + 900]
        rows += conn.execute(f"SELECT {name}, n.start, n.end, n.globalTid {source} AND {name} IN "
                             f"({','.join('?' * len(part))})", (pid_key, *part)).fetchall()
    rows.sort(key=lambda r: (r[1], r[2]))
    return names, rows


#: window_calls' columns: the window (its thread, start, end), then each CUDA call overlapping it.
WINDOW_CALL_COLUMNS = ["tid", "lo", "hi", "name", "start", "end"]


def window_calls(path: str | Path, windows: Sequence[tuple[int, int, int]], offset: int = 0) -> pd.DataFrame:
    """WINDOW_CALL_COLUMNS: the CUDA runtime and driver calls of thread ``tid`` that overlap
    [lo, hi), per window (tid, lo, hi) given on a clock ``offset`` ns later than the file's (one
    pass over the calls for all of them; a call in several windows is listed in each)."""
    path = Path(path)
    rows: list[tuple] = []
    try:
        with _connect(path) as conn:
            if windows and RUNTIME_TABLE in _tables(conn):
                test = " OR ".join(["(r.globalTid = ? AND r.end > ? AND r.start < ?)"] * len(windows))
                args = [v for tid, lo, hi in windows for v in (int(tid), int(lo) - offset, int(hi) - offset)]
                rows = conn.execute(f"SELECT s.value, r.start, r.end, r.globalTid FROM {RUNTIME_TABLE} AS r "
                                    f"LEFT JOIN StringIds AS s ON s.id = r.nameId WHERE {test} ORDER BY r.start",
                                    args).fetchall()
    except sqlite3.DatabaseError as exc:
        raise InputError(path, f"unreadable nsys SQLite export ({str(exc).strip()})") from None
    calls = pd.DataFrame(rows, columns=["name", "start", "end", "tid"])
    calls = calls.astype({"start": "int64", "end": "int64", "tid": "int64"})
    calls["start"] += offset
    calls["end"] += offset
    found = [calls[(calls["tid"] == tid) & (calls["end"] > lo) & (calls["start"] < hi)].assign(lo=int(lo), hi=int(hi))
             for tid, lo, hi in windows]
    if not found:
        return pd.DataFrame({c: pd.Series(dtype="int64" if c != "name" else object) for c in WINDOW_CALL_COLUMNS})
    return pd.concat(found, ignore_index=True)[WINDOW_CALL_COLUMNS]


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
