"""The metric registry: canonical per-launch metrics, where each comes from in ncu outputs, and how
pages, charts, data files and the regression gate show them.

Readers look metrics up here (:func:`resolve`); analyses use the canonical ``name``. Units are
canonical: ns, percent 0–100, bytes, FLOP, per-second rates. DISPLAY_METRICS say how a canonical
metric is shown (key, display unit and scale, better direction, histogram or not); their words are
``metrics.<key>`` in every translation file (generator/templates/i18n/<lang>.yaml).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from generator import units

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Formula:
    """``(Σ coefficient·metric) × Π factors × scale``, used only when every metric is present.

    Operands are normalized first (:func:`generator.units.normalize`: time in ns, rates in Hz).
    """

    terms: tuple[tuple[float, str], ...]
    factors: tuple[str, ...] = ()
    scale: float = 1.0

    def metrics(self) -> tuple[str, ...]:
        return tuple(name for _, name in self.terms) + self.factors


@dataclass(frozen=True)
class CanonicalMetric:
    name: str
    unit: str  # canonical unit: "ns", "%", "byte", "FLOP", "byte/s", "FLOP/s", "count", "Hz", ...
    #: ncu metric names, first present wins (exact names as in `--page raw` / `--metrics`).
    ncu_metrics: tuple[str, ...] = ()
    #: (section display name, metric display name) pairs of `--page details`, first present wins.
    ncu_details: tuple[tuple[str, str], ...] = ()
    #: Derivations from raw ncu metrics, tried in order after ``ncu_metrics``.
    ncu_formulas: tuple[Formula, ...] = ()


@dataclass(frozen=True)
class TensorDatapath:
    """One tensor-core datapath: its operation counter and its dense (non-sparse) peak rate."""

    label: str  # e.g. "bf16→fp32"
    ops: str  # `.sum` of the generic path: FLOP executed on it
    dense_peaks: tuple[str, ...]  # per-second dense peak metrics, first present wins


SOL = "GPU Speed Of Light Throughput"
MWA = "Memory Workload Analysis"
OCC = "Occupancy"
LAUNCH = "Launch Statistics"
_PEAK_ELAPSED = "_elapsed.per_second"
_PEAK = ".sum.peak_sustained" + _PEAK_ELAPSED
_INST = "sm__sass_thread_inst_executed_op_{}_pred_on.sum"
_PER_CYCLE = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum.per_cycle_elapsed"
_DURATION = "gpu__time_duration.sum"


def _flop(fma: str, add: str, mul: str, weights: tuple[float, float, float]) -> tuple[Formula, ...]:
    """FLOP of one precision as ncu's roofline sections count them, from whichever form exists:
    instruction sums, or per-cycle rates × elapsed cycles (or × cycle rate × duration)."""
    ops = (fma, add, mul)
    sums = tuple(zip(weights, (_INST.format(op) for op in ops)))
    rates = tuple(zip(weights, (_PER_CYCLE.format(op) for op in ops)))
    return (
        Formula(sums),
        Formula(rates, ("smsp__cycles_elapsed.avg",)),
        Formula(rates, ("smsp__cycles_elapsed.avg.per_second", _DURATION), 1e-9),
    )


def _per_cycle(fma: str, flop_per_inst: float) -> tuple[Formula, ...]:
    """Peak FLOP per SM cycle of one precision, all SMs together (the device's constant)."""
    return (Formula(((flop_per_inst, f"sm__sass_thread_inst_executed_op_{fma}_pred_on.sum.peak_sustained"),)),)


def _peak(fma: str, flop_per_inst: float) -> tuple[Formula, ...]:
    """Peak FLOP/s of one precision: FMA issue peak × FLOP per FMA × SM clock (roofline section)."""
    return (Formula(((flop_per_inst, f"sm__sass_thread_inst_executed_op_{fma}_pred_on.sum.peak_sustained"),),
                    ("sm__cycles_elapsed.avg.per_second",)),)


CANONICAL_METRICS: tuple[CanonicalMetric, ...] = (
    CanonicalMetric("duration_ns", "ns", (_DURATION,), ((SOL, "Duration"),)),
    CanonicalMetric("sm_throughput_pct", "%", ("sm__throughput.avg.pct_of_peak_sustained_elapsed",),
                    ((SOL, "Compute (SM) Throughput"), (SOL, "SM [%]"))),
    CanonicalMetric("dram_throughput_pct", "%",
                    ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                     "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
                    ((SOL, "DRAM Throughput"),)),
    CanonicalMetric("memory_throughput_pct", "%", ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",),
                    ((SOL, "Memory Throughput"), (SOL, "Memory [%]"))),
    CanonicalMetric("memory_throughput_bytes_per_s", "byte/s",
                    ("dram__bytes.sum.per_second",), ((MWA, "Memory Throughput"),)),
    CanonicalMetric("l1_hit_rate_pct", "%", ("l1tex__t_sector_hit_rate.pct",), ((MWA, "L1/TEX Hit Rate"),)),
    CanonicalMetric("l1_throughput_pct", "%", ("l1tex__throughput.avg.pct_of_peak_sustained_active",),
                    ((SOL, "L1/TEX Cache Throughput"),)),
    CanonicalMetric("l2_hit_rate_pct", "%", ("lts__t_sector_hit_rate.pct",), ((MWA, "L2 Hit Rate"),)),
    CanonicalMetric("l2_throughput_pct", "%", ("lts__throughput.avg.pct_of_peak_sustained_elapsed",),
                    ((SOL, "L2 Cache Throughput"),)),
    CanonicalMetric("achieved_occupancy_pct", "%", ("sm__warps_active.avg.pct_of_peak_sustained_active",),
                    ((OCC, "Achieved Occupancy"),)),
    CanonicalMetric("theoretical_occupancy_pct", "%",
                    ("sm__maximum_warps_per_active_cycle_pct",), ((OCC, "Theoretical Occupancy"),)),
    CanonicalMetric("memory_busy_pct", "%",
                    ("gpu__compute_memory_access_throughput.avg.pct_of_peak_sustained_elapsed",),
                    ((MWA, "Mem Busy"),)),
    CanonicalMetric("max_bandwidth_pct", "%",
                    ("gpu__compute_memory_request_throughput.avg.pct_of_peak_sustained_elapsed",),
                    ((MWA, "Max Bandwidth"),)),
    CanonicalMetric("dram_bytes", "byte", ("dram__bytes.sum",), (),
                    (Formula(((1, "dram__bytes_read.sum"), (1, "dram__bytes_write.sum"))),
                     Formula(((1, "dram__bytes.sum.per_second"),), (_DURATION,), 1e-9))),
    CanonicalMetric("flop_fp64", "FLOP", ncu_formulas=_flop("dfma", "dadd", "dmul", (2, 1, 1))),
    CanonicalMetric("flop_fp32", "FLOP", ncu_formulas=_flop("ffma", "fadd", "fmul", (2, 1, 1))),
    # HFMA2/HADD2/HMUL2 work on two halves: ncu's half-precision roofline weighs them 4, 2, 2.
    CanonicalMetric("flop_fp16", "FLOP", ncu_formulas=_flop("hfma", "hadd", "hmul", (4, 2, 2))),
    # Filled by resolve() from TENSOR_DATAPATHS.
    CanonicalMetric("flop_tensor", "FLOP"),
    CanonicalMetric("peak_fp32_flop_per_s", "FLOP/s", ncu_formulas=_peak("ffma", 2)),
    CanonicalMetric("peak_fp64_flop_per_s", "FLOP/s", ncu_formulas=_peak("dfma", 2)),
    CanonicalMetric("peak_fp16_flop_per_s", "FLOP/s", ncu_formulas=_peak("hfma", 4)),
    # Filled by resolve() from TENSOR_DATAPATHS.
    CanonicalMetric("peak_tensor_flop_per_s", "FLOP/s"),
    # Per cycle: what the device does per clock, the same for every launch; the report's roofs are
    # these × the stated clock (generator.analyses.roofline), never a launch's measured clock.
    CanonicalMetric("peak_fp32_flop_per_cycle", "FLOP/cycle", ncu_formulas=_per_cycle("ffma", 2)),
    CanonicalMetric("peak_fp64_flop_per_cycle", "FLOP/cycle", ncu_formulas=_per_cycle("dfma", 2)),
    CanonicalMetric("peak_fp16_flop_per_cycle", "FLOP/cycle", ncu_formulas=_per_cycle("hfma", 4)),
    # Filled by resolve() from TENSOR_DATAPATHS.
    CanonicalMetric("peak_tensor_flop_per_cycle", "FLOP/cycle"),
    CanonicalMetric("peak_dram_bytes_per_cycle", "byte/cycle", ("dram__bytes.sum.peak_sustained",)),
    CanonicalMetric("peak_dram_bytes_per_s", "byte/s",
                    ncu_formulas=(Formula(((1, "dram__bytes.sum.peak_sustained"),),
                                          ("dram__cycles_elapsed.avg.per_second",)),)),
    CanonicalMetric("waves_per_sm", "count", ("launch__waves_per_multiprocessor",), ((LAUNCH, "Waves Per SM"),)),
    CanonicalMetric("grid_size", "count", ("launch__grid_size",), ((LAUNCH, "Grid Size"),)),
    CanonicalMetric("block_size", "count", ("launch__block_size",), ((LAUNCH, "Block Size"),)),
    CanonicalMetric("registers_per_thread", "count",
                    ("launch__registers_per_thread",), ((LAUNCH, "Registers Per Thread"),)),
    CanonicalMetric("shared_mem_per_block_bytes", "byte", ("launch__shared_mem_per_block",), (),
                    (Formula(((1, "launch__shared_mem_per_block_static"),
                              (1, "launch__shared_mem_per_block_dynamic"),
                              (1, "launch__shared_mem_per_block_driver"))),)),
    CanonicalMetric("sm_frequency_hz", "Hz",
                    ("gpc__cycles_elapsed.avg.per_second", "sm__cycles_elapsed.avg.per_second"),
                    ((SOL, "SM Frequency"),)),
    CanonicalMetric("elapsed_cycles", "count", ("gpc__cycles_elapsed.max",), ((SOL, "Elapsed Cycles"),)),
)

#: Floating-point tensor-core datapaths (integer paths count OPs, not FLOP, and are left out).
#: The generic path's own peak is the 2:4-sparse rate (twice the dense one), so dense peaks come
#: from the per-instruction `sparsity_off` paths: hgmma (Hopper warpgroup MMA) before hmma.
TENSOR_DATAPATHS: tuple[TensorDatapath, ...] = (
    TensorDatapath("bf16→fp32", "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
                   ("sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off" + _PEAK,
                    "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32_sparsity_off" + _PEAK)),
    TensorDatapath("fp16", "sm__ops_path_tensor_src_fp16.sum",
                   ("sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off" + _PEAK,
                    "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32_sparsity_off" + _PEAK)),
    TensorDatapath("tf32→fp32", "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
                   ("sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32_sparsity_off" + _PEAK,
                    "sm__ops_path_tensor_op_hmma_src_tf32_dst_fp32_sparsity_off" + _PEAK)),
    TensorDatapath("fp8", "sm__ops_path_tensor_src_fp8_sparsity_off.sum", ()),
    TensorDatapath("fp8 (2:4 sparse)", "sm__ops_path_tensor_src_fp8_sparsity_on.sum", ()),
    TensorDatapath("fp64", "sm__ops_path_tensor_src_fp64.sum",
                   ("sm__ops_path_tensor_src_fp64" + _PEAK,)),
)

#: Text column of kernel_metrics next to the canonical metrics: the datapaths of the tensor work,
#: largest first ("bf16→fp32", "fp16+tf32→fp32"), None when the launch did none or it is unknown.
TENSOR_DATAPATH_COLUMN = "tensor_datapath"

#: Text column of kernel_metrics: the message of ncu's own Speed-of-Light bottleneck rule
#: (``SOLBottleneck``) for the launch, as the report or details CSV stores it; None when absent.
NCU_BOTTLENECK_COLUMN = "ncu_bottleneck"
#: the rule's identifier in reports and details CSVs
NCU_BOTTLENECK_RULE = "SOLBottleneck"
#: text columns the ncu readers add after the canonical metrics
TEXT_COLUMNS: list[str] = [TENSOR_DATAPATH_COLUMN, NCU_BOTTLENECK_COLUMN]

METRICS_BY_NAME: dict[str, CanonicalMetric] = {m.name: m for m in CANONICAL_METRICS}
CANONICAL_METRIC_NAMES: list[str] = [m.name for m in CANONICAL_METRICS]

LOWER, HIGHER = "lower", "higher"


@dataclass(frozen=True)
class DisplayMetric:
    """A canonical metric as the report shows it."""

    key: str  # what data files, summary.json, charts and templates call it
    source: str  # the CanonicalMetric it shows
    unit: str  # display unit
    scale: float = 1.0  # canonical value × scale = display value
    better: str | None = None  # LOWER or HIGHER for metrics the regression gate can watch
    histogram: bool = True  # drawn on the histograms page (in this table's order)

    def values(self, frame: pd.DataFrame) -> pd.Series:
        """``frame``'s source column as numbers (NaN where absent or not a number), not yet scaled."""
        import pandas as pd  # the registry itself is read by `--help`, which imports no pandas

        if self.source not in frame:
            return pd.Series(math.nan, index=frame.index)
        return pd.to_numeric(frame[self.source], errors="coerce")


DISPLAY_METRICS: tuple[DisplayMetric, ...] = (
    DisplayMetric("sm_throughput_pct", "sm_throughput_pct", "%", better=HIGHER),
    DisplayMetric("dram_throughput_pct", "dram_throughput_pct", "%", better=HIGHER),
    DisplayMetric("memory_throughput_pct", "memory_throughput_pct", "%", better=HIGHER),
    DisplayMetric("memory_throughput_gbps", "memory_throughput_bytes_per_s", "GB/s", 1e-9),
    DisplayMetric("l1_hit_rate_pct", "l1_hit_rate_pct", "%", better=HIGHER),
    DisplayMetric("l1_throughput_pct", "l1_throughput_pct", "%"),
    DisplayMetric("l2_hit_rate_pct", "l2_hit_rate_pct", "%", better=HIGHER),
    DisplayMetric("l2_throughput_pct", "l2_throughput_pct", "%"),
    DisplayMetric("achieved_occupancy_pct", "achieved_occupancy_pct", "%", better=HIGHER),
    DisplayMetric("theoretical_occupancy_pct", "theoretical_occupancy_pct", "%"),
    DisplayMetric("duration_us", "duration_ns", "µs", 1e-3, better=LOWER),
    DisplayMetric("memory_busy_pct", "memory_busy_pct", "%"),
    DisplayMetric("max_bandwidth_pct", "max_bandwidth_pct", "%"),
)
DISPLAY: dict[str, DisplayMetric] = {m.key: m for m in DISPLAY_METRICS}
#: DisplayMetric key → which direction is better, for every metric the registry gives one (time up
#: is worse; throughput, occupancy and cache hit rates down are worse): what `compare` can show
WATCHABLE: dict[str, str] = {m.key: m.better for m in DISPLAY_METRICS if m.better}
#: the ncu metrics `compare` shows by default
DEFAULT_METRICS: tuple[str, ...] = ("duration_us", "sm_throughput_pct", "memory_throughput_pct",
                                    "achieved_occupancy_pct")

def ncu_metric_names() -> list[str]:
    """Every raw ncu metric the table can read, in table order: what a capture asks ncu for
    (``--metrics``) so that the report has all it uses and ncu replays no more than needed."""
    names = [n for m in CANONICAL_METRICS for n in (*m.ncu_metrics, *(x for f in m.ncu_formulas for x in f.metrics()))]
    names += [n for path in TENSOR_DATAPATHS for n in (path.ops, *path.dense_peaks)]
    return list(dict.fromkeys(names))

#: A raw ncu metric as (value text or number, unit text), or None when the input lacks it.
RawLookup = Callable[[str], "tuple[str | float, str] | None"]
#: A `--page details` metric by (section display name, metric display name).
DetailLookup = Callable[[str, str], "tuple[str | float, str] | None"]


def resolve(raw: RawLookup, detail: DetailLookup | None = None) -> dict[str, float | str | None]:
    """Every canonical metric of one launch (NaN when absent) plus TENSOR_DATAPATH_COLUMN.

    Raises ValueError naming the metric when a value or unit it needs cannot be read.
    """
    out: dict[str, float | str | None] = {}
    for metric in CANONICAL_METRICS:
        out[metric.name] = _one(metric, raw, detail)
    flop, peak, per_cycle, label = _tensor(raw)
    out["flop_tensor"], out["peak_tensor_flop_per_s"], out["peak_tensor_flop_per_cycle"] = flop, peak, per_cycle
    out[TENSOR_DATAPATH_COLUMN] = label
    return out


def _value(found: tuple[str | float, str], name: str) -> tuple[float, str]:
    try:
        return units.parse_number(found[0]), found[1]
    except ValueError as exc:
        raise ValueError(f"metric {name}: {exc}") from None


def _convert(found: tuple[str | float, str], name: str, canonical: str) -> float:
    value, unit = _value(found, name)
    try:
        return units.convert(value, unit, canonical)
    except ValueError as exc:
        raise ValueError(f"metric {name}: {exc}") from None


def _normalized(raw: RawLookup, name: str) -> float | None:
    found = raw(name)
    if found is None:
        return None
    value, unit = _value(found, name)
    try:
        return units.normalize(value, unit)[0]
    except ValueError as exc:
        raise ValueError(f"metric {name}: {exc}") from None


def _one(metric: CanonicalMetric, raw: RawLookup, detail: DetailLookup | None) -> float:
    for name in metric.ncu_metrics:
        if (found := raw(name)) is not None:
            return _convert(found, name, metric.unit)
    for formula in metric.ncu_formulas:
        values = {name: _normalized(raw, name) for name in formula.metrics()}
        if all(v is not None for v in values.values()):
            total = sum(coef * values[name] for coef, name in formula.terms)
            return math.prod((values[f] for f in formula.factors), start=total * formula.scale)
    if detail is not None:
        for section, label in metric.ncu_details:
            if (found := detail(section, label)) is not None:
                return _convert(found, f"{section} / {label}", metric.unit)
    return math.nan


def _tensor(raw: RawLookup) -> tuple[float, float, float, str | None]:
    """(tensor FLOP, dense peak FLOP/s, dense peak FLOP per cycle, datapath label) of one launch.

    Without tensor work the peak is the first datapath's (bf16→fp32) dense peak: the tensor roof
    of the device the launch ran on.
    """
    work: list[tuple[float, TensorDatapath]] = []
    for path in TENSOR_DATAPATHS:
        ops = _normalized(raw, path.ops)
        if ops is not None and not math.isnan(ops):
            work.append((ops, path))
    if not work:
        return math.nan, math.nan, math.nan, None
    busy = sorted((w for w in work if w[0] > 0), key=lambda w: -w[0])
    label = "+".join(path.label for _, path in busy) or None
    peak_path = busy[0][1] if busy else TENSOR_DATAPATHS[0]
    peak = next((v for name in peak_path.dense_peaks
                 if (v := _normalized(raw, name)) is not None), math.nan)
    per_cycle = next((v for name in peak_path.dense_peaks
                      if (v := _normalized(raw, name.removesuffix(_PEAK_ELAPSED))) is not None), math.nan)
    sm_hz = _normalized(raw, "sm__cycles_elapsed.avg.per_second")
    if math.isnan(per_cycle) and sm_hz:  # only the per-second form: ncu's per-cycle peak × SM cycles/s
        per_cycle = peak / sm_hz
    return sum(ops for ops, _ in work), peak, per_cycle, label
