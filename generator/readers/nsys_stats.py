"""``nsys stats`` output: CSV (``--format csv``, old and 2022.2+ column names, quoted or not),
the fixed-width console tables of ``nsys profile --stats=true``, and the ``nvtx_pushpop_trace`` CSV.

Summary reports carry nsys' printed numbers as they are (Time (%) rounded as nsys prints it);
the trace CSV is summarized like nvtx_sum. Statistics outputs hold no per-launch data, so they
cannot be restricted to an NVTX range afterwards.
"""
from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from generator.errors import InputError
from generator.model import (
    ALL_STAGES,
    API_SUMMARY_COLUMNS,
    KERNEL_SUMMARY_COLUMNS,
    MEMCPY_SUMMARY_COLUMNS,
    NVTX_SUMMARY_COLUMNS,
    Dataset,
    Provenance,
    duration_stats,
    memcpy_operation,
    ranked,
)
from generator.readers.base import provenance_sha256
from generator.readers.validate import LIMIT

#: Lines nsys prints around its tables that are not part of them.
_PREAMBLE = re.compile(r"^\s*$|^\s*(Processing \[|NOTICE:|WARNING:|SKIPPED:|Generating |Exporting |"
                       r"Generated:|\[\d+/\d+\] \[)")
_SECTION = re.compile(r"Executing '(\w+)' stats report|^\s*\*\* .*\((\w+)\):\s*$")
_DASHES = re.compile(r"^\s*-+(\s+-+)*\s*$")
_HEAD_UNIT = re.compile(r"\(\s*(%|ns|us|μs|ms|s|MB)\s*\)$")  # searched: linear on long header cells
_TIME_SCALE = {"ns": 1.0, "us": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9}
_MISSING = {"", "n/a", "na", "nan", "-", "none"}
_NSYS_MARKERS = ("Time (%)", "Time(%)", "Total Time (", "Avg (", "Start (ns)", "Duration (ns)")

#: Header base names (lowercase, spaces removed) → canonical field.
_BASES = {
    "time": "time_pct", "totaltime": "total_ns", "total": "total", "instances": "count",
    "count": "count", "operations": "count", "numcalls": "calls", "calls": "calls",
    "avg": "avg_ns", "average": "avg_ns", "mean": "avg_ns", "med": "med_ns", "median": "med_ns",
    "min": "min_ns", "minimum": "min_ns", "max": "max_ns", "maximum": "max_ns",
    "stddev": "stddev_ns", "stdev": "stddev_ns", "name": "name", "range": "range",
    "operation": "operation", "style": "style", "start": "start_ns", "end": "end_ns",
    "duration": "duration_ns",
}
_TEXT = {"name", "range", "operation", "style"}
_STATS = {"avg_ns", "med_ns", "min_ns", "max_ns", "stddev_ns"}
#: Report ids (console sections) → table kind.
_REPORTS = {
    "cuda_gpu_kern_sum": "kernels", "gpukernsum": "kernels", "nvtx_sum": "nvtx", "nvtxsum": "nvtx",
    "nvtx_pushpop_sum": "nvtx", "cuda_gpu_mem_time_sum": "memtime", "gpumemtimesum": "memtime",
    "cuda_gpu_mem_size_sum": "memsize", "gpumemsizesum": "memsize", "cuda_api_sum": "api",
    "cudaapisum": "api", "nvtx_pushpop_trace": "trace",
}
_CUDA_API = re.compile(r"^(cu|nccl)", re.IGNORECASE)
#: Fields a table of each kind must have.
_REQUIRED = {
    "kernels": {"count", "total_ns", "name"}, "api": {"calls", "total_ns", "name"},
    "nvtx": {"count", "total_ns", "range"}, "memtime": {"count", "total_ns", "operation"},
    "memsize": {"count", "total_bytes", "operation"}, "trace": {"start_ns", "name"},
}


@dataclass
class _Table:
    report: str | None  # report id when the input names it (console), else None
    header: list[str]
    rows: list[tuple[int, list[str]]]  # (line number, cells)


def _field(head: str, unknown: list[str]) -> tuple[str, float] | None:
    """Canonical field and its scale to ns or bytes for one header cell.

    None for a cell we do not use (size statistics in MB) or do not know (then noted in ``unknown``).
    """
    text, unit = head.strip(), None
    match = _HEAD_UNIT.search(text)
    if match:
        text, unit = text[: match.start()].rstrip(), match[1]
    base = _BASES.get(re.sub(r"\s+", "", text).lower())
    if unit == "%" and base == "time_pct":
        return base, 1.0
    if unit == "MB" and base == "total":
        return "total_bytes", 1e6
    if unit == "MB" and base in _STATS:
        return None
    if base is None or base in ("time_pct", "total") or unit in ("%", "MB"):
        unknown.append(head.strip())
        return None
    return base, _TIME_SCALE[unit or "ns"]


#: A number as nsys prints one (thousands commas removed first): digits, a point, an exponent.
_DECIMAL = re.compile(r"[+-]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)", re.IGNORECASE)


def _number(path: Path, line: int, column: str, cell: str) -> float:
    text = cell.strip().replace(",", "")
    if text.lower() in _MISSING:
        return math.nan
    if not _DECIMAL.fullmatch(text):  # float() also takes "1_000" and " 1e3"; inf is refused below
        raise InputError(path, f"line {line}: {column} {cell.strip()[:40]!r} is not a number")
    value = float(text)
    if not 0 <= value <= LIMIT:  # also NaN and inf written as numbers
        raise InputError(path, f"line {line}: {column} {cell.strip()!r} is not a number from 0 to {LIMIT:.3g}")
    return value


def _frame(path: Path, table: _Table) -> tuple[str, pd.DataFrame]:
    """Classify a table by its report id or its columns, and convert its cells."""
    unknown: list[str] = []
    fields = [_field(h, unknown) for h in table.header]
    names = {f[0] for f in fields if f}
    kind = _REPORTS.get(table.report or "")
    if kind is None:
        if {"start_ns", "name"} <= names and ("duration_ns" in names or "end_ns" in names):
            kind = "trace"
        elif "operation" in names:
            kind = "memtime" if "total_ns" in names else "memsize"
        elif "range" in names:
            kind = "nvtx"
        elif "calls" in names:
            kind = "api"
        elif "count" in names and "name" in names:
            kind = "kernels"
    used = [f[0] for f in fields if f]
    if (kind is None or not _REQUIRED[kind] <= names or (unknown and kind != "trace")
            or len(used) != len(names)):
        columns = ", ".join(h.strip() for h in table.header)
        raise InputError(path, f"unknown nsys stats layout: columns {columns}")
    if not table.rows:
        raise InputError(path, f"the {kind} table has a header but no rows")
    data: dict[str, list] = {name: [] for name in used}
    for line, cells in table.rows:
        if len(cells) != len(table.header):
            raise InputError(path, f"line {line}: {len(cells)} fields, header has {len(table.header)}")
        for head, f, cell in zip(table.header, fields, cells):
            if f is None:
                continue
            if f[0] in _TEXT:
                data[f[0]].append(cell.strip())
            else:
                data[f[0]].append(_number(path, line, head.strip(), cell) * f[1])
    frame = pd.DataFrame(data)
    if kind == "api" and table.report is None and not frame["name"].map(lambda n: bool(_CUDA_API.match(n))).all():
        raise InputError(path, "nsys stats API summary of non-CUDA calls (osrt_sum?) is not used")
    return kind, frame


def _finish(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    for col in columns:
        if col not in frame:
            frame[col] = math.nan
    if "count" in frame:
        frame["count"] = frame["count"].astype("int64") if frame["count"].notna().all() else frame["count"]
    return frame[columns].reset_index(drop=True)


def _trace_nvtx(frame: pd.DataFrame) -> pd.DataFrame:
    """nvtx_sum numbers from nvtx_pushpop_trace rows (one row per range instance)."""
    duration = frame["duration_ns"] if "duration_ns" in frame else frame["end_ns"] - frame["start_ns"]
    out = ranked(duration_stats(duration, frame["name"]), "name")
    out["style"] = "PushPop"
    return _finish(out, NVTX_SUMMARY_COLUMNS)


def _layout(tables: list[_Table], kinds: set[str]) -> str:
    """Which generation of nsys report column names the tables use."""
    if kinds == {"trace"}:
        return "nsys nvtx_pushpop_trace layout"
    heads = " ".join(h for t in tables for h in t.header)
    return "nsys 2022.2+ stats layout" if re.search(r"(Avg|Med) \(", heads) else "nsys pre-2022.2 stats layout"


def _dataset(path: Path, tables: list[_Table], fmt: str) -> Dataset:
    frames: dict[str, pd.DataFrame] = {}
    for table in tables:
        kind, frame = _frame(path, table)
        if kind in frames:
            raise InputError(path, f"two {kind} tables in one file")
        frames[kind] = frame
    if not frames:
        raise InputError(path, "no nsys stats table found")
    notes = ("memcpy sizes as printed: MB with 3 decimals",) if "memsize" in frames else ()
    ds = Dataset(provenance=Provenance(path=str(path), format=fmt, format_version=_layout(tables, set(frames)),
                                       sha256=provenance_sha256(path), notes=notes))
    if "kernels" in frames:
        k = frames["kernels"]
        k["stage"], k["short_name"] = ALL_STAGES, None
        ds.kernel_summary = _finish(k, KERNEL_SUMMARY_COLUMNS)
    if "api" in frames:
        ds.api_summary = _finish(frames["api"].rename(columns={"calls": "count"}), API_SUMMARY_COLUMNS)
    if "nvtx" in frames:
        nvtx = frames["nvtx"].rename(columns={"range": "name"})
        nvtx["name"] = nvtx["name"].str.replace(r"^:", "", regex=True)  # nsys 2025: ":name" = default domain
        ds.nvtx_summary = _finish(nvtx, NVTX_SUMMARY_COLUMNS)
    elif "trace" in frames:
        ds.nvtx_summary = _trace_nvtx(frames["trace"])
    mem = [frames[k].assign(operation=frames[k]["operation"].map(memcpy_operation))
           for k in ("memtime", "memsize") if k in frames]
    if mem:
        merged = mem[0] if len(mem) == 1 else mem[0].merge(
            mem[1][["operation", "count", "total_bytes"]], on="operation", how="outer", suffixes=("", "_size"))
        if "count_size" in merged:
            merged["count"] = merged["count"].fillna(merged.pop("count_size"))
        by = "total_ns" if "total_ns" in merged else "total_bytes"  # a size-only table has no times
        merged = merged.sort_values(by, ascending=False, na_position="last", kind="stable")
        ds.memcpy_summary = _finish(merged, MEMCPY_SUMMARY_COLUMNS)
    return ds


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8-sig").splitlines()
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _parse_csv(path: Path) -> list[_Table]:
    """Blocks of CSV rows between preamble/blank lines; each block starts with its header."""
    tables: list[_Table] = []
    block: list[tuple[int, str]] = []
    lines = _lines(path)
    for number, line in enumerate([*lines, ""], start=1):
        if not _PREAMBLE.match(line):
            block.append((number, line))
            continue
        if block:
            try:
                rows = list(csv.reader([text for _, text in block], skipinitialspace=False))
            except csv.Error as exc:
                raise InputError(path, f"lines {block[0][0]}–{block[-1][0]}: {exc}") from None
            numbered = [(block[i][0], cells) for i, cells in enumerate(rows)]
            tables.append(_Table(None, rows[0], numbered[1:]))
            block = []
    return tables


def _spans(dashes: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"-+", dashes)]


def _cut(line: str, spans: list[tuple[int, int]]) -> list[str]:
    starts = [a for a, _ in spans]
    ends = starts[1:] + [max(len(line), spans[-1][1])]
    return [line[a:b] for a, b in zip(starts, ends)]


def _parse_console(path: Path) -> list[_Table]:
    """The tables of console output, each under its ``Executing 'report'`` (or ``** … (report):``) line."""
    lines = _lines(path)
    tables: list[_Table] = []
    report: str | None = None
    i = 0
    while i < len(lines):
        section = _SECTION.search(lines[i])
        if section:
            report = section[1] or section[2]
        elif report and i + 1 < len(lines) and lines[i].strip() and _DASHES.match(lines[i + 1]):
            spans = _spans(lines[i + 1])
            rows, j = [], i + 2
            while j < len(lines) and lines[j].strip():
                rows.append((j + 1, _cut(lines[j], spans)))
                j += 1
            if report in _REPORTS:
                tables.append(_Table(report, _cut(lines[i], spans), rows))
            report, i = None, j
            continue
        i += 1
    return tables


def _text_head(head: bytes) -> str | None:
    if b"\x00" in head:
        return None
    return head.decode("utf-8", errors="replace")


def _is_console(text: str) -> bool:
    return bool(re.search(r"Executing '\w+' stats report|^\s*\*\* .*\(\w+\):\s*$", text, re.MULTILINE))


class NsysStatsReader:
    format = "nsys-stats"
    description = "nsys stats output: CSV reports, nvtx_pushpop_trace CSV, or --stats=true console text"

    def sniff(self, path: Path, head: bytes) -> bool:
        text = _text_head(head)
        if text is None:
            return False
        if _is_console(text):
            return True
        lines = [line for line in text.splitlines() if not _PREAMBLE.match(line)]
        return bool(lines) and "," in lines[0] and any(m in lines[0] for m in _NSYS_MARKERS)

    def read(self, path: Path, *, stage: str | None = None) -> Dataset:
        """With ``stage``, the file is labelled as that stage's summary (what ``nsys stats
        --filter-nvtx NAME`` wrote); a file that shows it covers other ranges is refused."""
        text = "\n".join(_lines(path)[:200])
        if _is_console(text):
            dataset = _dataset(path, _parse_console(path), "nsys-stats-console")
        else:
            dataset = _dataset(path, _parse_csv(path), "nsys-stats-csv")
        if stage is not None:
            _label_stage(path, dataset, stage)
        return dataset


def _label_stage(path: Path, dataset: Dataset, stage: str) -> None:
    """Label ``dataset``'s kernel summary as ``stage``'s, or InputError when the file holds several
    stages' data (its NVTX summary lists other ranges) or no kernel summary."""
    if dataset.kernel_summary is None:
        raise InputError(path, f"stage {stage!r}: the file holds no kernel summary (cuda_gpu_kern_sum) to label")
    ranges = set() if dataset.nvtx_summary is None else set(dataset.nvtx_summary["name"])
    others = sorted(ranges - {stage})
    if others:
        raise InputError(path, f"stage {stage!r}: the file summarizes NVTX ranges {', '.join(others[:5])} too "
                               "(a whole-capture summary); give one per-stage file (nsys stats --filter-nvtx) "
                               "or the SQLite export")
    dataset.kernel_summary["stage"] = stage


READER = NsysStatsReader()
