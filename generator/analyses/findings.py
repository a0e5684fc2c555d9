"""Findings and recommendations: rules over the computed numbers, each threshold a named constant.

A rule that does not fire yields nothing. A rule that fires yields :class:`Finding` objects whose
``evidence`` holds every number its EN/ZH text quotes; the text lives in
``generator/templates/findings/<id>.<lang>.md.j2`` (Jinja2, StrictUndefined) and is rendered by
:func:`generator.render.findings.render_finding`.

Time shares come from the nsys kernel summary (``time_pct`` of a stage) and kernel categories
from the naming module (``KernelName.category``); per-kernel hardware numbers from the classified
profiled kernels (ncu).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from generator.analyses.classify import COMPUTE, LATENCY, MEMORY, SMALL_GRID, UNKNOWN
from generator.analyses.registry import Analysis
from generator.analyses.result import Finding
from generator.analyses.roofline import Peaks
from generator.model import ALL_STAGES, VersionInputs

DECODE_STAGE = "decode"

MATVEC_DECODE_SHARE_PCT = 30.0  # matrix-product share of decode kernel time at/above this → batching
ELEMENTWISE_SHARE_PCT = 15.0  # elementwise/activation share of all kernel time → fusion
COPY_CAST_SHARE_PCT = 5.0  # copy/cast share of all kernel time → precision management
LOW_OCCUPANCY_PCT = 40.0  # mean achieved occupancy of profiled kernels below this …
SHORT_KERNEL_US = 10.0  # … and at least SHORT_KERNEL_SHARE_PCT of them shorter than this → launch overhead
SHORT_KERNEL_SHARE_PCT = 50.0
ATTENTION_NON_FLASH_SHARE_PCT = 1.0  # non-flash attention share of all kernel time → FlashAttention
L2_HIT_LOW_PCT = 50.0  # mean L2 hit rate below this → L2 sizing
MEMORY_BOUND_MAJORITY_PCT = 50.0  # memory-bound share of classified kernels above this → bandwidth
LATENCY_BOUND_MAJORITY_PCT = 50.0  # latency-bound share of classified kernels above this → more work per launch
TENSOR_UTIL_LOW_PCT = 50.0  # compute-bound GEMM tensor FLOP/s below this % of the tensor peak

GEMV_CATEGORIES = frozenset({"gemv"})
#: matrix products; in decode each step multiplies batch-size rows by the weights, i.e.
#: matrix-vector work at batch 1 even when a GEMM kernel (M tile padded) runs it
GEMM_CATEGORIES = frozenset({"gemm", "gemv"})
ELEMENTWISE_CATEGORIES = frozenset({"elementwise"})
COPY_CATEGORIES = frozenset({"copy"})  # copies, dtype casts, fills (naming.CATEGORIES)
ATTENTION_CATEGORIES = frozenset({"attention"})
SOFTMAX_CATEGORIES = frozenset({"softmax"})
FLASH_MARKERS = ("flash",)  # a name/library with one of these (lower case) is a flash kernel


def _r(value: float, digits: int = 1) -> float:
    return round(float(value), digits)


def stage_table(summary: pd.DataFrame, names: dict[str, Any], stage: str) -> pd.DataFrame:
    """The stage's summary rows with friendly name, library and category from ``names``."""
    rows = summary[summary["stage"] == stage].copy()
    kn = [names.get(n) for n in rows["name"]]
    rows["friendly_name"] = [getattr(k, "friendly_name", None) or n for k, n in zip(kn, rows["name"])]
    rows["library"] = [getattr(k, "source_lib", None) for k in kn]
    rows["category"] = [getattr(k, "category", None) for k in kn]
    return rows


def _share(rows: pd.DataFrame, categories: frozenset[str]) -> tuple[float, tuple[str, ...]]:
    """Summed time_pct of the rows in ``categories`` and their friendly names (largest first)."""
    hit = rows[rows["category"].isin(categories)].sort_values("time_pct", ascending=False, kind="stable")
    return float(pd.to_numeric(hit["time_pct"], errors="coerce").sum()), tuple(hit["friendly_name"])


def _is_flash(row: pd.Series) -> bool:
    text = f"{row['name']} {row.get('library') or ''}".lower()
    return any(marker in text for marker in FLASH_MARKERS)


def gemv_decode(summary: pd.DataFrame, names: dict[str, Any]) -> list[Finding]:
    """Matrix products (GEMV + GEMM kernels) dominating the decode stage."""
    rows = stage_table(summary, names, DECODE_STAGE)
    share, kernels = _share(rows, GEMM_CATEGORIES)
    if rows.empty or share < MATVEC_DECODE_SHARE_PCT:
        return []
    evidence = {"share_pct": _r(share), "gemv_share_pct": _r(_share(rows, GEMV_CATEGORIES)[0]),
                "threshold_pct": MATVEC_DECODE_SHARE_PCT, "kernels": len(kernels)}
    return [Finding("gemv_decode", "recommendation", evidence, kernels),
            Finding("gemv_decode_hw", "hardware", evidence, kernels)]


def elementwise_fusion(summary: pd.DataFrame, names: dict[str, Any]) -> list[Finding]:
    share, kernels = _share(stage_table(summary, names, ALL_STAGES), ELEMENTWISE_CATEGORIES)
    if share < ELEMENTWISE_SHARE_PCT:
        return []
    evidence = {"share_pct": _r(share), "threshold_pct": ELEMENTWISE_SHARE_PCT, "kernels": len(kernels)}
    return [Finding("elementwise_fusion", "recommendation", evidence, kernels),
            Finding("elementwise_fusion_hw", "hardware", evidence, kernels)]


def copy_cast(summary: pd.DataFrame, names: dict[str, Any]) -> list[Finding]:
    share, kernels = _share(stage_table(summary, names, ALL_STAGES), COPY_CATEGORIES)
    if share < COPY_CAST_SHARE_PCT:
        return []
    evidence = {"share_pct": _r(share), "threshold_pct": COPY_CAST_SHARE_PCT, "kernels": len(kernels)}
    return [Finding("copy_cast_precision", "recommendation", evidence, kernels)]


def attention_mix(summary: pd.DataFrame, names: dict[str, Any]) -> list[Finding]:
    """Attention outside flash kernels: memory-efficient/other attention kernels + eager softmax."""
    rows = stage_table(summary, names, ALL_STAGES)
    attention = rows[rows["category"].isin(ATTENTION_CATEGORIES)]
    flash = attention[attention.apply(_is_flash, axis=1)] if len(attention) else attention
    other = attention.drop(flash.index)
    softmax = rows[rows["category"].isin(SOFTMAX_CATEGORIES)]
    non_flash = pd.concat([other, softmax]).sort_values("time_pct", ascending=False, kind="stable")
    share = float(pd.to_numeric(non_flash["time_pct"], errors="coerce").sum())
    if share < ATTENTION_NON_FLASH_SHARE_PCT:
        return []
    evidence = {
        "non_flash_share_pct": _r(share),
        "flash_share_pct": _r(pd.to_numeric(flash["time_pct"], errors="coerce").sum()),
        "softmax_share_pct": _r(pd.to_numeric(softmax["time_pct"], errors="coerce").sum()),
        "threshold_pct": ATTENTION_NON_FLASH_SHARE_PCT,
    }
    return [Finding("attention_flash", "recommendation", evidence, tuple(non_flash["friendly_name"]))]


def launch_overhead(kernels: pd.DataFrame) -> list[Finding]:
    occupancy = pd.to_numeric(kernels["achieved_occupancy_pct"], errors="coerce").dropna()
    durations = pd.to_numeric(kernels["duration_ns"], errors="coerce").dropna() / 1e3
    if occupancy.empty or durations.empty:
        return []
    short = durations[durations < SHORT_KERNEL_US]
    short_pct = 100.0 * len(short) / len(durations)
    if occupancy.mean() >= LOW_OCCUPANCY_PCT or short_pct < SHORT_KERNEL_SHARE_PCT:
        return []
    evidence = {
        "mean_occupancy_pct": _r(occupancy.mean()),
        "occupancy_threshold_pct": LOW_OCCUPANCY_PCT,
        "short_kernels": len(short),
        "kernels": len(durations),
        "short_share_pct": _r(short_pct),
        "short_us": SHORT_KERNEL_US,
        "median_duration_us": _r(durations.median(), 2),
    }
    return [Finding("launch_overhead", "recommendation", evidence,
                    tuple(kernels.loc[short.index, "friendly_name"]))]


def _class_share(kernels: pd.DataFrame, cls: str) -> tuple[float, int, int]:
    known = kernels[kernels["class"] != UNKNOWN]
    n = int((known["class"] == cls).sum())
    return (100.0 * n / len(known) if len(known) else math.nan), n, len(known)


def memory_bound_majority(kernels: pd.DataFrame) -> list[Finding]:
    share, n, known = _class_share(kernels, MEMORY)
    if not share > MEMORY_BOUND_MAJORITY_PCT:
        return []
    dram = pd.to_numeric(kernels.loc[kernels["class"] == MEMORY, "dram_throughput_pct"], errors="coerce")
    evidence = {"share_pct": _r(share), "count": n, "classified": known,
                "threshold_pct": MEMORY_BOUND_MAJORITY_PCT,
                "mean_dram_throughput_pct": _r(dram.mean()) if dram.notna().any() else None}
    return [Finding("memory_bound_majority", "hardware", evidence,
                    tuple(kernels.loc[kernels["class"] == MEMORY, "friendly_name"]))]


def latency_bound_majority(kernels: pd.DataFrame) -> list[Finding]:
    share, n, known = _class_share(kernels, LATENCY)
    if not share > LATENCY_BOUND_MAJORITY_PCT:
        return []
    latency = kernels[kernels["class"] == LATENCY]
    evidence = {"share_pct": _r(share), "count": n, "classified": known,
                "threshold_pct": LATENCY_BOUND_MAJORITY_PCT,
                "small_grid": int((latency["qualifier"] == SMALL_GRID).sum())}
    return [Finding("latency_bound_majority", "finding", evidence, tuple(latency["friendly_name"]))]


def l2_sizing(kernels: pd.DataFrame) -> list[Finding]:
    l2 = pd.to_numeric(kernels["l2_hit_rate_pct"], errors="coerce").dropna()
    if l2.empty or l2.mean() >= L2_HIT_LOW_PCT:
        return []
    l1 = pd.to_numeric(kernels["l1_hit_rate_pct"], errors="coerce").dropna()
    evidence = {"mean_l2_hit_pct": _r(l2.mean()), "threshold_pct": L2_HIT_LOW_PCT,
                "mean_l1_hit_pct": _r(l1.mean()) if len(l1) else None, "kernels": len(l2)}
    low = kernels.loc[l2[l2 < L2_HIT_LOW_PCT].index, "friendly_name"]
    return [Finding("l2_sizing", "hardware", evidence, tuple(low))]


def tensor_underused(kernels: pd.DataFrame, peaks: Peaks) -> list[Finding]:
    """Compute-bound GEMMs whose tensor FLOP/s stay below TENSOR_UTIL_LOW_PCT of the tensor peak."""
    peak = peaks.flop_per_s.get("tensor")
    gemms = kernels[(kernels["class"] == COMPUTE) & kernels["category"].isin(GEMM_CATEGORIES)]
    if not peak or gemms.empty:
        return []
    util = pd.to_numeric(gemms["flop_tensor"], errors="coerce") / (
        pd.to_numeric(gemms["duration_ns"], errors="coerce") * 1e-9) / peak * 100.0
    low = util[util < TENSOR_UTIL_LOW_PCT]
    if low.empty:
        return []
    evidence = {"kernels": len(low), "compute_bound_gemms": len(gemms),
                "mean_util_pct": _r(low.mean()), "max_util_pct": _r(low.max()),
                "threshold_pct": TENSOR_UTIL_LOW_PCT, "peak_tflops": _r(peak / 1e12)}
    return [Finding("tensor_underused", "finding", evidence, tuple(gemms.loc[low.index, "friendly_name"]))]


@dataclass(frozen=True)
class RuleInputs:
    """What a rule may look at: the classified profiled kernels (ncu), the nsys kernel summary,
    raw name → KernelName, and the device peaks."""

    kernels: pd.DataFrame
    summary: pd.DataFrame
    names: dict[str, Any]
    peaks: Peaks


#: Every rule, in page order. A new finding is its rule function above, one entry here and its words
#: in generator/templates/findings/<id>.<lang>.md.j2; the findings page shows every Finding by its ``kind``.
RULES: tuple[Callable[[RuleInputs], list[Finding]], ...] = (
    lambda i: gemv_decode(i.summary, i.names),
    lambda i: elementwise_fusion(i.summary, i.names),
    lambda i: copy_cast(i.summary, i.names),
    lambda i: attention_mix(i.summary, i.names),
    lambda i: launch_overhead(i.kernels),
    lambda i: latency_bound_majority(i.kernels),
    lambda i: memory_bound_majority(i.kernels),
    lambda i: l2_sizing(i.kernels),
    lambda i: tensor_underused(i.kernels, i.peaks),
)


def find(kernels: pd.DataFrame, summary: pd.DataFrame, names: dict[str, Any], peaks: Peaks) -> list[Finding]:
    """Every rule over one version's classified profiled kernels and nsys summary."""
    inputs = RuleInputs(kernels, summary, names, peaks)
    return [finding for rule in RULES for finding in rule(inputs)]


def version_findings(ncu_metrics: pd.DataFrame, inputs: VersionInputs, names: dict[str, Any],
                     peaks: Peaks) -> list[Finding]:
    """Every rule of :data:`RULES` over the version (:func:`find`)."""
    return find(ncu_metrics, inputs.kernel_summary, names, peaks)


ANALYSES = [Analysis("findings", version_findings)]
