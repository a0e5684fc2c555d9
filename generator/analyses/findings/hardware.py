"""Hardware / NPU recommendations, one per area of the seed report, each a formula over this
capture's measurements, or an explicit "no evidence in this capture" with the reason."""
from __future__ import annotations

import pandas as pd

from generator.analyses.findings.context import FindingInputs, column, make, r, share
from generator.analyses.findings.efficiency import FEW_WAVES, LOW_OCCUPANCY_PCT
from generator.analyses.findings.fusion import FUSABLE
from generator.analyses.findings.matmul import PRODUCT_CATEGORIES, row_count
from generator.analyses.findings.precision import precision_fallback
from generator.analyses.result import Finding
from generator.analyses.setup import energy_stages
from generator.model import ALL_STAGES

DECODE = "decode"
HW = "hardware"


def _num(k: pd.DataFrame, column: str) -> pd.Series:
    return pd.to_numeric(k[column], errors="coerce").fillna(0.0)


def _measured(inputs: FindingInputs) -> pd.DataFrame:
    """Profiled kernels of every measured stage (one row per kernel and stage)."""
    k = inputs.kernels
    return k[k["stage"].isin(inputs.stages)] if len(k) else k


def _abstain(area: str, evidence: dict[str, tuple] | None = None) -> Finding:
    return make(f"hw_{area}_none", ALL_STAGES, evidence or {}, kind=HW, abstained=True)


def core_balance(inputs: FindingInputs) -> Finding:
    """Profiled time on kernels doing tensor FLOP, on FP32/FP16 CUDA-core FLOP only, and on no FLOP."""
    k = _measured(inputs)
    if not len(k):
        return _abstain("core_balance")
    tensor = _num(k, "flop_tensor") > 0
    cuda = ~tensor & ((_num(k, "flop_fp32") + _num(k, "flop_fp16")) > 0)
    total = float(k["total_ns"].sum())
    return make("hw_core_balance", ALL_STAGES, {
        "tensor_pct": (share(float(k.loc[tensor, "total_ns"].sum()), total), "%"),
        "cuda_pct": (share(float(k.loc[cuda, "total_ns"].sum()), total), "%"),
        "no_flop_pct": (share(float(k.loc[~tensor & ~cuda, "total_ns"].sum()), total), "%"),
        "outside_pct": (share(float(k.loc[~tensor, "total_ns"].sum()), total), "%"),
        "profiled_ms": (r(total / 1e6, 2), "ms")}, kind=HW, confidence="medium")


def bandwidth(inputs: FindingInputs) -> Finding:
    """Bytes per decode token = Σ(DRAM bytes per launch × launches) of the profiled decode kernels /
    tokens generated. The chip: the rate and bandwidth of decode kernel time alone (tokens / Σ kernel
    time); the harness: the rate over the decode span, whose idle time is host launch gaps."""
    k = inputs.profiled(DECODE)
    tokens = inputs.tokens
    timeline = inputs.timeline
    row = timeline[timeline["stage"] == DECODE] if timeline is not None else pd.DataFrame()
    peak = inputs.peaks.dram_bytes_per_s
    if not len(k) or not tokens or not len(row) or not peak:
        return _abstain("bandwidth", {"decode_kernels": (len(k), "kernels"), "tokens": (tokens or 0, "tokens"),
                                      "timeline": (bool(len(row)), ""), "peak": (bool(peak), "")})
    per_token = float((_num(k, "dram_bytes") * k["count"]).sum()) / tokens
    span, kernel, idle = (float(row[c].sum()) for c in ("span_ns", "kernel_ns", "idle_ns"))
    rate, gpu_rate = tokens / (span / 1e9), tokens / (kernel / 1e9)
    return make("hw_bandwidth", DECODE, {
        "mib_per_token": (r(per_token / 2**20, 2), "MiB/token"), "tokens": (tokens, "tokens"),
        "kernel_ms": (r(kernel / 1e6, 2), "ms"), "gpu_tok_per_s": (r(gpu_rate, 1), "tokens/s"),
        "gpu_gbs": (r(per_token * gpu_rate / 1e9, 1), "GB/s"),
        "tok_per_s": (r(rate, 1), "tokens/s"), "needed_gbs": (r(per_token * rate / 1e9, 1), "GB/s"),
        "peak_gbs": (r(peak / 1e9, 0), "GB/s"), "peak_tok_per_s": (r(peak / per_token, 0), "tokens/s"),
        "profiled_pct": (share(float(k["total_ns"].sum()), inputs.stage_ns(DECODE)), "%"),
        "idle_pct": (share(idle, span), "%")},
        kind=HW, confidence="medium")


def cache_sizing(inputs: FindingInputs) -> Finding:
    """The largest DRAM bytes one launch moves (a lower bound on its working set) and the L2 hit rate
    weighted by time over the profiled kernels."""
    k = _measured(inputs)
    if not len(k) or _num(k, "dram_bytes").max() <= 0:
        return _abstain("cache_sizing")
    top = k.loc[_num(k, "dram_bytes").idxmax()]
    weights = k["total_ns"].where(pd.to_numeric(k["l2_hit_rate_pct"], errors="coerce").notna(), 0.0)
    l2 = float((_num(k, "l2_hit_rate_pct") * weights).sum() / weights.sum()) if weights.sum() else float("nan")
    l1w = k["total_ns"].where(pd.to_numeric(k["l1_hit_rate_pct"], errors="coerce").notna(), 0.0)
    l1 = float((_num(k, "l1_hit_rate_pct") * l1w).sum() / l1w.sum()) if l1w.sum() else float("nan")
    rows = k.loc[[top.name]]
    evidence: dict[str, tuple] = {
        "max_mib": (r(top["dram_bytes"] / 2**20, 2), "MiB/launch"), "max_l2_hit_pct": (r(top["l2_hit_rate_pct"], 1), "%"),
        "l2_weighted_pct": (r(l2, 1), "%"), "l1_weighted_pct": (r(l1, 1), "%"), "l2_mib": (None, "MiB")}
    if inputs.l2_bytes:  # DRAM bytes per launch, a lower bound on the working set, against the L2
        dram = pd.to_numeric(k["dram_bytes"], errors="coerce")
        known, over = k[dram.notna()], k[dram > inputs.l2_bytes]
        time = float(known["total_ns"].sum())
        evidence.update({
            "l2_mib": (r(inputs.l2_bytes / 2**20, 1), "MiB"), "l2_bytes": (inputs.l2_bytes, "bytes"),
            "kernels": (len(known), "kernels"),
            "over_kernels": (len(over), "kernels"), "over_pct": (share(float(over["total_ns"].sum()), time), "%"),
            "within_kernels": (len(known) - len(over), "kernels"),
            "within_pct": (share(time - float(over["total_ns"].sum()), time), "%")})
    return make("hw_cache_sizing", top["stage"], evidence, rows, kind=HW, confidence="medium")


def decode_units(inputs: FindingInputs) -> Finding:
    """Decode matrix products: executed FLOP/s (Σ executed FLOP × launches / Σ kernel time) vs the
    tensor peak; with operator shapes, their rows per weight matrix, the useful share of executed FLOP (padding) and the
    useful FLOP/s (Σ useful FLOP × launches / Σ kernel time). Without shapes the useful work is unknown."""
    k = inputs.profiled(DECODE)
    k = k[k["category"].isin(PRODUCT_CATEGORIES)] if len(k) else k
    peak = inputs.peaks.flop_per_s.get("tensor")
    executed = _num(k, "flop_tensor") + _num(k, "flop_fp32") if len(k) else pd.Series(dtype=float)
    if not len(k) or not peak or not (executed > 0).any():
        return _abstain("decode_units", {"decode_products": (len(k), "kernels")})
    time_s = float(k["total_ns"].sum()) / 1e9  # 0: nsys timed none of ncu's products (rate unknown)
    evidence: dict[str, tuple] = {
        "products_pct": (share(float(k["total_ns"].sum()), inputs.stage_ns(DECODE)), "%"),
        "executed_tflops": (r(float((executed * k["count"]).sum()) / time_s / 1e12, 2) if time_s > 0 else None,
                            "TFLOP/s"),
        "peak_tflops": (r(peak / 1e12, 1), "TFLOP/s")}
    useful = pd.to_numeric(column(k, "useful_flop"), errors="coerce")
    # every decode product's operator call known; a call's other kernels (a split-K reduction) add
    # their executed FLOP and time but no useful FLOP (useful_work gives the call's work to one kernel)
    if column(k, "op").notna().all() and useful.notna().any():
        rows = pd.to_numeric(k["rows"], errors="coerce").dropna()
        evidence["min_rows"] = (row_count(rows.min()), "rows")
        evidence["max_rows"] = (row_count(rows.max()), "rows")
        done = float((useful.fillna(0.0) * k["count"]).sum())
        evidence["useful_pct"] = (share(done, float((executed * k["count"]).sum())), "%")
        evidence["useful_tflops"] = (r(done / time_s / 1e12, 3) if time_s > 0 else None, "TFLOP/s")
    return make("hw_decode_units", DECODE, evidence, k.head(4), kind=HW, confidence="medium")


def fusion_engine(inputs: FindingInputs) -> Finding:
    """Share of all measured GPU time and launches in fusable kernels (elementwise, copy/cast/cat,
    reductions and norms)."""
    rows = inputs.rows(ALL_STAGES)
    if not len(rows):
        return _abstain("fusion")
    hit = rows[rows["category"].isin(frozenset().union(*FUSABLE.values()))]
    return make("hw_fusion", ALL_STAGES, {
        "share_pct": (share(float(hit["total_ns"].sum()), inputs.total_ns), "%"),
        "launch_pct": (share(float(hit["count"].sum()), float(rows["count"].sum())), "%"),
        "launches": (int(hit["count"].sum()), "launches")}, kind=HW, confidence="medium")


def precision(inputs: FindingInputs) -> Finding:
    """FP32 share of profiled FLOP and the time of FP32 fallbacks in a half-precision model."""
    k = _measured(inputs)
    flop = {c: float((_num(k, c) * k["count"]).sum()) for c in ("flop_fp32", "flop_fp16", "flop_tensor")} if len(k) else {}
    total = sum(flop.values())
    if not total:
        return _abstain("precision")
    fallbacks = precision_fallback(inputs)
    return make("hw_precision", ALL_STAGES, {
        "dtype": (str(inputs.params.get("dtype") or ""), ""),
        "fp32_flop_pct": (share(flop["flop_fp32"], total), "%"),
        "fallback_us": (r(sum(f.bound.affected_ns for f in fallbacks) / 1e3, 1), "µs"),
        "fallback_saving_us": (r(sum(f.bound.saving_ns for f in fallbacks) / 1e3, 1), "µs"),
        "fallbacks": (len(fallbacks), "kernels")}, kind=HW, confidence="medium")


def parallelism(inputs: FindingInputs) -> Finding:
    """Profiled time in grids below one wave and in kernels below LOW_OCCUPANCY_PCT achieved occupancy."""
    k = _measured(inputs)
    if not len(k):
        return _abstain("parallelism")
    total = float(k["total_ns"].sum())
    waves = pd.to_numeric(k["waves_per_sm"], errors="coerce") < FEW_WAVES
    occ = pd.to_numeric(k["achieved_occupancy_pct"], errors="coerce") < LOW_OCCUPANCY_PCT
    sms = inputs.gpu.sm_count if inputs.gpu else None
    return make("hw_parallelism", ALL_STAGES, {
        "under_wave_pct": (share(float(k.loc[waves, "total_ns"].sum()), total), "%"),
        "low_occupancy_pct": (share(float(k.loc[occ, "total_ns"].sum()), total), "%"),
        "sm_count": (sms or 0, "SMs"), "batch": (inputs.params.get("batch") or 0, "rows")},
        kind=HW, confidence="medium")


def power(inputs: FindingInputs) -> Finding:
    """Energy per stage as the capture's NVML counter measured it (manifest ``energy``): joules,
    seconds and average watts (J / s) of each resolved stage, the seconds of those too short to
    resolve, and decode's joules per generated token (workloads that generate tokens). Abstains when
    the manifest records no energy ("recorded": False) or the capture could not read the counter."""
    record = inputs.energy
    if not record or not record.get("source"):
        return _abstain("power", {"recorded": (record is not None, "")})
    figures = energy_stages(record)
    resolved = [{"stage": s, "joules": r(f["joules"], 1), "seconds": r(f["seconds"], 3),
                 "watts": r(f["joules"] / f["seconds"], 1)}
                for s, f in figures.items() if f["resolved"] and f["joules"] is not None and f["seconds"]]
    done = {row["stage"] for row in resolved}
    unresolved = [{"stage": s, "seconds": r(f["seconds"] or 0.0, 3)} for s, f in figures.items() if s not in done]
    per_token = figures[DECODE]["joules"] / inputs.tokens if inputs.tokens and DECODE in done else None
    return make("hw_power", ALL_STAGES, {
        "resolved": (resolved, "J, s, W"), "unresolved": (unresolved, "stages"),
        "tokens": (inputs.tokens, "tokens"),
        "joules_per_token": (None if per_token is None else r(per_token, 2), "J/token")},
        kind=HW, confidence="medium")


def no_evidence(inputs: FindingInputs) -> list[Finding]:
    """Interconnect (one device, no peer traffic measured); several ranks say theirs (findings.ranks)."""
    if inputs.ranks is not None:
        return []
    devices = int(inputs.timeline["device"].nunique()) if inputs.timeline is not None else 1
    return [_abstain("interconnect", {"devices": (devices, "GPUs")})]


def hardware(inputs: FindingInputs) -> list[Finding]:
    return [core_balance(inputs), bandwidth(inputs), cache_sizing(inputs), decode_units(inputs),
            fusion_engine(inputs), precision(inputs), parallelism(inputs), *no_evidence(inputs), power(inputs)]
