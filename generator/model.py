"""The normalized model: what every reader produces and every analysis consumes.

Tables are pandas DataFrames with fixed, canonical column names and units:
time in ns, percentages 0–100, sizes in bytes, work in FLOP, rates per second.
A value the input does not carry is NaN (numbers) or None (text) — never a guess.
"""
from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

#: Stage label for "the whole capture" (no NVTX restriction).
ALL_STAGES = "all"

#: The duration statistics every nsys summary report prints (count, then ns; stddev is the sample one).
STAT_COLUMNS: list[str] = ["count", "total_ns", "avg_ns", "med_ns", "min_ns", "max_ns", "stddev_ns"]


def duration_stats(durations: pd.Series, keys: pd.Series) -> pd.DataFrame:
    """STAT_COLUMNS per key (column ``keys.name``) from one duration (ns) per instance, as nsys
    computes them: sample stddev, 0 for a single instance; keys in order of first appearance."""
    stats = durations.groupby(keys, sort=False).agg(["count", "sum", "mean", "median", "min", "max", "std"])
    stats.columns = STAT_COLUMNS
    stats["stddev_ns"] = stats["stddev_ns"].where(stats["count"] > 1, 0.0)
    return stats.rename_axis(keys.name).reset_index()


def ranked(stats: pd.DataFrame, by: str) -> pd.DataFrame:
    """``stats`` with ``time_pct`` (share of the total) and sorted like nsys: total desc, then ``by``."""
    stats = stats.assign(time_pct=stats["total_ns"] * 100.0 / stats["total_ns"].sum())
    return stats.sort_values(["total_ns", by], ascending=[False, True], ignore_index=True)


MEMSET = "memset"
_SPELLED = {"Host": "H", "Device": "D", "Array": "A", "Peer": "P"}


def memcpy_operation(label: str) -> str:
    """The normalized memcpy ``operation`` of a tool's label: ``[CUDA memcpy HtoD]``,
    ``[CUDA memcpy Host-to-Device]`` (nsys), ``Memcpy HtoD (Pageable -> Device)`` (Kineto) → HtoD;
    any memset → memset; unknown labels unchanged."""
    text = label.strip().strip("[]").strip()
    if "memset" in text.lower():
        return MEMSET
    text = re.sub(r"(Host|Device|Array|Peer)-to-(Host|Device|Array|Peer)",
                  lambda m: f"{_SPELLED[m[1]]}to{_SPELLED[m[2]]}", text)
    unified = "Unified" in text
    match = re.search(r"\b([HDAP]to[HDAP])\b", text)
    if not match:
        return text
    return f"UVM {match[1]}" if unified else match[1]



#: Per kernel name and stage: the numbers `nsys stats --report cuda_gpu_kern_sum` prints.
KERNEL_SUMMARY_COLUMNS: list[str] = [
    "stage",  # NVTX range the launches were restricted to, or ALL_STAGES
    "name",  # full demangled name (nsys `demangledName`; or the only name the input has)
    "short_name",  # base name (nsys `shortName`), None when the input has none
    *STAT_COLUMNS,  # count = launches
    "time_pct",  # share of the stage's total kernel time, 0–100
]

#: A kernel-summary row that is one CUDA graph traced as a whole (nsys' default
#: ``--cuda-graph-trace=graph``): its launches and GPU time are known, its kernels are not, so no
#: analysis names, classifies, joins or counts it as a kernel.
WHOLE_GRAPH_NAME = "CUDA graph {graph} (whole graph, kernels unknown)"
_WHOLE_GRAPH = re.compile(r"CUDA graph \S+ \(whole graph, kernels unknown\)")


def whole_graph_name(graph: object) -> str:
    """The kernel-summary name of the CUDA graph with nsys id ``graph`` traced as a whole."""
    return WHOLE_GRAPH_NAME.format(graph=graph)


def is_whole_graph(name: object) -> bool:
    """Whether a kernel-summary name is a whole-graph row (:data:`WHOLE_GRAPH_NAME`)."""
    return isinstance(name, str) and _WHOLE_GRAPH.fullmatch(name) is not None


def whole_graphs(names: pd.Series) -> pd.Series:
    """Per name, whether it is a whole-graph row (a boolean Series, also when ``names`` is empty)."""
    return names.map(is_whole_graph).astype(bool)


#: Per nsys kernel name, each launch configuration it ran with in the whole capture (distinct rows):
#: what the nsys ↔ ncu join narrows a base name's candidates with (generator.analyses.join).
LAUNCH_CONFIG_COLUMNS: list[str] = [
    "name",  # full demangled name (nsys `demangledName`)
    "grid",  # "(x, y, z)" as ncu prints it
    "block",  # "(x, y, z)"
    "registers_per_thread",  # fixed when the kernel was compiled (float; NaN when unknown)
]

#: Identity and launch columns of KernelMetrics (one row per profiled launch).
KERNEL_METRICS_ID_COLUMNS: list[str] = [
    "launch_id",  # the profiler's ID of the launch (int)
    "name",  # name as the profiler reports it (ncu: function/demangled name when available)
    "short_name",  # base name without templates/parameters when known
    "mangled_name",  # None unless the input has it
    "stage",  # innermost NVTX range of the launch when known, else None
    "nvtx",  # full NVTX state text when known, else None
    "grid",  # "(x, y, z)" text as ncu prints it, or None
    "block",  # "(x, y, z)" text, or None
    "device",  # device index (int) or None
    "cc",  # compute capability text, e.g. "9.0", or None
    "process",  # process name or None
]

def renumber_launches(frames: list[pd.DataFrame]) -> list[pd.DataFrame]:
    """Per-launch tables of several profiles with unique ``launch_id``s, in the given order: a table
    whose ids are not all above the largest id so far is shifted to start just after it (so id
    order stays file order and each file's own order is kept)."""
    kept: list[pd.DataFrame] = []
    for frame in frames:
        ids = [int(f["launch_id"].max()) for f in kept if len(f)]
        if ids and len(frame) and int(frame["launch_id"].min()) <= max(ids):
            frame = frame.assign(launch_id=frame["launch_id"] + (max(ids) + 1 - int(frame["launch_id"].min())))
        kept.append(frame)
    return kept


#: Per memcpy kind: count, total_bytes, total_ns, avg_ns, … (nsys cuda_gpu_mem_time_sum/size_sum).
MEMCPY_SUMMARY_COLUMNS: list[str] = [
    "operation",  # normalized: "HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "memset"
    *STAT_COLUMNS,
    "total_bytes",
]

#: Per NVTX range name: the numbers `nsys stats --report nvtx_sum` prints.
NVTX_SUMMARY_COLUMNS: list[str] = [
    "name",
    "style",  # "PushPop" or "StartEnd"
    *STAT_COLUMNS,
    "time_pct",
]

#: Per CUDA API function: the numbers `nsys stats --report cuda_api_sum` prints.
API_SUMMARY_COLUMNS: list[str] = [
    "name",
    *STAT_COLUMNS,
    "time_pct",
]


@dataclass(frozen=True)
class GpuInfo:
    """One device as the input describes it; None where it says nothing."""

    name: str | None = None
    index: int | None = None
    compute_capability: str | None = None
    sm_count: int | None = None
    memory_bytes: int | None = None
    memory_bandwidth_bytes_per_s: float | None = None
    sm_clock_hz: float | None = None
    memory_clock_hz: float | None = None
    driver: str | None = None

    def identity(self) -> dict[str, Any]:
        """The facts that tell one GPU from another (GPU_IDENTITY), for comparing two captures' GPUs."""
        return {key: getattr(self, key) for key in GPU_IDENTITY}


#: GpuInfo fields that tell one GPU from another: model, architecture, SMs, memory clock (DRAM bandwidth).
GPU_IDENTITY: tuple[str, ...] = ("name", "compute_capability", "sm_count", "memory_clock_hz")


@dataclass(frozen=True)
class Provenance:
    """Where a table came from: the file, its format and the tool version that wrote it."""

    path: str
    format: str  # reader format id, e.g. "nsys-sqlite", "ncu-csv-details"
    format_version: str | None = None  # e.g. "nsys 2024.5.1 / export schema 3.13.2", "ncu 2025 layout"
    sha256: str | None = None
    notes: tuple[str, ...] = ()


@dataclass
class Dataset:
    """Everything one input file yields. Tables the format cannot carry stay None."""

    provenance: Provenance
    kernel_summary: pd.DataFrame | None = None  # KERNEL_SUMMARY_COLUMNS
    kernel_metrics: pd.DataFrame | None = None  # KERNEL_METRICS_ID_COLUMNS + canonical metrics
    nvtx_summary: pd.DataFrame | None = None  # NVTX_SUMMARY_COLUMNS
    memcpy_summary: pd.DataFrame | None = None  # MEMCPY_SUMMARY_COLUMNS
    api_summary: pd.DataFrame | None = None  # API_SUMMARY_COLUMNS
    gpus: list[GpuInfo] = field(default_factory=list)

    @property
    def path(self) -> Path:
        return Path(self.provenance.path)


@dataclass(frozen=True)
class RankReduction:
    """What one rank contributes to the cross-rank analyses (analyses.collectives.reduce_rank), ns on
    the version's clock; the rank's own kernels, NVTX ranges and CUDA calls stay where it was read.

    ``stages``: per stage (``stage`` column) the rank's own figures (analyses.collectives.STAGE_FIGURES);
    ``collectives``: each of its collective kernels in (start, end) order (COLLECTIVE_KERNEL_COLUMNS,
    then per stage ``stage:<name>``, the range instance it lies in, and ``exposed:<name>``, its time
    no other kernel of that instance covers); ``spans``: per stage a (2, n) int64 array of each
    instance's first kernel start and last kernel end; ``busy``: per stage asked for, the merged
    intervals its GPU ran a kernel in as (starts, ends) int64 arrays (None once folded into the union
    over ranks);
    ``calls``: its launching threads' CUDA calls in the host windows the late-rank analysis reads
    (tid, lo, hi of the window, then name, start, end of the call).
    """

    path: str
    global_pid: int
    pid: int
    gpu: int
    launches: int
    stages: pd.DataFrame
    collectives: pd.DataFrame
    spans: dict[str, Any]
    busy: dict[str, Any] | None = None
    calls: pd.DataFrame | None = None


@dataclass
class VersionInputs:
    """What a version's inputs were read into (the pipeline's reading → the analyses)."""

    kernel_summary: pd.DataFrame  # KERNEL_SUMMARY_COLUMNS, all stages ("all" + per stage)
    kernel_metrics: pd.DataFrame  # KERNEL_METRICS_ID_COLUMNS + canonical metrics (per launch)
    gpus: list[GpuInfo]
    provenance: list[Provenance]
    manifest: dict | None = None  # capture run manifest.json when the version came from a run
    #: stage → where its summary came from: {"range", "total", "first", "counted"} NVTX range
    #: instances of an nsys SQLite export, {"file": name} of an nsys stats file labelled as the stage,
    #: or {"union": [stages]} for the ALL_STAGES summary of a capture run (its measured stages together)
    stage_sources: dict[str, dict] = field(default_factory=dict)
    #: per stage, what ran inside CUDA graphs (nsys_sqlite.GRAPH_COLUMNS) where an nsys SQLite
    #: export gave the stage; empty when none did
    graphs: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: GPU timeline per measured stage (nsys_sqlite.TIMELINE_COLUMNS), None without a capture run
    timeline: pd.DataFrame | None = None
    #: CUDA API calls of the whole capture (API_SUMMARY_COLUMNS), None when no input carries them
    api_summary: pd.DataFrame | None = None
    #: per stage, GPU timeline figures summed over devices (nsys_sqlite.TIMELINE_COLUMNS but
    #: ``device`` and the median gap) where an nsys SQLite export gave the stage; empty when none did
    stage_spans: pd.DataFrame = field(default_factory=pd.DataFrame)

    #: kernel → module attribution of the nsys SQLite exports (readers.nsys_sqlite.module_kernels):
    #: the recognised form (None: no module ranges), launches per (stage, module, kernel), path → class
    module_form: str | None = None
    module_kernels: pd.DataFrame | None = None
    module_classes: dict[str, str] = field(default_factory=dict)
    #: every kernel launch of the measured stages (nsys_sqlite.LAUNCH_COLUMNS) where an nsys SQLite
    #: export gave them; None when none did (the durations comparisons decide on)
    launches: pd.DataFrame | None = None
    #: launch configurations of the nsys SQLite exports' kernels (LAUNCH_CONFIG_COLUMNS), None without one
    launch_configs: pd.DataFrame | None = None
    #: per (stage, kernel) the operator call that made its profiled launch (readers.op_calls.JOINED_COLUMNS:
    #: call, op, m, n, k, batch, flop, ideal_bytes, operand shapes), from a run's ops/calls.csv; None where
    #: no shapes were recorded
    op_calls: pd.DataFrame | None = None
    #: every launch of the stages with the operator call that made it (readers.op_calls.LAUNCH_CALL_COLUMNS),
    #: where a capture run recorded its calls; None otherwise
    launch_calls: pd.DataFrame | None = None
    #: each kernel of the version's PyTorch traces recorded with shapes and the operator call that
    #: launched it (readers.torch_trace.KERNEL_OP_COLUMNS), None where no trace carries shapes
    kernel_ops: pd.DataFrame | None = None
    #: the ranks of a multi-GPU version in launcher order (index = rank; pipeline.rank_map), each as
    #: its reduction, empty for one GPU; ``rank_order``: how they were ordered (readers.nsys_ranks.RANK_SOURCES)
    ranks: tuple[RankReduction, ...] = ()
    rank_order: str | None = None
    #: where the stages came from in a report made from profiler files (pipeline.stage_choice.StagesFrom:
    #: "option", "whole", "nvtx"); None: a report.yaml or capture run named them
    stages_from: str | None = None
    #: "nvtx": the workload's NVTX range names found as stages in the nsys SQLite exports (readers.nvtx_stages)
    stages_found: list[str] = field(default_factory=list)

@dataclass(frozen=True)
class VersionMeta:
    """What pages show about a version: ``title``/``notes`` map a language code to text; ``sweep``:
    it declares a sweep (so it has a sweep page)."""

    id: str
    title: dict[str, str]
    date: datetime.date
    notes: dict[str, str] | None = None
    sweep: bool = False


@dataclass(frozen=True)
class ReportMeta:
    """What rendering needs to know about the report besides the VersionResult.

    ``id``: report id (slug). ``title``: {lang: text}. ``versions``: every version in report order,
    oldest first (the last one is the latest; the page of version X compares with the one before
    it). ``site_url``: the published base URL without the version part (e.g.
    "https://org.github.io/repo/"), or None when unknown; a version lives at ``<site_url><id>/``.
    ``langs``: site languages, default language first (e.g. ["en", "zh"]).
    """

    id: str
    title: dict[str, str]
    versions: tuple[VersionMeta, ...]
    site_url: str | None
    langs: tuple[str, ...]

    @property
    def latest(self) -> VersionMeta:
        return self.versions[-1]

    def version(self, version_id: str) -> VersionMeta:
        return next(v for v in self.versions if v.id == version_id)
