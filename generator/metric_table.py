"""The one table of canonical per-launch metrics and where each comes from in ncu outputs.

Readers look metrics up here; analyses and templates use the canonical ``name`` only.
Units are canonical: ns, percent 0–100, bytes, FLOP, per-second rates.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CanonicalMetric:
    name: str
    unit: str  # canonical unit: "ns", "%", "byte", "FLOP", "byte/s", "FLOP/s", "count", "Hz", ...
    label_en: str
    label_zh: str
    #: ncu metric names, first present wins (exact names as in `--page raw` / `--metrics`).
    ncu_metrics: tuple[str, ...] = ()
    #: (section display name, metric display name) pairs of `--page details`, first present wins.
    ncu_details: tuple[tuple[str, str], ...] = ()


CANONICAL_METRICS: tuple[CanonicalMetric, ...] = (
    CanonicalMetric("duration_ns", "ns", "Duration", "耗时"),
    CanonicalMetric("sm_throughput_pct", "%", "SM throughput", "SM 吞吐率"),
    CanonicalMetric("dram_throughput_pct", "%", "DRAM throughput", "DRAM 吞吐率"),
    CanonicalMetric("memory_throughput_pct", "%", "Memory throughput", "内存吞吐率"),
    CanonicalMetric("memory_throughput_bytes_per_s", "byte/s", "Memory throughput", "内存吞吐量"),
    CanonicalMetric("l1_hit_rate_pct", "%", "L1/TEX hit rate", "L1/TEX 命中率"),
    CanonicalMetric("l1_throughput_pct", "%", "L1/TEX throughput", "L1/TEX 吞吐率"),
    CanonicalMetric("l2_hit_rate_pct", "%", "L2 hit rate", "L2 命中率"),
    CanonicalMetric("l2_throughput_pct", "%", "L2 throughput", "L2 吞吐率"),
    CanonicalMetric("achieved_occupancy_pct", "%", "Achieved occupancy", "实际占用率"),
    CanonicalMetric("theoretical_occupancy_pct", "%", "Theoretical occupancy", "理论占用率"),
    CanonicalMetric("memory_busy_pct", "%", "Memory busy", "内存繁忙度"),
    CanonicalMetric("max_bandwidth_pct", "%", "Max bandwidth", "最大带宽利用率"),
    CanonicalMetric("dram_bytes", "byte", "DRAM bytes", "DRAM 字节数"),
    CanonicalMetric("flop_fp64", "FLOP", "FP64 FLOP", "FP64 浮点运算"),
    CanonicalMetric("flop_fp32", "FLOP", "FP32 FLOP", "FP32 浮点运算"),
    CanonicalMetric("flop_fp16", "FLOP", "FP16 FLOP (non-tensor)", "FP16 浮点运算（非张量核）"),
    CanonicalMetric("flop_tensor", "FLOP", "Tensor-core FLOP", "张量核浮点运算"),
    CanonicalMetric("peak_fp32_flop_per_s", "FLOP/s", "Peak FP32", "FP32 峰值"),
    CanonicalMetric("peak_fp64_flop_per_s", "FLOP/s", "Peak FP64", "FP64 峰值"),
    CanonicalMetric("peak_tensor_flop_per_s", "FLOP/s", "Peak tensor (dense)", "张量核峰值（稠密）"),
    CanonicalMetric("peak_dram_bytes_per_s", "byte/s", "Peak DRAM bandwidth", "DRAM 峰值带宽"),
    CanonicalMetric("waves_per_sm", "count", "Waves per SM", "每 SM 波数"),
    CanonicalMetric("grid_size", "count", "Grid size (blocks)", "网格大小（块）"),
    CanonicalMetric("block_size", "count", "Block size (threads)", "块大小（线程）"),
    CanonicalMetric("registers_per_thread", "count", "Registers per thread", "每线程寄存器"),
    CanonicalMetric("shared_mem_per_block_bytes", "byte", "Shared memory per block", "每块共享内存"),
    CanonicalMetric("sm_frequency_hz", "Hz", "SM frequency", "SM 频率"),
    CanonicalMetric("elapsed_cycles", "count", "Elapsed cycles", "耗用周期"),
)

METRICS_BY_NAME: dict[str, CanonicalMetric] = {m.name: m for m in CANONICAL_METRICS}
CANONICAL_METRIC_NAMES: list[str] = [m.name for m in CANONICAL_METRICS]
