"""Nsight Systems SQLite exports (``nsys export --type sqlite``), schemas 2020.3 … 2025.x.

The numbers equal those of ``nsys stats`` reports (cuda_gpu_kern_sum, nvtx_sum, cuda_api_sum,
cuda_gpu_mem_time_sum / size_sum); ``stage`` works like ``--filter-nvtx``. Selections and
joins run inside SQLite (see :mod:`generator.nsys_queries`), the per-event statistics and the whole
capture's timeline in DuckDB over Arrow batches (:mod:`.sqlite_columnar`); the file is opened
read-only. :func:`read_stages` reads everything per stage in one pass.
"""
from __future__ import annotations

import re
import sqlite3
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import NamedTuple

import adbc_driver_manager
import duckdb
import numpy as np
import pandas as pd

from generator import nsys_queries as q
from generator.errors import InputError
from generator.model import (
    ALL_STAGES,
    API_SUMMARY_COLUMNS,
    KERNEL_SUMMARY_COLUMNS,
    LAUNCH_CONFIG_COLUMNS,
    MEMCPY_SUMMARY_COLUMNS,
    MEMSET,
    NVTX_SUMMARY_COLUMNS,
    Dataset,
    GpuInfo,
    Provenance,
    whole_graph_name,
)
from generator.readers.base import provenance_sha256
from generator.readers.sqlite_columnar import Columnar
from generator.readers.sqlite_file import checked_while_read
from generator.readers.validate import bounded_name_sql, checked_table
from generator.run_layout import FIRST_OP_RANGE, MEASURED_RANGE, OP_RANGE

SQLITE_MAGIC = b"SQLite format 3\x00"
KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
NVTX_TABLE = "NVTX_EVENTS"
GRAPH_TRACE_TABLE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
GRAPH_NODE_TABLE = "CUDA_GRAPH_NODE_EVENTS"

# The tables each read takes rows from: only those are integrity-checked (:mod:`.sqlite_file`;
# a file without one skips it), so damage elsewhere in the file, which cannot change the read's
# numbers, does not refuse it.
#: The whole capture's kernel summary: the launches and their names.
KERNEL_SUMMARY_TABLES = (KERNEL_TABLE, "StringIds")
#: Named stages (:meth:`_Capture.staged`): the NVTX ranges and their names.
_RANGE_TABLES = (NVTX_TABLE, "StringIds")
#: The calls inside the ranges and the kernels they launched (:meth:`_Capture.launches`).
_LAUNCH_TABLES = (*_RANGE_TABLES, RUNTIME_TABLE, KERNEL_TABLE)
#: The CUDA API summary, GPUs and provenance (:func:`capture_facts`).
_FACT_TABLES = (RUNTIME_TABLE, "StringIds", "TARGET_INFO_SYSTEM_ENV", "TARGET_INFO_GPU", "TARGET_INFO_CUDA_GPU",
                "META_DATA_EXPORT")
#: The Dataset's other summaries, GPUs and provenance (:meth:`NsysSqliteReader.read`).
_DATASET_TABLES = (*_FACT_TABLES, NVTX_TABLE, "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
#: CUDA graph figures of the whole capture (:func:`graph_capture_totals`: launch calls by name).
_GRAPH_TABLES = (KERNEL_TABLE, GRAPH_TRACE_TABLE, RUNTIME_TABLE, "StringIds")
#: Module attribution: module ranges and, for graph kernels, where their nodes were created.
_MODULE_TABLES = (*_LAUNCH_TABLES, GRAPH_NODE_TABLE)

#: Per stage, what ran inside CUDA graphs (:func:`graph_summary`; ns, counts as int).
GRAPH_COLUMNS: list[str] = [
    "stage",
    "graph_launches",  # cudaGraphLaunch calls in the stage (replays)
    "graph_kernel_launches",  # kernels that ran as graph nodes (node-level trace)
    "graph_kernel_ns",  # their GPU time
    "kernel_launches",  # all kernels of the stage
    "kernel_ns",  # their GPU time
    "whole_graph_launches",  # replays traced as whole graphs (no kernels known)
    "whole_graph_ns",  # their GPU time
]

#: Per (stage, kernel): the launch ncu should profile (:func:`representative_launches`).
REPRESENTATIVE_COLUMNS: list[str] = [
    "stage", "name", "grid", "block", "shared_mem_bytes",
    "config_ns", "config_launches",  # GPU time and launches of that configuration in the stage
    "stage_ns", "stage_launches", "configs",  # the kernel's time, launches and configurations in the stage
    "instance",  # which merged instance of the stage range the launch is in (1-based)
    "module", "occurrence",  # innermost module range at the launch call and how many of its name opened so far
    "modules_ended",  # without a module: module ranges that ended in the stage instance before the call
    "graph_node",  # graph node id when the launch is a CUDA graph replay's kernel
    "operator",  # number of the operator call that made it in the measured iteration (None: not known)
    "marked",  # the marked iteration that numbers the operator calls (run_layout.FIRST_OP_RANGE or OP_RANGE)
]

#: Per (stage, device) GPU timeline figures of :func:`stage_timeline` (ns; counts as int).
TIMELINE_COLUMNS: list[str] = [
    "stage",
    "device",  # CUDA device id
    "launches",  # kernels in the stage (a CUDA graph traced as a whole: one per replay)
    "kernel_ns",  # sum of kernel durations
    "busy_ns",  # time at least one kernel ran (span minus idle)
    "idle_ns",  # sum of gaps with no kernel running between consecutive kernels
    "idle_count",  # number of such gaps
    "idle_med_ns",  # median gap (NaN without gaps)
    "span_ns",  # first kernel start to last kernel end, summed over the stage's range instances
    "instances",  # merged NVTX ranges of the stage that hold kernels (1 for ALL_STAGES)
    "launch_call_med_ns",  # median cudaLaunchKernel call made in the stage (NaN: ALL_STAGES, or none)
]

#: Every kernel launch of the stages (:func:`read_stages`): the durations comparisons decide on.
LAUNCH_COLUMNS: list[str] = [
    "stage",
    "instance",  # merged NVTX range instance of the stage it was launched in (0: the whole capture)
    "name",  # demangled kernel name
    "start_ns",  # GPU start (the export's clock)
    "duration_ns",  # end - start
]

_API_VERSION = re.compile(r"_v\d{4}$")  # nsys drops exactly a 6-character "_vNNNN"
_STATS = ["count", "total_ns", "avg_ns", "med_ns", "min_ns", "max_ns", "stddev_ns"]


class _Capture:
    """An open, read-only nsys export: the connection and the tables it has."""

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self.conn = conn
        # a view serves as well as a table (an export post-processed into one)
        self.tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        #: per stage read so far: {"range", "total", "first", "counted"} NVTX range instances
        self.instances: dict[str, dict[str, object]] = {}
        self._columnar: Columnar | None = None
        if KERNEL_TABLE not in self.tables or "StringIds" not in self.tables:
            raise InputError(path, f"nsys export without {KERNEL_TABLE} (profile with --trace=cuda)")

    def columns(self, table: str) -> set[str]:
        return {r[1] for r in self.conn.execute(f"PRAGMA table_info({table})")}

    def strings(self, ids: Sequence[object]) -> dict[int, str]:
        """The StringIds values of ``ids`` (bounded: validate.bounded_name) by id; an id that is missing
        (NULL), not whole or beyond SQLite's integers names nothing."""
        return string_values(self.conn, ids)

    @property
    def columnar(self) -> Columnar:
        """The file's Arrow/DuckDB side (:mod:`.sqlite_columnar`), opened on first use."""
        if self._columnar is None:
            self._columnar = Columnar(self.path)
        return self._columnar

    def stats(self, source: str, project: str = "k, grp, key, aux, d") -> pd.DataFrame:
        """count/total/avg/med/min/max/stddev with grp, key, aux per k of the SQLite query ``source``,
        whose rows ``project`` (a DuckDB select list) makes (k, grp, key, aux, d)."""
        self.columnar.view("rows", source)
        return _finish_stats(self.columnar.stats(f"SELECT {project} FROM rows", threads=1))  # one stream

    def _staged_views(self) -> None:
        """The DuckDB ``ranges``, ``calls`` and ``kernels`` that KERNELS_IN_RANGES reads."""
        ranges = pd.DataFrame(self.conn.execute(q.STAGE_RANGES).fetchall(), columns=["stage", "idx", "tid", "s", "e"])
        self.columnar.duck.register("ranges", ranges)
        self.columnar.view("calls", q.runtime_calls(*self.conn.execute(q.STAGE_SPAN).fetchone()))
        self.columnar.view("kernels", q.KERNEL_LAUNCHES)

    def staged_kernel_stats(self) -> pd.DataFrame:
        """:meth:`stats` of the kernels launched inside temp.stage_ranges (k = stage index, name)."""
        self._staged_views()
        return _finish_stats(self.columnar.stats(q.KERNELS_IN_RANGES))

    def staged_process_counts(self) -> list[tuple[str, int, int, int]]:
        """(stage, pid, name id, launches) of the kernels :meth:`staged_kernel_stats` counts, per process."""
        self._staged_views()
        return self.columnar.duck.execute(q.PROCESS_KERNELS_IN_RANGES).fetchall()

    def launches(self) -> None:
        """temp.stage_calls and temp.stage_kernels of the stages inside :meth:`staged` (made on first use)."""
        if not self.conn.execute("SELECT 1 FROM temp.sqlite_master WHERE name = 'stage_calls'").fetchone():
            self.conn.execute(q.CREATE_STAGE_CALLS)
            self.conn.execute(q.INDEX_STAGE_CALLS)
            self.conn.execute(q.create_stage_kernels("graphNodeId" in self.columns(KERNEL_TABLE)))

    @contextmanager
    def staged(self, stages: Sequence[str]) -> Iterator[None]:
        """temp.stage_events and temp.stage_ranges for ``stages`` while inside (and the tables of
        :meth:`launches` once made); InputError for a range that is missing."""
        if "NVTX_EVENTS" not in self.tables:
            raise InputError(self.path, f"NVTX range {stages[0]!r} not found (capture has no NVTX trace)")
        self.conn.execute(q.CREATE_WANTED)
        self.conn.executemany(q.INSERT_WANTED, [(s, i, *stage_spec(s)) for i, s in enumerate(stages)])
        self.conn.execute(q.create_stage_events())
        self.conn.execute(q.create_stage_ranges())
        self.conn.execute(q.INDEX_STAGE_RANGES)
        try:
            totals = dict(self.conn.execute(q.STAGE_INSTANCES).fetchall())
            for stage in stages:
                name, first, count = stage_spec(stage)
                total = totals.get(stage, 0)
                if not total:
                    raise InputError(self.path, f"NVTX range {name!r} not found")
                if first is not None and first > total:
                    raise InputError(self.path, f"stage {stage!r}: NVTX range {name!r} has {total} "
                                                f"instance(s), so there is no instance {stage.split('/')[1]}")
                counted = total if first is None else min(count or 1, total - first + 1)
                self.instances[stage] = {"range": name, "total": total, "first": first or 1, "counted": counted}
            yield
        finally:
            for table in ("stage_kernels", "stage_calls", "stage_ranges", "stage_events", "wanted"):
                self.conn.execute(f"DROP TABLE IF EXISTS temp.{table}")


def require_sqlite(path: Path) -> None:
    """InputError unless ``path`` can be read and starts as an SQLite file does."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise InputError(path, f"cannot read ({exc.strerror})") from None
    if head != SQLITE_MAGIC:
        raise InputError(path, "not an SQLite file")


@contextmanager
def _open(path: str | Path, tables: Collection[str]) -> Iterator[_Capture]:
    """Open an nsys export read-only to read ``tables`` (their integrity checked beside the block);
    every SQLite failure becomes a one-line InputError."""
    path = Path(path)
    require_sqlite(path)
    cap: _Capture | None = None
    try:
        with checked_while_read(path, tables) as conn:
            try:
                conn.execute("PRAGMA temp_store = MEMORY")
                cap = _Capture(path, conn)
                _no_open_kernels(cap, tables)
                yield cap
            finally:
                if cap is not None and cap._columnar is not None:
                    cap._columnar.close()
    except (sqlite3.DatabaseError, duckdb.Error, adbc_driver_manager.Error) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]  # DuckDB adds the query below
        raise InputError(path, f"unreadable nsys SQLite export ({first})") from None


def _no_open_kernels(cap: _Capture, tables: Collection[str]) -> None:
    """InputError naming the first kernel row with no start or end time (NULL), where kernels are read."""
    if KERNEL_TABLE in tables and KERNEL_TABLE in cap.tables:
        row = cap.conn.execute(f"SELECT rowid FROM {KERNEL_TABLE} WHERE start IS NULL OR end IS NULL LIMIT 1").fetchone()
        if row is not None:
            raise InputError(cap.path, f"{KERNEL_TABLE} row {row[0]}: no start or end time (NULL)")


_INDEX_LIMIT = 2 ** 62  # no capture has more ranges; larger numbers would not fit SQLite's INTEGER
_SPEC = re.compile(r"^(?P<name>.+?)(?:/(?P<first>[1-9]\d*)(?:/(?P<count>[1-9]\d*))?)?$")


def string_values(conn: sqlite3.Connection, ids: Iterable[object]) -> dict[int, str]:
    """The StringIds values of ``ids`` (bounded: validate.bounded_name) by id; an id that is missing
    (NULL), not whole or beyond SQLite's integers names nothing."""
    found: dict[int, str] = {}
    unique = sorted({i for i in map(string_id, ids) if i is not None})
    for at in range(0, len(unique), 500):
        chunk = unique[at:at + 500]
        marks = ",".join("?" * len(chunk))
        found.update(conn.execute(f"SELECT id, {bounded_name_sql('value')} FROM StringIds WHERE id IN ({marks})", chunk))
    return found


def string_id(value: object) -> int | None:
    """``value`` as a StringIds id: a whole number within SQLite's 64-bit integers, else None."""
    try:
        number = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):  # NULL (pd.NA, NaN), text, infinity
        return None
    return number if -(2 ** 63) <= number < 2 ** 63 and number == value else None


def stage_spec(stage: str) -> tuple[str, int | None, int | None]:
    """``NAME[/INDEX[/COUNT]]`` → (range name, first instance, instance count), as nsys' filter."""
    match = _SPEC.match(stage)
    if match is None:
        return stage, None, None
    first, count = (min(int(n), _INDEX_LIMIT) if n else None for n in (match["first"], match["count"]))
    return match["name"], first, count


def _finish_stats(frame: pd.DataFrame) -> pd.DataFrame:
    frame["stddev_ns"] = np.sqrt(frame.pop("var").astype(float))
    for col in _STATS[1:]:
        frame[col] = frame[col].astype(float)
    frame["count"] = frame["count"].astype("int64")
    return frame


def _stage_list(stages: Sequence[str] | None) -> list[str]:
    chosen = [ALL_STAGES] if stages is None else list(dict.fromkeys(stages))
    if not chosen:
        raise ValueError("stages must name at least one stage (or be None)")
    return chosen


def _named(chosen: Sequence[str]) -> list[str]:
    return [s for s in chosen if s != ALL_STAGES]


def _reads(chosen: Sequence[str], tables: Sequence[str], staged: Sequence[str] = _LAUNCH_TABLES) -> set[str]:
    """``tables``, and ``staged`` too when ``chosen`` names a stage."""
    return {*tables, *(staged if _named(chosen) else ())}


def _summary_reads(chosen: Sequence[str]) -> set[str]:
    """What :func:`_kernel_summary` reads (its whole-graph replays too)."""
    return _reads(chosen, (*KERNEL_SUMMARY_TABLES, GRAPH_TRACE_TABLE), _LAUNCH_TABLES)


def _staged(cap: _Capture, chosen: Sequence[str]) -> AbstractContextManager:
    """``cap.staged`` for the named stages of ``chosen`` (nothing to stage for ALL_STAGES alone)."""
    named = _named(chosen)
    return cap.staged(named) if named else nullcontext()


def _kernel_summary(cap: _Capture, chosen: Sequence[str]) -> pd.DataFrame:
    """Kernel summaries of ``chosen`` (:func:`_stage_list`), its named stages staged."""
    named = _named(chosen)
    parts = []
    if ALL_STAGES in chosen:
        parts.append(cap.stats(q.KERNELS_ALL, q.KERNELS_ALL_PROJECT).assign(grp=ALL_STAGES))
    if named:
        parts.append(cap.staged_kernel_stats())
    frame = pd.concat(parts, ignore_index=True)
    names = cap.strings([*frame["key"], *frame["aux"]])
    frame["stage"] = frame.pop("grp")
    frame["name"] = [names.get(string_id(k)) for k in frame.pop("key")]
    frame["short_name"] = [names.get(string_id(k)) for k in frame.pop("aux")]
    graphs = _whole_graphs(cap, chosen)
    if len(graphs):
        frame = pd.concat([frame, graphs], ignore_index=True)
    for stage in named:
        if not (frame["stage"] == stage).any():
            raise InputError(cap.path, f"NVTX range {stage!r} contains no kernel launches")
    frame["time_pct"] = frame["total_ns"] * 100.0 / frame.groupby("stage")["total_ns"].transform("sum")
    order = {s: i for i, s in enumerate(chosen)}
    frame = frame.sort_values(["stage", "total_ns", "name"], key=_stage_then(order), ascending=[True, False, True])
    return frame[KERNEL_SUMMARY_COLUMNS].reset_index(drop=True)


def _whole_graphs(cap: _Capture, chosen: Sequence[str]) -> pd.DataFrame:
    """Kernel-summary rows (stage, name, short_name and statistics) of the CUDA graphs traced as whole
    graphs, one per (stage, graph id): model.whole_graph_name, no short name. Empty without them."""
    if GRAPH_TRACE_TABLE not in cap.tables or "graphId" not in cap.columns(GRAPH_TRACE_TABLE) \
            or not cap.conn.execute(f"SELECT 1 FROM {GRAPH_TRACE_TABLE} LIMIT 1").fetchone():
        return pd.DataFrame()  # a node-level trace: its replays' kernels are kernel rows
    rows = []
    if ALL_STAGES in chosen:
        rows += cap.conn.execute(q.WHOLE_GRAPHS_ALL, (ALL_STAGES,)).fetchall()
    if _named(chosen):
        cap.launches()
        rows += cap.conn.execute(q.WHOLE_GRAPHS_STAGED).fetchall()
    if not rows:
        return pd.DataFrame()
    cap.columnar.duck.register("graph_rows", pd.DataFrame(rows, columns=["grp", "key", "d"]))
    frame = _finish_stats(cap.columnar.stats(
        "SELECT grp || chr(31) || key AS k, grp, key, NULL AS aux, d FROM graph_rows"))
    frame["stage"] = frame.pop("grp")
    frame["name"] = [whole_graph_name(k) for k in frame.pop("key")]
    frame["short_name"] = None
    return frame.drop(columns="aux")


def _stage_then(order: dict[str, int]):
    def key(col: pd.Series) -> pd.Series:
        return col.map(order) if col.name == "stage" else col
    return key


def kernel_summary(path: str | Path, stages: Sequence[str] | None = None) -> pd.DataFrame:
    """cuda_gpu_kern_sum rows for each stage (an NVTX range name; ALL_STAGES = no restriction).

    A stage ``NAME`` takes every instance of the range (nested or repeated ones merged, each launch
    counted once); ``NAME/INDEX[/COUNT]`` takes instances INDEX … INDEX+COUNT-1 (1-based, in start
    order) like ``nsys stats --filter-nvtx``, which without an index takes the first instance only.
    ``stages=None`` means ``[ALL_STAGES]``. A range that is missing or holds no kernel launch
    raises InputError naming the file and the range.
    """
    chosen = _stage_list(stages)
    with _open(path, _summary_reads(chosen)) as cap, _staged(cap, chosen):
        return _kernel_summary(cap, chosen)


def process_kernel_counts(path: str | Path, stages: Sequence[str]) -> pd.DataFrame:
    """stage, pid (the OS process id), name (demangled), count: :func:`kernel_summary`'s launch counts
    of the named ``stages``, per process whose thread launched them (the ranks of a torchrun job);
    InputError for a range that is missing."""
    chosen = list(dict.fromkeys(stages))
    with _open(path, _summary_reads(chosen)) as cap, cap.staged(chosen):
        rows = cap.staged_process_counts()
        names = cap.strings([r[2] for r in rows])
    frame = pd.DataFrame([(s, int(p), names.get(string_id(n)), int(c)) for s, p, n, c in rows],
                         columns=["stage", "pid", "name", "count"])
    return frame.sort_values(["stage", "pid", "name"]).reset_index(drop=True)


def stage_instances(path: str | Path, stages: Sequence[str]) -> dict[str, dict[str, object]]:
    """Per named stage, which instances of its NVTX range a stage summary counts:
    ``{"range", "total", "first", "counted"}`` (``NAME``: all ``total``; ``NAME/INDEX[/COUNT]``:
    ``counted`` instances from ``first``). InputError as :func:`kernel_summary`."""
    chosen = list(dict.fromkeys(stages))
    with _open(path, _reads(chosen, (), _RANGE_TABLES)) as cap, _staged(cap, chosen):
        return dict(cap.instances)


def stage_timeline(path: str | Path, stages: Sequence[str] | None = None) -> pd.DataFrame:
    """Per stage and device: launches, kernel/busy/idle time, idle gaps and span (TIMELINE_COLUMNS)."""
    chosen = _stage_list(stages)
    with _open(path, _reads(chosen, (KERNEL_TABLE, GRAPH_TRACE_TABLE))) as cap, _staged(cap, chosen):
        return _stage_timeline(cap, chosen)


def _stage_timeline(cap: _Capture, chosen: Sequence[str]) -> pd.DataFrame:
    """:func:`stage_timeline` of ``chosen``, its named stages staged."""
    named = _named(chosen)
    rows = []
    trace = GRAPH_TRACE_TABLE in cap.tables
    if ALL_STAGES in chosen:
        cap.columnar.table("kernel_times", q.KERNEL_TIMES + (q.GRAPH_TIMES if trace else ""))
        rows += cap.columnar.duck.execute(q.timeline(staged=False), [ALL_STAGES]).fetchall()
    calls = pd.DataFrame(columns=["stage", "d"])
    if named:
        cap.launches()
        rows += cap.conn.execute(q.timeline(staged=True, graph_trace=trace)).fetchall()
        found = {r[0] for r in rows}
        for stage in named:
            if stage not in found:
                raise InputError(cap.path, f"NVTX range {stage!r} contains no kernel launches")
        if "CUPTI_ACTIVITY_KIND_RUNTIME" in cap.tables:
            calls = pd.DataFrame(cap.conn.execute(q.STAGE_LAUNCH_CALLS).fetchall(), columns=["stage", "d"])
    frame = pd.DataFrame(rows, columns=TIMELINE_COLUMNS[:-1])
    frame["launch_call_med_ns"] = frame["stage"].map(calls.groupby("stage")["d"].median()).astype(float)
    frame["idle_med_ns"] = frame["idle_med_ns"].astype(float)
    order = {s: i for i, s in enumerate(chosen)}
    frame = frame.sort_values(["stage", "device"], key=_stage_then(order))
    return frame.reset_index(drop=True)


def _stage_launches(cap: _Capture, chosen: Sequence[str]) -> pd.DataFrame:
    """LAUNCH_COLUMNS of every kernel launch of ``chosen``, its named stages staged; stage order,
    then start order."""
    rows = []
    if ALL_STAGES in chosen:
        rows += cap.conn.execute(q.ALL_LAUNCHES, (ALL_STAGES,)).fetchall()
    if _named(chosen):
        cap.launches()
        rows += cap.conn.execute(q.STAGE_LAUNCHES).fetchall()
    frame = pd.DataFrame(rows, columns=["stage", "instance", "name", "start_ns", "end"])
    names = cap.strings(frame["name"].tolist())
    frame["name"] = [names.get(int(k)) for k in frame["name"]]
    frame["duration_ns"] = (frame.pop("end") - frame["start_ns"]).astype("int64")
    frame = frame.astype({"instance": "int64", "start_ns": "int64"})
    order = {s: i for i, s in enumerate(chosen)}
    frame = frame.sort_values(["stage", "start_ns", "duration_ns", "name"], key=_stage_then(order), kind="stable")
    return frame.reset_index(drop=True)[LAUNCH_COLUMNS]


def _summary(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Finish an unrestricted summary: time share over all rows, sorted by total time."""
    frame["time_pct"] = frame["total_ns"] * 100.0 / frame["total_ns"].sum()
    return frame.sort_values(["total_ns", "name"], ascending=[False, True])[columns].reset_index(drop=True)


def _nvtx_summary(cap: _Capture) -> pd.DataFrame | None:
    if "NVTX_EVENTS" not in cap.tables:
        return None
    frame = cap.stats(q.nvtx_ranges())
    frame["name"] = frame.pop("key")
    frame["style"] = frame.pop("grp")
    return _summary(frame, NVTX_SUMMARY_COLUMNS)


def _api_summary(cap: _Capture) -> pd.DataFrame | None:
    if "CUPTI_ACTIVITY_KIND_RUNTIME" not in cap.tables:
        return None
    frame = cap.stats(q.RUNTIME_ALL, q.RUNTIME_ALL_PROJECT)
    names = cap.strings(frame["key"])
    # nsys prints API names without their ABI version suffix: cudaLaunchKernel_v7000 → cudaLaunchKernel
    frame["name"] = [_API_VERSION.sub("", names[k]) if k in names else None for k in map(string_id, frame.pop("key"))]
    return _summary(frame, API_SUMMARY_COLUMNS)


def _memcpy_summary(cap: _Capture) -> pd.DataFrame | None:
    sources = [(t, b) for t, b, table in ((q.MEMCPY_TIMES, q.MEMCPY_BYTES, "CUPTI_ACTIVITY_KIND_MEMCPY"),
                                           (q.MEMSET_TIMES, q.MEMSET_BYTES, "CUPTI_ACTIVITY_KIND_MEMSET"))
               if table in cap.tables]
    if not sources:
        return None
    frame = cap.stats(" UNION ALL ".join(t for t, _ in sources))
    size = dict(r for _, b in sources for r in cap.conn.execute(b) if r[1] is not None)
    frame["total_bytes"] = [float(size.get(k, np.nan)) for k in frame["key"]]
    frame["operation"] = [MEMSET if k == -1 else q.MEMCPY_KINDS.get(int(k), str(k)) for k in frame.pop("key")]
    frame = frame.sort_values(["total_ns", "operation"], ascending=[False, True])
    return frame[MEMCPY_SUMMARY_COLUMNS].reset_index(drop=True)


def _gpus(cap: _Capture) -> list[GpuInfo]:
    driver = None
    if "TARGET_INFO_SYSTEM_ENV" in cap.tables and "name" in cap.columns("TARGET_INFO_SYSTEM_ENV"):
        row = cap.conn.execute(
            "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'NvDriverVersion' LIMIT 1").fetchone()
        # 2024.x stores some drivers as bare digits ("52510517"); only a dotted version is certain.
        driver = row[0] if row and "." in str(row[0]) else None
    if "TARGET_INFO_GPU" in cap.tables and "computeMajor" in cap.columns("TARGET_INFO_GPU"):
        rows = cap.conn.execute(
            "SELECT DISTINCT name, id, computeMajor, computeMinor, smCount, totalMemory, memoryBandwidth, "
            "clockRate FROM TARGET_INFO_GPU ORDER BY id").fetchall()
        return [GpuInfo(name=n, index=i, compute_capability=f"{ma}.{mi}", sm_count=sm, memory_bytes=mem,
                        memory_bandwidth_bytes_per_s=float(bw) if bw else None,
                        sm_clock_hz=float(clk) if clk else None, driver=driver)
                for n, i, ma, mi, sm, mem, bw, clk in rows]
    if "TARGET_INFO_CUDA_GPU" in cap.tables:
        # nsys 2020.x: memory in MiB, clock in kHz (CUDA device properties); bandwidth unit unstated.
        rows = cap.conn.execute(
            "SELECT DISTINCT name, deviceId, computeCapabilityMajor, computeCapabilityMinor, "
            "numMultiprocessors, globalMemorySize, coreClockRate FROM TARGET_INFO_CUDA_GPU "
            "ORDER BY deviceId").fetchall()
        return [GpuInfo(name=n, index=i, compute_capability=f"{ma}.{mi}", sm_count=sm,
                        memory_bytes=mem * 1024 * 1024 if mem else None,
                        sm_clock_hz=clk * 1000.0 if clk else None, driver=driver)
                for n, i, ma, mi, sm, mem, clk in rows]
    return []


def _provenance(cap: _Capture) -> Provenance:
    meta: dict[str, str] = {}
    if "META_DATA_EXPORT" in cap.tables:
        meta = dict(cap.conn.execute("SELECT name, value FROM META_DATA_EXPORT"))
    version, schema = meta.get("EXPORT_PRODUCT_VERSION"), meta.get("EXPORT_SCHEMA_VERSION")
    parts = [f"nsys {version}" if version else None, f"export schema {schema}" if schema else None]
    notes = () if meta else ("legacy export schema (no META_DATA_EXPORT; nsys 2021 or older)",)
    return Provenance(path=str(cap.path), format=READER.format,
                      format_version=" / ".join(p for p in parts if p) or None,
                      sha256=provenance_sha256(cap.path), notes=notes)


class NsysSqliteReader:
    format = "nsys-sqlite"
    description = "Nsight Systems SQLite export (nsys export --type sqlite)"

    def sniff(self, path: Path, head: bytes) -> bool:
        return head.startswith(SQLITE_MAGIC)

    def read(self, path: Path, *, stage: str | None = None) -> Dataset:
        chosen = _stage_list(None if stage is None else [stage])
        with _open(path, _summary_reads(chosen) | set(_DATASET_TABLES)) as cap:
            with _staged(cap, chosen):
                summary = _kernel_summary(cap, chosen)
            return Dataset(
                provenance=_provenance(cap),
                kernel_summary=summary,
                nvtx_summary=_nvtx_summary(cap),
                memcpy_summary=_memcpy_summary(cap),
                api_summary=_api_summary(cap),
                gpus=_gpus(cap),
            )


READER = NsysSqliteReader()


def capture_facts(path: str | Path) -> Dataset:
    """The export's provenance, GPUs and CUDA API summary: what a build takes from a capture run's
    export besides :func:`read_stages` (its kernel figures come from there), without the whole
    capture's kernel, NVTX and memory summaries of :meth:`NsysSqliteReader.read`."""
    with _open(path, _FACT_TABLES) as cap:
        return Dataset(provenance=_provenance(cap), api_summary=_api_summary(cap), gpus=_gpus(cap))


def graph_summary(path: str | Path, stages: Sequence[str]) -> pd.DataFrame:
    """Per stage: CUDA graph launches, kernels that ran inside graphs and their GPU time, all
    kernel time, and whole-graph rows (GRAPH_COLUMNS, stages in the order given; ALL_STAGES = the
    whole capture, every launch of the file)."""
    chosen = _stage_list(stages)
    with _open(path, _reads(chosen, _GRAPH_TABLES)) as cap, _staged(cap, chosen):
        return _graph_summary(cap, chosen)


def _graph_summary(cap: _Capture, chosen: Sequence[str]) -> pd.DataFrame:
    """:func:`graph_summary` of ``chosen``, its named stages staged."""
    node, trace = "graphNodeId" in cap.columns(KERNEL_TABLE), GRAPH_TRACE_TABLE in cap.tables
    rows = []
    if ALL_STAGES in chosen:
        runtime = "CUPTI_ACTIVITY_KIND_RUNTIME" in cap.tables
        rows += cap.conn.execute(q.graph_capture_totals(node, trace, runtime), (ALL_STAGES,)).fetchall()
    if _named(chosen):
        cap.launches()
        rows += cap.conn.execute(q.graph_stage_summary(trace)).fetchall()
    order = {s: i for i, s in enumerate(chosen)}
    frame = pd.DataFrame(rows, columns=GRAPH_COLUMNS)
    return frame.sort_values("stage", key=lambda col: col.map(order)).reset_index(drop=True)


@contextmanager
def _module_ranges(cap: _Capture, domain: str) -> Iterator[None]:
    cap.conn.execute("DROP TABLE IF EXISTS temp.module_ranges")
    if "NVTX_EVENTS" in cap.tables:
        cap.conn.execute(q.create_domain_ranges("module_ranges"), (domain,))
    else:
        cap.conn.execute("CREATE TEMP TABLE module_ranges (tid, start, end, name, occurrence)")
    cap.conn.execute(q.INDEX_MODULE_RANGES)
    try:
        yield
    finally:
        cap.conn.execute("DROP TABLE IF EXISTS temp.module_ranges")


def _marks_agree(cap: _Capture, name: str, tid: int) -> bool:
    """Whether the operator ranges ``name`` of temp.op_marks on thread ``tid`` (run_layout.FIRST_OP_RANGE
    or OP_RANGE) mark an iteration that launched the same kernels, alike and in the same order, as
    the measured one (temp.measured_seq); then temp.marked_seq and temp.marked_ops hold it
    (:data:`q.CREATE_LAUNCH_OPS`)."""
    for table in ("marked_ops", "marked_seq"):
        cap.conn.execute(f"DROP TABLE IF EXISTS temp.{table}")
    first, last = cap.conn.execute("SELECT min(start), max(end) FROM temp.op_marks WHERE name = ? AND tid = ?",
                                   (name, tid)).fetchone()
    if first is None:
        return False
    cap.conn.execute(q.create_launch_sequence("marked_seq"), {"tid": tid, "start": first, "end": last})
    marked, measured_n, alike = cap.conn.execute(q.SEQUENCES_AGREE).fetchone()
    if not marked == measured_n == alike and not (0 < marked < measured_n and _shift_to_run(cap, marked)):
        return False
    cap.conn.execute(q.CREATE_MARKED_OPS, {"tid": tid, "name": name})
    cap.conn.execute(q.INDEX_MARKED_OPS)
    return True


MAX_RUN_STARTS = 64  # where the marked launches are a run inside the measured ones: starts tried


def _shift_to_run(cap: _Capture, marked: int) -> bool:
    """Whether temp.marked_seq (``marked`` launches between the first and the last operator mark: a
    compiled program marks only its ATen calls) is one run of temp.measured_seq, alike launch by
    launch, at exactly one start; then marked_seq's positions are shifted onto it."""
    starts = [row[0] - 1 for row in cap.conn.execute(q.RUN_STARTS, {"limit": MAX_RUN_STARTS}).fetchall()]
    fits = [at for at in starts if cap.conn.execute(q.RUN_ALIKE, {"at": at}).fetchone()[0] == marked]
    if len(fits) != 1:
        return False
    cap.conn.execute("UPDATE temp.marked_seq SET pos = pos + ?", (fits[0],))
    return True


@contextmanager
def _launch_operators(cap: _Capture, domain: str) -> Iterator[str | None]:
    """temp.launch_ops while inside: the operator call (number) that made each launch call of the
    measured iteration, by the first marked iteration of ``domain`` (run_layout.OPS_NVTX_DOMAIN) that
    agrees with it (:func:`_marks_agree`: the first iteration, else the last warm-up), whose range
    name it yields; else empty, and None."""
    try:
        agreed = None
        if "NVTX_EVENTS" in cap.tables:
            cap.conn.execute(q.create_domain_ranges("op_marks"), (domain,))
            measured = cap.conn.execute("SELECT tid, start, end FROM temp.op_marks WHERE name = ? ORDER BY start",
                                        (MEASURED_RANGE,)).fetchone()
            if measured is not None:
                tid, start, end = measured
                cap.conn.execute(q.create_launch_sequence("measured_seq"), {"tid": tid, "start": start, "end": end})
                agreed = next((name for name in (FIRST_OP_RANGE, OP_RANGE) if _marks_agree(cap, name, tid)), None)
        cap.conn.execute(q.CREATE_LAUNCH_OPS if agreed else "CREATE TEMP TABLE launch_ops (t, op)")
        cap.conn.execute("CREATE INDEX temp.launch_ops_t ON launch_ops (t)")
        yield agreed
    finally:
        for table in ("launch_ops", "marked_ops", "marked_seq", "measured_seq", "op_marks"):
            cap.conn.execute(f"DROP TABLE IF EXISTS temp.{table}")


def representative_launches(path: str | Path, stages: Sequence[str], names: Sequence[str],
                            module_domain: str, ops_domain: str) -> pd.DataFrame:
    """For each (stage, kernel name) the launch configuration carrying most of the kernel's time in
    the stage and the first launch with it, located by the operator call that made it (operator
    marks of ``ops_domain``, when they hold; ``marked`` names the marked iteration that numbered it)
    and by the module ranges of ``module_domain``: the innermost one open at the launch call (name
    and occurrence on its thread), else how many ended in the stage instance before the call
    (REPRESENTATIVE_COLUMNS)."""
    with _open(path, _LAUNCH_TABLES) as cap, cap.staged(list(dict.fromkeys(stages))), \
            _module_ranges(cap, module_domain), _launch_operators(cap, ops_domain) as marked:
        cap.launches()
        cap.conn.execute("CREATE TEMP TABLE wanted_names (id INTEGER PRIMARY KEY)")
        try:
            wanted = list(dict.fromkeys(names))
            for at in range(0, len(wanted), 500):
                chunk = wanted[at:at + 500]
                cap.conn.execute("INSERT OR IGNORE INTO temp.wanted_names SELECT id FROM StringIds "
                                 f"WHERE {bounded_name_sql('value')} IN ({','.join('?' * len(chunk))})", chunk)
            node = "graphNodeId" in cap.columns(KERNEL_TABLE)
            rows = []
            for (stage, _, name, gx, gy, gz, bx, by, bz, smem, cfg_ns, cfg_n, ns, n, configs, inst, tid, t,
                 graph_node) in cap.conn.execute(q.representative_launches(node)).fetchall():
                inner = cap.conn.execute(q.INNERMOST_MODULE, {"tid": tid, "t": t}).fetchone()
                ended = None
                if inner is None:
                    since = cap.conn.execute("SELECT start FROM temp.stage_ranges WHERE stage = ? AND tid = ? "
                                             "AND inst = ?", (stage, tid, inst)).fetchone()
                    ended = cap.conn.execute(q.MODULES_ENDED, {"tid": tid, "since": since[0], "t": t}).fetchone()[0]
                op = cap.conn.execute(q.LAUNCH_OP, {"t": t}).fetchone() if graph_node is None else None
                rows.append((stage, name, f"({gx}, {gy}, {gz})", f"({bx}, {by}, {bz})", smem, cfg_ns, cfg_n, ns, n,
                             configs, inst, inner[0] if inner else None, inner[1] if inner else None, ended,
                             graph_node, op[0] if op else None, marked if op else None))
        finally:
            cap.conn.execute("DROP TABLE IF EXISTS temp.wanted_names")
        names_by_id = cap.strings([r[1] for r in rows])
    frame = pd.DataFrame([(r[0], names_by_id.get(string_id(r[1])), *r[2:]) for r in rows], columns=REPRESENTATIVE_COLUMNS)
    return frame


#: Per kernel launch of the stages (:func:`launch_operators`): the marked iteration and operator
#: call that made it (NaN where none did or the marks do not hold).
LAUNCH_OPERATOR_COLUMNS = ["stage", "name", "duration_ns", "grid", "block", "node", "marked", "operator"]


def launch_operators(path: str | Path, stages: Sequence[str], ops_domain: str) -> pd.DataFrame:
    """Every kernel launch of ``stages`` (LAUNCH_OPERATOR_COLUMNS) with the operator call that made
    it: a launch call's by the marked iteration that agrees with the measured one (as
    :func:`representative_launches`); a CUDA graph node's by the operator mark of ``ops_domain`` open
    on its thread when the node was captured (its original node's creation)."""
    tables = (*_LAUNCH_TABLES, GRAPH_NODE_TABLE)
    with _open(path, tables) as cap, cap.staged(list(dict.fromkeys(stages))), \
            _launch_operators(cap, ops_domain) as marked:
        cap.launches()
        node = "graphNodeId" in cap.columns(KERNEL_TABLE)
        rows = cap.conn.execute(q.stage_launch_calls(node)).fetchall()
        by_call = dict(cap.conn.execute("SELECT t, min(op) FROM temp.launch_ops GROUP BY t HAVING count(*) = 1"))
        by_node: dict[int, tuple[str, int]] = {}
        if node and GRAPH_NODE_TABLE in cap.tables and "NVTX_EVENTS" in cap.tables:
            names = (FIRST_OP_RANGE, OP_RANGE)
            by_node = {n: (name, op) for n, name, op in cap.conn.execute(q.NODE_OPERATORS, names).fetchall()
                       if name is not None}
        names_by_id = cap.strings([r[1] for r in rows])
    out = []
    for stage, name, d, gx, gy, gz, bx, by, bz, graph_node, t in rows:
        if graph_node is not None:
            iteration, op = by_node.get(graph_node, (None, None))
        else:
            op = by_call.get(t)
            iteration = marked if op is not None else None
        out.append((stage, names_by_id.get(string_id(name)), d, f"({gx}, {gy}, {gz})", f"({bx}, {by}, {bz})",
                    graph_node, iteration, op))
    return pd.DataFrame(out, columns=LAUNCH_OPERATOR_COLUMNS)


def graph_node_modules(path: str | Path, module_domain: str) -> pd.DataFrame:
    """Per graph node that ran a kernel: the node it was instantiated from and the innermost range of
    ``module_domain`` open when that node was captured (None: none). Empty without node data."""
    with _open(path, (KERNEL_TABLE, GRAPH_NODE_TABLE, *_RANGE_TABLES)) as cap:
        if GRAPH_NODE_TABLE not in cap.tables or "graphNodeId" not in cap.columns(KERNEL_TABLE):
            return pd.DataFrame(columns=["node", "original", "module"])
        with _module_ranges(cap, module_domain):
            rows = cap.conn.execute(q.GRAPH_NODE_MODULES).fetchall()
    return pd.DataFrame(rows, columns=["node", "original", "module"])


#: Per (stage, module, kernel) of :func:`module_kernels`; ``path`` None = outside any module.
MODULE_KERNEL_COLUMNS: list[str] = ["stage", "path", "cls", "name", "launches", "gpu_ns"]


class ModuleAttribution(NamedTuple):
    """:func:`module_kernels`: the recognised form (a key of nsys_queries.MODULE_FORMS; None: the file
    has no module ranges and every launch is outside any module), the launches per (stage, module,
    kernel) (MODULE_KERNEL_COLUMNS) and each module path's class."""

    form: str | None
    kernels: pd.DataFrame
    classes: dict[str, str]


def module_kernels(path: str | Path, stages: Sequence[str]) -> ModuleAttribution:
    """Each kernel launch of each stage attributed to the innermost recognised module range open at
    its launch call on the calling thread (a CUDA graph node's kernel: at the node's capture-time
    creation), aggregated in SQLite per (stage, module path, class, kernel). InputError as
    :func:`kernel_summary`.
    """
    with _open(path, _MODULE_TABLES) as cap, cap.staged(list(dict.fromkeys(stages))):
        return _module_kernels(cap)


def _module_kernels(cap: _Capture) -> ModuleAttribution:
    """:func:`module_kernels` of the stages staged."""
    cap.launches()
    try:
        if "NVTX_EVENTS" in cap.tables:
            cap.conn.execute(q.create_attribution_ranges())
        else:
            cap.conn.execute("CREATE TEMP TABLE attr_ranges (id, form, tid, start, end, path, cls)")
        present = {r[0] for r in cap.conn.execute(q.FORMS_PRESENT)}
        form = next((f for f in q.MODULE_FORMS if f in present), None)
        cap.conn.execute(q.KEEP_FORM, (form,))
        nodes = GRAPH_NODE_TABLE in cap.tables and "graphNodeId" in cap.columns(KERNEL_TABLE)
        cap.conn.execute(q.create_attribution_launches(nodes))
        cap.conn.execute(q.CREATE_ATTRIBUTION_POINTS)
        cap.conn.execute(q.INDEX_ATTRIBUTION_POINTS)
        rows = cap.conn.execute(q.ATTRIBUTED_KERNELS).fetchall()
        classes = dict(cap.conn.execute(q.MODULE_CLASSES).fetchall())
    finally:
        for table in ("attr_points", "attr_launches", "attr_ranges"):
            cap.conn.execute(f"DROP TABLE IF EXISTS temp.{table}")
    names = cap.strings([r[3] for r in rows])
    frame = pd.DataFrame([(s, p, c if p is not None else None, names.get(string_id(n)), k, ns)
                          for s, p, c, n, k, ns in rows], columns=MODULE_KERNEL_COLUMNS)
    frame["launches"] = frame["launches"].astype("int64")
    frame["gpu_ns"] = frame["gpu_ns"].astype("int64")
    return ModuleAttribution(form, frame, classes)


class StageReading(NamedTuple):
    """What :func:`read_stages` reads of the stages of one nsys SQLite export."""

    summary: pd.DataFrame  # :func:`kernel_summary`
    instances: dict[str, dict[str, object]]  # :func:`stage_instances`
    graphs: pd.DataFrame  # :func:`graph_summary`
    timeline: pd.DataFrame  # :func:`stage_timeline`
    module_form: str | None  # :func:`module_kernels` of the named stages (no named stage: None, None, {})
    module_kernels: pd.DataFrame | None
    module_classes: dict[str, str]
    launches: pd.DataFrame  # :data:`LAUNCH_COLUMNS`
    launch_configs: pd.DataFrame  # :func:`launch_configs`

    @property
    def modules(self) -> ModuleAttribution:
        return ModuleAttribution(self.module_form, self.module_kernels, self.module_classes)


def read_stages(path: str | Path, stages: Sequence[str], modules: bool = True) -> StageReading:
    """:func:`kernel_summary`, :func:`stage_instances`, :func:`graph_summary`, :func:`stage_timeline`
    and (of the named stages, with ``modules``) :func:`module_kernels` of ``stages`` and every launch
    (LAUNCH_COLUMNS), the file opened and the stages' ranges and calls joined once. Without ``modules``
    the module attribution is (None, None, {}), as where no stage is named. InputError as
    :func:`kernel_summary`."""
    chosen = _stage_list(stages)
    with _open(path, _summary_reads(chosen) | _reads(chosen, _GRAPH_TABLES, _MODULE_TABLES)) as cap, \
            _staged(cap, chosen):
        summary = checked_table(cap.path, "kernel_summary", _kernel_summary(cap, chosen))  # as read() checks it
        modules = _module_kernels(cap) if modules and _named(chosen) else ModuleAttribution(None, None, {})
        return StageReading(summary, dict(cap.instances), _graph_summary(cap, chosen), _stage_timeline(cap, chosen),
                            *modules, _stage_launches(cap, chosen), _launch_configs(cap))


def _launch_configs(cap: _Capture) -> pd.DataFrame:
    """Each kernel's distinct launch configurations in the whole capture (LAUNCH_CONFIG_COLUMNS)."""
    registers = "registersPerThread" if "registersPerThread" in cap.columns(KERNEL_TABLE) else "NULL"
    rows = cap.conn.execute(f"SELECT DISTINCT demangledName, gridX, gridY, gridZ, blockX, blockY, blockZ, {registers} "
                            f"FROM {KERNEL_TABLE}").fetchall()
    names = cap.strings([r[0] for r in rows])
    frame = pd.DataFrame([(names.get(int(r[0])), f"({r[1]}, {r[2]}, {r[3]})", f"({r[4]}, {r[5]}, {r[6]})", r[7])
                          for r in rows], columns=LAUNCH_CONFIG_COLUMNS)
    frame["registers_per_thread"] = frame["registers_per_thread"].astype(float)
    return frame.sort_values(LAUNCH_CONFIG_COLUMNS, ignore_index=True)
