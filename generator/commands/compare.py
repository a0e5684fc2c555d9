"""`python -m generator compare BASELINE CURRENT`: the regression gate over two profiles.

BASELINE and CURRENT are each a capture run directory (analyzed here), a version's data directory
(``data/ncu_metrics.csv``, e.g. ``site/<version>/`` or ``site_src/<report>/<version>/docs/``), a
``summary.json`` (its overall means only) or an ncu report/CSV (means per kernel name). Exit status:
1 when a kernel's duration regressed beyond the threshold (other metrics are context), 0 otherwise,
2 on bad input. When the two sides ran on different GPUs (gpu_change), the JSON says so
(``gpu_changed``, both GPUs) and one line on stderr too; the exit status stays the same (README).
"""
from __future__ import annotations

import argparse
import json
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console
from rich.table import Table

from generator.analyses.gpu_change import gpu_change
from generator.analyses.naming import name_kernels
from generator.analyses.regression import (
    CONTEXT,
    DEFAULT_METRICS,
    DEFAULT_THRESHOLD_PCT,
    IMPROVEMENT,
    REGRESSION,
    WATCHABLE,
    Comparison,
    compare,
)
from generator.errors import InputError
from generator.metric_table import DISPLAY
from generator.model import ALL_STAGES, GPU_IDENTITY, GpuInfo
from generator.render.data_files import NCU_METRICS_CSV, SUMMARY_JSON, json_safe
from generator.run_layout import MANIFEST

HELP = "compare kernels of two runs/versions/files; exit 1 when one got slower beyond the threshold"
#: summary.json: the one "kernel" its overall means describe
OVERALL = "overall_means"
NAME_SHOWN = 60
CI_WIDTH = 150  # console width when stdout is not a terminal (CI logs)


def threshold(text: str) -> float:
    """``5%`` or ``5`` → 5.0 (percent of the baseline value)."""
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage such as 5%, got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"the threshold must be 0% or more, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("baseline", type=Path, metavar="BASELINE",
                        help="run directory, version data directory, summary.json or ncu file")
    parser.add_argument("current", type=Path, metavar="CURRENT", help="the same kinds of input as BASELINE")
    parser.add_argument("--threshold", type=threshold, default=DEFAULT_THRESHOLD_PCT, metavar="PCT",
                        help=f"relative change that counts (default: {DEFAULT_THRESHOLD_PCT:g}%%)")
    parser.add_argument("--metrics", nargs="+", default=list(DEFAULT_METRICS), metavar="METRIC",
                        help=f"watched metrics, space or comma separated (default: {','.join(DEFAULT_METRICS)}; "
                             + "; ".join(f"{m}: {d} is better" for m, d in WATCHABLE.items()) + ")")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the comparison as JSON (deterministic)")


def run(args: argparse.Namespace) -> int:
    metrics = list(dict.fromkeys(m for item in args.metrics for m in item.split(",") if m))
    unknown = [m for m in metrics if m not in WATCHABLE]
    if unknown or not metrics:
        raise InputError("--metrics", f"unknown metric {', '.join(unknown) or '(none)'}; one of {', '.join(WATCHABLE)}")
    baseline, current = kernel_table(args.baseline), kernel_table(args.current)
    result = compare(baseline.table, current.table, metrics, args.threshold)
    if not len(result.rows):
        raise InputError(args.current, f"no kernel matches one of {args.baseline}")
    gpus = gpu_change(baseline.gpu, current.gpu)
    console = Console(highlight=False, width=None if sys.stdout.isatty() else CI_WIDTH)
    _print(console, result, _display_names(baseline.table, current.table))
    if gpus is not None and gpus["changed"]:
        print(f"compare: {gpu_line(gpus)}", file=sys.stderr)
    if args.json:
        report = {"baseline": str(args.baseline), "current": str(args.current), **result.as_dict(),
                  "baseline_gpu": baseline.gpu, "current_gpu": current.gpu,
                  "gpu_changed": None if gpus is None else gpus["changed"]}
        text = json.dumps(json_safe(report), sort_keys=True, indent=2, ensure_ascii=False)
        args.json.write_text(text + "\n", encoding="utf-8")
    return 1 if result.failed() else 0


@dataclass
class Side:
    """One side of the comparison: its kernel table and its GPU (GPU_IDENTITY facts; None: unknown)."""

    table: pd.DataFrame
    gpu: dict[str, Any] | None


_FACT_WORDS = {"compute_capability": "compute capability", "sm_count": "SMs"}


def gpu_line(change: dict[str, Any]) -> str:
    """The GPUs of a changed gpu_change in one line: names and the other facts that differ."""
    before, after = change["previous"], change["current"]

    def fact(key: str) -> str:
        if key == "memory_clock_hz":
            return f"memory clock {before[key] / 1e6:,.0f} → {after[key] / 1e6:,.0f} MHz"
        return f"{_FACT_WORDS[key]} {before[key]} → {after[key]}"

    facts = "".join(f", {fact(key)}" for key in change["differs"] if key != "name")
    return (f"the baseline ran on {before['name'] or 'an unknown GPU'}, the current profile on "
            f"{after['name'] or 'an unknown GPU'}{facts}: differences mix hardware and code")


def kernel_table(path: Path) -> Side:
    """One row per kernel: ``name``, ``friendly_name`` (the input's, else derived from the name) and the
    WATCHABLE metrics the input has; and the GPU the input ran on where it says."""
    if path.is_dir():
        if (path / MANIFEST).is_file():
            return _from_run(path)
        for csv in (path / NCU_METRICS_CSV, path / Path(NCU_METRICS_CSV).name):
            if csv.is_file():
                summary = csv.parent.parent / SUMMARY_JSON if csv.parent.name == "data" else None
                return Side(_from_csv(csv), _summary_gpu(summary) if summary and summary.is_file() else None)
        raise InputError(path, "neither a capture run directory (manifest.json) nor a version's data "
                               "directory (data/ncu_metrics.csv)")
    if not path.exists():
        raise InputError(path, "no such file or directory")
    if path.suffix == ".json":
        return Side(_from_summary(path), _summary_gpu(path))
    return _from_profile(path)


def _identity(gpus: list[GpuInfo]) -> dict[str, Any] | None:
    return gpus[0].identity() if gpus else None


def _per_kernel(metrics: pd.DataFrame) -> pd.DataFrame:
    """Canonical per-launch or per-kernel metrics → one row per name and stage (the launch's NVTX
    stage or the version's stage column; ALL_STAGES where unknown), display units (means)."""
    stage = metrics["stage"] if "stage" in metrics else pd.Series(None, index=metrics.index, dtype=object)
    table = pd.DataFrame({"name": metrics["name"], "stage": stage.fillna(ALL_STAGES).astype(str)})
    for key in WATCHABLE:
        metric = DISPLAY[key]
        if metric.source in metrics:
            table[key] = pd.to_numeric(metrics[metric.source]) * metric.scale
    table = table.dropna(subset=["name"]).groupby(["stage", "name"], sort=True).mean().reset_index()
    if "friendly_name" in metrics:
        table["friendly_name"] = table["name"].map(metrics.drop_duplicates("name").set_index("name")["friendly_name"])
    else:
        names = name_kernels(table["name"])
        table["friendly_name"] = [names[n].friendly_name for n in table["name"]]
    return table


def _from_run(run: Path) -> Side:
    from generator.analyses.version import AnalysisSettings, analyze_version
    from generator.pipeline.config import Inputs, VersionConfig
    from generator.pipeline.inputs import InputCache, version_inputs

    with InputCache() as cache:
        inputs = version_inputs(VersionConfig.model_construct(runs=[run], inputs=Inputs()), cache,
                                run / MANIFEST, 0)
    return Side(_per_kernel(analyze_version(run.name, inputs, AnalysisSettings()).ncu_metrics), _identity(inputs.gpus))


def _from_csv(path: Path) -> pd.DataFrame:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)  # a ragged first row
            frame = pd.read_csv(path, index_col=False, dtype={"name": str}, keep_default_na=False, na_values=[""])
    except (pd.errors.ParserError, pd.errors.ParserWarning, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise InputError(path, f"not a readable CSV ({' '.join(str(exc).split())})") from None
    missing = [c for c in ("name", "duration_ns") if c not in frame.columns]
    if missing:
        raise InputError(path, f"missing column {', '.join(missing)} (not an ncu_metrics.csv)")
    try:
        return _per_kernel(frame)
    except ValueError as exc:
        raise InputError(path, f"non-numeric metric value ({exc})") from None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(path, f"not valid JSON ({exc})") from None


#: GPU_IDENTITY fact → the JSON types summary.json may give it, and their name
_GPU_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "name": ((str,), "text"), "compute_capability": ((str,), "text"), "sm_count": ((int,), "a whole number"),
    "memory_clock_hz": ((int, float), "a number")}


def _summary_gpu(path: Path) -> dict[str, Any] | None:
    """The ``gpu`` of a version's summary.json (GPU_IDENTITY facts), None where it has none."""
    data = _read_json(path)
    gpu = data.get("gpu") if isinstance(data, dict) else None
    if gpu is None:
        return None
    if not isinstance(gpu, dict):
        raise InputError(path, "'gpu' is not an object")
    for key in GPU_IDENTITY:
        value = gpu.get(key)
        types, kind = _GPU_TYPES[key]
        if value is not None and (isinstance(value, bool) or not isinstance(value, types)):
            raise InputError(path, f"gpu.{key} is not {kind}")
    return {key: gpu.get(key) for key in GPU_IDENTITY}


def _from_summary(path: Path) -> pd.DataFrame:
    data = _read_json(path)
    means = data.get("overall_means") if isinstance(data, dict) else None
    if not isinstance(means, dict):
        raise InputError(path, "no 'overall_means' object (not a version's summary.json)")
    values = {m: means.get(m) for m in WATCHABLE}
    bad = [m for m, v in values.items() if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)))]
    if bad:
        raise InputError(path, f"overall_means.{bad[0]} is not a number")
    return pd.DataFrame([{"name": OVERALL, **{m: float("nan") if v is None else float(v) for m, v in values.items()}}])


def _from_profile(path: Path) -> Side:
    from generator.pipeline.inputs import InputCache

    with InputCache() as cache:
        dataset = cache.read(path)
    metrics = dataset.kernel_metrics
    if metrics is None or not len(metrics):
        raise InputError(path, "holds no per-launch kernel metrics (give an ncu report or CSV, a run directory, "
                               "a version's data directory or a summary.json)")
    return Side(_per_kernel(metrics), _identity(dataset.gpus))


def _display_names(*tables: pd.DataFrame) -> dict[str, str]:
    """Raw name → friendly name (else the raw name), cut to NAME_SHOWN characters."""
    names: dict[str, str] = {}
    for table in tables:
        for name, nice in zip(table["name"], table.get("friendly_name", table["name"])):
            shown = nice if isinstance(nice, str) and nice else name
            names.setdefault(name, shown if len(shown) <= NAME_SHOWN else shown[: NAME_SHOWN - 1] + "…")
    return names


def _context(result: Comparison, kernel: str, stage: object) -> str:
    """The kernel's context metrics in that stage and their relative change, e.g. "sm_throughput_pct −12.3%"."""
    same_stage = result.rows["stage"].isna() if stage is None or stage != stage else result.rows["stage"] == stage
    rows = result.rows[(result.rows["kernel"] == kernel) & same_stage & (result.rows["status"] == CONTEXT)]
    return ", ".join(f"{r['metric']} {r['rel_pct']:+.1f}%" for r in rows.to_dict("records")
                     if r["rel_pct"] == r["rel_pct"])


def _print(console: Console, result: Comparison, names: dict[str, str]) -> None:
    shown = result.rows[result.rows["status"].isin([REGRESSION, IMPROVEMENT])]
    if len(shown):
        table = Table("kernel", "stage", "baseline µs", "current µs", "change", "status", "context",
                      title="kernel duration changes (duration decides; the rest is context)")
        for row in shown.to_dict("records"):
            style = "red" if row["status"] == REGRESSION else "green"
            stage = row["stage"] if isinstance(row["stage"], str) else ""
            table.add_row(names.get(row["kernel"], row["kernel"]), stage,
                          f"{row['baseline']:,.2f}", f"{row['current']:,.2f}", f"{row['rel_pct']:+.1f}%",
                          f"[{style}]{row['status']}[/{style}]", _context(result, row["kernel"], row["stage"]))
        console.print(table)
    counts = result.as_dict()["counts"]
    console.print(f"{result.rows['kernel'].nunique()} kernels matched ({len(result.only_baseline)} only in the "
                  f"baseline, "
                  f"{len(result.only_current)} only in the current); threshold {result.threshold_pct:g}%: "
                  f"{counts[REGRESSION]} slower, {counts[IMPROVEMENT]} faster, "
                  f"{counts['unknown']} unknown.")
    console.print("[red]FAIL[/red]: kernels got slower." if result.failed()
                  else "[green]OK[/green]: no kernel got slower.")
