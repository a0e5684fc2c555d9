"""Useful vs executed work per profiled kernel: what the operator asked for (FLOP and ideal bytes from
its shapes) beside what the GPU executed (ncu's FLOP and DRAM bytes); padding = useful / executed.

Shapes come from the operator calls a capture recorded (``op_calls``: one row per stage and kernel,
the call that made its profiled launch), or from a PyTorch trace recorded with shapes whose kernels
are aligned with the profiled launches. Shape class (GEMV when M = 1, skinny up to SKINNY_MAX_ROWS
rows, else GEMM), rows and useful FLOP/s come from shapes only: a kernel without shapes has them
unknown (NaN / "unknown"), never inferred from the executed counters (they include tile padding).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd

from generator.analyses.floors import datapath, launch_floor
from generator.analyses.kernel_match import candidates
from generator.analyses.registry import Analysis
from generator.model import ALL_STAGES, VersionInputs

if TYPE_CHECKING:  # roofline reads this module's useful work
    from generator.analyses.roofline import Peaks

SKINNY_MAX_ROWS = 128  # M at or below this (and above 1): a skinny product
UNKNOWN = "unknown"
#: bytes per element of the dtypes torch's profiler and the capture name
DTYPE_BYTES = {"c10::BFloat16": 2, "c10::Half": 2, "float": 4, "double": 8, "long int": 8, "int": 4,
               "bool": 1, "unsigned char": 1, "signed char": 1, "short int": 2, "c10::Float8_e4m3fn": 1,
               "c10::Float8_e5m2": 1, "bfloat16": 2, "float16": 2, "float32": 4, "float64": 8, "int64": 8,
               "int32": 4, "int8": 1, "uint8": 1}
#: ATen matrix products → (index of the first and second matrix operand, index of an added operand)
PRODUCTS: dict[str, tuple[int, int, int | None]] = {
    "aten::mm": (0, 1, None), "aten::bmm": (0, 1, None), "aten::addmm": (1, 2, 0), "aten::baddbmm": (1, 2, 0),
}
OP_CALL_COLUMNS = ["stage", "name", "op", "m", "n", "k", "batch", "flop", "ideal_bytes"]
#: the columns findings read beside ncu's (with_useful_work)
USEFUL_EXTRA = ["op", "m", "n", "k", "batch", "shape_class", "useful_flop", "ideal_bytes", "padding"]
USEFUL_COLUMNS = ["stage", "name", "friendly_name", "op", "m", "n", "k", "batch", "shape_class", "useful_flop",
                  "executed_flop", "padding", "ideal_bytes", "dram_bytes", "duration_ns", "useful_tflops",
                  "executed_tflops", "floor_ns", "floor_basis"]


def _elements(dims: Sequence[int]) -> int:
    return math.prod(int(d) for d in dims)


def product_work(op: str, dims: Sequence[Sequence[int]], dtypes: Sequence[str]) -> dict[str, float] | None:
    """m, n, k, batch, FLOP (2·batch·M·N·K) and ideal bytes (each operand read once, the output written
    once) of an ATen matrix product call from its input dims and dtypes; None for any other op."""
    if op not in PRODUCTS:
        return None
    a_at, b_at, add_at = PRODUCTS[op]
    a, b = list(dims[a_at]), list(dims[b_at])
    if len(a) < 2 or len(b) < 2:
        return None
    batch = _elements(a[:-2]) if len(a) > 2 else 1
    m, k, n = int(a[-2]), int(a[-1]), int(b[-1])
    size = DTYPE_BYTES.get(dtypes[a_at], math.nan)
    operands = _elements(a) + _elements(b) + (_elements(dims[add_at]) if add_at is not None else 0)
    return {"m": m, "n": n, "k": k, "batch": batch, "flop": 2.0 * batch * m * n * k,
            "ideal_bytes": size * (operands + batch * m * n)}


def shape_class(m: float) -> str:
    """GEMV (M = 1), skinny (M ≤ SKINNY_MAX_ROWS) or GEMM by the rows the operator asked for."""
    if pd.isna(m):
        return UNKNOWN
    return "gemv" if m == 1 else "skinny" if m <= SKINNY_MAX_ROWS else "gemm"


def executed_flop(kernels: pd.DataFrame) -> pd.Series:
    """FLOP per launch ncu counted on every datapath (tensor, FP32, FP16, FP64)."""
    columns = [c for c in ("flop_tensor", "flop_fp32", "flop_fp16", "flop_fp64") if c in kernels]
    return kernels[columns].apply(pd.to_numeric, errors="coerce").sum(axis=1, min_count=1)


def _matches(ncu_names: list[str], trace_names: list[str]) -> dict[str, set[str]]:
    """Per distinct ncu name, the distinct trace names that are the same kernel (kernel_match)."""
    distinct = list(dict.fromkeys(trace_names))
    return {name: set(candidates(name, distinct)) for name in dict.fromkeys(ncu_names)}


def launch_work(metrics: pd.DataFrame, kernel_ops: pd.DataFrame) -> pd.DataFrame:
    """Per profiled launch (``metrics``: joined ncu launches), the operator call that made it in a
    shapes trace (readers.torch_trace.kernel_ops) and its work (:func:`product_work`): per stage, the
    first run of trace kernels that are the stage's profiled launches one by one, in launch order.
    A stage whose launches match no run has no shapes (no row). Columns: launch_id, stage, name,
    then OP_CALL_COLUMNS[2:]."""
    columns = ["launch_id", "stage", "name", *OP_CALL_COLUMNS[2:]]
    if not len(metrics) or not len(kernel_ops):
        return pd.DataFrame(columns=columns)
    launches = metrics.sort_values("launch_id", kind="stable")
    name = launches["summary_name"].fillna(launches["name"])
    stage = launches["summary_stage"].fillna(launches["stage"]).fillna(ALL_STAGES)
    trace = list(kernel_ops["name"])
    same = _matches(list(launches["name"]), trace)
    rows = []
    for key in dict.fromkeys(stage):
        mine = launches[stage == key]
        wanted = [same[n] for n in mine["name"]]
        start = next((at for at in range(len(trace) - len(wanted) + 1)
                      if all(trace[at + i] in w for i, w in enumerate(wanted))), None)
        if start is None:
            continue
        for i, (launch, kernel) in enumerate(zip(mine["launch_id"], name[stage == key])):
            call = kernel_ops.iloc[start + i]
            work = product_work(call["op"], call["input_dims"], call["input_types"]) if call["op"] else None
            work = work or {}
            rows.append((launch, key, kernel, call["op"], *(work.get(c, math.nan) for c in
                                                             ("m", "n", "k", "batch", "flop", "ideal_bytes"))))
    return pd.DataFrame(rows, columns=columns)


def kernel_calls(launches: pd.DataFrame) -> pd.DataFrame:
    """OP_CALL_COLUMNS per (stage, kernel) from :func:`launch_work`: FLOP and ideal bytes averaged
    over its profiled launches (as ncu's metrics are), a shape only where all of them agree."""
    if not len(launches):
        return pd.DataFrame(columns=OP_CALL_COLUMNS)
    groups = launches.groupby(["stage", "name"], sort=False)
    out = groups[["flop", "ideal_bytes"]].mean()
    for column in ("op", "m", "n", "k", "batch"):
        out[column] = groups[column].agg(lambda v: v.iloc[0] if v.nunique(dropna=False) == 1 else math.nan)
    return out.reset_index()[OP_CALL_COLUMNS]


def useful_vs_executed(kernels: pd.DataFrame, op_calls: pd.DataFrame | None, peaks: Peaks,
                       shortest_ns: float) -> pd.DataFrame:
    """USEFUL_COLUMNS per profiled kernel and stage: ``op_calls`` (stage, name, op, m, n, k, batch,
    flop, ideal_bytes of the call that made the profiled launch) beside ncu's executed FLOP and DRAM
    bytes per launch; padding = useful / executed FLOP; the launch's floor (floors.launch_floor)."""
    if not len(kernels):
        return pd.DataFrame(columns=USEFUL_COLUMNS)
    out = kernels[["stage", "name", "friendly_name"]].copy()
    shapes = OP_CALL_COLUMNS[2:]
    if op_calls is not None and len(op_calls):
        out = out.merge(op_calls[OP_CALL_COLUMNS].drop_duplicates(["stage", "name"]),
                        on=["stage", "name"], how="left")
    else:
        out = out.assign(**dict.fromkeys(shapes, math.nan))
    out = out.rename(columns={"flop": "useful_flop"})
    out["shape_class"] = [shape_class(m) for m in out["m"]]  # M is known for matrix products only
    executed = executed_flop(kernels).to_numpy()
    out["executed_flop"] = executed
    out["padding"] = out["useful_flop"] / out["executed_flop"].where(out["executed_flop"] > 0)
    out["dram_bytes"] = pd.to_numeric(kernels["dram_bytes"], errors="coerce").to_numpy()
    out["duration_ns"] = pd.to_numeric(kernels["duration_ns"], errors="coerce").to_numpy()
    out["useful_tflops"] = out["useful_flop"] / out["duration_ns"] / 1e3
    out["executed_tflops"] = out["executed_flop"] / out["duration_ns"] / 1e3
    paths = [datapath(t, f) for t, f in zip(pd.to_numeric(kernels["flop_tensor"], errors="coerce"),
                                            pd.to_numeric(kernels["flop_fp32"], errors="coerce"))]
    floors = [launch_floor(shortest_ns, useful_flop=f, ideal_bytes=b, dram_bytes=d,
                           flop_per_s=peaks.flop_per_s.get(p), dram_bytes_per_s=peaks.dram_bytes_per_s)
              for f, b, d, p in zip(out["useful_flop"], out["ideal_bytes"], out["dram_bytes"], paths)]
    out["floor_ns"] = [f for f, _ in floors]
    out["floor_basis"] = [b for _, b in floors]
    return out[USEFUL_COLUMNS].reset_index(drop=True)


def with_useful_work(kernels: pd.DataFrame, useful: pd.DataFrame) -> pd.DataFrame:
    """``kernels`` (one row per kernel and stage) with the useful-work columns of ``useful`` (same rows)."""
    if not len(kernels) or not len(useful):
        return kernels.assign(**dict.fromkeys(USEFUL_EXTRA, math.nan))
    extra = useful[["stage", "name", *USEFUL_EXTRA]]
    return kernels.merge(extra, on=["stage", "name"], how="left")


def version_useful_work(ncu_metrics: pd.DataFrame, metrics: pd.DataFrame, inputs: VersionInputs,
                        peaks: Peaks) -> pd.DataFrame:
    """:func:`useful_vs_executed` over the version's profiled kernels and the operator calls a capture
    recorded (``inputs.op_calls``), else those of its shapes traces aligned with the ncu launches."""
    summary = inputs.kernel_summary
    shortest = pd.to_numeric(summary["min_ns"], errors="coerce").min() if len(summary) else math.nan
    calls = inputs.op_calls
    if calls is None and inputs.kernel_ops is not None:
        calls = kernel_calls(launch_work(metrics, inputs.kernel_ops))
    return useful_vs_executed(ncu_metrics, calls, peaks, 0.0 if pd.isna(shortest) else float(shortest))


ANALYSES = [Analysis("useful_work", version_useful_work, publish=True)]
