"""Nsight Compute reports (`.ncu-rep`) through NVIDIA's `ncu_report` module (works on CPU).

Every profiled launch becomes one row of kernel_metrics: identity columns, every canonical
metric of :mod:`generator.metric_table` and the tensor datapath; device attributes → GpuInfo.
"""
from __future__ import annotations

import functools
import math
import re
import struct
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pandas as pd

from generator.errors import InputError
from generator.forks import ChildCrashed, can_fork, side_by_side
from generator.machine import cpus
from generator.metric_table import (
    CANONICAL_METRIC_NAMES,
    NCU_BOTTLENECK_COLUMN,
    NCU_BOTTLENECK_RULE,
    TEXT_COLUMNS,
    resolve,
)
from generator.model import KERNEL_METRICS_ID_COLUMNS, Dataset, GpuInfo, Provenance
from generator.readers.base import provenance_sha256
from generator.run_layout import CAPTURE_NVTX_DOMAINS

MAGIC = b"NVR\x00"
T = TypeVar("T")
_VERSION = re.compile(rb"(\d{4}\.\d+\.\d+)\.\d+ \(build \d+\)")
_BUILD = b" (build "


class NcuRepReader:
    format = "ncu-rep"
    description = "Nsight Compute report (.ncu-rep)"

    def sniff(self, path: Path, head: bytes) -> bool:
        return head.startswith(MAGIC)

    def read(self, path: Path, *, stage: str | None = None) -> Dataset:
        path = Path(path)
        check_complete(path)
        rows, gpus, (version, sha256) = _launches(path, lambda: (report_version(path), provenance_sha256(path)))
        frame, notes = kernel_metrics_frame(rows, stage)
        return Dataset(
            provenance=Provenance(
                path=str(path), format=self.format,
                format_version=f"ncu {version}" if version else None, sha256=sha256, notes=notes),
            kernel_metrics=frame,
            gpus=gpus,
        )


#: Launches one child process reads. ncu_report keeps every launch it loaded until its process ends,
#: about 5 MB each in a full-set report (990 MiB for the 198 of examples/runs/ocr-vlm-sdpa): a child
#: per 64 launches stays near 400 MiB.
SHARD_LAUNCHES = 64
#: A report of at most this many launches (a retry pass's) is read by the child that loads it:
#: forking shards for them would cost more than reading them.
FEW_LAUNCHES = 16


def _launches(path: Path, meanwhile: Callable[[], T]) -> tuple[list[dict], list[GpuInfo], T]:
    """Every launch row and device of a report, read with ncu_report in a forked child that loads
    the report (:func:`_load_and_read`). ``meanwhile()`` runs here while it reads; its value comes
    third."""
    (parts,), extra = _in_children(path, [functools.partial(_load_and_read, path)], 1, meanwhile)
    if not parts:
        raise InputError(path, "report holds no profiled launches")
    gpus: dict[int | None, GpuInfo] = {}
    for _, found in parts:
        for gpu in found:
            gpus.setdefault(gpu.index, gpu)
    return [row for rows, _ in parts for row in rows], list(gpus.values()), extra


def _in_children(path: Path, calls: list[Callable[[], object]], limit: int,
                 meanwhile: Callable[[], T]) -> tuple[list, T]:
    """Each call's value, each computed in a forked child (:func:`generator.forks.side_by_side`),
    and ``meanwhile()``'s; a child that ends without answering (ncu_report crashing on a damaged
    report) is an InputError naming ``path``."""
    extra: list[T] = []
    try:
        values = side_by_side(calls, limit, here=not can_fork(), meanwhile=lambda: extra.append(meanwhile()))
    except ChildCrashed:
        raise InputError(path, "Nsight Compute's report reader crashed on this file") from None
    return values, extra[0]


def _load(path: Path):
    import ncu_report

    try:
        return ncu_report.load_report(str(path))
    except Exception as exc:  # the module raises plain exceptions for unreadable reports
        raise InputError(path, f"cannot load Nsight Compute report ({exc})") from None


def _load_and_read(path: Path) -> list[tuple[list[dict], list[GpuInfo]]]:
    """(rows, devices) of every launch of the report, in shards in launch order (none: no launch).

    The report is loaded once, here (ncu_report reads the whole file into memory and keeps no file
    open; loading reads no launch yet). At most :data:`FEW_LAUNCHES` launches are read here; more
    are read in shard children forked from here, which inherit the loaded report, one per CPU at a
    time, each reading at most :data:`SHARD_LAUNCHES` launches and ending with them (a build or test
    reading many reports would otherwise hold them all)."""
    context = _load(path)
    counts = [context.range_by_idx(r).num_actions() for r in range(context.num_ranges())]
    total = sum(counts)
    if total <= FEW_LAUNCHES:
        return [_rows(path, context, counts, 0, total)] if total else []
    workers = cpus()
    # as many shards as CPUs, or a multiple of that so none exceeds SHARD_LAUNCHES; sizes even
    count = workers * -(-total // (workers * SHARD_LAUNCHES))
    size = -(-total // count)
    shards = [functools.partial(_rows, path, context, counts, start, min(start + size, total))
              for start in range(0, total, size)]
    return side_by_side(shards, workers, here=not can_fork())


def _rows(path: Path, context, counts: list[int], start: int, stop: int) -> tuple[list[dict], list[GpuInfo]]:
    """Rows and devices of launches ``start`` … ``stop - 1`` (numbered across ranges, in order) of
    the loaded report ``context``."""
    rows: list[dict] = []
    gpus: list[GpuInfo] = []
    first = 0
    for r, count in enumerate(counts):
        rng = context.range_by_idx(r)
        for a in range(max(start - first, 0), min(stop - first, count)):
            launch_id = first + a
            action = rng.action_by_idx(a)
            try:
                rows.append(_launch_row(action, launch_id))
            except ValueError as exc:
                raise InputError(path, f"launch {launch_id}: {exc}") from None
            gpus.append(_gpu(action))
        first += count
    return rows, gpus


#: Column order of kernel_metrics as the ncu readers produce it.
KERNEL_METRICS_COLUMNS = KERNEL_METRICS_ID_COLUMNS + CANONICAL_METRIC_NAMES + TEXT_COLUMNS


def kernel_metrics_frame(rows: list[dict], stage: str | None) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """kernel_metrics from launch rows (each with "_ranges": every NVTX range around it).

    With ``stage``, only launches inside an NVTX range of that name are kept; a file without any
    NVTX information cannot tell, so it keeps every launch and says so in the returned notes.
    """
    notes: tuple[str, ...] = ()
    if stage is not None:
        if any(row["_ranges"] for row in rows):
            rows = [row for row in rows if stage in row["_ranges"]]
        else:
            notes = (f"no NVTX ranges in this file: stage {stage!r} not applied",)
    frame = pd.DataFrame(rows, columns=KERNEL_METRICS_COLUMNS)
    frame["launch_id"] = frame["launch_id"].astype("int64")
    frame["device"] = frame["device"].astype("Int64")
    for name in CANONICAL_METRIC_NAMES:
        frame[name] = frame[name].astype("float64")
    for column in TEXT_COLUMNS:
        text = frame[column].astype(object)
        frame[column] = text.where(text.notna(), None)
    return frame, notes


def check_complete(path: Path) -> None:
    """InputError unless the file is whole: after the magic, a report is a chain of
    length-prefixed blocks (little-endian uint32 size, then the block) that ends at EOF;
    `ncu_report` itself silently returns the launches before a cut."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        pos = fh.seek(len(MAGIC))
        while pos < size:
            prefix = fh.read(4)
            if len(prefix) < 4:
                raise InputError(path, f"truncated report: cut inside a block header at byte {pos}")
            length = struct.unpack("<I", prefix)[0]
            pos = fh.seek(length, 1)
            if pos > size:
                raise InputError(path, f"truncated report: a block ends at byte {pos}, the file at {size}")


def report_version(path: Path) -> str | None:
    """The Nsight Compute version that wrote the report (stored as text with the first launch's
    target: megabytes into the file). Each block is searched for the version's fixed text first
    (``bytes.find``), and the pattern tried only around it: the pattern alone scans at a tenth of the
    speed."""
    tail = b""
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            text = tail + block
            at = text.find(_BUILD)
            while at >= 0:
                if m := _VERSION.search(text, max(at - 40, 0), at + 40):
                    return m[1].decode()
                at = text.find(_BUILD, at + 1)
            tail = block[-64:]
    return None


def _metric(action, name: str):
    """(value, unit) of one metric of an action, or None when absent or not a number."""
    metric = action.metric_by_name(name)
    if metric is None:
        return None
    value = metric.value()
    if isinstance(value, str) or value is None:
        return None
    return float(value), metric.unit()


def _int(action, name: str) -> int | None:
    found = _metric(action, name)
    return None if found is None or math.isnan(found[0]) else int(found[0])


def _dims(action, prefix: str) -> str | None:
    dims = [_int(action, f"{prefix}_{axis}") for axis in "xyz"]
    return None if None in dims else f"({dims[0]}, {dims[1]}, {dims[2]})"


def nvtx_identity(push_pop: list[tuple[str, list[str]]], start_end: list[tuple[str, list[str]]]
                  ) -> tuple[str | None, str | None, list[str]]:
    """(stage, NVTX text, every range name) from (domain, ranges outer → inner) pairs.

    The stage is the innermost push/pop range, else the last start/end range, of the domains other
    than the capture's module and profile-window domains (run_layout.CAPTURE_NVTX_DOMAINS); the
    text reads "<domain>:outer/inner", one part per domain and kind, joined by "; ".
    """
    parts = [(domain, ranges) for domain, ranges in push_pop + start_end if ranges]
    names = [name for _, ranges in parts for name in ranges]
    nested = [ranges[-1] for domain, ranges in push_pop if ranges and domain not in CAPTURE_NVTX_DOMAINS]
    ends = [ranges[-1] for domain, ranges in start_end if ranges and domain not in CAPTURE_NVTX_DOMAINS]
    stage = nested[-1] if nested else ends[-1] if ends else None
    text = "; ".join(f"{domain}:{'/'.join(ranges)}" for domain, ranges in parts) or None
    return stage, text, names


def _nvtx(action) -> tuple[str | None, str | None, list[str]]:
    state = action.nvtx_state()
    if state is None:
        return None, None, []
    domains = [state.domain_by_id(i) for i in state.domains()]
    return nvtx_identity([(d.name(), list(d.push_pop_ranges())) for d in domains],
                         [(d.name(), list(d.start_end_ranges())) for d in domains])


def _launch_row(action, launch_id: int) -> dict:
    import ncu_report

    stage, nvtx, ranges = _nvtx(action)
    major = _int(action, "device__attribute_compute_capability_major")
    minor = _int(action, "device__attribute_compute_capability_minor")
    row = {
        "launch_id": launch_id,
        "name": action.name(ncu_report.IAction.NameBase_DEMANGLED) or action.name(),
        "short_name": action.name(ncu_report.IAction.NameBase_FUNCTION) or None,
        "mangled_name": action.name(ncu_report.IAction.NameBase_MANGLED) or None,
        "stage": stage,
        "nvtx": nvtx,
        "grid": _dims(action, "launch__grid_dim"),
        "block": _dims(action, "launch__block_dim"),
        "device": _int(action, "launch__device_id"),
        "cc": f"{major}.{minor}" if major is not None and minor is not None else None,
        "process": None,
        "_ranges": ranges,
        NCU_BOTTLENECK_COLUMN: _rule_message(action, NCU_BOTTLENECK_RULE),
    }
    row.update(resolve(lambda name: _metric(action, name)))
    return row


def _rule_message(action, rule: str) -> str | None:
    """The message ncu's rule ``rule`` left on the launch, None when it did not run."""
    for result in action.rule_results_as_dicts():
        message = result.get("rule_message")
        if result.get("rule_identifier") == rule and isinstance(message, dict) and message.get("message"):
            return message["message"]
    return None


def _text(action, name: str) -> str | None:
    metric = action.metric_by_name(name)
    value = None if metric is None else metric.value()
    return value if isinstance(value, str) and value else None


def device_info(attribute: Callable[[str], float | None], name: str | None, index: int | None,
                cc: str | None) -> GpuInfo:
    """A device from ncu's ``device__attribute_<x>`` values (``attribute(x)``, None when absent);
    both ncu readers use it (the report's metrics, the raw page's columns)."""
    mem_khz, bus_bits = attribute("memory_clock_rate"), attribute("global_memory_bus_width")
    sm_khz, sm_count, total = attribute("clock_rate"), attribute("multiprocessor_count"), attribute("total_memory")
    return GpuInfo(
        name=name,
        index=index,
        compute_capability=cc,
        sm_count=int(sm_count) if sm_count is not None else None,
        memory_bytes=int(total) if total is not None else None,
        # Double data rate × bus width, as CUDA's deviceQuery derives it.
        memory_bandwidth_bytes_per_s=2 * mem_khz * 1e3 * bus_bits / 8 if mem_khz and bus_bits else None,
        sm_clock_hz=sm_khz * 1e3 if sm_khz else None,
        memory_clock_hz=mem_khz * 1e3 if mem_khz else None,
    )


def _gpu(action) -> GpuInfo:
    """The device of a launch from its `device__attribute_*` metrics."""
    def attribute(name: str) -> int | None:
        return _int(action, f"device__attribute_{name}")

    major, minor = attribute("compute_capability_major"), attribute("compute_capability_minor")
    return device_info(attribute, _text(action, "device__attribute_display_name"), attribute("device_index"),
                       f"{major}.{minor}" if major is not None and minor is not None else None)


READER = NcuRepReader()

