"""Matrix products by what the operator asked for: shape class (GEMV when a weight matrix multiplies
one row, skinny, GEMM), rows per weight matrix (per expert of a grouped product) and padding (useful /
executed FLOP) from operator shapes only, beside what ncu executed (FLOP per DRAM byte, tensor-core
share). Where shapes are unknown the finding says the useful work is unknown:
ncu's counters include tile padding, so no row count or class is read from them."""
from __future__ import annotations

import pandas as pd

from generator.analyses.findings.context import (
    MIN_KERNEL_STAGE_PCT,
    FindingInputs,
    column,
    floor_bound,
    make,
    r,
    share,
)
from generator.analyses.result import Finding
from generator.analyses.useful_work import UNKNOWN

PRODUCT_CATEGORIES = frozenset({"gemm", "gemv"})
MIN_PRODUCT_STAGE_PCT = 10.0  # products below this share of a stage get no finding there


def row_count(rows: float) -> float:
    """Rows per weight matrix as the pages quote them: whole, or to one decimal (an average per expert)."""
    return int(rows) if float(rows).is_integer() else r(rows, 1)


def products(inputs: FindingInputs, stage: str) -> pd.DataFrame:
    """The stage's profiled matrix products with measured FLOP per byte (≥ MIN_KERNEL_STAGE_PCT of it)."""
    k = inputs.profiled(stage)
    if not len(k):
        return k
    k = k[k["category"].isin(PRODUCT_CATEGORIES) & (k["stage_time_pct"] >= MIN_KERNEL_STAGE_PCT)]
    return k[pd.to_numeric(k["arithmetic_intensity"], errors="coerce") > 0]


def matmul_shapes(inputs: FindingInputs) -> list[Finding]:
    """Per stage whose profiled products hold ≥ MIN_PRODUCT_STAGE_PCT of it: executed FLOP per byte
    and tensor-core share; with shapes, the class by time, rows and padding."""
    found = []
    for stage in inputs.measured_stages():
        k = products(inputs, stage)
        stage_ns = inputs.stage_ns(stage)
        if not len(k) or 100.0 * k["total_ns"].sum() / stage_ns < MIN_PRODUCT_STAGE_PCT:
            continue
        ai = pd.to_numeric(k["arithmetic_intensity"])
        tensor = pd.to_numeric(k["flop_tensor"], errors="coerce").fillna(0.0)
        flop = tensor + pd.to_numeric(k["flop_fp32"], errors="coerce").fillna(0.0)
        flop_time = (k["total_ns"] * tensor / flop.where(flop > 0)).fillna(0.0)
        time = float(k["total_ns"].sum())
        evidence: dict[str, tuple] = {
            "kernels": (len(k), "kernels"),
            "share_pct": (share(time, stage_ns), "%"),
            "min_flop_per_byte": (r(ai.min(), 1), "FLOP/byte"),
            "max_flop_per_byte": (r(ai.max(), 1), "FLOP/byte"),
            "tensor_time_pct": (share(float(flop_time.sum()), time), "%"),
        }
        classes = column(k, "shape_class").fillna(UNKNOWN)
        known = classes != UNKNOWN
        evidence["shapes_known"] = (int(known.sum()), "kernels")
        if known.any():
            shaped = k[known]
            for name in ("gemv", "skinny", "gemm"):
                evidence[f"{name}_pct"] = (share(float(shaped.loc[classes[known] == name, "total_ns"].sum()), time), "%")
            # products without shapes of their own (another kernel of their call carries its work)
            evidence["unknown_pct"] = (share(float(k.loc[~known, "total_ns"].sum()), time), "%")
            rows = pd.to_numeric(shaped["rows"])
            evidence["min_rows"] = (row_count(rows.min()), "rows")
            evidence["max_rows"] = (row_count(rows.max()), "rows")
            padding = pd.to_numeric(shaped["padding"], errors="coerce").dropna()
            if len(padding):
                evidence["min_useful_pct"] = (r(100.0 * padding.min(), 1), "%")
                evidence["max_useful_pct"] = (r(100.0 * padding.max(), 1), "%")
            evidence["verdict"] = (classes[known].loc[shaped["total_ns"].idxmax()], "")
        found.append(make("matmul_shapes", stage, evidence, k, floor_bound(k, stage_ns, inputs.total_ns, inputs),
                          "high"))
    return found
