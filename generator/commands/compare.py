"""`python -m generator compare BASELINE CURRENT`: did the current capture get slower?

Durations decide, from nsys over every launch, through the pipeline's readers and analyses (the
same as ``python -m generator build``): BASELINE and CURRENT as capture run directories give per
stage the kernel time and span and per kernel the median launch duration, each change with its 95 %
bootstrap interval and the noise band measured inside the captures (analyses.speed_change,
analyses.launch_stats). Before any verdict the two captures are compared like with like
(analyses.like_with_like): every difference is listed first; different workloads or models get no
verdict. ncu metrics (and the other inputs: a version's data directory, a ``summary.json``, an ncu
report/CSV, which carry no nsys launches) are context, never a verdict. Exit status
(speed_change.stage_gate): 1 when a stage's kernel time got slower (interval wholly above the noise
band) in two comparable captures, or had too few launches for a verdict and grew beyond
launch_stats.UNJUDGED_LIMIT; 3 when the measured stages together have too few launches for a
verdict; 0 otherwise; 2 on bad input. Different GPUs (gpu_change): both named, on stderr too;
verdicts stay. :func:`comparison_json` is what ``--json`` writes, for any caller.
"""
from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from generator.commands import report_console, report_table
from generator.errors import InputError
from generator.metric_table import DEFAULT_METRICS, DISPLAY, WATCHABLE
from generator.run_layout import MANIFEST

if TYPE_CHECKING:  # the rest is imported where it runs: `--help` answers without pandas or SciPy
    import pandas as pd
    from rich.console import Console

    from generator.analyses.regression import Comparison
    from generator.model import GpuInfo, VersionInputs

HELP = "compare two captures (nsys durations decide, ncu explains); exit 1 when a stage got slower"
#: summary.json: the one "kernel" its overall means describe
OVERALL = "overall_means"
NAME_SHOWN = 60
#: exit status per speed_change.stage_gate status (2: bad input)
EXIT = {"ok": 0, "not compared": 0, "fail": 1, "not judged": 3}
ONE_SIDE_SHOWN = 10  # kernels added or removed listed in the console (--json has all)
#: the analyses of the current capture the comparison reads; only these, those they read and what
#: they read of the baseline (registry.read_before) run, not a site build's whole set
READS = ("like_with_like", "stage_speed", "kernel_speed", "kernel_changes", "comparison", "ncu_metrics", "ranks")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("baseline", type=Path, metavar="BASELINE",
                        help="run directory, version data directory, summary.json or ncu file")
    parser.add_argument("current", type=Path, metavar="CURRENT", help="the same kinds of input as BASELINE")
    parser.add_argument("--metrics", nargs="+", default=list(DEFAULT_METRICS), metavar="METRIC",
                        help=f"ncu metrics shown as context, space or comma separated (default: {','.join(DEFAULT_METRICS)}; "
                             + "; ".join(f"{m}: {d} is better" for m, d in WATCHABLE.items()) + ")")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the comparison as JSON (deterministic)")


def run(args: argparse.Namespace) -> int:
    from generator import output_dirs

    json_out = output_dirs.json_target(args.json, "compare", [args.baseline, args.current]) if args.json else None
    metrics = list(dict.fromkeys(m for item in args.metrics for m in item.split(",") if m))
    unknown = [m for m in metrics if m not in WATCHABLE]
    if unknown or not metrics:
        raise InputError("--metrics", f"unknown metric {', '.join(unknown) or '(none)'}; one of {', '.join(WATCHABLE)}")
    compared = compare_paths(args.baseline, args.current, metrics)
    names = _display_names(compared.baseline.table, compared.current.table)
    console = report_console(highlight=False)
    _print(console, compared.verdicts, compared.context, names, compared.gate)
    if compared.ranks:
        from rich.text import Text

        for row in compared.ranks:
            console.print(Text(rank_line(row)), soft_wrap=True)
    if compared.gpus is not None and compared.gpus["changed"]:
        print(f"compare: {gpu_line(compared.gpus)}", file=sys.stderr)
    if json_out is not None:
        output_dirs.write_json(json_out, "compare", comparison_report(args.baseline, args.current, compared))
    return EXIT[compared.gate["status"]]


@dataclass
class Compared:
    """Both sides read, the verdicts of capture runs (None otherwise), the ncu context, the GPUs'
    change (gpu_change), the gate (speed_change.stage_gate, "not compared" without verdicts) and each
    rank's stage times, rank to rank (rank_changes; empty for one GPU)."""

    baseline: Side
    current: Side
    verdicts: Verdicts | None
    context: Comparison
    gpus: dict[str, Any] | None
    gate: dict[str, Any]
    ranks: list[dict[str, Any]]


def compare_paths(baseline_path: Path, current_path: Path, metrics: Sequence[str] = DEFAULT_METRICS) -> Compared:
    """Read and analyse BASELINE and CURRENT as the command does (InputError on bad input), rank to
    rank where they hold several (a different world size is refused)."""
    from generator.analyses.gpu_change import gpu_change
    from generator.analyses.regression import compare
    from generator.analyses.speed_change import stage_gate

    baseline, current = kernel_table(baseline_path), kernel_table(current_path)
    if baseline.world != current.world:
        raise InputError(current_path, f"{current.world} rank(s) against the baseline's {baseline.world}: a different "
                                       "world size is a different workload, so ranks cannot be matched")
    context = compare(baseline.table, current.table, list(metrics))
    verdicts = _verdicts(baseline, current)
    ranks = rank_changes(baseline.ranks, current.ranks)
    if verdicts is None and not len(context.rows) and not ranks:
        raise InputError(current_path, f"no kernel matches one of {baseline_path}")
    comparable = verdicts is not None and verdicts.like["comparable"]
    gate = stage_gate(verdicts.stages) if comparable else {
        "status": "not compared", "slower": [], "over_limit": [], "not_judged": [], "limit_pct": None}
    return Compared(baseline, current, verdicts, context, gpu_change(baseline.gpu, current.gpu), gate, ranks)


def comparison_report(baseline_path: Path | str, current_path: Path | str, compared: Compared) -> dict[str, Any]:
    """The comparison as `compare --json` writes it (JSON-ready, deterministic; without the file's
    mark, output_dirs.write_json)."""
    from generator.render.data_files import json_safe

    verdicts, gpus = compared.verdicts, compared.gpus
    report = {"baseline": str(baseline_path), "current": str(current_path),
              "like_with_like": verdicts.like if verdicts else None,
              "stages": verdicts.stages.to_dict("records") if verdicts else [],
              "kernels": verdicts.kernels.to_dict("records") if verdicts else [],
              "kernels_added_removed": verdicts.one_side().to_dict("records") if verdicts else [],
              "longest_kernel": verdicts.longest if verdicts else None,
              "ncu_context": compared.context.as_dict(), "failed": compared.gate["status"] == "fail",
              "gate": {**compared.gate, "exit_code": EXIT[compared.gate["status"]]},
              "baseline_gpu": compared.baseline.gpu, "current_gpu": compared.current.gpu,
              "gpu_changed": None if gpus is None else gpus["changed"], "ranks": compared.ranks}
    return json_safe(report)


def comparison_json(baseline: Path, current: Path, metrics: Sequence[str] = DEFAULT_METRICS) -> dict[str, Any]:
    """What `compare BASELINE CURRENT --json` writes, as a dict (InputError on bad input)."""
    return comparison_report(baseline, current, compare_paths(baseline, current, metrics))


@dataclass
class Verdicts:
    """What the pipeline's analyses say of two capture runs (speed_change, like_with_like)."""

    like: dict[str, Any]  # like_with_like.like_with_like
    stages: pd.DataFrame  # speed_change.STAGE_SPEED_COLUMNS
    kernels: pd.DataFrame  # speed_change.KERNEL_SPEED_COLUMNS
    changes: pd.DataFrame  # speed_change.KERNEL_CHANGE_COLUMNS
    longest: dict[str, Any] | None  # compare_versions' longest_kernel
    previous_launches: pd.DataFrame  # nsys_sqlite.LAUNCH_COLUMNS of the baseline
    launches: pd.DataFrame  # and of the current capture

    def one_side(self) -> pd.DataFrame:
        """The kernels that ran in one capture only, the most time first: no interval, no verdict."""
        one_side = self.changes[self.changes["status"] != "paired"]
        order = one_side["abs_ns"].abs().sort_values(ascending=False, kind="stable").index
        return one_side.loc[order].reset_index(drop=True)


def _verdicts(baseline: Side, current: Side) -> Verdicts | None:
    """The current run analysed against the baseline run as a site build analyses two versions
    (analyze_version with the previous version), READS only; None unless both sides are capture runs."""
    if baseline.inputs is None or current.inputs is None:
        return None
    from generator.analyses.version import AnalysisSettings, analyze_version

    before = analyze_version(baseline.version_id, baseline.inputs, AnalysisSettings(), alone=baseline.alone,
                             keys=side_reads())
    result = analyze_version(current.version_id, current.inputs, AnalysisSettings(), previous=before,
                             alone=current.alone, keys=READS)
    comparison = result.values.get("comparison") or {}
    return Verdicts(result.values["like_with_like"], result.values["stage_speed"], result.values["kernel_speed"],
                    result.values["kernel_changes"], comparison.get("longest_kernel"), baseline.inputs.launches, current.inputs.launches)


@dataclass
class Side:
    """One side of the comparison: its kernel table and its GPU (GPU_IDENTITY facts; None: unknown)."""

    table: pd.DataFrame
    gpu: dict[str, Any] | None
    inputs: VersionInputs | None = None  # a capture run's, read by the pipeline
    alone: dict[str, Any] | None = None  # its analyses that need no previous version (analyze_alone)
    version_id: str = ""
    ranks: pd.DataFrame | None = None  # data/ranks.csv of a multi-rank version (analyses.collectives.ranks)

    @property
    def world(self) -> int:
        """How many ranks the side holds (1: one GPU, or not known to be more)."""
        return int(self.ranks["rank"].nunique()) if self.ranks is not None and len(self.ranks) else 1


#: ranks.csv figures compared rank to rank (ns).
RANK_FIGURES = ("span_ns", "compute_ns", "transfer_ns", "wait_ns", "idle_ns")


def rank_changes(baseline: pd.DataFrame | None, current: pd.DataFrame | None) -> list[dict[str, Any]]:
    """Per (stage, rank) both sides hold, each RANK_FIGURES value before and after (rank matched to rank)."""
    if baseline is None or current is None:
        return []
    keys = ["stage", "rank"]
    paired = baseline.merge(current, on=keys, suffixes=("_before", "_after"))
    return [{"stage": row["stage"], "rank": int(row["rank"]),
             **{f"{f}_{side}": float(row[f"{f}_{side}"]) for f in RANK_FIGURES for side in ("before", "after")}}
            for row in paired.to_dict("records")]


def rank_line(row: dict[str, Any]) -> str:
    """One (stage, rank) of :func:`rank_changes` for the console."""
    from generator.text_safety import clean_text

    figures = ", ".join(f"{f[:-3]} {_ms(row[f + '_before'])} → {_ms(row[f + '_after'])} ms" for f in RANK_FIGURES)
    return f"{clean_text(str(row['stage']))}, rank {row['rank']}: {figures}"


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
    from generator.render.data_files import NCU_METRICS_CSV, SUMMARY_JSON

    if path.is_dir():
        if (path / MANIFEST).is_file():
            return _from_run(path)
        for csv in (path / NCU_METRICS_CSV, path / Path(NCU_METRICS_CSV).name):
            if csv.is_file():
                summary = csv.parent.parent / SUMMARY_JSON if csv.parent.name == "data" else None
                ranks = csv.parent / "ranks.csv"
                return Side(_from_csv(csv), _summary_gpu(summary) if summary and summary.is_file() else None,
                            ranks=_ranks_csv(ranks) if ranks.is_file() else None)
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
    import pandas as pd

    from generator.analyses.naming import name_kernels
    from generator.model import ALL_STAGES

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


def side_reads() -> tuple[str, ...]:
    """The analyses either side needs: READS, and what they read of the previous version."""
    from generator.analyses import registry

    return tuple(dict.fromkeys(READS + registry.read_before(READS, registry.discover())))


def _from_run(run: Path) -> Side:
    """A capture run read and analysed as a site build reads and analyses a version of one run
    (:func:`side_reads` only; operator calls and module attribution are not read: no analysis
    of them is)."""
    from generator.analyses.version import AnalysisSettings, analyze_alone
    from generator.pipeline.build_cache import BuildCache, default_root
    from generator.pipeline.config import Inputs, VersionConfig
    from generator.pipeline.inputs import InputCache, version_inputs

    with InputCache(BuildCache(default_root())) as cache:  # what a build or an earlier compare read
        inputs = version_inputs(VersionConfig.model_construct(runs=[run], inputs=Inputs()), cache,
                                run / MANIFEST, 0, operator_calls=False, modules=False)
    alone = analyze_alone(run.name, inputs, AnalysisSettings(), keys=side_reads())
    return Side(_per_kernel(alone["ncu_metrics"]), _identity(inputs.gpus), inputs, alone, run.name,
                alone.get("ranks"))


def _ranks_csv(path: Path) -> pd.DataFrame:
    """A version's data/ranks.csv (stage, rank and the RANK_FIGURES)."""
    import pandas as pd

    try:
        table = pd.read_csv(path)
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise InputError(path, f"not a readable CSV ({' '.join(str(exc).split())})") from None
    missing = [c for c in ("stage", "rank", *RANK_FIGURES) if c not in table]
    if missing:
        raise InputError(path, f"missing column {', '.join(missing)} (not a ranks.csv)")
    return table


def _from_csv(path: Path) -> pd.DataFrame:
    import pandas as pd

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
    except ValueError as exc:  # JSONDecodeError, and an integer over Python's digit limit
        raise InputError(path, f"not valid JSON ({' '.join(str(exc).split())[:200]})") from None
    except RecursionError:
        raise InputError(path, "JSON nested too deeply (not a version's summary.json)") from None


#: GPU_IDENTITY fact → the JSON types summary.json may give it, and their name
_GPU_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "name": ((str,), "text"), "compute_capability": ((str,), "text"), "sm_count": ((int,), "a whole number"),
    "memory_clock_hz": ((int, float), "a number")}


def _summary_gpu(path: Path) -> dict[str, Any] | None:
    """The ``gpu`` of a version's summary.json (GPU_IDENTITY facts), None where it has none."""
    from generator.model import GPU_IDENTITY

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
    import pandas as pd

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
    from generator.pipeline.build_cache import BuildCache, default_root
    from generator.pipeline.inputs import InputCache

    with InputCache(BuildCache(default_root())) as cache:
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
    """The kernel's ncu metrics in that stage and their relative change, e.g. "sm_throughput_pct −12.3%"."""
    same_stage = result.rows["stage"].isna() if stage is None or stage != stage else result.rows["stage"] == stage
    rows = result.rows[(result.rows["kernel"] == kernel) & same_stage]
    return ", ".join(f"{r['metric']} {r['rel_pct']:+.1f}%" for r in rows.to_dict("records")
                     if r["rel_pct"] == r["rel_pct"])


def _pct(value: float) -> str:
    return "" if value != value else f"{value:+.1f}%"


def _interval(row: dict[str, Any], prefix: str = "") -> str:
    low, high = row[f"{prefix}low_pct"], row[f"{prefix}high_pct"]
    return "" if low != low else f"[{low:+.1f}%, {high:+.1f}%]"


def _ms(value: float) -> str:
    return "" if value != value else f"{value / 1e6:,.3f}"


def difference_line(difference: dict[str, Any]) -> str:
    """One like_with_like difference in words: "params.attn_impl: eager → sdpa"."""
    return f"{difference['key']}: {difference['previous']} → {difference['current']}"


def _mover(mover: dict[str, Any], names: dict[str, str]) -> str:
    """"Softmax (FP32) (added) +2.535 ms": a kernel of stage_movers in words."""
    added, removed = not isinstance(mover["prev_name"], str), not isinstance(mover["name"], str)
    name = mover["prev_name"] if removed else mover["name"]
    return (f"{_shown_name(name, names)}{' (added)' if added else ' (removed)' if removed else ''} "
            f"{mover['abs_ns'] / 1e6:+,.3f} ms")


def _shown_name(name: str, names: dict[str, str]) -> str:
    """The display name of a kernel (:func:`_display_names`, else its friendly name), cut to NAME_SHOWN."""
    if name not in names:
        from generator.analyses.naming import name_kernels

        shown = name_kernels([name])[name].friendly_name or name
        names[name] = shown if len(shown) <= NAME_SHOWN else shown[: NAME_SHOWN - 1] + "…"
    return names[name]


def _print(console: Console, verdicts: Verdicts | None, context: Comparison, names: dict[str, str],
           gate: dict[str, Any]) -> None:
    """Print the comparison and the gate's conclusion (speed_change.stage_gate)."""
    from generator.analyses.launch_stats import FASTER, SESSION_NOISE, SLOWER, TOO_FEW, UNCHANGED
    from generator.analyses.speed_change import stage_movers
    from generator.model import ALL_STAGES

    if verdicts is None:
        console.print("no verdict: durations decide from the nsys launches of capture run directories, "
                      "which these inputs are not; ncu figures below are context.")
        _print_context(console, context, names)
        return
    like = verdicts.like
    workload = [d for d in like["differences"] if d["kind"] == "workload"]
    if workload:
        console.print("different workloads (" + "; ".join(difference_line(d) for d in workload)
                      + "): no faster/slower verdict.")
        return
    for difference in like["differences"]:
        console.print(f"differs ({difference['kind']}): {difference_line(difference)}")
    if not like["same_session"]:
        apart = "capture times not recorded" if like["hours_apart"] is None else f"{like['hours_apart']:.0f} h apart"
        console.print(f"not one session ({apart}): stage bands at least ±{SESSION_NOISE * 100:.1f}%, the farthest a "
                      "stage's interval reached between repeat captures of one unchanged program "
                      "(bench/session_noise.md)")
    table = report_table("stage", "kernel ms", "change", "95% interval", "noise ±", "verdict",
                  "span ms", "change", "span verdict", title="stages: nsys kernel time decides; span is shown")
    for row in verdicts.stages.to_dict("records"):
        span_verdict = row["span_verdict"] + (" (host-dominated)" if row["host_dominated"] else "")
        table.add_row(row["stage"], f"{_ms(row['kernel_prev_ns'])} → {_ms(row['kernel_ns'])}",
                      _pct(row["kernel_rel_pct"]), _interval(row, "kernel_"), f"{row['kernel_noise_pct']:.1f}%"
                      if row["kernel_noise_pct"] == row["kernel_noise_pct"] else "", row["kernel_verdict"],
                      f"{_ms(row['span_prev_ns'])} → {_ms(row['span_ns'])}", _pct(row["span_rel_pct"]), span_verdict)
    console.print(table)
    for row in verdicts.stages.to_dict("records"):
        if row["kernel_verdict"] in (SLOWER, FASTER) and row["stage"] != ALL_STAGES:
            movers = stage_movers(verdicts.previous_launches, verdicts.launches, row["stage"]).to_dict("records")
            console.print(f"{row['stage']} {row['kernel_verdict']}; most of it: "
                          + "; ".join(_mover(m, names) for m in movers))
    moved = verdicts.kernels[verdicts.kernels["verdict"].isin([SLOWER, FASTER])]
    if len(moved):
        table = report_table("kernel", "stage", "median µs", "change", "95% interval", "noise ±", "verdict", "ncu context",
                      title="kernels whose median launch moved beyond the noise (nsys, every launch)")
        lead = "" if like["same_session"] else " between sessions (a lead)"
        for row in moved.to_dict("records"):
            style = "red" if row["verdict"] == SLOWER else "green"
            table.add_row(_shown_name(row["name"], names), row["stage"],
                          f"{row['prev_median_ns'] / 1e3:,.2f} → {row['median_ns'] / 1e3:,.2f}", _pct(row["rel_pct"]),
                          _interval(row), f"{row['noise_pct']:.1f}%", f"[{style}]{row['verdict']}{lead}[/{style}]",
                          _context(context, row["prev_name"], row["stage"]) or _context(context, row["name"], row["stage"]))
        console.print(table)
    _print_one_side(console, verdicts.one_side(), names)
    counts = verdicts.kernels["verdict"].value_counts()
    console.print(f"{len(verdicts.kernels)} kernels paired by identity within stages: "
                  + ", ".join(f"{int(counts.get(v, 0))} {v}" for v in (SLOWER, FASTER, UNCHANGED, TOO_FEW)) + ".")
    longest = verdicts.longest
    if longest and longest["previous"] and longest["current"] and not longest["same_kernel"]:
        console.print(f"the longest profiled kernel changed from {longest['previous']['friendly_name']} to "
                      f"{longest['current']['friendly_name']} (ncu; not a verdict).")
    _print_gate(console, verdicts.stages, gate)


def _print_gate(console: Console, stages: pd.DataFrame, gate: dict[str, Any]) -> None:
    """The gate's conclusion: FAIL (exit 1), NOT JUDGED (exit 3) or OK, naming the stages not judged."""
    rows = {row["stage"]: row for row in stages.to_dict("records")}

    def unjudged(stage: str) -> str:
        row = rows[stage]
        change = "" if row["kernel_rel_pct"] != row["kernel_rel_pct"] else f", {row['kernel_rel_pct']:+.1f}%"
        return f"{stage} ({row['prev_launches']:,} → {row['launches']:,} launches{change})"

    limit = f"+{gate['limit_pct']:.0f}%"
    if gate["over_limit"]:
        console.print(f"too few launches for a verdict, but kernel time grew beyond {limit}: "
                      + "; ".join(unjudged(s) for s in gate["over_limit"]))
    if gate["not_judged"]:
        console.print(f"not judged (too few launches; growth up to {limit} passes): "
                      + "; ".join(unjudged(s) for s in gate["not_judged"]))
    if gate["status"] == "fail":
        console.print(f"[red]FAIL[/red]: kernel time got slower in {', '.join(gate['slower'] + gate['over_limit'])}.")
    elif gate["status"] == "not judged":
        console.print("[yellow]NOT JUDGED[/yellow]: the measured stages together have too few launches for a "
                      "verdict (exit 3).")
    else:
        console.print("[green]OK[/green]: no stage's kernel time got slower beyond the noise."
                      + (" The stages not judged are listed above." if gate["not_judged"] else ""))


def _print_one_side(console: Console, one_side: pd.DataFrame, names: dict[str, str]) -> None:
    """The kernels added or removed (all measured stages together), the most time first."""
    if not len(one_side):
        return
    table = report_table("kernel", "", "launches", "change ms",
                  title="kernels that ran in one capture only (measured stages together): "
                        "no interval, their whole time is the change")
    for row in one_side.head(ONE_SIDE_SHOWN).to_dict("records"):
        added = row["status"] == "added"
        table.add_row(_shown_name(row["name"] if added else row["prev_name"], names), row["status"],
                      f"{row['count'] if added else row['prev_count']:,}",
                      f"{row['abs_ns'] / 1e6:+,.3f}")
    console.print(table)
    if len(one_side) > ONE_SIDE_SHOWN:
        console.print(f"… and {len(one_side) - ONE_SIDE_SHOWN} more (--json lists all).")


def _print_context(console: Console, result: Comparison, names: dict[str, str]) -> None:
    table = report_table("kernel", "stage", "metric", "baseline", "current", "change",
                  title="ncu figures of the matched kernels (context, not a verdict)")
    for row in result.rows.to_dict("records"):
        stage = row["stage"] if isinstance(row["stage"], str) else ""
        table.add_row(names.get(row["kernel"], row["kernel"]), stage, row["metric"],
                      f"{row['baseline']:,.2f}", f"{row['current']:,.2f}", _pct(row["rel_pct"]))
    console.print(table)
    console.print(f"{result.rows['kernel'].nunique()} kernels matched ({len(result.only_baseline)} only in the "
                  f"baseline, {len(result.only_current)} only in the current).")
