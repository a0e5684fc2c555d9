"""The profiled process: ``python -m capture.worker --workload NAME [workload flags]``.

Builds the workload, runs ``--warmup`` iterations inside one ``warmup`` NVTX range with stage
ranges silenced, then the measured iteration with its stage ranges. ``--stages-out FILE`` writes
the stages the measured iteration entered, in order, as JSON.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from capture.workloads import WorkloadError, resolve, stages
from capture.workloads import params as workload_params


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m capture.worker", description=__doc__.splitlines()[0])
    p.add_argument("--workload", required=True, help="preset name or module:function")
    p.add_argument("--stages-out", type=Path, help="write the measured stages (JSON list) here")
    workload_params.add_arguments(p)
    return p


def _synchronize(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def run(workload: str, params: workload_params.Params) -> list[str]:
    """Warm up, then run the measured iteration; the stages it entered, in order."""
    iteration = resolve(workload)(params)
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
    return entered


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        entered = run(args.workload, workload_params.from_namespace(args))
    except (WorkloadError, ValueError) as exc:
        print(f"capture.worker: {exc}", file=sys.stderr)
        return 2
    if args.stages_out:
        args.stages_out.write_text(json.dumps(entered))
    print(json.dumps({"stages": entered}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
