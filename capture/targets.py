"""Which launch ncu profiles for each selected (kernel, stage), and the windows that reach it.

For every kernel in a stage's selection (or the overall top-N, in each stage it ran in), the
representative launch is the first launch with the launch configuration that carries most of the
kernel's GPU time in that stage (generator.readers.nsys_sqlite.representative_launches); its
profile window (capture.workloads.windows) is the operator call that made it, else the module call
it ran in, or the stretch of the stage between module calls. The metrics ncu measures there are
then true of that stage.
"""
from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path

import pandas as pd

from capture.topn import TopN
from capture.workloads.params import Params, to_argv
from capture.workloads.windows import Plan
from generator.readers.base import plain_file
from generator.readers.nsys_sqlite import representative_launches
from generator.run_layout import FIRST_OP_RANGE, MODULE_NVTX_DOMAIN, OPS_NVTX_DOMAIN


def targets(sqlite: Path, top: TopN) -> pd.DataFrame:
    """The representative launch of each (stage, kernel) to profile: every kernel of a stage's list
    in that stage, and every overall top-N kernel in each stage it ran in (REPRESENTATIVE_COLUMNS)."""
    stages = list(top.per_stage)
    with plain_file(sqlite) as plain:
        table = representative_launches(plain, stages, [k.name for k in top.selected()], MODULE_NVTX_DOMAIN,
                                        OPS_NVTX_DOMAIN)
    overall = {k.name for k in top.overall}
    listed = {(stage, k.name) for stage, kernels in top.per_stage.items() for k in kernels}
    keep = [name in overall or (stage, name) in listed for stage, name in zip(table["stage"], table["name"])]
    return table[keep].reset_index(drop=True)


def windows_plan(table: pd.DataFrame) -> Plan:
    """The windows that reach every target launch."""
    result = Plan()
    result.first = bool((table["marked"] == FIRST_OP_RANGE).any())  # the iteration numbering every operator call
    for row in table.itertuples(index=False):
        if pd.notna(row.operator):
            result.operators.add(int(row.operator))
        elif isinstance(row.module, str):
            result.modules.setdefault(row.module, set()).add(int(row.occurrence))
        else:
            result.gaps.setdefault(row.stage, set()).add((int(row.instance), int(row.modules_ended)))
    return result


def launch_count(table: pd.DataFrame, plan: Plan) -> int:
    """ncu's launches per launch configuration: as many as targets share one (a configuration run in
    two stages) when every window is one operator call, so no other launch of it is in a window; 1
    otherwise, as a module call's window holds other launches of the configurations it targets."""
    if not plan.operators_only:
        return 1
    return int(table.groupby(["name", "grid", "block", "shared_mem_bytes"]).size().max())


def ncu_params(params: Params, plan: Plan) -> Params:
    """The ncu run's workload parameters for ``plan``: when every window is an operator call, no
    module ranges and no warm-up where the nsys run's first iteration numbered the calls (``first``),
    else one warm-up iteration fewer; otherwise the nsys run's.

    Operator windows exist only where a marked iteration of the nsys run (its first, else its last
    warm-up) launched exactly as its measured one did, so the ncu run's iteration of that number
    launches alike, and under ncu every iteration costs seconds. Measuring the first iteration costs
    less again: ncu's replay of a launch slows with the code the process has loaded (a runtime-compiled
    cuDNN attention kernel per decode step of ocr-vlm: 0.5-0.7 s a launch after one step, 1.1-1.4 s after
    32; tests/data/ncu-replay-h100), and only the first iteration profiles a launch before the steps
    after it load theirs. No operator window needs a module range, while ncu's NVTX tracking of them
    costs seconds per iteration (5,746 calls an iteration of ocr-vlm). A module window counts its
    module's calls from the process's start, warm-ups included, and a gap window counts module calls,
    so a plan with either keeps both.
    """
    if not plan.operators_only:
        return params
    return dataclasses.replace(params, warmup=0 if plan.first else params.warmup - 1, module_depth=0)


def ncu_params_note(params: Params) -> str | None:
    """What ``--dry-run`` says of the ncu worker's parameters, which only the plan decides (None:
    without a warm-up iteration nothing is marked, so no window is an operator call)."""
    if params.warmup < 1:
        return None
    first = shlex.join(to_argv(ncu_params(params, Plan(operators={1}, first=True))))
    note = ("if every profile window is an operator call (known after the nsys pass), the worker runs with "
            f"{first} where the first iteration launched as the measured one")
    if params.warmup > 1:
        note += f", else with {shlex.join(to_argv(ncu_params(params, Plan(operators={1}))))}"
    return note


def describe(table: pd.DataFrame) -> list[dict]:
    """Manifest entries: stage, kernel, configuration and its share, and the window."""
    out = []
    for row in table.itertuples(index=False):
        if pd.notna(row.operator):
            window = {"operator_call": int(row.operator), "module": row.module if isinstance(row.module, str) else None}
        elif isinstance(row.module, str):
            window = {"module": row.module, "call": int(row.occurrence)}
        else:
            window = {"stage_instance": int(row.instance), "after_module_calls": int(row.modules_ended)}
        out.append({
            "stage": row.stage, "kernel": row.name, "grid": row.grid, "block": row.block,
            "shared_mem_bytes": int(row.shared_mem_bytes), "config_launches": int(row.config_launches),
            "config_share_pct": round(100.0 * row.config_ns / row.stage_ns, 2) if row.stage_ns else None,
            "configs_in_stage": int(row.configs), "launches_in_stage": int(row.stage_launches),
            "graph_node": int(row.graph_node) if pd.notna(row.graph_node) else None,
            "window": window,
        })
    return out
