"""Nsight Compute reports (`.ncu-rep`) through NVIDIA's `ncu_report` module (works on CPU).

Every profiled launch becomes one row of kernel_metrics: identity columns, every canonical
metric of :mod:`generator.metric_table` and the tensor datapath; device attributes → GpuInfo.
"""
from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from generator.errors import InputError
from generator.metric_table import CANONICAL_METRIC_NAMES, TENSOR_DATAPATH_COLUMN, resolve
from generator.model import KERNEL_METRICS_ID_COLUMNS, Dataset, GpuInfo, Provenance
from generator.readers.base import sha256_of
from generator.run_layout import CAPTURE_NVTX_DOMAINS

MAGIC = b"NVR\x00"
_VERSION = re.compile(rb"(\d{4}\.\d+\.\d+)\.\d+ \(build \d+\)")


class NcuRepReader:
    format = "ncu-rep"
    description = "Nsight Compute report (.ncu-rep)"

    def sniff(self, path: Path, head: bytes) -> bool:
        return head.startswith(MAGIC)

    def read(self, path: Path, *, stage: str | None = None) -> Dataset:
        import ncu_report

        path = Path(path)
        check_complete(path)
        try:
            context = ncu_report.load_report(str(path))
        except Exception as exc:  # the module raises plain exceptions for unreadable reports
            raise InputError(path, f"cannot load Nsight Compute report ({exc})") from None
        rows: list[dict] = []
        gpus: dict[int | None, GpuInfo] = {}
        launch_id = 0
        for r in range(context.num_ranges()):
            rng = context.range_by_idx(r)
            for a in range(rng.num_actions()):
                action = rng.action_by_idx(a)
                try:
                    rows.append(_launch_row(action, launch_id))
                except ValueError as exc:
                    raise InputError(path, f"launch {launch_id}: {exc}") from None
                gpu = _gpu(action)
                gpus.setdefault(gpu.index, gpu)
                launch_id += 1
        if not rows:
            raise InputError(path, "report holds no profiled launches")
        version = report_version(path)
        frame, notes = kernel_metrics_frame(rows, stage)
        return Dataset(
            provenance=Provenance(
                path=str(path), format=self.format,
                format_version=f"ncu {version}" if version else None, sha256=sha256_of(path), notes=notes),
            kernel_metrics=frame,
            gpus=list(gpus.values()),
        )


#: Column order of kernel_metrics as the ncu readers produce it.
KERNEL_METRICS_COLUMNS = KERNEL_METRICS_ID_COLUMNS + CANONICAL_METRIC_NAMES + [TENSOR_DATAPATH_COLUMN]


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
    text = frame[TENSOR_DATAPATH_COLUMN].astype(object)
    frame[TENSOR_DATAPATH_COLUMN] = text.where(text.notna(), None)
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
    """The Nsight Compute version that wrote the report (stored as text in its header)."""
    tail = b""
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            if m := _VERSION.search(tail + block):
                return m[1].decode()
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
    }
    row.update(resolve(lambda name: _metric(action, name)))
    return row


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

