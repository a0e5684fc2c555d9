"""The profiled process: ``python -m capture.worker --workload NAME [workload flags]``.

Builds the workload, hooks its modules with NVTX ranges (``--module-depth``), runs ``--warmup``
iterations inside one ``warmup`` NVTX range with stage ranges silenced, then the measured
iteration with its stage ranges. ``--overhead-runs N`` then times N iterations with and N without
the module ranges (alternating, stage ranges silenced, inside the NVTX range ``module_overhead``).
``--stages-out FILE`` writes, as JSON, the stages the measured iteration entered (in order), the
module ranges installed and the overhead figures. ``--profile-plan FILE`` (the ncu run) opens the
profile windows of :mod:`capture.workloads.windows`.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from capture.workloads import PRESETS, WorkloadError, modules, resolve, stages
from capture.workloads import params as workload_params
from capture.workloads.windows import Plan, Windows

OVERHEAD_RANGE = "module_overhead"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m capture.worker", description=__doc__.splitlines()[0])
    p.add_argument("--workload", required=True, help="preset name or module:function")
    p.add_argument("--stages-out", type=Path, help="write the measured stages, module ranges and overhead (JSON) here")
    p.add_argument("--overhead-runs", type=int, default=0, help="iterations timed with and without module ranges")
    p.add_argument("--profile-plan", type=Path, help="open the ncu profile windows this plan (JSON) names")
    workload_params.add_arguments(p)
    return p


def _synchronize(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def module_depth(workload: str, params: workload_params.Params) -> int:
    """``--module-depth``, else the default: presets PRESET_DEPTH, module:function 0."""
    if params.module_depth is not None:
        return params.module_depth
    return modules.PRESET_DEPTH if workload in PRESETS else 0


def overhead(iteration, params: workload_params.Params, runs: int, depth: int) -> dict:
    """Median wall time per stage with and without the module ranges over ``runs`` alternating
    pairs, and the relative overhead on the sum of the stages."""
    timed: dict[bool, list[dict[str, float]]] = {False: [], True: []}
    with stages.quiet(), stages.range_(OVERHEAD_RANGE):
        for _ in range(runs):
            for hooked in (False, True):
                ranges = modules.install(iteration, depth if hooked else 0)
                with stages.timed({}, lambda: _synchronize(params.device)) as seconds:
                    iteration()
                ranges.remove()
                timed[hooked].append(seconds)
    names = list(dict.fromkeys(s for run in timed[False] for s in run))
    med = {h: {s: statistics.median(run.get(s, 0.0) for run in timed[h]) for s in names} for h in timed}
    total = {h: sum(med[h].values()) for h in med}
    return {
        "runs": runs,
        "stages": {s: {"without_s": med[False][s], "with_s": med[True][s],
                       "overhead_pct": 100.0 * (med[True][s] / med[False][s] - 1) if med[False][s] else None}
                   for s in names},
        "total": {"without_s": total[False], "with_s": total[True],
                  "overhead_pct": 100.0 * (total[True] / total[False] - 1) if total[False] else None},
    }


def run(workload: str, params: workload_params.Params, overhead_runs: int = 0, plan: Plan | None = None) -> dict:
    """Warm up, run the measured iteration, optionally time the module-range overhead.
    Returns {"stages": entered in order, "module_ranges": …, "module_overhead": … or None,
    "profile_windows": windows opened or None}."""
    iteration = resolve(workload)(params)
    depth = module_depth(workload, params)
    windows = Windows(plan) if plan is not None else None
    ranges = modules.install(iteration, depth, observer=windows)
    if windows:
        stages.add_hook(windows.stage_enter)
        stages.add_exit_hook(windows.stage_exit)
    with stages.quiet(), stages.range_("warmup"):
        for _ in range(params.warmup):
            iteration()
        _synchronize(params.device)
    entered: list[str] = []
    stages.add_hook(entered.append)
    try:
        iteration()
        _synchronize(params.device)
    finally:
        stages.remove_hook(entered.append)
    ranges.remove()
    if windows:
        stages.remove_hook(windows.stage_enter)
        stages.remove_exit_hook(windows.stage_exit)
    cost = overhead(iteration, params, overhead_runs, depth) if overhead_runs and depth else None
    return {"stages": entered, "module_ranges": ranges.describe(), "module_overhead": cost,
            "profile_windows": windows.opened if windows else None}


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        plan = Plan.load(args.profile_plan) if args.profile_plan else None
        result = run(args.workload, workload_params.from_namespace(args), args.overhead_runs, plan)
    except (WorkloadError, ValueError) as exc:
        print(f"capture.worker: {exc}", file=sys.stderr)
        return 2
    if args.stages_out:
        args.stages_out.write_text(json.dumps(result, indent=1))
    print(json.dumps({"stages": result["stages"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
