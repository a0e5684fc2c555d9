"""The profiled process: ``python -m capture.worker --workload NAME [workload flags]``.

Builds the workload, hooks its modules with NVTX ranges (``--module-depth``), runs ``--warmup``
iterations inside one ``warmup`` NVTX range with stage ranges silenced, then the measured
iteration with its stage ranges. ``--overhead-runs N`` then states what the module ranges cost
(:mod:`capture.workloads.overhead`; stage ranges silenced, inside the NVTX range ``module_overhead``).
``--stages-out FILE`` writes, as JSON, the stages the measured iteration entered (in order), the
module ranges installed and the overhead figures. ``--mark-operators`` (the nsys run) marks each
operator call of the first iteration and of the last warm-up iteration (the first captures CUDA
graphs, tunes and loads code once: it may launch otherwise) and the measured iteration
(:mod:`capture.workloads.ops`), then repeats the measured iteration plain: no module range, no
operator mark, its stage ranges in :data:`~generator.run_layout.REPEAT_NVTX_DOMAIN` (the capture
compares its kernels with the measured iteration's) with NVML energy and clocks read at its stage
boundaries (:mod:`capture.workloads.energy`). ``--calls-out FILE`` writes the marked iterations'
operator calls (:mod:`capture.workloads.shapes`). The JSON also holds ``tokens`` (the workload's
``generated_tokens``, see :mod:`capture.workloads`).
``--profile-plan FILE`` (the ncu run) opens the profile windows of :mod:`capture.workloads.windows`.

Under ``torchrun`` (``WORLD_SIZE`` > 1) each rank joins the process group first and runs on its own
GPU (:mod:`capture.workloads.distributed`); rank 0 writes ``--stages-out`` with every rank's record
under ``ranks`` (pid, GPU, energy, clocks, stages) and the ``link`` all-reduce measurement
(``--link``); the other ranks write their operator calls beside rank 0's as ``*.rank<N>.csv``.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from contextlib import nullcontext
from pathlib import Path

from capture.workloads import PRESETS, WorkloadError, distributed, generated_tokens, modules, overhead, resolve, stages
from capture.workloads import params as workload_params
from capture.workloads.energy import Energy
from capture.workloads.ops import Marks, Operators
from capture.workloads.shapes import Calls
from capture.workloads.windows import Plan, Windows


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m capture.worker", description=__doc__.splitlines()[0])
    p.add_argument("--workload", required=True, help="preset name or module:function")
    p.add_argument("--stages-out", type=Path, help="write the measured stages, module ranges and overhead (JSON) here")
    p.add_argument("--overhead-runs", type=int, default=0, help="iterations timed with and without module ranges")
    p.add_argument("--mark-operators", action="store_true",
                   help="mark each operator call of the first and the last warm-up iteration, and the measured iteration (NVTX)")
    p.add_argument("--calls-out", type=Path, help="write each marked operator call's shapes, FLOP and bytes (CSV) here")
    p.add_argument("--profile-plan", type=Path, help="open the ncu profile windows this plan (JSON) names")
    p.add_argument("--link", action="store_true",
                   help="under torchrun: measure all-reduce bus bandwidth after the measured iteration")
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


def _repeat(iteration, marks: Marks, device: str) -> dict:
    """The measured iteration again, plain (no module range, no operator mark), stage ranges in the
    repeat domain, NVML read at its stage boundaries: {"repeat": True, "energy": …, "clocks": …}."""
    energy = Energy(device, lambda: _synchronize(device))
    if energy.source is None:
        print(f"capture.worker: {energy.note}", file=sys.stderr)
    stages.add_hook(energy.enter)
    stages.add_exit_hook(energy.exit)
    try:
        with stages.ranges_to(*marks.repeat):
            iteration()
    finally:
        stages.remove_hook(energy.enter)
        stages.remove_exit_hook(energy.exit)
    return {"repeat": True, "energy": energy.record(), "clocks": energy.clocks()}


def run(workload: str, params: workload_params.Params, overhead_runs: int = 0, plan: Plan | None = None,
        marks: Marks | None = None, calls: Calls | None = None) -> dict:
    """Warm up (``marks``: the operator calls of the first and of the last warm-up iteration marked,
    each told to ``calls``), run the measured iteration, repeat it plain (``marks``), optionally time
    the module-range overhead. Returns {"stages": entered in order, "module_ranges": …, "module_overhead":
    … or None, "profile_windows": windows opened or None, "operator_calls": calls marked or counted (None:
    neither), "tokens": {"generated": …}, and with ``marks`` "repeat", "energy", "clocks"}."""
    iteration = resolve(workload)(params)
    depth = module_depth(workload, params)
    windows = Windows(plan) if plan is not None else None
    ranges = modules.install(iteration, depth, observer=windows)
    if windows:
        stages.add_hook(windows.stage_enter)
        stages.add_exit_hook(windows.stage_exit)
    numbered = None
    with stages.quiet(), stages.range_("warmup"):
        for left in range(params.warmup, 0, -1):
            # the first may launch as the measured one (then ncu can profile its own first); the last
            # may where the first does not (it captures graphs, tunes, loads lazily)
            if marks and (left == params.warmup or left == 1):
                with marks.operators(first=left == params.warmup, record=calls.recorder if calls else None) as marked:
                    iteration()
                numbered = marked.calls
            else:
                iteration()
        _synchronize(params.device)
    entered: list[str] = []
    stages.add_hook(entered.append)
    counted = Operators(windows.operator_enter, windows.operator_exit) if windows and plan.operators else None
    try:
        with marks.measured() if marks else nullcontext(), counted or nullcontext():
            iteration()
            _synchronize(params.device)
    finally:
        stages.remove_hook(entered.append)
    if counted:
        numbered = counted.calls
    ranges.remove()
    if windows:
        stages.remove_hook(windows.stage_enter)
        stages.remove_exit_hook(windows.stage_exit)
    repeat = _repeat(iteration, marks, params.device) if marks else {}
    cost = (overhead.measure(iteration, lambda: _synchronize(params.device), overhead_runs, depth)
            if overhead_runs and depth else None)
    return {"stages": entered, "module_ranges": ranges.describe(), "module_overhead": cost,
            "profile_windows": windows.opened if windows else None, "operator_calls": numbered,
            "tokens": {"generated": generated_tokens(iteration)}, **repeat}


def rank_calls(path: Path, rank: int) -> Path:
    """Where a rank other than 0 writes its operator calls: beside rank 0's, ``NAME.rank<N>.csv``."""
    return path if rank == 0 else path.with_name(f"{path.stem}.rank{rank}{path.suffix}")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    params = workload_params.from_namespace(args)
    rank = distributed.from_environment()
    try:
        if rank:
            params = dataclasses.replace(params, device=distributed.join(rank, params.device))
        plan = Plan.load(args.profile_plan) if args.profile_plan else None
        calls = Calls() if args.calls_out else None
        result = run(args.workload, params, args.overhead_runs, plan,
                     Marks() if args.mark_operators else None, calls)
        if calls:
            calls.write(rank_calls(args.calls_out, rank.rank if rank else 0))
        if rank:
            link = distributed.link(params.device) if args.link else None
            record = {**distributed.describe(rank, params.device),
                      **{k: result.get(k) for k in ("stages", "energy", "clocks", "tokens")}}
            ranks = distributed.gather(record)
            if ranks is None:  # not rank 0: rank 0 writes the stages file
                print(json.dumps({"rank": rank.rank, "stages": result["stages"]}))
                return 0
            result.update(ranks=ranks, link=link, world_size=rank.world_size)
    except (WorkloadError, ValueError) as exc:
        print(f"capture.worker: {exc}", file=sys.stderr)
        return 2
    finally:
        if rank:
            distributed.leave()
    if args.stages_out:
        args.stages_out.write_text(json.dumps(result, indent=1))
    print(json.dumps({"stages": result["stages"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
