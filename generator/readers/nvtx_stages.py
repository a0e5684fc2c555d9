"""The workload's own NVTX ranges that make its stages when no report.yaml names them.

A range name is a stage when its ranges are the workload's (not in the capture's domains, a
library's like NCCL's, nor a module range of a recognised form), every one of them is top-level on
its thread (never inside another such range, so a kernel lies in at most one stage), and a kernel
was launched inside one of them. Names come in order of their first such range.
"""
from __future__ import annotations

import re
from pathlib import Path

from generator import nsys_queries as q
from generator.readers.nsys_sqlite import GRAPH_TRACE_TABLE, KERNEL_TABLE, NVTX_TABLE, RUNTIME_TABLE, _open

#: More range names than this found in a file: a build reads it whole (the names are listed instead).
MAX_FOUND_STAGES = 16
#: A name the stage syntax would read as ``NAME/INDEX[/COUNT]`` (nsys_sqlite) is no stage by default.
_INDEXED = re.compile(r"/[1-9]\d*(/[1-9]\d*)?$")


def workload_stages(path: Path) -> list[str]:
    """The names of the top-level NVTX ranges of ``path`` (an nsys SQLite export) that hold kernels;
    [] when it has no ranges, no runtime calls or no such range."""
    with _open(path, (NVTX_TABLE, "StringIds", RUNTIME_TABLE, KERNEL_TABLE, GRAPH_TRACE_TABLE)) as cap:
        if not {NVTX_TABLE, RUNTIME_TABLE} <= cap.tables:
            return []
        try:
            cap.conn.execute(q.create_workload_ranges())
            cap.conn.execute(q.CREATE_TOP_RANGES)
            cap.conn.execute(q.INDEX_TOP_RANGES)
            rows = cap.conn.execute(q.ranges_holding_kernels(GRAPH_TRACE_TABLE in cap.tables)).fetchall()
        finally:
            for table in ("top_ranges", "workload_ranges"):
                cap.conn.execute(f"DROP TABLE IF EXISTS temp.{table}")
    return [name for name, _ in rows if not _INDEXED.search(name)]
