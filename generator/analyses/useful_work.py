"""Useful vs executed work per profiled kernel: what the operator asked for (FLOP and ideal bytes from
its shapes) beside what the GPU executed (ncu's FLOP and DRAM bytes); padding = useful / executed.

Shapes come from the operator calls a capture recorded (``op_calls``: one row per stage and kernel,
the call that made its profiled launch), or from a PyTorch trace recorded with shapes whose kernels
are aligned with the profiled launches. A call that made several profiled kernels (a split-K GEMM and
its reduction, a convolution and its layout transforms) gives its work to the one that executed the
most FLOP; the others' useful work is unknown. Shape class (GEMV when a weight matrix multiplies one
row, skinny up to SKINNY_MAX_ROWS rows, else GEMM), rows and useful FLOP/s come from shapes only: a
kernel without shapes has them unknown (NaN / "unknown"), never inferred from the executed counters
(they include tile padding).
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd

from generator.analyses.floors import datapath, launch_floor
from generator.analyses.kernel_match import candidates
from generator.analyses.registry import Analysis
from generator.model import ALL_STAGES, VersionInputs

if TYPE_CHECKING:  # roofline reads this module's useful work
    from generator.analyses.roofline import Peaks

SKINNY_MAX_ROWS = 128  # rows per weight matrix at or below this (and above 1): a skinny product
UNKNOWN = "unknown"
#: bytes per element of the dtypes torch's profiler and the capture name
DTYPE_BYTES = {"c10::BFloat16": 2, "c10::Half": 2, "float": 4, "double": 8, "long int": 8, "int": 4,
               "bool": 1, "unsigned char": 1, "signed char": 1, "short int": 2, "c10::Float8_e4m3fn": 1,
               "c10::Float8_e5m2": 1, "bfloat16": 2, "float16": 2, "float32": 4, "float64": 8, "int64": 8,
               "int32": 4, "int8": 1, "uint8": 1, "int16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1,
               "complex64": 8, "complex128": 16}
#: ATen matrix products → (index of the first and second matrix operand, index of an added operand)
PRODUCTS: dict[str, tuple[int, int, int | None]] = {
    "aten::mm": (0, 1, None), "aten::bmm": (0, 1, None), "aten::addmm": (1, 2, 0), "aten::baddbmm": (1, 2, 0),
}
#: per (stage, kernel): the call (``iteration:number`` of ops/calls.csv; empty from a trace), its op,
#: product dims, rows per weight matrix (:func:`weight_rows`), FLOP and ideal bytes; the configuration
#: (grid, block) of the launch it made and the stage's launches with it (empty from a trace)
OP_CALL_COLUMNS = ["stage", "name", "call", "op", "m", "n", "k", "batch", "rows", "flop", "ideal_bytes",
                   "grid", "block", "config_launches"]
CALL = ["call", "op", "config_launches"]  # dropped with WORK where the call did not make the profiled launch
WORK = ["m", "n", "k", "batch", "rows", "flop", "ideal_bytes"]  # what only the call's carrier kernel keeps
#: the columns findings read beside ncu's (with_useful_work)
USEFUL_EXTRA = ["call", "op", "m", "n", "k", "batch", "rows", "shape_class", "useful_flop", "ideal_bytes", "padding",
                "shape_launches"]
USEFUL_COLUMNS = ["stage", "name", "friendly_name", "call", "op", "m", "n", "k", "batch", "rows", "shape_class",
                  "useful_flop", "executed_flop", "padding", "ideal_bytes", "dram_bytes", "duration_ns",
                  "useful_tflops", "executed_tflops", "floor_ns", "floor_basis", "shape_launches"]
GROUPED = "_grouped_mm"  # groups of rows, each multiplied by its own weight matrix (MoE experts)


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
    return {"m": m, "n": n, "k": k, "batch": batch, "rows": m, "flop": 2.0 * batch * m * n * k,
            "ideal_bytes": size * (operands + batch * m * n)}


def base_op(op: str) -> str:
    """``aten._grouped_mm.default`` or ``aten::mm`` → ``_grouped_mm`` or ``mm``."""
    return re.sub(r"^aten(::|\.)", "", str(op)).split(".")[0]


def weight_rows(op: str, m: float, batch: float, shapes: Sequence[Sequence[int]]) -> float:
    """Rows each weight matrix of a product multiplies: M; M × batch where one right operand serves
    the whole batch (``matmul`` with an unbatched one); for a grouped product whose groups split the
    rows ((rows × K)·(groups × K × N), MoE experts) the rows per group on average, at least 1: a
    group's weights are read only for its rows (one token's top-k experts get one row each)."""
    if pd.isna(m):
        return math.nan
    right = list(shapes[1]) if len(shapes) > 1 else []
    if base_op(op) == GROUPED and len(right) == 3 and len(shapes[0]) == 2:
        return max(1.0, float(m) / right[0]) if right[0] else math.nan
    if base_op(op) == "matmul" and _elements(right[:-2]) <= 1:
        return float(m) * (1.0 if pd.isna(batch) else float(batch))
    return float(m)


def _unread_bytes(op: str, m: float, shapes: list, dtypes: list, strides: list) -> float:
    """Bytes the capture's ideal bytes count that the call need not read: the repeats of a broadcast
    operand (a stride-0 dimension addresses one element), each distinct operand once, and the weights
    of the groups a grouped product's rows cannot reach (all but min(groups, rows))."""
    unread, seen = 0.0, set()
    for shape, dtype, stride in zip(shapes, dtypes, strides):
        key = json.dumps([shape, dtype, stride])
        if stride is None or key in seen or len(stride) != len(shape):
            continue
        seen.add(key)
        addressed = math.prod(d for d, st in zip(shape, stride) if st != 0)
        unread += (_elements(shape) - addressed) * DTYPE_BYTES.get(dtype, math.nan)
    if base_op(op) == GROUPED and len(shapes) > 1 and len(shapes[0]) == 2 and len(shapes[1]) == 3 and pd.notna(m):
        groups = shapes[1][0]
        unread += max(groups - m, 0) / groups * _elements(shapes[1]) * DTYPE_BYTES.get(dtypes[1], math.nan)
    return unread


def call_work(calls: pd.DataFrame) -> pd.DataFrame:
    """OP_CALL_COLUMNS of the calls a capture recorded (readers.op_calls.JOINED_COLUMNS): the call as
    ``iteration:number``, rows per weight matrix (:func:`weight_rows`) and the ideal bytes less what
    the call need not read (:func:`_unread_bytes`; unchanged where a dtype's size is unknown)."""
    out = calls.copy()
    out["call"] = [f"{i}:{int(c)}" for i, c in zip(out["iteration"], out["call"])]
    rows, ideal = [], []
    for op, m, batch, b, shapes, dtypes, strides in zip(out["op"], out["m"], out["batch"], out["ideal_bytes"],
                                                         out["input_shapes"], out["input_dtypes"], out["input_strides"]):
        shapes, dtypes = json.loads(shapes), json.loads(dtypes)
        strides = json.loads(strides) if isinstance(strides, str) else [None] * len(shapes)
        rows.append(weight_rows(op, m, batch, shapes))
        unread = _unread_bytes(op, m, shapes, dtypes, strides)
        ideal.append(b - unread if not math.isnan(unread) else b)
    out["rows"], out["ideal_bytes"] = rows, ideal
    return out[OP_CALL_COLUMNS]


def _other_launch(out: pd.DataFrame, kernels: pd.DataFrame) -> pd.Series:
    """Per row, whether its call made a launch of another configuration (grid, block) than the one ncu
    profiled: then the call's shapes do not describe the profiled launch."""
    if "grid" not in kernels or "block" not in kernels:
        return pd.Series(False, index=out.index)
    known = out["grid"].notna() & kernels["grid"].notna().to_numpy()
    differs = (out["grid"].astype(str) != kernels["grid"].astype(str).to_numpy()) | \
        (out["block"].astype(str) != kernels["block"].astype(str).to_numpy())
    return known & differs


def shape_class(rows: float) -> str:
    """GEMV (one row per weight matrix), skinny (≤ SKINNY_MAX_ROWS) or GEMM by the rows the operator
    asked for."""
    if pd.isna(rows):
        return UNKNOWN
    return "gemv" if rows == 1 else "skinny" if rows <= SKINNY_MAX_ROWS else "gemm"


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
    A stage whose launches match no run has no shapes (no row). Columns: launch_id, stage, name, op,
    then WORK."""
    columns = ["launch_id", "stage", "name", "op", *WORK]
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
            rows.append((launch, key, kernel, call["op"], *(work.get(c, math.nan) for c in WORK)))
    return pd.DataFrame(rows, columns=columns)


def kernel_calls(launches: pd.DataFrame) -> pd.DataFrame:
    """OP_CALL_COLUMNS per (stage, kernel) from :func:`launch_work`: FLOP and ideal bytes averaged
    over its profiled launches (as ncu's metrics are), a shape only where all of them agree; no call key
    (a trace's launches are aligned one by one)."""
    if not len(launches):
        return pd.DataFrame(columns=OP_CALL_COLUMNS)
    groups = launches.groupby(["stage", "name"], sort=False)
    out = groups[["flop", "ideal_bytes"]].mean()
    for column in ("op", "m", "n", "k", "batch", "rows"):
        out[column] = groups[column].agg(lambda v: v.iloc[0] if v.nunique(dropna=False) == 1 else math.nan)
    return out.reset_index().assign(call=math.nan, grid=math.nan, block=math.nan,
                                    config_launches=math.nan)[OP_CALL_COLUMNS]


def _carriers(out: pd.DataFrame, executed: pd.Series) -> pd.Series:
    """Per row, whether it carries its call's work: no call key, or the kernel of the stage's rows
    with that call that executed the most FLOP (the first on a tie)."""
    keyed = out["call"].notna()
    carrier = pd.Series(True, index=out.index)
    if keyed.any():
        most = executed.fillna(-1.0)[keyed].groupby([out.loc[keyed, "stage"], out.loc[keyed, "call"]]).idxmax()
        carrier[keyed] = out.index[keyed].isin(most.to_numpy())
    return carrier


def useful_vs_executed(kernels: pd.DataFrame, op_calls: pd.DataFrame | None, peaks: Peaks,
                       shortest_ns: float) -> pd.DataFrame:
    """USEFUL_COLUMNS per profiled kernel and stage: ``op_calls`` (OP_CALL_COLUMNS of the call that made
    the profiled launch) beside ncu's executed FLOP and DRAM bytes per launch; padding = useful /
    executed FLOP of the datapath that ran it (tensor ops where the kernel ran any: an epilogue's FP32
    bias adds are no part of 2·M·N·K); the launch's floor (floors.launch_floor). Of the kernels of one call only the
    carrier (:func:`_carriers`) keeps its work."""
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
    executed = executed_flop(kernels).to_numpy()
    out["executed_flop"] = executed
    work = [c if c != "flop" else "useful_flop" for c in WORK]
    out.loc[_other_launch(out, kernels), [*CALL, *work]] = math.nan
    out.loc[~_carriers(out, out["executed_flop"]), work] = math.nan
    out["shape_launches"] = out["config_launches"].where(out["useful_flop"].notna() | out["ideal_bytes"].notna())
    out["shape_class"] = [shape_class(rows) for rows in out["rows"]]  # known for matrix products only
    tensor = pd.to_numeric(kernels["flop_tensor"], errors="coerce").to_numpy()
    datapath_flop = out["executed_flop"].where(~(tensor > 0), tensor)  # the tensor ops where it ran any
    out["padding"] = out["useful_flop"] / datapath_flop.where(datapath_flop > 0)
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
    calls = call_work(inputs.op_calls) if inputs.op_calls is not None else None
    if calls is None and inputs.kernel_ops is not None:
        calls = kernel_calls(launch_work(metrics, inputs.kernel_ops))
    return useful_vs_executed(ncu_metrics, calls, peaks, 0.0 if pd.isna(shortest) else float(shortest))


ANALYSES = [Analysis("useful_work", version_useful_work, publish=True)]
