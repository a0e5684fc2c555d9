"""What the measured workload would take on another chip (docs/projection.md).

Per profiled launch (ncu), on the captured GPU at the rates ncu states for that launch:
``tensor = executed tensor FLOP / tensor peak of its datapath``, ``cuda = executed FP32 (FP16)
FLOP / FP32 (FP16) peak``, ``dram = DRAM bytes / DRAM peak``, ``launch`` = the chip's fixed cost per
launch (:func:`launch_figure`). The FLOP are what ncu counted as executed. On the target each term
is scaled by the captured chip's figure over the target's (the same kind of figure on both sides:
measured against measured, datasheet against datasheet), the DRAM term read at the target's L2
bandwidth when the launch's DRAM traffic fits the target's L2 and not the captured chip's.

``MODEL`` (the kernel model): ``t' = t + Σ u·(term' − term) + Δlaunch``, the terms those of the
kernel's family, ``u = term / t`` the unit's busy fraction here. The stage models move the floor
``max(terms)`` in full: ``excess`` keeps ``t − floor``, ``efficiency`` keeps ``t / floor``. A kernel's
nsys time in its stage is scaled by its launches' ratio ``Σt' / Σt``; kernels ncu did not profile
by their stage's profiled ratio. Host gaps (GPU idle inside the stage) are a harness fact and are
reported apart, never scaled.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from generator.analyses.kernel_match import match_kernels
from generator.analyses.like_with_like import PARAMETER, WORKLOAD, like_with_like
from generator.analyses.registry import Analysis
from generator.analyses.settings import AnalysisSettings
from generator.analyses.setup import energy_stages
from generator.model import ALL_STAGES, GpuInfo, VersionInputs
from generator.projection_models import KERNEL_MODEL, MODEL, MODELS  # noqa: F401 (re-exported)
from generator.workload_params import generated_tokens

#: chip figures: key → (unit, what it is); every chip file gives these (power_w and tf32 optional)
FIGURES: dict[str, str] = {
    "sm_count": "SMs (or cores)",
    "sm_clock_mhz": "max SM clock, MHz",
    "dram_gb": "DRAM size, GB",
    "dram_bandwidth_gbps": "DRAM bandwidth, GB/s",
    "l2_mb": "L2 size, MB",
    "l2_bandwidth_gbps": "L2 bandwidth, GB/s",
    "link_gbps": "chip-to-chip link bandwidth, GB/s",
    "launch_latency_us": "shortest kernel (launch latency), µs",
    "launch_memory_us": "shortest kernel that loads and stores (one-element add), µs",
    "tensor_bf16_tflops": "dense BF16 tensor peak, TFLOP/s",
    "tensor_fp16_tflops": "dense FP16 tensor peak, TFLOP/s",
    "tensor_fp8_tflops": "dense FP8 tensor peak, TFLOP/s",
    "tensor_tf32_tflops": "dense TF32 tensor peak, TFLOP/s",
    "fp32_tflops": "FP32 (CUDA core) peak, TFLOP/s",
    "power_w": "board power, W",
    "launch_gap_us": "back-to-back kernel interval in a CUDA graph, µs",
    "peer_copy_gbps": "GPU-to-GPU copy bandwidth, GB/s",
    "allreduce_busbw_gbps": "all-reduce bus bandwidth (nccl-tests), GB/s",
}
OPTIONAL_FIGURES = ("tensor_tf32_tflops", "power_w", "launch_gap_us", "launch_memory_us", "peer_copy_gbps",
                    "allreduce_busbw_gbps")
#: the fixed cost per launch, first the one both chips state: a kernel that touches memory (every
#: model kernel does) where both were probed, else the shortest kernel
LAUNCH_FIGURES = ("launch_memory_us", "launch_latency_us")
#: what a figure's value is: a datasheet's (or driver's, or an estimate) or the chip probe's
MEASURED, DATASHEET = "measured", "datasheet"
TENSOR_FIGURES = ("tensor_bf16_tflops", "tensor_fp16_tflops", "tensor_fp8_tflops", "tensor_tf32_tflops")
#: the figures a projection's arithmetic reads (power_w: the energy estimate's), besides the fixed cost
#: per launch (launch_figure); the others are shown for reference only
MODEL_FIGURES = (*TENSOR_FIGURES, "fp32_tflops", "dram_bandwidth_gbps", "l2_mb", "l2_bandwidth_gbps", "power_w")

#: kernel family → the throughput terms its floor takes (naming.CATEGORIES grouped); communication
#: kernels have no term the capture counts (their link bytes are not in ncu's DRAM counters): carried
FAMILIES: dict[str, tuple[str, ...]] = {
    "gemm": ("gemm", "gemv", "conv", "moe"),
    "attention": ("attention",),
    "elementwise": ("elementwise", "triton", "other"),
    "reduction": ("reduce", "norm", "softmax"),
    "copy": ("copy", "cat", "index"),
    "communication": ("comm",),
}
FAMILY_TERMS: dict[str, tuple[str, ...]] = {
    "gemm": ("tensor", "cuda", "dram"), "attention": ("tensor", "cuda", "dram"),
    "elementwise": ("cuda", "dram"), "reduction": ("cuda", "dram"), "copy": ("dram",), "communication": (),
}

#: parameters the sensitivity and the smallest-chip search move: name → the figures it scales
PARAMETERS: dict[str, tuple[str, ...]] = {
    "dram_bandwidth": ("dram_bandwidth_gbps",),
    "tensor_peak": TENSOR_FIGURES,
    "l2_size": ("l2_mb",),
    "launch_latency": LAUNCH_FIGURES,
}
#: sensitivity: (parameter, factor)
SENSITIVITY: tuple[tuple[str, float], ...] = (
    ("dram_bandwidth", 0.5), ("dram_bandwidth", 2.0), ("tensor_peak", 0.5), ("tensor_peak", 2.0),
    ("l2_size", 4.0), ("launch_latency", 0.5),
)
#: a stage "keeps" the captured GPU's time within this much (percent)
KEEP_PCT = 10.0
#: factors tried for the smallest chip, largest first
SHRINK = tuple(round(1.0 - 0.05 * i, 2) for i in range(20))
#: stages with less kernel time than this have no stage-level validation verdict (ns)
VALIDATED_STAGE_NS = 1e6


@dataclass(frozen=True)
class Figure:
    """One chip figure, where it comes from, and how uncertain it is (percent, either way)."""

    value: float
    source: str  # a citation, or the default language's words of ``words``
    estimate: bool = False
    uncertainty_pct: float = 0.0
    #: the source in each language where the chip file words it itself (empty: ``source`` is a citation)
    words: dict[str, str] = field(default_factory=dict)
    #: a probe's figure: method, repeats, spread_pct (and median, clock_mhz); None for the others
    measured: dict | None = None


@dataclass(frozen=True)
class Chip:
    """A chip as data: ``key`` (file stem), display ``name``, the GPU names it describes;
    ``measured``: the chip probe's figures of the same chip (its ``-measured`` file), where one
    was made — ``figures`` stay the datasheet's (physical bounds)."""

    key: str
    name: str
    figures: dict[str, Figure]
    gpu_names: tuple[str, ...] = ()
    measured: dict[str, Figure] = field(default_factory=dict)

    def get(self, key: str) -> float:
        """The figure's value; NaN when the chip does not state it."""
        figure = self.figures.get(key)
        return figure.value if figure is not None else math.nan

    def scaled(self, keys: Iterable[str], factor: float) -> Chip:
        """This chip with ``keys`` multiplied by ``factor`` (sensitivity)."""
        figures = dict(self.figures)
        for key in keys:
            if key in figures:
                figures[key] = replace(figures[key], value=figures[key].value * factor)
        return replace(self, figures=figures)

    def bounded(self, faster: bool) -> Chip:
        """Every uncertain figure at the end of its range that makes the chip faster (or slower)."""
        figures = {}
        for key, fig in self.figures.items():
            up = 1.0 + fig.uncertainty_pct / 100.0
            down = max(1.0 - fig.uncertainty_pct / 100.0, 0.01)
            better = down if key in LAUNCH_FIGURES else up
            worse = up if key in LAUNCH_FIGURES else down
            figures[key] = replace(fig, value=fig.value * (better if faster else worse))
        return replace(self, figures=figures)


def captured_chip(gpu: GpuInfo | None, metrics: pd.DataFrame, summary: pd.DataFrame) -> Chip:
    """The captured GPU from its own attributes: ncu's device peaks (the largest any launch ran at),
    the driver's SM count, clock and memory, and the shortest kernel nsys timed; L2 and link are
    not in the capture (left out)."""
    source = "the capture's ncu device attributes"

    def peak(column: str, scale: float) -> Figure | None:
        values = pd.to_numeric(metrics.get(column, pd.Series(dtype=float)), errors="coerce").dropna()
        return Figure(float(values.max()) / scale, f"{source} ({column}, largest)") if len(values) else None

    figures: dict[str, Figure | None] = {
        "dram_bandwidth_gbps": peak("peak_dram_bytes_per_s", 1e9),
        "fp32_tflops": peak("peak_fp32_flop_per_s", 1e12),
        "launch_latency_us": Figure(float(summary["min_ns"].min()) / 1e3, "the capture's shortest kernel (nsys)")
        if len(summary) else None,
    }
    tensor = peak("peak_tensor_flop_per_s", 1e12)
    for key in ("tensor_bf16_tflops", "tensor_fp16_tflops"):
        figures[key] = tensor
    if gpu is not None:
        driver = "the capture's GPU attributes (driver)"
        if gpu.sm_count:
            figures["sm_count"] = Figure(float(gpu.sm_count), driver)
        if gpu.sm_clock_hz:
            figures["sm_clock_mhz"] = Figure(gpu.sm_clock_hz / 1e6, driver)
        if gpu.memory_bytes:
            figures["dram_gb"] = Figure(gpu.memory_bytes / 1e9, driver)
    name = gpu.name if gpu is not None and gpu.name else "captured GPU"
    return Chip("captured", name, {k: v for k, v in figures.items() if v is not None},
                (name,) if gpu is not None and gpu.name else ())


def with_probe(chip: Chip, manifest: dict | None) -> Chip:
    """``chip`` with the measured figures of the run's own chip probe (manifest ``chip_probe``,
    capture run --probe-chip) in place of its file's, where the run has one."""
    found = ((manifest or {}).get("chip_probe") or {}).get("figures")
    if not isinstance(found, dict) or not found:
        return chip
    probe = {k: Figure(float(f["value"]), "measured: this run's chip probe (manifest chip_probe)",
                       measured={m: f.get(m) for m in ("method", "repeats", "spread_pct", "median", "clock_mhz")
                                 if f.get(m) is not None})
             for k, f in found.items() if k in FIGURES and isinstance(f, dict) and f.get("value")}
    return replace(chip, measured={**chip.measured, **probe})


def figure_basis(source: Chip, target: Chip) -> tuple[Chip, Chip, dict[str, str]]:
    """The two chips with the figures a projection compares: per figure the probe's measured value
    on both sides when both chips have one, else the datasheet's on both (never one of each: the
    ratio of a measured figure to a datasheet one measures nothing); and per figure which was used."""
    used, src, tgt = {}, dict(source.figures), dict(target.figures)
    for key in sorted(set(source.figures) | set(target.figures) | set(source.measured) | set(target.measured)):
        both = key in source.measured and key in target.measured
        used[key] = MEASURED if both else DATASHEET
        if both:
            src[key], tgt[key] = source.measured[key], target.measured[key]
    return replace(source, figures=src), replace(target, figures=tgt), used


def launch_figure(source: Chip, target: Chip) -> str:
    """The figure of the fixed cost per launch a projection between the two chips moves: the first
    of LAUNCH_FIGURES both state."""
    return next((k for k in LAUNCH_FIGURES if source.get(k) == source.get(k) and target.get(k) == target.get(k)),
                LAUNCH_FIGURES[-1])


def read_figures(source: Chip, target: Chip) -> set[str]:
    """The figures a projection between the two chips reads."""
    return {*MODEL_FIGURES, launch_figure(source, target)}


def reference_chip(gpu: GpuInfo | None, chips: Iterable[Chip], captured: Chip) -> Chip:
    """The chip file describing the captured GPU (its name among a file's ``gpu_names``), else the
    chip read from the capture itself: the basis every target figure is compared with."""
    name = gpu.name if gpu is not None else None
    return next((chip for chip in chips if name and name in chip.gpu_names), captured)


#: ncu datapath text (metric_table.TENSOR_DATAPATHS) → the chip figure of its peak
_DATAPATH_FIGURE = (("bf16", "tensor_bf16_tflops"), ("fp16", "tensor_fp16_tflops"),
                    ("fp8", "tensor_fp8_tflops"), ("tf32", "tensor_tf32_tflops"))


def _datapath_figure(text: object) -> str:
    """The figure of a launch's main tensor datapath ("bf16→fp32" → tensor_bf16_tflops)."""
    first = text.split("+")[0] if isinstance(text, str) else ""
    return next((fig for word, fig in _DATAPATH_FIGURE if first.startswith(word)), "tensor_bf16_tflops")


def _num(frame: pd.DataFrame, column: str) -> np.ndarray:
    if column not in frame:
        return np.zeros(len(frame))
    return pd.to_numeric(frame[column], errors="coerce").fillna(0.0).to_numpy(dtype=float)


def _ratio(a: float, b: float) -> float:
    """a / b, 1 where either is unknown (the term is then not moved)."""
    return a / b if a == a and b == b and b > 0 else 1.0


TERMS = ("tensor", "cuda", "dram", "launch")


def launch_terms(metrics: pd.DataFrame, source: Chip, launch: str = "launch_latency_us") -> pd.DataFrame:
    """Per profiled launch on the captured GPU: duration_ns and each floor term (ns; ``launch``: the
    figure of the fixed cost, :func:`launch_figure`), the floor, the tensor datapath figure, and the
    DRAM bytes with their upper bound of L2 traffic."""
    duration = _num(metrics, "duration_ns")

    def over(work: str, peak: str) -> np.ndarray:
        rate = _num(metrics, peak)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(rate > 0, _num(metrics, work) / rate * 1e9, 0.0)

    terms = pd.DataFrame({
        "stage": metrics["stage"].to_numpy(),
        "summary_name": metrics["summary_name"].to_numpy() if "summary_name" in metrics else None,
        "duration_ns": duration,
        "tensor": over("flop_tensor", "peak_tensor_flop_per_s"),
        "cuda": np.maximum(over("flop_fp32", "peak_fp32_flop_per_s"), over("flop_fp16", "peak_fp16_flop_per_s")),
        "dram": over("dram_bytes", "peak_dram_bytes_per_s"),
        "launch": np.full(len(metrics), source.get(launch) * 1e3),
        "datapath": [_datapath_figure(t) for t in metrics.get("tensor_datapath", [None] * len(metrics))],
        "dram_bytes": _num(metrics, "dram_bytes"),
        # ncu measured what the floor needs: the DRAM bytes and the peak they are read against
        "counted": (pd.to_numeric(metrics.get("dram_bytes"), errors="coerce").notna()
                    & pd.to_numeric(metrics.get("peak_dram_bytes_per_s"), errors="coerce").notna()).to_numpy()
        if "dram_bytes" in metrics and "peak_dram_bytes_per_s" in metrics else np.zeros(len(metrics), dtype=bool),
    }, index=metrics.index)
    terms["launch"] = terms["launch"].fillna(0.0)
    terms["floor"] = terms[list(TERMS)].max(axis=1)
    return terms


def moved_terms(terms: pd.DataFrame, source: Chip, target: Chip) -> pd.DataFrame:
    """Each floor term on the target (ns), and the target floor."""
    moved = pd.DataFrame(index=terms.index)
    moved["tensor"] = terms["tensor"] * [_ratio(source.get(f), target.get(f)) for f in terms["datapath"]]
    moved["cuda"] = terms["cuda"] * _ratio(source.get("fp32_tflops"), target.get("fp32_tflops"))
    dram = terms["dram"] * _ratio(source.get("dram_bandwidth_gbps"), target.get("dram_bandwidth_gbps"))
    l2_src, l2_tgt = source.get("l2_mb") * 1e6, target.get("l2_mb") * 1e6
    fits = (terms["dram_bytes"] <= l2_tgt) & ~(terms["dram_bytes"] <= l2_src) & (terms["dram_bytes"] > 0)
    from_l2 = terms["dram_bytes"] / (target.get("l2_bandwidth_gbps") * 1e9) * 1e9
    moved["dram"] = dram.where(~fits | from_l2.isna(), from_l2)
    launch = launch_figure(source, target)
    moved["launch"] = terms["launch"] * _ratio(target.get(launch), source.get(launch))
    moved["floor"] = moved[list(TERMS)].max(axis=1)
    return moved


def family(category: str | None) -> str:
    """The kernel family (FAMILIES) of a naming category; elementwise when unknown."""
    return next((f for f, cats in FAMILIES.items() if category in cats), "elementwise")


def _throughput(frame: pd.DataFrame, families: pd.Series) -> pd.Series:
    """Per launch the largest throughput term its family takes (ns; the launch term left out)."""
    out = pd.Series(0.0, index=frame.index)
    for fam, cols in FAMILY_TERMS.items():
        rows = families == fam
        if cols and rows.any():
            out[rows] = frame.loc[rows, list(cols)].max(axis=1)
    return out


def busy_share(term: pd.Series, measured: pd.Series) -> pd.Series:
    """A unit's busy fraction in each launch, ``term / measured`` (within 0 and 1; 1 for a launch
    of no measured time): the share of the term's change that reaches the launch's time."""
    with np.errstate(divide="ignore", invalid="ignore"):
        share = (term / measured).where(measured > 0, 1.0)
    return share.clip(lower=0.0, upper=1.0).fillna(1.0)


def _passed(terms: pd.DataFrame, moved: pd.DataFrame, families: pd.Series) -> pd.Series:
    """Per launch the change of its family's throughput terms that reaches its time (ns): each
    term's change × that unit's busy fraction here, summed over the terms."""
    out = pd.Series(0.0, index=terms.index)
    for fam, cols in FAMILY_TERMS.items():
        rows = families == fam
        for col in cols if rows.any() else ():
            share = busy_share(terms.loc[rows, col], terms.loc[rows, "duration_ns"])
            out[rows] += share * (moved.loc[rows, col] - terms.loc[rows, col])
    return out


def project_launches(terms: pd.DataFrame, source: Chip, target: Chip, model: str = MODEL) -> pd.Series:
    """Each profiled launch's time on ``target`` (ns) by ``model`` (the kernel model's change of
    the shortest kernel is added per nsys launch by :func:`project`, not here)."""
    moved = moved_terms(terms, source, target)
    floor = moved["floor"]
    measured, floor_src = terms["duration_ns"], terms["floor"]
    if model == KERNEL_MODEL:
        families = terms["family"] if "family" in terms else pd.Series("elementwise", index=terms.index)
        change = _passed(terms, moved, families)
        # a slower target never takes a launch under its own throughput floor there
        return (measured + change).where(change <= 0, np.maximum(measured + change, _throughput(moved, families)))
    if model == "excess":
        return floor + (measured - floor_src)
    ratio = (floor / floor_src).where(floor_src > 0, 1.0)
    return measured * ratio


def bound_term(terms: pd.DataFrame, source: Chip, target: Chip) -> pd.Series:
    """Which floor term binds each launch on the target."""
    moved = moved_terms(terms, source, target)
    return moved[list(TERMS)].idxmax(axis=1)


@dataclass
class Projection:
    """``stages``: STAGE_COLUMNS; ``kernels``: KERNEL_COLUMNS (every nsys kernel of each stage)."""

    source: Chip
    target: Chip
    model: str
    stages: pd.DataFrame
    kernels: pd.DataFrame
    notes: list[str] = field(default_factory=list)


STAGE_COLUMNS = ["stage", "measured_ns", "projected_ns", "low_ns", "high_ns", "profiled_pct",
                 "host_gap_ns", "projected_with_gaps_ns"]
KERNEL_COLUMNS = ["stage", "name", "launches", "measured_ns", "projected_ns", "low_ns", "high_ns", "ratio",
                  "profiled", "bound"]


def _kernel_ratios(terms: pd.DataFrame, source: Chip, target: Chip, ranges: bool = True,
                   model: str = MODEL) -> pd.DataFrame:
    """Per (stage, nsys kernel) the ratio Σt'/Σt of its profiled launches: point, and low and high
    over ``model`` and the stage models at both ends of the target's uncertain figures (the point
    again without ``ranges``)."""
    frame = terms[terms["summary_name"].notna() & terms["counted"]].copy()
    frame["point"] = project_launches(frame, source, target, model)
    if ranges:
        fast, slow = target.bounded(True), target.bounded(False)
        ends = pd.concat([project_launches(frame, source, chip, m) for chip in (fast, slow)
                          for m in dict.fromkeys((model, *MODELS))], axis=1)
        frame["low"], frame["high"] = ends.min(axis=1), ends.max(axis=1)
        frame["bound"] = bound_term(frame, source, target)
    else:
        frame["low"], frame["high"], frame["bound"] = frame["point"], frame["point"], None
    grouped = frame.groupby(["stage", "summary_name"], sort=False)
    sums = grouped[["duration_ns", "point", "low", "high"]].sum()
    out = sums[["point", "low", "high"]].div(sums["duration_ns"], axis=0)
    out["bound"] = grouped["bound"].first() if not ranges else grouped["bound"].agg(lambda s: s.mode().iat[0])
    return out


def project(summary: pd.DataFrame, metrics: pd.DataFrame, spans: pd.DataFrame, stages: list[str],
            source: Chip, target: Chip, ranges: bool = True, model: str = MODEL,
            terms: pd.DataFrame | None = None) -> Projection:
    """The projection of a version (its nsys kernel summary, its ncu launches joined to it —
    analyses.join.attach_stage_time —, its stage spans) onto ``target``, ``source`` being the basis
    of the captured GPU (reference_chip); ``ranges=False`` skips the low–high ends. The kernel
    model adds the change of the fixed cost per launch to each nsys launch, profiled or not (at the
    ends, of the target's figure at the ends of its uncertainty). ``terms``:
    :func:`launch_terms` of ``metrics`` and ``source`` computed before (sweeps reuse them)."""
    launch = launch_figure(source, target)
    terms = launch_terms(metrics, source, launch) if terms is None else terms.copy()
    change = dict.fromkeys(("point", "low", "high"), 0.0)  # of the fixed cost per launch (ns), at each end
    if model == KERNEL_MODEL:
        from generator.analyses.naming import name_kernels

        names = name_kernels(summary["name"].dropna().unique())
        terms["family"] = [family(names[n].category) if n in names else "elementwise" for n in terms["summary_name"]]
        ends = ({"point": target, "low": target.bounded(True), "high": target.bounded(False)} if ranges
                else dict.fromkeys(change, target))
        for end, chip in ends.items():
            found = (chip.get(launch) - source.get(launch)) * 1e3
            change[end] = found if found == found else 0.0
    ratios = _kernel_ratios(terms, source, target, ranges, model)
    by_kernel = dict(zip(ratios.index, ratios.to_dict("records")))  # (stage, name) → its ratios, looked up fast
    kernel_rows, stage_rows, notes = [], [], []
    gaps = spans.set_index("stage")["idle_ns"] if len(spans) and "idle_ns" in spans else pd.Series(dtype=float)
    for stage in stages:
        rows = summary[summary["stage"] == stage].sort_values(["total_ns", "name"], ascending=[False, True])
        known = [(name, ns) for name, ns in zip(rows["name"], rows["total_ns"]) if (stage, name) in by_kernel]
        measured_known = sum(ns for _, ns in known)
        mix = {col: (sum(ns * by_kernel[(stage, name)][col] for name, ns in known) / measured_known
                     if measured_known else math.nan) for col in ("point", "low", "high")}
        if not measured_known and len(rows):
            notes.append(f"stage {stage}: no launch profiled with DRAM bytes and peaks, not projected")
        for row in rows.itertuples(index=False):
            hit = (stage, row.name) in by_kernel
            r = by_kernel[(stage, row.name)] if hit else mix
            fixed = {end: row.count * ns for end, ns in change.items()}
            kernel_rows.append({
                "stage": stage, "name": row.name, "launches": int(row.count), "measured_ns": float(row.total_ns),
                "projected_ns": row.total_ns * r["point"] + fixed["point"],
                "low_ns": row.total_ns * r["low"] + fixed["low"], "high_ns": row.total_ns * r["high"] + fixed["high"],
                "ratio": float((row.total_ns * r["point"] + fixed["point"]) / row.total_ns) if row.total_ns else math.nan,
                "profiled": hit, "bound": r["bound"] if hit else None})
        stage_kernels = [k for k in kernel_rows if k["stage"] == stage]
        measured = float(rows["total_ns"].sum())
        projected = float(sum(k["projected_ns"] for k in stage_kernels))
        gap = float(gaps.get(stage, math.nan))
        stage_rows.append({
            "stage": stage, "measured_ns": measured, "projected_ns": projected,
            "low_ns": float(sum(k["low_ns"] for k in stage_kernels)),
            "high_ns": float(sum(k["high_ns"] for k in stage_kernels)),
            "profiled_pct": measured_known * 100.0 / measured if measured else math.nan,
            "host_gap_ns": gap, "projected_with_gaps_ns": projected + gap})
    return Projection(source, target, model, pd.DataFrame(stage_rows, columns=STAGE_COLUMNS),
                      pd.DataFrame(kernel_rows, columns=KERNEL_COLUMNS), notes)


def stage_times(summary: pd.DataFrame, metrics: pd.DataFrame, stages: list[str], source: Chip,
                target: Chip, terms: pd.DataFrame | None = None) -> dict[str, float]:
    """Projected kernel time per stage (ns) only: what the sensitivity sweeps call many times, with
    the :func:`launch_terms` of ``metrics`` and ``source`` computed once."""
    projection = project(summary, metrics, pd.DataFrame(), stages, source, target, ranges=False, terms=terms)
    return dict(zip(projection.stages["stage"], projection.stages["projected_ns"]))


SENSITIVITY_COLUMNS = ["stage", "parameter", "factor", "projected_ns", "change_pct"]


def sensitivity(summary: pd.DataFrame, metrics: pd.DataFrame, stages: list[str], source: Chip,
                base: Chip) -> pd.DataFrame:
    """Per stage and SENSITIVITY variant of ``base``: the projected kernel time and its change
    from ``base``'s projection (percent)."""
    terms = launch_terms(metrics, source, launch_figure(source, base))  # the same for every variant
    reference = stage_times(summary, metrics, stages, source, base, terms)
    rows = []
    for parameter, factor in SENSITIVITY:
        times = stage_times(summary, metrics, stages, source, base.scaled(PARAMETERS[parameter], factor), terms)
        for stage in stages:
            ref = reference[stage]
            rows.append({"stage": stage, "parameter": parameter, "factor": factor, "projected_ns": times[stage],
                         "change_pct": (times[stage] - ref) * 100.0 / ref if ref else math.nan})
    return pd.DataFrame(rows, columns=SENSITIVITY_COLUMNS)


def top_parameters(table: pd.DataFrame, stage: str, count: int = 2) -> list[tuple[str, float]]:
    """The ``count`` parameters whose variants move ``stage`` most: (parameter, largest |change| %)."""
    rows = table[table["stage"] == stage]
    moves = {}
    for name in PARAMETERS:
        changes = rows.loc[rows["parameter"] == name, "change_pct"].abs()
        if len(changes) and changes.notna().any():
            moves[name] = float(changes.max())
    return sorted(moves.items(), key=lambda kv: (-kv[1], kv[0]))[:count]


def smallest_chip(summary: pd.DataFrame, metrics: pd.DataFrame, stage: str, source: Chip, base: Chip,
                  parameters: list[str]) -> dict[str, float | None]:
    """Per parameter (and ``"together"``: all of them at once), the smallest SHRINK factor ``f``
    that keeps ``stage`` within KEEP_PCT of the captured GPU's measured time, rates (bandwidth, peaks,
    L2 size) scaled by ``f`` and launch latency by ``1/f``; None when even ``f`` = 1 does not."""
    measured = float(summary.loc[summary["stage"] == stage, "total_ns"].sum())
    limit = measured * (1.0 + KEEP_PCT / 100.0)
    groups = {name: PARAMETERS[name] for name in parameters}
    groups["together"] = tuple(k for name in parameters for k in PARAMETERS[name])
    found: dict[str, float | None] = {}
    terms = launch_terms(metrics, source, launch_figure(source, base))  # the same for every chip tried
    if math.isnan(stage_times(summary, metrics, [stage], source, base, terms)[stage]):
        return dict.fromkeys(groups)  # the stage is not projected
    for name, keys in groups.items():
        best = None
        for factor in SHRINK:
            rates = tuple(k for k in keys if k not in LAUNCH_FIGURES)
            chip = base.scaled(rates, factor).scaled(set(keys) - set(rates), 1.0 / factor)
            if stage_times(summary, metrics, [stage], source, chip, terms)[stage] > limit:
                break
            best = factor
        found[name] = best
    return found


VALIDATION_STAGE_COLUMNS = ["stage", "source_ns", "projected_ns", "measured_ns", "error_pct",
                            "baseline_error_pct", "validated"]
VALIDATION_KERNEL_COLUMNS = ["stage", "name", "other_name", "how", "source_ns", "projected_ns", "measured_ns",
                             "error_pct", "baseline_error_pct"]


@dataclass
class Validation:
    """A projection checked against a capture of the same workload on the target chip."""

    stages: pd.DataFrame  # VALIDATION_STAGE_COLUMNS
    kernels: pd.DataFrame  # VALIDATION_KERNEL_COLUMNS: top-N kernels of each stage matched by identity
    unmatched: dict[str, int]  # stage → top-N kernels without a partner on the other capture
    unequal: dict[str, int]  # stage → matched kernels launched a different number of times there (left out)

    def summary(self) -> dict[str, float]:
        """Median |error| of the matched kernels, projected and no-change baseline (percent)."""
        return {"kernel_median_abs_error_pct": float(self.kernels["error_pct"].abs().median()),
                "kernel_baseline_median_abs_error_pct": float(self.kernels["baseline_error_pct"].abs().median()),
                "matched_kernels": len(self.kernels)}


def _error(value: float, truth: float) -> float:
    return (value - truth) * 100.0 / truth if truth else math.nan


def validate(projection: Projection, other_summary: pd.DataFrame, top_n: int) -> Validation:
    """``projection`` against ``other_summary`` (the nsys kernel summary of the same workload captured
    on the target): per stage, and per top-``top_n`` kernel of each stage matched by kernel identity
    (analyses.kernel_match.match_kernels) and launched as many times on both, beside the no-change
    baseline (target time = source time)."""
    stage_rows, kernel_rows, unmatched, unequal = [], [], {}, {}
    for row in projection.stages.itertuples(index=False):
        other = other_summary[other_summary["stage"] == row.stage]
        truth = float(other["total_ns"].sum())
        stage_rows.append({"stage": row.stage, "source_ns": row.measured_ns, "projected_ns": row.projected_ns,
                           "measured_ns": truth, "error_pct": _error(row.projected_ns, truth),
                           "baseline_error_pct": _error(row.measured_ns, truth),
                           "validated": row.measured_ns >= VALIDATED_STAGE_NS})
        mine = projection.kernels[projection.kernels["stage"] == row.stage].head(top_n)
        theirs = other.set_index("name")["total_ns"]
        pairs = {a: (b, how) for a, b, how in match_kernels(mine["name"], other["name"])}
        unmatched[row.stage] = int(sum(name not in pairs for name in mine["name"]))
        launches = other.set_index("name")["count"]
        for k in mine.itertuples(index=False):
            if k.name not in pairs:
                continue
            partner, how = pairs[k.name]
            if int(launches[partner]) != k.launches:  # the library picked it for other shapes there
                unequal[row.stage] = unequal.get(row.stage, 0) + 1
                continue
            truth_k = float(theirs[partner])
            kernel_rows.append({"stage": row.stage, "name": k.name, "other_name": partner, "how": how,
                                "source_ns": k.measured_ns, "projected_ns": k.projected_ns, "measured_ns": truth_k,
                                "error_pct": _error(k.projected_ns, truth_k),
                                "baseline_error_pct": _error(k.measured_ns, truth_k)})
    return Validation(pd.DataFrame(stage_rows, columns=VALIDATION_STAGE_COLUMNS),
                      pd.DataFrame(kernel_rows, columns=VALIDATION_KERNEL_COLUMNS), unmatched, unequal)


ENERGY_COLUMNS = ["stage", "seconds", "joules", "watts", "tokens", "joules_per_token", "projected_seconds",
                  "projected_joules"]


def energy(manifest: dict | None, projection: Projection, tokens: dict[str, int]) -> pd.DataFrame | None:
    """Per stage the capture's measured energy (manifest ``energy.stages``) and joules per token, and
    the projected kernel time at the target's stated power (at most the kernels' energy there: board
    power × projected kernel time; the measured joules cover whole stages, idle gaps included);
    None when the capture recorded no energy."""
    stages = ((manifest or {}).get("energy") or {}).get("stages")
    if not isinstance(stages, dict) or not stages:
        return None
    power = projection.target.get("power_w")
    projected = dict(zip(projection.stages["stage"], projection.stages["projected_ns"]))
    rows = []
    for stage, item in energy_stages(manifest["energy"]).items():
        joules, seconds, watts = (math.nan if item[k] is None else item[k] for k in ("joules", "seconds", "watts"))
        count = tokens.get(stage)
        seconds_p = projected.get(stage, math.nan) / 1e9
        rows.append({"stage": stage, "seconds": seconds, "joules": joules, "watts": watts,
                     "tokens": count, "joules_per_token": joules / count if count else math.nan,
                     "projected_seconds": seconds_p, "projected_joules": seconds_p * power})
    return pd.DataFrame(rows, columns=ENERGY_COLUMNS)


def stage_list(summary: pd.DataFrame) -> list[str]:
    """The measured stages in summary order, without ALL_STAGES (unless it is the only one)."""
    stages = list(dict.fromkeys(summary["stage"]))
    named = [s for s in stages if s != ALL_STAGES]
    return named or stages


def tokens(manifest: dict | None) -> dict[str, int]:
    """Tokens per stage of a workload that generates them (workload_params.generated_tokens): decode
    makes those, prefill reads prompt_len × batch; a workload that generates none has no tokens."""
    generated = generated_tokens(manifest)
    if generated is None:
        return {}
    params = (manifest or {}).get("params") or {}
    prompt, batch = params.get("prompt_len"), params.get("batch") or 1
    read = {"prefill": prompt * batch} if isinstance(prompt, int) and prompt > 0 and isinstance(batch, int) else {}
    return {"decode": generated, **read}


def _records(frame: pd.DataFrame) -> list[dict]:
    return [{k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()}
            for row in frame.to_dict("records")]


@dataclass(frozen=True)
class Check:
    """A capture of the same workload on the target chip: its directory name, GPU, nsys kernel summary
    and manifest (what it ran, to refuse checking a projection against another program)."""

    run: str
    gpu: str | None
    summary: pd.DataFrame
    manifest: dict | None = None


@dataclass(frozen=True)
class Target:
    """A chip to project onto (report.yaml ``chips``), with the capture on it to check against."""

    chip: Chip
    check: Check | None = None


def communication_note(world: int, target: Chip) -> str:
    """What a projection of a version of ``world`` ranks says of its collectives on ``target``."""
    link = target.get("link_gbps")
    stated = f"{target.name} states a {link:g} GB/s link" if link == link else f"{target.name} states no link figure"
    return (f"{world} ranks: the kernel time projected is that of the {world} GPUs together; communication is "
            f"not projected ({stated}; the collectives' transfer needs their bytes, which this export lacks, and "
            "their waiting depends on the other ranks)")


def what_if(inputs: VersionInputs, metrics: pd.DataFrame, target: Chip, shipped: list[Chip],
            other: Check | None = None, top_n: int = 20, with_sensitivity: bool = True, model: str = MODEL) -> dict:
    """Everything the command and the page show about one version on ``target``, JSON-ready:
    the projection, the sensitivity of the captured chip with the parameters that move each stage
    most and the smallest chip keeping it (None without ``with_sensitivity``: it does not depend on
    the target), energy (None unless the capture recorded it) and, with ``other`` (the same workload
    captured on the target), the validation."""
    summary = inputs.kernel_summary
    stages = stage_list(summary)
    gpu = inputs.gpus[0] if inputs.gpus else None
    basis = with_probe(reference_chip(gpu, shipped, captured_chip(gpu, inputs.kernel_metrics, summary)),
                       inputs.manifest)
    target_file = target
    source, target, used = figure_basis(basis, target_file)
    projection = project(summary, metrics, inputs.stage_spans, stages, source, target, model=model)
    read = read_figures(source, target)
    result = {
        "source": _chip_dict(source, basis, used, read), "target": _chip_dict(target, target_file, used, read),
        "figures_used": used, "model": projection.model,
        "stages": _records(projection.stages), "kernels": _records(projection.kernels), "notes": projection.notes,
        "sensitivity": None, "moves": None, "energy": None, "validation": None,
    }
    if with_sensitivity:  # of the captured chip on its own best figures (its probe's where it has one), whatever the target
        own = figure_basis(basis, basis)[0]
        table = sensitivity(summary, metrics, stages, own, own)
        moves = {}
        for stage in stages:
            top = top_parameters(table, stage)
            moves[stage] = {"parameters": [{"parameter": p, "change_pct": c} for p, c in top],
                            "smallest": smallest_chip(summary, metrics, stage, own, own, [p for p, _ in top])}
        result["sensitivity"], result["moves"] = _records(table), moves
    if len(inputs.ranks) > 1:
        result["notes"].append(communication_note(len(inputs.ranks), target))
    power = energy(inputs.manifest, projection, tokens(inputs.manifest))
    if power is not None:
        result["energy"] = _records(power)
    differences = unlike(inputs.manifest, other.manifest) if other is not None else []
    if other is not None and differences:
        result["validation"] = {"run": other.run, "gpu": other.gpu, "differences": differences}
    elif other is not None:
        check = validate(projection, other.summary, top_n)
        result["validation"] = {"run": other.run, "gpu": other.gpu, "stages": _records(check.stages),
                                "kernels": _records(check.kernels), "unmatched": check.unmatched,
                                "unequal_launches": check.unequal, **check.summary()}
    return result


def unlike(captured: dict | None, other: dict | None) -> list[str]:
    """What the capture to check against ran differently (workload, model or parameters), as
    ``key: here / there``; empty when both manifests agree or either is missing."""
    if not isinstance(captured, dict) or not isinstance(other, dict):
        return []
    found = like_with_like(captured, other, [], [], None)["differences"]
    return [f"{d['key']}: {d['previous']} / {d['current']}" for d in found if d["kind"] in (WORKLOAD, PARAMETER)]


def _chip_dict(chip: Chip, file: Chip, used: dict[str, str], read: set[str]) -> dict:
    """A chip's figures as used (``used``: measured or datasheet; ``read``: those the projection reads),
    each with the datasheet's and the probe's value beside it (``file``: the chip as loaded)."""
    figures = {}
    for k, f in chip.figures.items():
        sheet, probe = file.figures.get(k), file.measured.get(k)
        figures[k] = {"value": f.value, "source": f.source, "estimate": f.estimate,
                      "uncertainty_pct": f.uncertainty_pct, "used": used.get(k, DATASHEET),
                      "read": k in read,
                      "datasheet": sheet.value if sheet is not None else None,
                      "measured": probe.value if probe is not None else None,
                      "method": probe.measured if probe is not None else None,
                      "words": dict(f.words)}
    return {"key": chip.key, "name": chip.name, "figures": figures}


def version_what_if(inputs: VersionInputs, metrics: pd.DataFrame, settings: AnalysisSettings) -> list[dict]:
    """:func:`what_if` of the version on each chip report.yaml lists (none without nsys and ncu data);
    the sensitivity, the same for every chip, with the first."""
    if not settings.chips or not len(inputs.kernel_metrics) or not len(inputs.kernel_summary):
        return []
    return [what_if(inputs, metrics, target.chip, list(settings.chip_basis), target.check, settings.top_n, i == 0)
            for i, target in enumerate(settings.chips)]


ANALYSES = [Analysis("what_if", version_what_if, publish=True)]
