"""Attention implementation per stage, by kernel identity: fused kernels (flash, cuDNN SDPA,
memory-efficient) vs eager (softmax beside batched matrix products with no fused kernel in the
stage). A softmax in a stage that runs a fused attention kernel is not attention, nor is one launched
exactly as often as the stage's MoE routing kernels (the router's softmax before its top-k)."""
from __future__ import annotations

from generator.analyses.findings.context import FindingInputs, floor_bound, make, share, us
from generator.analyses.result import Finding

FUSED = "attention"  # naming category of fused attention kernels (flash, cuDNN SDPA, fmha)
SOFTMAX = "softmax"
PRODUCTS = frozenset({"gemm", "gemv"})
ROUTING = "moe"  # MoE routing kernels (top-k, sort): a softmax launched exactly as often is the router's
MIN_ATTENTION_STAGE_PCT = 1.0  # attention (or eager softmax) below this share of a stage: no finding


def attention(inputs: FindingInputs) -> list[Finding]:
    found = []
    for stage in inputs.measured_stages():
        rows = inputs.rows(stage)
        stage_ns = inputs.stage_ns(stage)
        fused = rows[rows["category"] == FUSED]
        softmax = rows[rows["category"] == SOFTMAX]
        router = softmax["count"].isin(set(rows.loc[rows["category"] == ROUTING, "count"]))
        if len(fused):
            impl, hit, other = "fused", fused, softmax
        elif len(softmax[~router]) and rows["category"].isin(PRODUCTS).any():
            impl, hit, other = "eager", softmax[~router], softmax[router]
        else:
            continue
        affected = float(hit["total_ns"].sum())
        if 100.0 * affected / stage_ns < MIN_ATTENTION_STAGE_PCT:
            continue
        evidence = {"implementation": (impl, ""), "total_us": (us(affected), "µs"),
                    "stage_pct": (share(affected, stage_ns), "%"), "kernels": (len(hit), "kernels"),
                    "launches": (int(hit["count"].sum()), "launches"),
                    "not_attention_us": (us(float(other["total_ns"].sum())), "µs")}
        profiled = inputs.profiled(stage)
        measured = profiled[profiled["name"].isin(hit["name"])] if len(profiled) else profiled
        bound = floor_bound(hit, stage_ns, inputs.total_ns, inputs)
        found.append(make("attention", stage, evidence, hit, bound, "high" if len(measured) else "medium"))
    return found
