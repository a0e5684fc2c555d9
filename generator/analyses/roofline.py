"""Roofline: device peaks, each kernel's arithmetic intensity, and the chart datasets.

Peaks are physical: one roof per datapath for the GPU, never a statistic of per-launch peaks (ncu
scales those by the clock each launch happened to run at, so short launches at a boosted clock would
lift the roof). In order of precedence: ``report.yaml`` overrides (``settings.peaks``); else the
datasheet figures of the shipped chip file naming the GPU (generator/chips; not under locked clocks);
else ncu's per-cycle peak of the datapath (a device constant: FLOP per SM cycle over all SMs) × the stated SM
clock — the device's maximum boost clock (``device__attribute_clock_rate``) unless the capture
locked clocks, then the clock it locked them to; DRAM: ncu's bytes per DRAM cycle × the device's
memory clock, else the bandwidth the device description carries. A peak nobody states stays None
and every point that needs it is "unknown" rather than drawn against a guessed roof.

FLOP are counted per datapath (canonical ``flop_tensor``, ``flop_fp32``, ``flop_fp16``,
``flop_fp64``); tensor-core FLOP are compared with the dense tensor peak, not the FP32 one.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from generator.analyses.floors import datapath as floor_datapath
from generator.analyses.registry import Analysis
from generator.analyses.settings import AnalysisSettings
from generator.analyses.useful_work import with_useful_work
from generator.model import GpuInfo, VersionInputs

#: datapath → (FLOP column, ncu per-cycle peak column)
DATAPATHS: dict[str, tuple[str, str]] = {
    "tensor": ("flop_tensor", "peak_tensor_flop_per_cycle"),
    "fp32": ("flop_fp32", "peak_fp32_flop_per_cycle"),
    "fp16": ("flop_fp16", "peak_fp16_flop_per_cycle"),
    "fp64": ("flop_fp64", "peak_fp64_flop_per_cycle"),
}
MAX_BOOST, LOCKED = "max_boost", "locked"


@dataclass
class Peaks:
    """Device peaks used for ridges and roofs; ``source`` says where each came from."""

    dram_bytes_per_s: float | None = None
    flop_per_s: dict[str, float] = field(default_factory=dict)  # datapath → FLOP/s
    source: dict[str, str] = field(default_factory=dict)  # "dram" | datapath → "settings"|"ncu"|"device"
    sm_clock_hz: float | None = None  # the clock the FLOP roofs are stated at
    clock: str | None = None  # MAX_BOOST or LOCKED
    chip: str | None = None  # the chip file whose datasheet figures the "chip" sources are

    def ridge(self, datapath: str) -> float | None:
        """FLOP per DRAM byte where the datapath's compute roof meets the bandwidth roof."""
        peak = self.flop_per_s.get(datapath)
        if not peak or not self.dram_bytes_per_s:
            return None
        return peak / self.dram_bytes_per_s


def _device_constant(metrics: pd.DataFrame, column: str) -> float | None:
    """The value of a per-cycle peak column (the same for every launch on one GPU; the most common
    value where launches ran on different GPUs)."""
    if column not in metrics:
        return None
    values = pd.to_numeric(metrics[column], errors="coerce").dropna()
    values = values[values > 0]
    return float(values.mode().max()) if len(values) else None


def _override_datapath(key: str) -> str | None:
    """``bf16_tensor``/``tensor`` → tensor; ``fp32``/``fp16``/``fp64`` as is."""
    key = key.lower()
    if "tensor" in key:
        return "tensor"
    return key if key in DATAPATHS else None


#: datapath ("dram": bandwidth) → the chip file figure (analyses.projection.FIGURES) and its scale
CHIP_FIGURES: dict[str, tuple[str, float]] = {
    "tensor": ("tensor_bf16_tflops", 1e12), "fp32": ("fp32_tflops", 1e12), "dram": ("dram_bandwidth_gbps", 1e9),
}


def chip_file(gpus: list[GpuInfo], chips: Iterable[Any]) -> Any | None:
    """The chip file (analyses.projection.Chip) naming the version's GPU among its ``gpu_names``."""
    names = {g.name for g in gpus if g.name}
    return next((chip for chip in chips if names & set(chip.gpu_names)), None)


def chip_peaks(peaks: Peaks, chip: Any | None) -> Peaks:
    """``peaks`` with the datasheet figures of ``chip`` (CHIP_FIGURES: dense BF16 tensor, FP32, DRAM
    bandwidth) where it states them: the one set of chip figures findings, floors, roofline and the
    what-if share. Not for a capture that locked clocks (its roofs are at that clock)."""
    if chip is None or peaks.clock == LOCKED:
        return peaks
    for datapath, (key, scale) in CHIP_FIGURES.items():
        value = chip.get(key)
        if value == value and value > 0:
            if datapath == "dram":
                peaks.dram_bytes_per_s = value * scale
            else:
                peaks.flop_per_s[datapath] = value * scale
            peaks.source[datapath] = "chip"
            peaks.chip = chip.name
    return peaks


def device_peaks(metrics: pd.DataFrame, gpus: list[GpuInfo], overrides: dict[str, Any],
                 locked_clock_hz: float | None = None, chips: Iterable[Any] = ()) -> Peaks:
    """Physical peaks (module docstring): settings overrides, else the datasheet figures of the chip
    file naming the GPU (:func:`chip_peaks`), else per-cycle peaks × the stated SM clock —
    ``locked_clock_hz`` when the capture locked clocks, else the device's max boost clock."""
    gpu = next((g for g in gpus if g.sm_clock_hz), None)
    peaks = Peaks()
    if locked_clock_hz:
        peaks.sm_clock_hz, peaks.clock = float(locked_clock_hz), LOCKED
    elif gpu is not None:
        peaks.sm_clock_hz, peaks.clock = gpu.sm_clock_hz, MAX_BOOST
    for datapath, (_, column) in DATAPATHS.items():
        per_cycle = _device_constant(metrics, column)
        if per_cycle is not None and peaks.sm_clock_hz:
            peaks.flop_per_s[datapath] = per_cycle * peaks.sm_clock_hz
            peaks.source[datapath] = "ncu"
    dram_per_cycle = _device_constant(metrics, "peak_dram_bytes_per_cycle")
    memory_clock = next((g.memory_clock_hz for g in gpus if g.memory_clock_hz), None)
    if dram_per_cycle is not None and memory_clock:
        peaks.dram_bytes_per_s, peaks.source["dram"] = dram_per_cycle * memory_clock, "ncu"
    else:
        known = [g.memory_bandwidth_bytes_per_s for g in gpus if g.memory_bandwidth_bytes_per_s]
        if known:
            peaks.dram_bytes_per_s, peaks.source["dram"] = float(known[0]), "device"
    chip_peaks(peaks, chip_file(gpus, chips))
    if overrides.get("peak_dram_gbps") is not None:
        peaks.dram_bytes_per_s = float(overrides["peak_dram_gbps"]) * 1e9
        peaks.source["dram"] = "settings"
    for key, tflops in (overrides.get("peak_tflops") or {}).items():
        datapath = _override_datapath(str(key))
        if datapath is not None:
            peaks.flop_per_s[datapath] = float(tflops) * 1e12
            peaks.source[datapath] = "settings"
    return peaks


def as_float(value: Any) -> float:
    """A float, NaN for None/NaN/text."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def kernel_intensity(row: pd.Series | dict[str, Any], peaks: Peaks) -> dict[str, Any]:
    """Dominant datapath (most FLOP), total FLOP, arithmetic intensity and that datapath's ridge.

    ``arithmetic_intensity`` = all counted FLOP / DRAM bytes; NaN when no FLOP column has a value
    or DRAM bytes are missing or zero. A kernel with zero FLOP has intensity 0 and no datapath.
    ``ridge`` is None when a needed peak is unknown (or there is no datapath).
    """
    flops = {dp: as_float(row.get(col)) for dp, (col, _) in DATAPATHS.items()}
    counted = {dp: v for dp, v in flops.items() if not math.isnan(v)}
    dram = as_float(row.get("dram_bytes"))
    if not counted or math.isnan(dram) or dram <= 0:
        return {"datapath": None, "flop": math.nan, "arithmetic_intensity": math.nan, "ridge": None}
    total = sum(counted.values())
    datapath = max(counted, key=lambda dp: counted[dp]) if total > 0 else None
    return {
        "datapath": datapath,
        "flop": total,
        "arithmetic_intensity": total / dram,
        "ridge": peaks.ridge(datapath) if datapath else None,
    }


def roof_position(row: pd.Series | dict[str, Any], peaks: Peaks) -> dict[str, Any]:
    """Where a kernel sits under its roof: ``arithmetic_intensity`` (FLOP per DRAM byte), the
    dominant ``datapath``, ``achieved_flop_per_s`` (its FLOP / mean duration), ``attainable_flop_per_s``
    (min(datapath peak, intensity × DRAM peak)) and ``roof_pct`` (achieved / attainable × 100);
    NaN/None where a number is missing."""
    point = kernel_intensity(row, peaks)
    duration = as_float(row.get("duration_ns"))
    peak = peaks.flop_per_s.get(point["datapath"]) if point["datapath"] else None
    ai = point["arithmetic_intensity"]
    achieved = point["flop"] / (duration * 1e-9) if duration > 0 else math.nan
    attainable = (min(peak, ai * peaks.dram_bytes_per_s) if peak and peaks.dram_bytes_per_s
                  and not math.isnan(ai) else math.nan)
    return {
        "datapath": point["datapath"],
        "arithmetic_intensity": ai,
        "achieved_flop_per_s": achieved,
        "attainable_flop_per_s": attainable,
        "roof_pct": achieved / attainable * 100.0 if attainable > 0 else math.nan,
    }


def normalized_points(kernels: pd.DataFrame) -> pd.DataFrame:
    """Each kernel's SM throughput % against its memory throughput % (both of peak)."""
    cols = ["name", "friendly_name", "class", "sm_throughput_pct", "memory_throughput_pct",
            "dram_throughput_pct"]
    return kernels.reindex(columns=cols).dropna(subset=["sm_throughput_pct", "memory_throughput_pct"])


EXECUTED, USEFUL = "executed", "useful"


def physical_points(kernels: pd.DataFrame) -> pd.DataFrame:
    """One point per kernel (and stage) and datapath with FLOP > 0: intensity (FLOP/DRAM byte) and FLOP/s.

    Achieved FLOP/s = that datapath's FLOP / the kernel's mean profiled duration (``work`` "executed":
    ncu's counts). Where operator shapes give the kernel's useful work (``useful_flop``, ``ideal_bytes``
    per launch), one more point (``work`` "useful"): useful FLOP per ideal byte and useful FLOP/s.
    """
    rows: list[dict[str, Any]] = []
    for _, k in kernels.iterrows():
        dram, duration = as_float(k.get("dram_bytes")), as_float(k.get("duration_ns"))
        if math.isnan(duration) or duration <= 0:
            continue
        point = {"name": k["name"], "stage": k.get("stage"), "friendly_name": k.get("friendly_name"),
                 "class": k.get("class")}
        for datapath, (column, _) in DATAPATHS.items():
            flop = as_float(k.get(column))
            if math.isnan(flop) or flop <= 0 or math.isnan(dram) or dram <= 0:
                continue
            rows.append({**point, "datapath": datapath, "work": EXECUTED, "flop": flop, "dram_bytes": dram,
                         "arithmetic_intensity": flop / dram, "achieved_flop_per_s": flop / (duration * 1e-9)})
        useful, ideal = as_float(k.get("useful_flop")), as_float(k.get("ideal_bytes"))
        if useful > 0 and ideal > 0:
            datapath = floor_datapath(as_float(k.get("flop_tensor")), as_float(k.get("flop_fp32")))
            rows.append({**point, "datapath": datapath, "work": USEFUL, "flop": useful, "dram_bytes": ideal,
                         "arithmetic_intensity": useful / ideal, "achieved_flop_per_s": useful / (duration * 1e-9)})
    cols = ["name", "stage", "friendly_name", "class", "datapath", "work", "flop", "dram_bytes",
            "arithmetic_intensity", "achieved_flop_per_s"]
    return pd.DataFrame(rows, columns=cols)


def roofs(peaks: Peaks) -> dict[str, Any]:
    """The bandwidth line and one compute ceiling (and ridge) per datapath with a known peak."""
    return {
        "peak_dram_bytes_per_s": peaks.dram_bytes_per_s,
        "ceilings": dict(sorted(peaks.flop_per_s.items())),
        "ridges": {dp: peaks.ridge(dp) for dp in sorted(peaks.flop_per_s)},
        "source": dict(sorted(peaks.source.items())),
        "sm_clock_hz": peaks.sm_clock_hz,
        "clock": peaks.clock,
    }


def roofline_datasets(kernels: pd.DataFrame, peaks: Peaks) -> dict[str, Any]:
    """``{"normalized": df, "physical": df, "roofs": {...}}`` for the charts."""
    return {
        "normalized": normalized_points(kernels),
        "physical": physical_points(kernels),
        "roofs": roofs(peaks),
    }


def locked_sm_clock(manifest: dict | None, metrics: pd.DataFrame) -> float | None:
    """The SM clock a capture locked for profiling (its ncu command ran with ``--clock-control
    base``): the median SM frequency its launches measured; None when clocks were not locked."""
    commands = [c for phase in (manifest or {}).get("phases", []) for c in phase.get("commands", [])]
    locked = any(a == "--clock-control" and b == "base" for argv in commands for a, b in zip(argv, argv[1:]))
    frequency = pd.to_numeric(metrics.get("sm_frequency_hz"), errors="coerce") if locked else None
    return float(frequency.median()) if frequency is not None and frequency.notna().any() else None


def version_peaks(inputs: VersionInputs, metrics: pd.DataFrame, settings: AnalysisSettings) -> Peaks:
    """:func:`device_peaks` of the version's GPU, at the clock its capture locked (if it did)."""
    return device_peaks(metrics, inputs.gpus, settings.peaks, locked_sm_clock(inputs.manifest, metrics),
                        settings.chip_basis)


def version_roofline(ncu_metrics: pd.DataFrame, useful_work: pd.DataFrame, peaks: Peaks) -> dict[str, Any]:
    """:func:`roofline_datasets` of the version's profiled kernels with their useful work."""
    return roofline_datasets(with_useful_work(ncu_metrics, useful_work), peaks)


ANALYSES = [Analysis("peaks", version_peaks), Analysis("roofline", version_roofline)]
