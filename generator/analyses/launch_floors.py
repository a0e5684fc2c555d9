"""The floor of every launch from that launch's own work, gathered per (stage, kernel, shape).

A launch made by a recorded operator call (ops/calls.csv, CUDA graph nodes and compiled programs
included) gets its call's floor (floors.launch_floor of the call's useful FLOP and ideal bytes), shared
by the launches the call made in one execution in proportion to their time. An ncu record applies to
the launch it profiled and to launches whose call has the same operator shapes; there the floor is a
range: DRAM bytes / bandwidth up to max(executed FLOP / peak, DRAM bytes / bandwidth) ("shapes
unknown"). A launch with neither has the range from the shortest kernel up to its own time: nothing is
borrowed from another launch. A floor never exceeds the launch's time (bytes an ideal kernel finds in
L2 need no DRAM), so Σ(measured − floor) over a group is what acting on it can save.
:func:`waiting_floors` gives the findings' kernel bounds, in a version of several ranks, a collective
kernel's floor no lower than the time its launches waited for a late peer (analyses.collectives): a
faster kernel cannot remove waiting, only balance can (the collective_wait finding).
"""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from generator.analyses.collectives import kernel_collective
from generator.analyses.floors import SHORTEST, datapath, launch_floor
from generator.analyses.registry import Analysis
from generator.analyses.roofline import Peaks
from generator.analyses.useful_work import DTYPE_BYTES, base_op, call_work, executed_flop, with_useful_work
from generator.model import ALL_STAGES, VersionInputs

SHAPES, NCU, UNKNOWN = "shapes", "ncu", "unknown"  # where a group's floor comes from
#: one row per (stage, kernel, operator shape or ncu record, basis): its launches, their measured time
#: and floor (ns; floor_ns the lower end, floor_hi_ns the upper: equal where shapes set it)
LAUNCH_FLOOR_COLUMNS = ["stage", "name", "shape", "source", "launches", "measured_ns", "floor_ns", "floor_hi_ns",
                        "basis"]


def shape_text(op: object, shapes: object, dtypes: object) -> str:
    """``mm [4096, 1024]·[1024, 1024] bfloat16``: an operator call's op, operand shapes and first dtype."""
    if not isinstance(op, str) or not op:
        return ""
    try:
        dims = json.loads(shapes) if isinstance(shapes, str) else []
        types = json.loads(dtypes) if isinstance(dtypes, str) else []
    except ValueError:
        dims, types = [], []
    operands = "·".join(str(list(d)) if isinstance(d, list) else str(d) for d in dims)
    kind = next((t for t in types if t in DTYPE_BYTES), "")
    return " ".join(p for p in (base_op(op), operands, kind) if p)


def attention_flop(op: object, shapes: object) -> float:
    """Least FLOP of a scaled-dot-product attention call from its shapes (query B·H·Lq·D, key
    B·Hk·Lk·D): 4·B·H·Lq·Lk·D (QKᵀ and PV) with an explicit mask (then not causal), half of it
    without one (a causal call computes about half); NaN for any other op."""
    if not isinstance(op, str) or "scaled_dot_product" not in op or not isinstance(shapes, str):
        return math.nan
    try:
        dims = json.loads(shapes)
    except ValueError:
        return math.nan
    if len(dims) < 3 or len(dims[0]) < 3 or len(dims[1]) < 3:
        return math.nan
    query, key = dims[0], dims[1]
    full = 4.0 * math.prod(query[:-1]) * key[-2] * query[-1]
    masked = len(dims) > 3 and isinstance(dims[3], list) and len(dims[3]) >= 2
    return full if masked else full / 2


def _ncu_records(ncu_metrics: pd.DataFrame, op_calls: pd.DataFrame | None) -> dict[tuple[str, str], dict]:
    """(stage, kernel) → its ncu record: DRAM bytes, executed FLOP, datapath, configuration and the
    operator shapes of the launch it profiled ("" where no call made it)."""
    if not len(ncu_metrics):
        return {}
    shapes: dict[tuple[str, str], str] = {}
    if op_calls is not None and len(op_calls):
        for r in op_calls.to_dict("records"):
            shapes[(r["stage"], r["name"])] = shape_text(r["op"], r["input_shapes"], r["input_dtypes"])
    executed = executed_flop(ncu_metrics)
    out = {}
    for (_, r), flop in zip(ncu_metrics.iterrows(), executed):
        num = {c: pd.to_numeric(r.get(c), errors="coerce") for c in ("dram_bytes", "flop_tensor", "flop_fp32")}
        out[(r["stage"], r["name"])] = {
            "dram_bytes": num["dram_bytes"], "flop": flop, "path": datapath(num["flop_tensor"], num["flop_fp32"]),
            "grid": str(r.get("grid")), "block": str(r.get("block")), "shape": shapes.get((r["stage"], r["name"]), ""),
        }
    return out


def ncu_range(record: dict, peaks: Peaks, shortest_ns: float) -> tuple[float, float, str]:
    """(lower, upper floor ns, basis) of one launch from its ncu record alone: DRAM bytes / bandwidth
    up to max(executed FLOP / peak, DRAM bytes / bandwidth), each at least the shortest kernel."""
    low, basis = launch_floor(shortest_ns, dram_bytes=record["dram_bytes"], dram_bytes_per_s=peaks.dram_bytes_per_s)
    peak = peaks.flop_per_s.get(record["path"])
    flop = record["flop"]
    high = max(low, 1e9 * flop / peak) if peak and flop == flop and flop > 0 else low
    return low, high, basis


def _call_floors(launches: pd.DataFrame, records: dict, peaks: Peaks, shortest_ns: float) -> pd.DataFrame:
    """Per launch with a call of known work: its share of the call's floor (by time, per execution:
    a CUDA graph node's call runs once per replay) and the basis."""
    called = launches["call"].notna() & launches["input_shapes"].notna()
    flop = pd.Series(math.nan, index=launches.index)
    ideal = flop.copy()
    if called.any():
        work = call_work(launches[called].assign(grid=math.nan, block=math.nan, config_launches=math.nan))
        flop[called], ideal[called] = work["flop"].to_numpy(), work["ideal_bytes"].to_numpy()
    attention = [attention_flop(o, d) for o, d in zip(launches["op"], launches["input_shapes"])]
    flop = flop.where(flop.notna(), pd.Series(attention, index=launches.index))
    floors, bases = [], []
    for stage, name, f, b in zip(launches["stage"], launches["name"], flop, ideal):
        path = records.get((stage, name), {}).get("path", "tensor")
        known_f, known_b = f == f and f > 0, b == b and b > 0
        if not (known_f or known_b):
            floors.append(math.nan)
            bases.append("")
            continue
        floor, basis = launch_floor(0.0, useful_flop=f if known_f else None, ideal_bytes=b if known_b else None,
                                    flop_per_s=peaks.flop_per_s.get(path), dram_bytes_per_s=peaks.dram_bytes_per_s)
        floors.append(floor if basis != SHORTEST else math.nan)
        bases.append(basis if basis != SHORTEST else "")
    out = launches.assign(call_floor=floors, call_basis=bases)
    key = out["iteration"].fillna("").astype(str) + ":" + out["call"].fillna(-1).astype(str)
    node = out["node"].where(out["node"].notna(), -1)
    executions = out.groupby([key, node])["duration_ns"].transform("size").where(out["node"].notna(), 1)
    executions = executions.groupby(key).transform("max")
    total = out.groupby(key)["duration_ns"].transform("sum")
    share = out["call_floor"] * out["duration_ns"] * executions / total.where(total > 0)
    out["floor"] = share.where(share.isna(), share.clip(lower=shortest_ns))
    out["basis"] = out["call_basis"].where(share.isna() | (share >= shortest_ns), SHORTEST)
    return out


def per_launch(launches: pd.DataFrame, ncu_metrics: pd.DataFrame, op_calls: pd.DataFrame | None, peaks: Peaks,
               shortest_ns: float) -> pd.DataFrame:
    """LAUNCH_FLOOR_COLUMNS of every launch of ``launches`` (readers.op_calls.LAUNCH_CALL_COLUMNS)."""
    records = _ncu_records(ncu_metrics, op_calls)
    out = _call_floors(launches, records, peaks, shortest_ns)
    out["shape"] = [shape_text(o, s, d) for o, s, d in zip(out["op"], out["input_shapes"], out["input_dtypes"])]
    # the launch ncu profiled: the first of the configuration carrying most of its kernel's stage time
    config_ns = out.groupby(["stage", "name", "grid", "block"], sort=False)["duration_ns"].sum().reset_index()
    top = config_ns.sort_values("duration_ns", ascending=False, kind="stable").drop_duplicates(["stage", "name"])
    first = out.reset_index().merge(top[["stage", "name", "grid", "block"]], on=["stage", "name", "grid", "block"])
    profiled = set(first.groupby(["stage", "name"])["index"].min())
    d = out["duration_ns"].astype(float)
    keys = list(zip(out["stage"], out["name"]))
    ranges = {key: ncu_range(record, peaks, shortest_ns) for key, record in records.items()}
    own = [ranges.get(key) for key in keys]
    same = [key in records and bool(text) and text == records[key]["shape"] for key, text in zip(keys, out["shape"])]
    shaped = out["floor"].notna().to_numpy()
    ncu = ~shaped & np.array([r is not None for r in own]) & (out.index.isin(list(profiled)) | np.array(same))
    low = np.where(shaped, out["floor"], np.where(ncu, [r[0] if r else math.nan for r in own], shortest_ns))
    high = np.where(shaped, out["floor"], np.where(ncu, [r[1] if r else math.nan for r in own], d))
    basis = np.where(shaped, out["basis"], np.where(ncu, [r[2] if r else "" for r in own], UNKNOWN))
    text = np.where(ncu & (out["shape"] == ""), "ncu record", out["shape"])
    return out.assign(floor_ns=np.minimum(low, d), floor_hi_ns=np.minimum(high, d), basis=basis,
                      source=np.where(shaped, SHAPES, np.where(ncu, NCU, UNKNOWN)), shape=text, measured_ns=d)


def grouped(launch_rows: pd.DataFrame) -> pd.DataFrame:
    """LAUNCH_FLOOR_COLUMNS: per-launch rows summed per (stage, kernel, shape, source, basis), the most
    measured time first within each stage (stages in first-launch order)."""
    if not len(launch_rows):
        return pd.DataFrame(columns=LAUNCH_FLOOR_COLUMNS)
    keys = ["stage", "name", "shape", "source", "basis"]
    out = launch_rows.groupby(keys, sort=False, dropna=False).agg(
        launches=("measured_ns", "size"), measured_ns=("measured_ns", "sum"), floor_ns=("floor_ns", "sum"),
        floor_hi_ns=("floor_hi_ns", "sum")).reset_index()
    order = {s: i for i, s in enumerate(dict.fromkeys(launch_rows["stage"]))}
    out = out.assign(_s=out["stage"].map(order)).sort_values(["_s", "measured_ns"], ascending=[True, False],
                                                              kind="stable")
    return out[LAUNCH_FLOOR_COLUMNS].reset_index(drop=True)


def summary_floors(summary: pd.DataFrame, kernels: pd.DataFrame, peaks: Peaks, shortest_ns: float) -> pd.DataFrame:
    """LAUNCH_FLOOR_COLUMNS where no launch table exists (no recorded calls): per kernel row of the
    nsys summary, the one launch ncu profiled (at the mean time) gets the floor of its own shapes
    where a trace gave them (``kernels``: ncu kernels with useful_work's columns), else its ncu
    record's range; the others the shortest kernel up to the measured time."""
    records = _ncu_records(kernels, None)
    shaped = {}
    if len(kernels) and "useful_flop" in kernels:
        for r in kernels.to_dict("records"):
            f, b = pd.to_numeric(r.get("useful_flop"), errors="coerce"), pd.to_numeric(r.get("ideal_bytes"), errors="coerce")
            if f == f or b == b:
                path = datapath(pd.to_numeric(r.get("flop_tensor"), errors="coerce"),
                                pd.to_numeric(r.get("flop_fp32"), errors="coerce"))
                shaped[(r["stage"], r["name"])] = launch_floor(
                    shortest_ns, useful_flop=f, ideal_bytes=b, flop_per_s=peaks.flop_per_s.get(path),
                    dram_bytes_per_s=peaks.dram_bytes_per_s)
    rows = []
    for r in summary.to_dict("records"):
        count, total = pd.to_numeric(r.get("count"), errors="coerce"), pd.to_numeric(r.get("total_ns"), errors="coerce")
        if not (count == count and total == total and count >= 1):
            continue
        mean = total / count
        record = records.get((r["stage"], r["name"]))
        others = count
        if (r["stage"], r["name"]) in shaped:
            floor, basis = shaped[(r["stage"], r["name"])]
            rows.append((r["stage"], r["name"], "traced shapes", SHAPES, 1, mean, min(floor, mean), min(floor, mean),
                         basis))
            others -= 1
        elif record is not None:
            lo, hi, basis = ncu_range(record, peaks, shortest_ns)
            rows.append((r["stage"], r["name"], "ncu record", NCU, 1, mean, min(lo, mean), min(hi, mean), basis))
            others -= 1
        if others:
            rows.append((r["stage"], r["name"], "", UNKNOWN, int(others), mean * others,
                         min(shortest_ns, mean) * others, mean * others, UNKNOWN))
    return pd.DataFrame(rows, columns=LAUNCH_FLOOR_COLUMNS)


def shortest_kernel(summary: pd.DataFrame) -> float:
    """The shortest kernel the GPU ran in the capture (any stage), 0 when no duration is known."""
    shortest = pd.to_numeric(summary["min_ns"], errors="coerce").min() if len(summary) else math.nan
    return 0.0 if pd.isna(shortest) else float(shortest)


def measured_rows(summary: pd.DataFrame) -> pd.DataFrame:
    """The nsys summary rows of the measured stages (the whole capture where it is the only one)."""
    staged = summary["stage"] != ALL_STAGES
    return summary[staged] if staged.any() else summary


def waiting_floors(groups: pd.DataFrame, instances: pd.DataFrame | None) -> pd.DataFrame:
    """``groups`` (LAUNCH_FLOOR_COLUMNS) with each collective kernel's floor raised to at least the time
    its launches waited (collectives.INSTANCE_COLUMNS of every rank, summed per stage and collective and
    shared among that collective's groups of the stage in proportion to their time)."""
    if instances is None or not len(instances) or not len(groups):
        return groups
    waits = {k: float(v) for k, v in instances.groupby(["stage", "collective"])["wait_ns"].sum().items()}
    keys = [(stage, kernel_collective(str(name))) for stage, name in zip(groups["stage"], groups["name"])]
    measured = groups["measured_ns"].astype(float).to_numpy()
    kind_ns: dict[tuple, float] = {}
    for key, m in zip(keys, measured):
        kind_ns[key] = kind_ns.get(key, 0.0) + m
    share = np.array([m * waits.get(k, 0.0) / kind_ns[k] if k[1] and kind_ns[k] > 0 else 0.0
                      for k, m in zip(keys, measured)])
    low = np.minimum(np.maximum(groups["floor_ns"].astype(float).to_numpy(), share), measured)
    return groups.assign(floor_ns=low, floor_hi_ns=np.maximum(groups["floor_hi_ns"].astype(float).to_numpy(), low))


def version_launch_floors(ncu_metrics: pd.DataFrame, useful_work: pd.DataFrame, inputs: VersionInputs,
                          peaks: Peaks) -> pd.DataFrame:
    """LAUNCH_FLOOR_COLUMNS of the version's measured stages: launch by launch where a run recorded
    its operator calls, else per nsys kernel row."""
    shortest = shortest_kernel(inputs.kernel_summary)
    if inputs.launch_calls is not None and len(inputs.launch_calls):
        return grouped(per_launch(inputs.launch_calls, ncu_metrics, inputs.op_calls, peaks, shortest))
    return summary_floors(measured_rows(inputs.kernel_summary), with_useful_work(ncu_metrics, useful_work), peaks,
                          shortest)


ANALYSES = [Analysis("launch_floors", version_launch_floors, publish=True)]
