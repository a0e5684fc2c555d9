"""Precision fallbacks (matrix products or convolutions doing FP32 CUDA-core FLOP and no tensor
FLOP in a BF16/FP16 model) and kernels built for an older architecture than the GPU."""
from __future__ import annotations

import re

import pandas as pd

from generator.analyses.findings.context import FindingInputs, floor_bound, make, r, share, us
from generator.analyses.result import Bound, Finding

HALF_DTYPES = frozenset({"bfloat16", "bf16", "float16", "fp16", "half"})
TENSOR_CAPABLE = frozenset({"gemm", "conv", "attention"})
ARCH_PATTERN = re.compile(r"(?:^|[^a-z0-9])sm_?(\d{2,3})(?=[^0-9]|$)", re.IGNORECASE)


def precision_fallback(inputs: FindingInputs) -> list[Finding]:
    """Tensor-capable kernels of a half-precision model that compute (FLOP/byte at or above the FP32
    ridge) in FP32 with no tensor FLOP: bound = their time × (1 − FP32 peak / tensor peak) (the same work at the tensor roof)."""
    dtype = str(inputs.params.get("dtype") or "").lower()
    k = inputs.timed_kernels
    if dtype not in HALF_DTYPES or not len(k):
        return []
    fp32 = pd.to_numeric(k["flop_fp32"], errors="coerce").fillna(0.0)
    tensor = pd.to_numeric(k["flop_tensor"], errors="coerce").fillna(0.0)
    ridge = inputs.peaks.ridge("fp32") or 0.0  # below it the kernel moves data (e.g. a split-K reduce)
    ai = pd.to_numeric(k["arithmetic_intensity"], errors="coerce").fillna(0.0)
    hit = k[k["category"].isin(TENSOR_CAPABLE) & (fp32 > 0) & (tensor == 0) & (ai >= ridge)]
    peak32, peak_tc = inputs.peaks.flop_per_s.get("fp32"), inputs.peaks.flop_per_s.get("tensor")
    found = []
    for _, row in hit.sort_values("total_ns", ascending=False).iterrows():
        stage_ns = inputs.stage_ns(row["stage"])
        ratio = peak32 / peak_tc if peak32 and peak_tc else None
        saving = float(row["total_ns"]) * (1.0 - ratio) if ratio else 0.0
        evidence = {"dtype": (dtype, ""), "duration_us": (us(row["duration_ns"]), "µs"),
                    "launches": (int(row["count"]), "launches"),
                    "flop_fp32_g": (r(row["flop_fp32"] / 1e9, 2), "GFLOP"), "flop_tensor_g": (0.0, "GFLOP"),
                    "sm_pct": (r(row["sm_throughput_pct"], 1), "%"),
                    "flop_per_byte": (r(row["arithmetic_intensity"], 1), "FLOP/byte"),
                    "stage_pct": (share(row["total_ns"], stage_ns), "%")}
        if (row["stage"], row["name"]) in inputs.fp32_calls:  # the operator asked for FP32: no fallback
            evidence["requested"] = (True, "")
        if ratio:
            evidence["peak_fp32_t"] = (r(peak32 / 1e12, 1), "TFLOP/s")
            evidence["peak_tensor_t"] = (r(peak_tc / 1e12, 1), "TFLOP/s")
        floor = floor_bound(hit.loc[[row.name]], stage_ns, inputs.total_ns, inputs)
        # the same work at the tensor roof, never below the physical floor (then the floor is the basis)
        basis = floor.floor_basis if floor.saving_ns < saving else ""
        saving = min(saving, floor.saving_ns)
        bound = Bound(float(row["total_ns"]), stage_ns, inputs.total_ns, saving, 1.0 / ratio if ratio else None,
                      floor_basis=basis, parts=((str(row["name"]), saving),), kernels=floor.kernels)
        found.append(make("precision_fallback", row["stage"], evidence, hit.loc[[row.name]], bound, "high"))
    return found


def kernel_arch(name: str) -> int | None:
    """The smXY a kernel name says it was built for (``sm80``, ``sm_90a`` …), None when it says none."""
    match = ARCH_PATTERN.search(name)
    return int(match[1]) if match else None


def old_arch(inputs: FindingInputs) -> list[Finding]:
    """Profiled kernels whose name names an older architecture than the GPU's (sm80 code on sm90)."""
    gpu = inputs.gpu_arch
    k = inputs.timed_kernels
    if gpu is None or not len(k):
        return []
    arch = k["name"].map(kernel_arch)
    hit = k[arch.notna() & (arch < gpu)]
    found = []
    for _, row in hit.sort_values("total_ns", ascending=False).iterrows():
        stage_ns = inputs.stage_ns(row["stage"])
        rows = hit.loc[[row.name]]
        evidence = {"kernel_arch": (f"sm{int(arch[row.name])}", ""), "gpu_arch": (f"sm{gpu}", ""),
                    "total_us": (us(row["total_ns"]), "µs"), "launches": (int(row["count"]), "launches"),
                    "stage_pct": (share(row["total_ns"], stage_ns), "%"),
                    "sm_pct": (r(row["sm_throughput_pct"], 2), "%"),
                    "memory_pct": (r(row["memory_throughput_pct"], 2), "%")}
        found.append(make("old_arch", row["stage"], evidence, rows, floor_bound(rows, stage_ns, inputs.total_ns, inputs),
                          "high"))
    return found
