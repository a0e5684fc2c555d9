"""`python -m generator project RUN --chip NAME_OR_FILE`: the measured workload on another chip.

RUN is a capture run directory, or with ``--report`` a version id of that report.yaml. The chip is
a shipped one (generator/chips/<name>.yaml) or a chip file (docs/projection.md has the schema).
``--validate OTHER_RUN``: the same workload captured on the target chip, to check the projection
against. ``--json OUT`` writes every figure (deterministic).
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from generator.commands import report_console, report_table
from generator.errors import InputError
from generator.languages import DEFAULT_LANG
from generator.projection_models import CHOICES, MODEL
from generator.resources import shipped

if TYPE_CHECKING:  # the rest is imported where it runs: `--help` answers without pandas or SciPy
    from rich.console import Console

    from generator.model import VersionInputs

HELP = "project a run's measured kernels onto another chip (per launch, its units' floor changes by how busy each was), with sensitivity"
NAME_SHOWN = 60


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="RUN_OR_VERSION",
                        help="capture run directory, or a version id of --report")
    parser.add_argument("--chip", required=True, metavar="NAME_OR_FILE",
                        help=f"target chip: one of {', '.join(shipped())}, or a chip YAML file")
    parser.add_argument("--report", type=Path, metavar="REPORT_YAML", help="report.yaml whose version to read")
    parser.add_argument("--validate", type=Path, metavar="OTHER_RUN",
                        help="run directory of the same workload captured on the target chip")
    parser.add_argument("--top", type=int, default=20, metavar="N", help="kernels per stage validated (default 20)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the projection as JSON")
    parser.add_argument("--model", choices=CHOICES, default=MODEL,
                        help=f"how the measured time is carried (default {MODEL}: per kernel family, each "
                             "throughput term's change weighted by how busy its unit was, plus the change of the "
                             "fixed cost per launch; excess: the floor's change, the excess over it kept)")


def read_version(report: Path, version_id: str) -> VersionInputs:
    """A report.yaml version's inputs (operator calls and module attribution not read: no projection
    reads them)."""
    from generator.pipeline.build_cache import BuildCache, default_root
    from generator.pipeline.config import load_report
    from generator.pipeline.inputs import InputCache, version_inputs

    config = load_report(report)
    ids = [v.id for v in config.versions]
    if version_id not in ids:
        raise InputError(report, f"no version {version_id!r} (versions: {', '.join(ids)})")
    with InputCache(BuildCache(default_root())) as cache:
        return version_inputs(config.versions[ids.index(version_id)], cache, report, ids.index(version_id),
                              operator_calls=False, modules=False)


def run(args: argparse.Namespace) -> int:
    if args.top < 1:
        raise InputError("--top", f"{args.top} kernels per stage; give 1 or more")
    from generator import output_dirs
    from generator.analyses.join import attach_stage_time
    from generator.analyses.projection import what_if
    from generator.pipeline.chips import check_of, load_chip, read_run, shipped_chips
    from generator.render.data_files import json_safe
    from generator.text_safety import clean_tree

    json_out = output_dirs.json_target(args.json, "project", _inputs(args)) if args.json else None
    target = load_chip(args.chip)
    inputs = read_version(args.report, args.source) if args.report else read_run(Path(args.source))
    if not len(inputs.kernel_metrics) or not len(inputs.kernel_summary):
        raise InputError(args.source, "needs nsys kernel times and ncu launches (a run captured with ncu)")
    other = check_of(args.validate) if args.validate else None
    metrics = attach_stage_time(inputs.kernel_metrics, inputs.kernel_summary)
    result = what_if(inputs, metrics, target, shipped_chips(), other, args.top, model=args.model)
    console = report_console(highlight=False, markup=False)
    _print(console, clean_tree(result))
    if json_out is not None:
        output_dirs.write_json(json_out, "project", json_safe(result))
    return 0


def _inputs(args: argparse.Namespace) -> list[Path]:
    """Every file and run directory this projection reads (what ``--json`` must not touch)."""
    paths = [Path(args.chip)] if Path(args.chip).exists() else []
    paths += [args.validate] if args.validate else []
    if not args.report:
        return [*paths, Path(args.source)]
    from generator.pipeline.config import load_report

    config = load_report(args.report)
    return [*paths, args.report, *config.input_paths()]


def _ms(ns: float | None) -> str:
    return "—" if ns is None else f"{ns / 1e6:,.3f}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:+.1f}%"


def _print(console: Console, result: dict) -> None:
    from generator.analyses.projection import KEEP_PCT

    console.print(f"{result['source']['name']} (basis: {result['source']['key']}) → {result['target']['name']}; "
                  f"model: {result['model']}")
    from generator.render.translations import translator

    console.print(translator(DEFAULT_LANG)(f"whatif.formulas.{result['model']}"))
    used = result.get("figures_used") or {}
    measured = sorted(k for k, v in used.items() if v == "measured")
    console.print("figures measured on both chips (chip probe): " + (", ".join(measured) if measured else "none")
                  + "; every other figure: datasheet on both")
    table = report_table("stage", "measured ms", "projected ms", "low–high ms", "profiled", "host gaps ms (not scaled)",
                  title="GPU kernel time per stage")
    for row in result["stages"]:
        table.add_row(row["stage"], _ms(row["measured_ns"]), _ms(row["projected_ns"]),
                      f"{_ms(row['low_ns'])}–{_ms(row['high_ns'])}", f"{row['profiled_pct']:.0f}%",
                      _ms(row["host_gap_ns"]))
    console.print(table)
    for note in result["notes"]:
        console.print(note)
    variants = list(dict.fromkeys((r["parameter"], r["factor"]) for r in result["sensitivity"]))
    table = report_table("stage", *(f"{p.replace('_', ' ')} ×{f:g}" for p, f in variants),
                  title="sensitivity: change of the stage's kernel time on the captured GPU")
    for stage in result["moves"]:
        rows = {(r["parameter"], r["factor"]): r["change_pct"] for r in result["sensitivity"] if r["stage"] == stage}
        table.add_row(stage, *(_pct(rows[v]) for v in variants))
    console.print(table)
    for stage, move in result["moves"].items():
        if not move["parameters"]:
            continue
        named = ", ".join(f"{p['parameter'].replace('_', ' ')} ({p['change_pct']:.1f}%)" for p in move["parameters"])
        kept = ", ".join(f"{k.replace('_', ' ')} f={v:g}" if v is not None else f"{k}: none"
                         for k, v in move["smallest"].items())
        console.print(f"{stage}: moved most by {named}; smallest chip keeping it within {KEEP_PCT:g}% "
                      f"(rates ×f, launch latency ×1/f): {kept}")
    if result["energy"] is None:
        console.print("energy not recorded in this capture")
    check = result["validation"]
    if check is not None and check.get("differences"):
        console.print(f"not checked against {check['run']}: it ran another program "
                      f"({'; '.join(check['differences'])}; here / there)", markup=False)
    elif check is not None:
        table = report_table("stage", "projected ms", f"measured on {check['gpu']} ms", "error", "no-change error",
                      title="validation against the capture on the target")
        for row in check["stages"]:
            table.add_row(row["stage"], _ms(row["projected_ns"]), _ms(row["measured_ns"]), _pct(row["error_pct"]),
                          _pct(row["baseline_error_pct"]))
        console.print(table)
        console.print(f"{check['matched_kernels']} top kernels matched by identity: median |error| "
                      f"{check['kernel_median_abs_error_pct']:.1f}% (no-change: "
                      f"{check['kernel_baseline_median_abs_error_pct']:.1f}%)")
