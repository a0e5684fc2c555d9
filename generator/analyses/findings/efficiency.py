"""Per-kernel efficiency from ncu: memory-side kernels far below DRAM bandwidth (and why), occupancy
limiters from launch statistics, and cache hit rates against what a streaming kernel needs."""
from __future__ import annotations

import pandas as pd

from generator.analyses.classify import LATENCY
from generator.analyses.findings.context import (
    MIN_KERNEL_STAGE_PCT,
    FindingInputs,
    floor_bound,
    make,
    r,
    share,
)
from generator.analyses.result import Finding

LOW_DRAM_PCT = 50.0  # a memory-side kernel below this share of DRAM peak is far below bandwidth
LOW_OCCUPANCY_PCT = 25.0  # achieved occupancy below this
MANY_REGISTERS = 128  # registers per thread at/above this limit the warps an SM holds
FEW_WAVES = 1.0  # a grid below one wave leaves SMs idle
LOW_L2_HIT_PCT = 50.0
NAMED_KERNELS = 5


def _num(k: pd.DataFrame, column: str) -> pd.Series:
    return pd.to_numeric(k[column], errors="coerce")


def _relevant(inputs: FindingInputs, stage: str) -> pd.DataFrame:
    k = inputs.profiled(stage)
    return k[k["stage_time_pct"] >= MIN_KERNEL_STAGE_PCT] if len(k) else k


def _memory_side(k: pd.DataFrame, inputs: FindingInputs) -> pd.Series:
    """Below the tensor/FP32 ridge (or no FLOP at all): bytes, not FLOP, set the roof."""
    ridge = inputs.peaks.ridge("fp32") or 0.0
    return _num(k, "arithmetic_intensity").fillna(0.0) <= ridge


def memory_bandwidth(inputs: FindingInputs) -> list[Finding]:
    """Per stage: memory-side kernels (≥ 1 % of it) below LOW_DRAM_PCT of DRAM peak, with the
    likely reasons measured beside them (achieved vs theoretical occupancy, waves, L2 hit)."""
    found = []
    for stage in inputs.measured_stages():
        k = _relevant(inputs, stage)
        if not len(k):
            continue
        # ncu's own rule calls a latency-bound kernel's DRAM headroom no limit: no bandwidth claim
        hit = k[_memory_side(k, inputs) & (_num(k, "dram_throughput_pct") < LOW_DRAM_PCT)
                & (k["ncu_class"] != LATENCY)]
        if not len(hit):
            continue
        stage_ns = inputs.stage_ns(stage)
        evidence = {"kernels": (len(hit), "kernels"),
                    "stage_pct": (share(float(hit["total_ns"].sum()), stage_ns), "%"),
                    "max_dram_pct": (r(_num(hit, "dram_throughput_pct").max(), 1), "%"),
                    "below_one_wave": (int((_num(hit, "waves_per_sm") < FEW_WAVES).sum()), "kernels"),
                    "low_occupancy": (int((_num(hit, "achieved_occupancy_pct") < LOW_OCCUPANCY_PCT).sum()), "kernels"),
                    "low_l2_hit": (int((_num(hit, "l2_hit_rate_pct") < LOW_L2_HIT_PCT).sum()), "kernels")}
        found.append(make("memory_bandwidth", stage, evidence, hit.head(NAMED_KERNELS),
                          floor_bound(hit, stage_ns, inputs.total_ns, inputs), "medium"))
    return found


def occupancy(inputs: FindingInputs) -> list[Finding]:
    """Per stage: kernels (≥ 1 % of it) below LOW_OCCUPANCY_PCT achieved occupancy and what limits
    them: a grid under one wave, registers per thread, theoretical occupancy (registers, shared memory
    or block size)."""
    found = []
    for stage in inputs.measured_stages():
        k = _relevant(inputs, stage)
        if not len(k):
            continue
        hit = k[_num(k, "achieved_occupancy_pct") < LOW_OCCUPANCY_PCT]
        if not len(hit):
            continue
        stage_ns = inputs.stage_ns(stage)
        grid = _num(hit, "waves_per_sm") < FEW_WAVES
        regs = _num(hit, "registers_per_thread") >= MANY_REGISTERS
        theory = _num(hit, "theoretical_occupancy_pct") < LOW_OCCUPANCY_PCT
        evidence = {"kernels": (len(hit), "kernels"), "of_kernels": (len(k), "kernels"),
                    "stage_pct": (share(float(hit["total_ns"].sum()), stage_ns), "%"),
                    "grid_limited": (int(grid.sum()), "kernels"),
                    "grid_limited_pct": (share(float(hit.loc[grid, "total_ns"].sum()), stage_ns), "%"),
                    "register_heavy": (int(regs.sum()), "kernels"),
                    "max_registers": (int(_num(hit, "registers_per_thread").max()), "registers/thread"),
                    "theoretical_limited": (int(theory.sum()), "kernels"),
                    "min_theoretical_pct": (r(_num(hit, "theoretical_occupancy_pct").min(), 2), "%")}
        found.append(make("occupancy", stage, evidence, hit.head(NAMED_KERNELS),
                          floor_bound(hit, stage_ns, inputs.total_ns, inputs), "medium"))
    return found


def cache(inputs: FindingInputs) -> list[Finding]:
    """Per stage: the memory-side kernel (≥ 1 % of it) moving the most DRAM bytes per launch, its L2
    and L1 hit rates; a streaming kernel (bytes read once) needs no hits, a re-reading one does."""
    found = []
    for stage in inputs.measured_stages():
        k = _relevant(inputs, stage)
        if not len(k):
            continue
        k = k[_memory_side(k, inputs) & (_num(k, "l2_hit_rate_pct") < LOW_L2_HIT_PCT)]
        if not len(k):
            continue
        top = k.loc[[_num(k, "dram_bytes").idxmax()]]
        row = top.iloc[0]
        stage_ns = inputs.stage_ns(stage)
        evidence = {"dram_mib": (r(row["dram_bytes"] / 2**20, 2), "MiB/launch"),
                    "l2_hit_pct": (r(row["l2_hit_rate_pct"], 1), "%"),
                    "l1_hit_pct": (r(row["l1_hit_rate_pct"], 1), "%"),
                    "dram_pct": (r(row["dram_throughput_pct"], 1), "%"),
                    "kernels_low_l2": (len(k), "kernels"),
                    "stage_pct": (share(float(k["total_ns"].sum()), stage_ns), "%")}
        found.append(make("cache", stage, evidence, top, floor_bound(top, stage_ns, inputs.total_ns, inputs), "medium"))
    return found
