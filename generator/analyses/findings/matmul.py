"""Matrix products by their real shape: rows from FLOP per DRAM byte (a product of M rows by a
K×N BF16 weight moves ≈ 2·N·K bytes and does 2·M·N·K FLOP, so FLOP/byte ≈ M), GEMV vs skinny
GEMM vs GEMM, tensor vs CUDA cores, and executed vs useful rows where the batch is known."""
from __future__ import annotations

import pandas as pd

from generator.analyses.findings.context import (
    MIN_KERNEL_STAGE_PCT,
    FindingInputs,
    make,
    r,
    share,
    sol_bound,
)
from generator.analyses.result import Finding

PRODUCT_CATEGORIES = frozenset({"gemm", "gemv"})
MIN_PRODUCT_STAGE_PCT = 10.0  # products below this share of a stage get no finding there
GEMV_MAX_FLOP_PER_BYTE = 4.0  # at or below: matrix-vector work (≈ 1 row)
SKINNY_MAX_FLOP_PER_BYTE = 128.0  # at or below: a skinny GEMM (a few to ~128 rows)


def shape_class(flop_per_byte: float) -> str:
    if flop_per_byte <= GEMV_MAX_FLOP_PER_BYTE:
        return "gemv"
    return "skinny" if flop_per_byte <= SKINNY_MAX_FLOP_PER_BYTE else "gemm"


def products(inputs: FindingInputs, stage: str) -> pd.DataFrame:
    """The stage's profiled matrix products with measured FLOP per byte (≥ MIN_KERNEL_STAGE_PCT of it)."""
    k = inputs.profiled(stage)
    if not len(k):
        return k
    k = k[k["category"].isin(PRODUCT_CATEGORIES) & (k["stage_time_pct"] >= MIN_KERNEL_STAGE_PCT)]
    return k[pd.to_numeric(k["arithmetic_intensity"], errors="coerce") > 0]


def matmul_shapes(inputs: FindingInputs) -> list[Finding]:
    """Per stage whose profiled products hold ≥ MIN_PRODUCT_STAGE_PCT of it: their shape class,
    rows, tensor-core share of FLOP and, with a known batch, useful vs executed rows (decode)."""
    found = []
    batch = inputs.params.get("batch")
    for stage in inputs.measured_stages():
        k = products(inputs, stage)
        stage_ns = inputs.stage_ns(stage)
        if not len(k) or 100.0 * k["total_ns"].sum() / stage_ns < MIN_PRODUCT_STAGE_PCT:
            continue
        ai = pd.to_numeric(k["arithmetic_intensity"])
        classes = ai.map(shape_class)
        tensor = pd.to_numeric(k["flop_tensor"], errors="coerce").fillna(0.0)
        flop = tensor + pd.to_numeric(k["flop_fp32"], errors="coerce").fillna(0.0)
        flop_time = (k["total_ns"] * tensor / flop.where(flop > 0)).fillna(0.0)
        evidence: dict[str, tuple] = {
            "kernels": (len(k), "kernels"),
            "share_pct": (share(float(k["total_ns"].sum()), stage_ns), "%"),
            "min_flop_per_byte": (r(ai.min(), 1), "FLOP/byte"),
            "max_flop_per_byte": (r(ai.max(), 1), "FLOP/byte"),
            "gemv_pct": (share(float(k.loc[classes == "gemv", "total_ns"].sum()), float(k["total_ns"].sum())), "%"),
            "skinny_pct": (share(float(k.loc[classes == "skinny", "total_ns"].sum()), float(k["total_ns"].sum())), "%"),
            "tensor_time_pct": (share(float(flop_time.sum()), float(k["total_ns"].sum())), "%"),
        }
        padded = ai[classes != "gemv"]
        if len(padded):  # products with several rows: rows ≈ FLOP/byte
            evidence["min_rows"] = (r(padded.min(), 1), "rows")
        if stage == "decode" and isinstance(batch, int) and batch > 0 and len(padded) and padded.min() > batch:
            # each decode step multiplies batch rows; the executed rows are ≈ FLOP/byte
            evidence["batch"] = (batch, "rows")
            evidence["useful_pct_max"] = (share(batch, float(padded.min())), "%")
        evidence["verdict"] = (classes.loc[k["total_ns"].idxmax()], "")
        found.append(make("matmul_shapes", stage, evidence, k, sol_bound(k, stage_ns, inputs.total_ns), "high"))
    return found
