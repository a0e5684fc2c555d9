"""``python -m capture``: run, sweep and list-workloads."""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from capture import commands as cmd
from capture.commands import OVERHEAD_RUNS
from capture.manifest import PhaseFailed, create_run_dir
from capture.sweep import apply, label, parse_grid, points, write_report
from capture.tools import CaptureError
from capture.workloads import PRESETS, WorkloadError, check_name, resolve
from capture.workloads import params as workload_params
from generator.errors import InputError

if TYPE_CHECKING:  # capture.run (pandas, the readers) is imported where a capture runs: `--help` answers at once
    from capture.run import RunConfig


def _say(text: str) -> None:
    try:
        from rich.console import Console

        Console(stderr=True).log(text)
    except ImportError:
        print(text, file=sys.stderr, flush=True)


def _capture_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workload", required=True, help="preset (see list-workloads) or module:function")
    p.add_argument("--out", type=Path, default=Path("runs"),
                   help="parent directory of the run directory (default: runs)")
    p.add_argument("--top-n", type=int, default=20, help="kernels to select per list (default 20)")
    p.add_argument("--stages", nargs="+", help="only these measured stages (default: all the workload enters)")
    p.add_argument("--nsys", help="nsys executable (default: $NSYS, then PATH)")
    p.add_argument("--ncu", help="ncu executable (default: $NCU, then PATH)")
    p.add_argument("--skip-ncu", action="store_true", help="nsys pass and top-N only")
    p.add_argument("--include-nccl", action="store_true", help="let NCCL kernels into the top-N")
    p.add_argument("--set", dest="ncu_set", help="ncu section set to add (e.g. full: everything ncu can collect)")
    p.add_argument("--section", dest="ncu_sections", action="append",
                   help=f"ncu section (repeatable; default: {', '.join(cmd.DEFAULT_SECTIONS)})")
    p.add_argument("--metrics", dest="ncu_metrics",
                   help="extra ncu metrics, comma-separated (the report's own metrics are always collected)")
    p.add_argument("--all-launch-configs", action="store_true",
                   help="profile one launch per launch configuration in every stage, not one per (kernel, stage)")
    p.add_argument("--overhead-runs", type=int,
                   help=f"iterations timed with and without module ranges during the nsys pass (0: none; default "
                        f"{OVERHEAD_RUNS})")
    p.add_argument("--clock-control", default="none", choices=["none", "base"], help="ncu clock control")
    p.add_argument("--nproc-per-node", type=int, default=1, metavar="N",
                   help="run the workload as N ranks under torchrun, one per GPU; nsys records every rank (default 1)")
    p.add_argument("--ncu-rank", type=int, default=0, metavar="R",
                   help="with --nproc-per-node: the rank ncu profiles while the others run unprofiled (default 0)")
    p.add_argument("--dry-run", action="store_true", help="print the exact commands and exit")
    p.add_argument("--probe-chip", action="store_true",
                   help="first run the chip probe (about a minute) and record its figures in the manifest")
    workload_params.add_arguments(p)


def _config(args: argparse.Namespace, run_dir: Path, params: workload_params.Params) -> RunConfig:
    from capture.run import RunConfig

    return RunConfig(
        workload=args.workload, params=params, run_dir=run_dir, top_n=args.top_n,
        stages=tuple(args.stages) if args.stages else None, nsys=args.nsys, ncu=args.ncu,
        skip_ncu=args.skip_ncu, include_nccl=args.include_nccl, ncu_set=args.ncu_set,
        ncu_sections=tuple(args.ncu_sections or cmd.DEFAULT_SECTIONS),
        ncu_metrics=tuple(dict.fromkeys([*cmd.REPORT_METRICS, *(m for m in (args.ncu_metrics or "").split(",") if m)])),
        all_launch_configs=args.all_launch_configs,
        overhead_runs=OVERHEAD_RUNS if args.overhead_runs is None else args.overhead_runs,
        clock_control=args.clock_control, nproc_per_node=args.nproc_per_node, ncu_rank=args.ncu_rank,
        probe_chip=args.probe_chip,
    )


def check_ranks(args: argparse.Namespace) -> None:
    """WorkloadError for rank options that cannot run together."""
    n, tp = args.nproc_per_node, args.tp
    if n < 1:
        raise WorkloadError(f"--nproc-per-node must be at least 1 (got {n})")
    if not 0 <= args.ncu_rank < n:
        raise WorkloadError(f"--ncu-rank must name one of the {n} ranks, 0 to {n - 1} (got {args.ncu_rank})")
    if n > 1 and args.include_nccl:
        raise WorkloadError("--include-nccl with several ranks: ncu would replay collectives that the other, "
                            "unprofiled ranks never join again")
    if tp is not None and (tp < 1 or tp != n):
        raise WorkloadError(f"--tp {tp} needs --nproc-per-node {tp} (one rank per tensor-parallel part; got {n})")


def _dry_run(cfg: RunConfig) -> None:
    from capture.run import planned_commands
    from capture.targets import ncu_params_note

    nsys = cfg.nsys or os.environ.get("NSYS") or shutil.which("nsys") or "nsys"
    ncu = None if cfg.skip_ncu else (cfg.ncu or os.environ.get("NCU") or shutil.which("ncu") or "ncu")
    print(f"# run directory: {cfg.run_dir}")
    for step, argv, stdout in planned_commands(cfg, nsys, ncu):
        print(f"# {step}")
        note = ncu_params_note(cfg.params) if "--profile-plan" in argv else None
        if note:
            print(f"# {note}")
        print(shlex.join(argv) + (f" > {shlex.quote(str(stdout))}" if stdout else ""))


def _one(cfg: RunConfig, dry_run: bool) -> int:
    if dry_run:
        _dry_run(cfg)
        return 0
    from capture.run import capture

    man = capture(cfg, _say)
    cov = man.data.get("coverage")
    if cov:
        _say(f"ncu coverage: {cov['profiled']}/{cov['top_n']} of the top-{cfg.top_n}, "
             f"{cov['selected_profiled']}/{cov['selected']} of all selected")
    _say(f"{man.data['status']}: {cfg.run_dir}")
    return 0 if man.data["status"] == "ok" else 1


def cmd_run(args: argparse.Namespace) -> int:
    name = args.name or f"{args.workload.replace(':', '-')}-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
    return _one(_config(args, args.out / name, workload_params.from_namespace(args)), args.dry_run)


def cmd_sweep(args: argparse.Namespace) -> int:
    grid = parse_grid(args.grid)
    base = workload_params.from_namespace(args)
    name = args.name or f"{args.workload.replace(':', '-')}-sweep"
    sweep_dir = args.out / name
    runs, failed = [], 0
    if not args.dry_run:
        create_run_dir(sweep_dir)
    for point in points(grid):
        cfg = _config(args, sweep_dir / label(point), apply(base, point))
        try:
            failed += _one(cfg, args.dry_run)
        except PhaseFailed as exc:
            _say(f"failed: {cfg.run_dir}: {exc}")
            failed += 1
        runs.append((point, label(point)))
    if not args.dry_run:
        _say(f"wrote {write_report(sweep_dir, args.workload, grid, runs)}")
    return 1 if failed else 0


def cmd_list(args: argparse.Namespace) -> int:
    for name, (_, stages, description) in PRESETS.items():
        print(f"{name:12} stages: {', '.join(stages):40} {description}")
    return 0


def cmd_probe(args: argparse.Namespace) -> int:
    from capture import chip_probe

    return chip_probe.run(args)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m capture", description="Capture a workload under nsys and ncu.")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="capture one workload into a new run directory",
                         description="nsys pass, top-N kernels, one ncu pass over all of them; writes <out>/<name>/")
    _capture_arguments(run)
    run.add_argument("--name", help="run directory name (default: <workload>-<UTC time>)")
    run.set_defaults(func=cmd_run)
    sweep = sub.add_parser("sweep", help="one capture per point of a parameter grid, plus report.yaml",
                           description="e.g. --grid image_size=224,448 batch=1,4")
    _capture_arguments(sweep)
    sweep.add_argument("--grid", nargs="+", required=True, metavar="NAME=V1,V2", help="workload parameters to vary")
    sweep.add_argument("--name", help="sweep directory name (default: <workload>-sweep)")
    sweep.set_defaults(func=cmd_sweep)
    probe = sub.add_parser("chip-probe", help="measure what the GPU at hand can do; write a chip file",
                           description="about a minute of microbenchmarks (DRAM, L2, tensor and FP32 peaks, launch "
                                       "floor; peer copy and all-reduce with 2+ GPUs), written as a chip file whose "
                                       "figures are measured, beside the raw records (FILE.raw.json)")
    from capture.chip_probe import add_arguments as probe_arguments

    probe_arguments(probe)
    probe.set_defaults(func=cmd_probe)
    lst = sub.add_parser("list-workloads", help="the preset workloads and their stages")
    lst.set_defaults(func=cmd_list)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if getattr(args, "workload", None):  # a bad name fails here, before any tool runs
            check_name(args.workload)
            check_ranks(args)
            if args.func is cmd_sweep and not args.dry_run:  # before the sweep's folder is made; a run's
                resolve(args.workload)  # capture imports it beside the environment probe (run.check)
        return args.func(args)
    except (CaptureError, WorkloadError) as exc:
        print(f"capture: {exc}", file=sys.stderr)
        return 2
    except (PhaseFailed, InputError) as exc:
        print(f"capture: {exc}", file=sys.stderr)
        return 1
