"""PyTorch profiler (Kineto) Chrome-trace JSON (``.json`` / ``.json.gz``).

Kineto writes ``ts``/``dur`` in µs (integers, or floats with ns decimals) whatever
``displayTimeUnit`` says; they are converted to integer ns exactly (floats are parsed as text).
Stages are ``record_function`` ranges: a kernel belongs to stage S if its GPU interval lies inside a
``gpu_user_annotation`` S on its device and stream, or else its launching runtime call (same
correlation id) lies inside a CPU ``user_annotation`` S on the same process and thread.
"""
from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from generator.errors import InputError
from generator.model import (
    ALL_STAGES,
    KERNEL_SUMMARY_COLUMNS,
    MEMCPY_SUMMARY_COLUMNS,
    NVTX_SUMMARY_COLUMNS,
    Dataset,
    GpuInfo,
    Provenance,
    duration_stats,
    memcpy_operation,
    ranked,
)
from generator.readers.base import provenance_sha256
from generator.readers.inflate import read_gz

_MEMCPY_CATS = {"gpu_memcpy", "gpu_memset", "memcpy", "memset"}
_LAUNCH_CATS = {"cuda_runtime", "cuda_driver", "runtime"}
_INTERVAL = ["pid", "tid", "start", "end"]


class TorchTraceReader:
    format = "torch-trace"
    description = "PyTorch profiler (Kineto) Chrome trace JSON"

    def sniff(self, path: Path, head: bytes) -> bool:
        return path.name.lower().endswith((".json", ".json.gz"))

    def read(self, path: Path, *, stage: str | None = None) -> Dataset:
        path = Path(path)
        doc = _load(path)
        events = _split(path, doc["traceEvents"])
        kernels = events["kernel"]
        if kernels.empty:
            raise InputError(path, "trace has no GPU kernel events (profiled without CUDA activity?)")
        if stage is not None:
            kernels = kernels[_stage_mask(path, events, stage)]
        devices = sorted(set(_devices(events)))
        gpus, notes = _gpus(doc.get("deviceProperties"), devices)
        return Dataset(
            provenance=Provenance(
                path=str(path),
                format=self.format,
                format_version=_format_version(doc),
                sha256=provenance_sha256(path),
                notes=notes,
            ),
            kernel_summary=_kernel_summary(kernels, stage or ALL_STAGES),
            nvtx_summary=_nvtx_summary(events["cpu_range"]),
            memcpy_summary=_memcpy_summary(events["memcpy"]),
            gpus=gpus,
        )


def _devices(events: dict[str, pd.DataFrame]) -> pd.Series:
    """Device index of every GPU activity (kernels and memcpy/memset) in the trace."""
    return pd.concat([events["kernel"]["device"], events["memcpy"]["device"]]).dropna().astype(int)


def _load(path: Path) -> dict[str, Any]:
    data = read_gz(path) if path.name.lower().endswith(".gz") else path.read_bytes()
    try:
        doc = json.loads(data, parse_float=str)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"invalid or truncated JSON ({exc.msg} at line {exc.lineno})") from None
    except UnicodeDecodeError:
        raise InputError(path, "not a JSON text file (undecodable bytes)") from None
    except RecursionError:
        raise InputError(path, "JSON nested too deeply") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise InputError(path, "not a PyTorch profiler trace (no traceEvents list)")
    return doc


def _split(path: Path, events: list[Any]) -> dict[str, pd.DataFrame]:
    """The trace's kernel, memcpy, launch and range events as small typed frames (one pass)."""
    rows: dict[str, list[tuple]] = {k: [] for k in ("kernel", "memcpy", "launch", "cpu_range", "gpu_range")}
    for ev in events:
        cat = ev.get("cat") if isinstance(ev, dict) else None
        if not isinstance(cat, str) or ev.get("ph", "X") != "X":
            continue
        cat = cat.lower()
        if cat == "kernel":
            kind = "kernel"
        elif cat in _MEMCPY_CATS:
            kind = "memcpy"
        elif cat in _LAUNCH_CATS:
            kind = "launch"
        elif cat == "user_annotation":
            kind = "cpu_range"
        elif cat == "gpu_user_annotation":
            kind = "gpu_range"
        else:
            continue
        name = ev.get("name")
        if not isinstance(name, str):
            raise InputError(path, f"{cat} event without a name")
        start = _ns(path, ev.get("ts"), "ts")
        end = start + _ns(path, ev.get("dur"), "dur")
        args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
        corr = args.get("correlation", args.get("External id"))
        device = args.get("device", ev.get("pid"))
        rows[kind].append(
            (name, ev.get("pid"), ev.get("tid"), start, end, corr, device if isinstance(device, int) else None,
             args.get("bytes"))
        )
    columns = ["name", "pid", "tid", "start", "end", "corr", "device", "bytes"]
    frames = {}
    for kind, found in rows.items():
        frame = pd.DataFrame(found, columns=columns)
        frame[["pid", "tid"]] = frame[["pid", "tid"]].astype(str)
        frame["start"] = frame["start"].astype("int64")
        frame["end"] = frame["end"].astype("int64")
        frame["device"] = frame["device"].astype("Int64")
        frame["bytes"] = pd.to_numeric(frame["bytes"], errors="coerce")
        frames[kind] = frame
    return frames


def _ns(path: Path, value: Any, field: str) -> int:
    """A Kineto µs value (int, or float kept as text) → integer ns (within int64)."""
    ns = None
    if isinstance(value, int) and not isinstance(value, bool):
        ns = value * 1000
    elif isinstance(value, str):
        try:
            ns = int((Decimal(value) * 1000).to_integral_value())
        except (InvalidOperation, ValueError, OverflowError):  # not a number, NaN, Infinity
            pass
    if ns is None:
        raise InputError(path, f"event with a missing or non-numeric {field!r}: {str(value)[:40]!r}")
    if abs(ns) >= 2 ** 63:
        raise InputError(path, f"event with {field!r} {str(value)[:40]} µs, beyond 64-bit nanoseconds")
    return ns


def _stage_mask(path: Path, events: dict[str, pd.DataFrame], stage: str) -> pd.Series:
    """Which kernels belong to ``stage`` (GPU range first, else the launch's CPU range)."""
    gpu_ranges = events["gpu_range"][events["gpu_range"]["name"] == stage]
    cpu_ranges = events["cpu_range"][events["cpu_range"]["name"] == stage]
    if gpu_ranges.empty and cpu_ranges.empty:
        known = sorted(set(events["cpu_range"]["name"]) | set(events["gpu_range"]["name"]))
        shown = ", ".join(known[:10]) + (", …" if len(known) > 10 else "")
        raise InputError(path, f"no range named {stage!r} (ranges: {shown or 'none'})")
    kernels = events["kernel"]
    inside = _inside(kernels, gpu_ranges)
    launches = events["launch"].dropna(subset=["corr"]).drop_duplicates("corr").set_index("corr")
    launched = launches.reindex(kernels["corr"])[_INTERVAL].set_axis(kernels.index)
    inside |= _inside(launched, cpu_ranges)
    if not inside.any():
        raise InputError(path, f"range {stage!r} contains no kernels")
    return inside


def _inside(items: pd.DataFrame, ranges: pd.DataFrame) -> pd.Series:
    """Whether each item's [start, end] lies inside some range on the same (pid, tid)."""
    result = pd.Series(False, index=items.index)
    for key, group in ranges.groupby(["pid", "tid"]):
        group = group.sort_values("start")
        starts = group["start"].to_numpy()
        reach = np.maximum.accumulate(group["end"].to_numpy())
        mine = items[(items["pid"] == key[0]) & (items["tid"] == key[1])].dropna(subset=["start", "end"])
        if mine.empty:
            continue
        last = np.searchsorted(starts, mine["start"].to_numpy(dtype="int64"), side="right") - 1
        ok = (last >= 0) & (reach[np.maximum(last, 0)] >= mine["end"].to_numpy(dtype="int64"))
        result.loc[mine.index[ok]] = True
    return result


def _durations(frame: pd.DataFrame, by: str) -> pd.DataFrame:
    """nsys-style duration statistics per ``by``."""
    return duration_stats(frame["end"] - frame["start"], frame[by])


def _kernel_summary(kernels: pd.DataFrame, stage: str) -> pd.DataFrame:
    stats = ranked(_durations(kernels, "name"), "name")
    stats["stage"] = stage
    stats["short_name"] = None
    return stats[KERNEL_SUMMARY_COLUMNS]


def _nvtx_summary(ranges: pd.DataFrame) -> pd.DataFrame:
    stats = ranked(_durations(ranges, "name"), "name")
    stats["style"] = "PushPop"
    return stats[NVTX_SUMMARY_COLUMNS]


def _memcpy_summary(copies: pd.DataFrame) -> pd.DataFrame:
    copies = copies.assign(operation=copies["name"].map(memcpy_operation))
    stats = _durations(copies, "operation")
    bytes_ = copies.groupby("operation", sort=False)["bytes"].agg(lambda s: s.sum(skipna=False))
    stats["total_bytes"] = stats["operation"].map(bytes_)
    stats = stats.sort_values(["total_ns", "operation"], ascending=[False, True], ignore_index=True)
    return stats[MEMCPY_SUMMARY_COLUMNS]


def _gpus(properties: Any, devices: list[int]) -> tuple[list[GpuInfo], tuple[str, ...]]:
    """GpuInfo for the listed devices that ran GPU work (a note says when others were listed)."""
    if not isinstance(properties, list):
        return [], ("no deviceProperties in the trace",)
    gpus = [
        GpuInfo(
            name=p.get("name"),
            index=p.get("id"),
            compute_capability=(
                f"{p['computeMajor']}.{p['computeMinor']}" if "computeMajor" in p and "computeMinor" in p else None
            ),
            sm_count=p.get("numSms"),
            memory_bytes=p.get("totalGlobalMem"),
        )
        for p in properties
        if isinstance(p, dict) and p.get("id") in devices
    ]
    if len(gpus) == len(properties):
        return gpus, ()
    return gpus, (f"deviceProperties lists {len(properties)} devices; GPU work ran on {len(gpus)}",)


def _format_version(doc: dict[str, Any]) -> str:
    parts = [f"Kineto schema {doc.get('schemaVersion', '?')}"]
    for key, label in (("cuda_runtime_version", "CUDA runtime"), ("cuda_driver_version", "driver")):
        version = doc.get(key)
        if isinstance(version, int):
            parts.append(f"{label} {version // 1000}.{version % 1000 // 10}")
    return ", ".join(parts)


READER = TorchTraceReader()


#: kernel_ops columns: one row per GPU kernel in start order, with the ATen call that launched it
KERNEL_OP_COLUMNS = ["name", "start", "op", "input_dims", "input_types"]


def kernel_ops(path: Path) -> pd.DataFrame:
    """Each kernel of a trace recorded with ``record_shapes=True`` (start order) and the operator
    call that launched it: the ``cpu_op`` with the kernel's External id, its input dims and types
    (op None where no call with shapes has that id: every op is None without ``record_shapes``)."""
    path = Path(path)
    ops: dict[Any, tuple] = {}
    kernels: list[tuple] = []
    for ev in _load(path)["traceEvents"]:
        if not isinstance(ev, dict) or not isinstance(ev.get("args"), dict):
            continue
        args, cat = ev["args"], str(ev.get("cat", "")).lower()
        if cat == "cpu_op" and isinstance(args.get("Input Dims"), list):
            ops[args.get("External id")] = (ev.get("name"), args["Input Dims"], args.get("Input type") or [])
        elif cat == "kernel" and isinstance(ev.get("name"), str):
            kernels.append((ev["name"], _ns(path, ev.get("ts"), "ts"), args.get("External id")))
    rows = [(name, start, *ops.get(ext, (None, None, None))) for name, start, ext in kernels]
    frame = pd.DataFrame(rows, columns=KERNEL_OP_COLUMNS)
    return frame.sort_values("start", kind="stable").reset_index(drop=True)
