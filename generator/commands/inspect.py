"""`python -m generator inspect PATH…`: what each profiler file or capture run directory is and holds."""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from generator.errors import InputError
from generator.metric_table import CANONICAL_METRIC_NAMES
from generator.run_layout import COMPRESSED, MANIFEST, NCU_PASSES, NSYS_CANDIDATES, ncu_candidates

if TYPE_CHECKING:  # the rest is imported where it runs: `--help` answers without pandas
    import pandas as pd
    from rich.console import Console
    from rich.text import Text

    from generator.model import Dataset

HELP = ("say what each profiler file is and summarize its kernels, GPUs and NVTX ranges; summarize a capture run "
        "directory (manifest, stages, files, coverage)")
TOP = 5
#: What to do about CUDA graphs traced as whole graphs (nsys' default), said after their figures.
RECAPTURE = "kernels unknown: re-capture with nsys profile --cuda-graph-trace=node to see them"
SHOWN_STAGES = 12


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="nsys/ncu/PyTorch profiler files or capture run directories")
    parser.add_argument("--stage", metavar="NAME", help="restrict kernels to this NVTX / record_function range")
    parser.add_argument("--json", action="store_true", help="print the summaries as JSON (deterministic)")
    parser.add_argument("--full", action="store_true",
                        help="show the kernels' full profiler names (default: unique friendly names)")
    parser.add_argument("--dask-scheduler", metavar="ADDRESS",
                        help="list the ranks of nsys exports on this Dask cluster, where the files are "
                             "(needs the 'cluster' extra)")


def run(args: argparse.Namespace) -> int:
    from generator.pipeline import rank_map

    with rank_map.scheduler(args.dask_scheduler):
        return _inspect(args)


def _inspect(args: argparse.Namespace) -> int:
    from rich.console import Console

    from generator.readers import read
    from generator.readers.base import undigested
    from generator.text_safety import clean_text

    console = Console(highlight=False)
    summaries: list[dict[str, Any]] = []
    failed = False
    for path in args.paths:
        try:
            with undigested():  # inspect shows no file digest
                summary = summarize_run(path) if path.is_dir() else summarize(read(path, stage=args.stage))
            if not path.is_dir() and summary["format"] == "nsys-sqlite":
                summary.update(rank_facts(path))
        except (InputError, OSError, UnicodeDecodeError) as exc:
            if args.debug:
                raise
            failed = True
            print(f"error: {clean_text(str(_as_input_error(path, exc)))}", file=sys.stderr)
            summaries.append({"path": str(path), "error": _as_input_error(path, exc).problem})
            continue
        summaries.append(summary)
        if not args.json:
            (_print_run(console, summary) if path.is_dir() else _print(console, summary, full=args.full))
    if args.json:
        print(json.dumps(summaries, indent=2, sort_keys=True, ensure_ascii=False))
    return 2 if failed else 0


def _as_input_error(path: Path, exc: Exception) -> InputError:
    if isinstance(exc, InputError):
        return exc
    if isinstance(exc, UnicodeDecodeError):
        return InputError(path, f"not valid text ({exc.reason} at byte {exc.start})")
    return InputError(path, f"cannot read: {exc.strerror or exc}")


def summarize(ds: Dataset) -> dict[str, Any]:
    """The facts `inspect` shows about one Dataset, as plain JSON-ready values."""
    from generator.analyses.naming import name_kernels

    prov = ds.provenance
    summary: dict[str, Any] = {
        "path": prov.path,
        "format": prov.format,
        "format_version": prov.format_version,
        "notes": list(prov.notes),
        "gpus": [{k: _number(v) if isinstance(v, float) else v for k, v in dataclasses.asdict(gpu).items()}
                 for gpu in ds.gpus],
        "stages": _stages(ds),
    }
    if ds.kernel_summary is not None:
        summary["kernel_summary"] = [_kernel_summary(rows, stage) for stage, rows in
                                     ds.kernel_summary.groupby("stage", sort=False)]
    if ds.kernel_metrics is not None:
        summary["kernel_metrics"] = _kernel_metrics(ds.kernel_metrics)
    tops = [row for part in [*summary.get("kernel_summary", []), summary.get("kernel_metrics", {})]
            for row in part.get("top", [])]
    names = name_kernels(_names_by_time(ds))
    for row in tops:
        row["friendly_name"] = names[row["name"]].friendly_name
    return summary


def rank_facts(path: Path) -> dict[str, Any]:
    """``{"ranks": [...], "rank_order": ...}`` of an nsys export of several ranks (process with its
    GPU, readers.nsys_ranks), in launcher order; nothing for one rank."""
    from generator.pipeline import rank_map
    from generator.readers.nsys_ranks import order_ranks, several_ranks

    if path.suffix not in COMPRESSED and not several_ranks(path):  # (compressed: decompressed once, below)
        return {}
    processes = rank_map.processes([path])[0]
    if len(processes) < 2:
        return {}
    ordered, source = order_ranks(processes)
    return {"rank_order": source, "ranks": [{"rank": int(r.rank), "pid": int(r.pid), "gpu": int(r.gpu),
                                             "launches": int(r.launches)} for r in ordered.itertuples()]}


def summarize_run(run: Path) -> dict[str, Any]:
    """What a capture run directory holds, from its manifest and its files (no profiler file is read)."""
    from generator.pipeline.inputs import load_manifest, manifest_stages

    if not (run / MANIFEST).is_file():
        raise InputError(run, f"is a directory but not a capture run (no {MANIFEST}); inspect the files in it")
    manifest = load_manifest(run)
    environment = manifest.get("environment") if isinstance(manifest.get("environment"), dict) else {}
    tools = manifest.get("tools") if isinstance(manifest.get("tools"), dict) else {}
    files = [run / name for name in NSYS_CANDIDATES if (run / name).is_file()][:1]
    files += [run / name for suffix in NCU_PASSES for name in ncu_candidates(suffix) if (run / name).is_file()]
    return {
        "path": str(run),
        "format": "capture-run",
        "schema": manifest.get("schema"),
        "created": manifest.get("created"),
        "status": manifest.get("status"),
        "workload": manifest.get("workload"),
        "params": {k: v for k, v in (manifest.get("params") or {}).items() if v is not None},
        "gpus": [g.get("name") for g in environment.get("gpus") or [] if isinstance(g, dict)],
        "versions": {key: environment.get(key) for key in ("torch", "transformers", "cuda_runtime", "driver")}
        | {tool: (tools.get(tool) or {}).get("version") for tool in ("nsys", "ncu")},
        "stages": manifest_stages(run, manifest),
        "phases": [{"name": p.get("name"), "status": p.get("status"), "seconds": p.get("seconds")}
                   for p in manifest.get("phases") or [] if isinstance(p, dict)],
        "failed_phases": manifest.get("failed_phases") or [],
        "files": [{"path": f.relative_to(run).as_posix(), "bytes": f.stat().st_size} for f in files],
        "logs": sorted(f.name for f in (run / "logs").iterdir()) if (run / "logs").is_dir() else [],
        "coverage": manifest.get("coverage") or {},
        "notes": manifest.get("notes") or [],
    }


#: the longest field the console shows (characters); ``--json`` gives every field whole
FIELD_MAX = 2000


def _cut(text: str) -> Text:
    """A console field: at most FIELD_MAX characters, then how many more (rich wraps a long text in
    time that grows faster than its length: a 30 MB manifest note took minutes)."""
    from rich.text import Text

    from generator.text_safety import clean_text

    text = str(text)
    if len(text) > FIELD_MAX:
        text = f"{text[:FIELD_MAX]}…[+{len(text) - FIELD_MAX:,} characters; --json shows all]"
    return Text(clean_text(text))


def _print_run(console: Console, run: dict[str, Any]) -> None:
    from rich.table import Table
    from rich.text import Text


    facts = Table.grid(padding=(0, 2))
    facts.add_column(style="bold")
    facts.add_column(overflow="fold")
    params = ", ".join(f"{k}={v}" for k, v in run["params"].items())
    facts.add_row("format", _cut(f"capture run ({run['schema']}), {run['status']}, created {run['created']}"))
    facts.add_row("workload", _cut(f"{run['workload']} ({params})" if params else str(run["workload"])))
    facts.add_row("GPUs", _cut(", ".join(map(str, run["gpus"])) or "unknown"))
    facts.add_row("versions", _cut(", ".join(f"{k} {v}" for k, v in run["versions"].items() if v)))
    facts.add_row("stages", _cut(", ".join(run["stages"]) or "none (the whole capture)"))
    facts.add_row("phases", _cut(", ".join(f"{p['name']} {_seconds(p['seconds'])}" + ("" if p["status"] == "ok"
                                           else f" ({p['status']})") for p in run["phases"])))
    if run["failed_phases"]:
        facts.add_row("failed", _cut(", ".join(map(str, run["failed_phases"]))))
    for f in run["files"]:
        facts.add_row("file", _cut(f"{f['path']} ({f['bytes'] / 2**20:,.1f} MiB)"))
    facts.add_row("logs", Text(f"{len(run['logs'])} files in logs/"))
    facts.add_row("coverage", _cut(_coverage(run["coverage"])))
    for note in run["notes"]:
        facts.add_row("note", _cut(note))
    console.print(_cut(run["path"]), style="bold", soft_wrap=True)
    console.print(facts)
    console.print()


def _coverage(coverage: dict[str, Any]) -> str:
    """``20/20 top-N kernels profiled, 85/85 (kernel, stage) pairs, 146 launches``."""
    parts = []
    if "top_n" in coverage:
        parts.append(f"{coverage.get('profiled')}/{coverage['top_n']} top-N kernels profiled")
    if "stage_pairs" in coverage:
        parts.append(f"{coverage.get('stage_pairs_profiled')}/{coverage['stage_pairs']} (kernel, stage) pairs")
    if "profiled_launches" in coverage:
        parts.append(f"{coverage['profiled_launches']} launches")
    missing = len(coverage.get("missing") or []) + len(coverage.get("stage_pairs_missing") or [])
    return ", ".join(parts) + (f"; {missing} missing (see the manifest's coverage)" if missing else "") or "unknown"


def _seconds(value: Any) -> str:
    return f"{value:,.1f} s" if isinstance(value, int | float) else "?"


def _names_by_time(ds: Dataset) -> list[str]:
    """Every kernel name of the file, most total time first (so the biggest of colliding friendly
    names gets "-1"), then the names only ncu measured."""
    names: list[str] = []
    if ds.kernel_summary is not None:
        names += ds.kernel_summary.sort_values(["total_ns", "name"], ascending=[False, True])["name"].tolist()
    if ds.kernel_metrics is not None:
        names += ds.kernel_metrics["name"].tolist()
    return [n for n in names if isinstance(n, str)]


def _stages(ds: Dataset) -> list[str]:
    names: list[str] = []
    if ds.nvtx_summary is not None:
        names += ds.nvtx_summary["name"].dropna().tolist()
    if ds.kernel_metrics is not None:
        names += ds.kernel_metrics["stage"].dropna().tolist()
    return list(dict.fromkeys(names))


def _kernel_summary(rows: pd.DataFrame, stage: str) -> dict[str, Any]:
    """The stage's kernels, launches and GPU time (CUDA graphs traced as whole graphs: their GPU time
    counted, their rows and replays apart, in ``whole_graphs``) and its top rows."""
    from generator.model import whole_graphs

    top = rows.sort_values(["total_ns", "name"], ascending=[False, True]).head(TOP)
    graph = whole_graphs(rows["name"])
    return {
        "stage": stage,
        "kernels": int(rows.loc[~graph, "name"].nunique()),
        "launches": int(rows.loc[~graph, "count"].sum()),
        "total_ns": _number(rows["total_ns"].sum(min_count=1)),
        "whole_graphs": {"graphs": int(graph.sum()), "launches": int(rows.loc[graph, "count"].sum()),
                         "total_ns": _number(rows.loc[graph, "total_ns"].sum())},
        "top": _top_rows(top),
    }


def _kernel_metrics(rows: pd.DataFrame) -> dict[str, Any]:
    present = [m for m in CANONICAL_METRIC_NAMES if m in rows.columns and rows[m].notna().any()]
    summary: dict[str, Any] = {
        "launches": len(rows),
        "kernels": int(rows["name"].nunique()),
        "total_ns": None,
        "top": [],
        "metrics_present": present,
    }
    if "duration_ns" in present:
        per_name = rows.groupby("name")["duration_ns"].agg(total_ns="sum", count="count").reset_index()
        total = per_name["total_ns"].sum()
        top = per_name.sort_values(["total_ns", "name"], ascending=[False, True]).head(TOP)
        summary["total_ns"] = _number(total)
        summary["top"] = _top_rows(top.assign(time_pct=100 * top["total_ns"] / total if total else None))
    return summary


def _top_rows(top: pd.DataFrame) -> list[dict[str, Any]]:
    return [
        {"name": r["name"], "time_pct": _number(r["time_pct"]), "total_ns": _number(r["total_ns"]),
         "count": int(r["count"])}
        for r in top.to_dict("records")
    ]


def _number(value: Any) -> int | float | None:
    """A JSON number: ints stay ints, NaN becomes null."""
    import pandas as pd

    if value is None or pd.isna(value):
        return None
    value = float(value)
    return int(value) if value.is_integer() else round(value, 6)


def _duration(ns: int | float | None) -> str:
    if ns is None:
        return "unknown"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:,.3f} {unit}"
    return f"{ns:,.0f} ns"


def _gpu_text(gpu: dict[str, Any]) -> str:
    facts = [f"CC {gpu['compute_capability']}" if gpu["compute_capability"] else None,
             f"{gpu['sm_count']} SMs" if gpu["sm_count"] else None,
             f"{gpu['memory_bytes'] / 2**30:.1f} GiB" if gpu["memory_bytes"] else None]
    facts = [f for f in facts if f]
    index = f"#{gpu['index']} " if gpu["index"] is not None else ""
    return f"{index}{gpu['name'] or 'unnamed GPU'}" + (f" ({', '.join(facts)})" if facts else "")


def _print(console: Console, summary: dict[str, Any], full: bool = False) -> None:
    from rich.table import Table
    from rich.text import Text

    from generator.text_safety import clean_text

    facts = Table.grid(padding=(0, 2))
    facts.add_column(style="bold")
    facts.add_column(overflow="fold")
    version = f" ({summary['format_version']})" if summary["format_version"] else ""
    facts.add_row("format", Text(f"{summary['format']}{version}"))
    facts.add_row("GPUs", Text("; ".join(_gpu_text(g) for g in summary["gpus"]) or "unknown"))
    if summary.get("ranks"):
        facts.add_row("ranks", Text(f"{len(summary['ranks'])} ({summary['rank_order']}): " + "; ".join(
            f"rank {r['rank']} = process {r['pid']} on GPU {r['gpu']}, {r['launches']:,} launches"
            for r in summary["ranks"])))
    stages = summary["stages"]
    more = f", … ({len(stages)} in all)" if len(stages) > SHOWN_STAGES else ""
    facts.add_row("NVTX ranges", Text(", ".join(stages[:SHOWN_STAGES]) + more if stages else "none"))
    for note in summary["notes"]:
        facts.add_row("note", Text(note))
    for kernels in summary.get("kernel_summary", []):
        facts.add_row(Text(f"kernels [{kernels['stage']}]"),
                      f"{kernels['kernels']} distinct, {kernels['launches']:,} launches, "
                      f"{_duration(kernels['total_ns'])} GPU time")
        graphs = kernels["whole_graphs"]
        if graphs["graphs"]:
            facts.add_row(Text(f"whole graphs [{kernels['stage']}]"),
                          f"{graphs['graphs']} CUDA graph(s), {graphs['launches']:,} launches traced as whole graphs, "
                          f"{_duration(graphs['total_ns'])} GPU time; {RECAPTURE}")
    metrics = summary.get("kernel_metrics")
    if metrics:
        facts.add_row("ncu launches", f"{metrics['launches']} profiled, {metrics['kernels']} distinct kernels, "
                                      f"{_duration(metrics['total_ns'])} summed duration")
        facts.add_row("ncu metrics", f"{len(metrics['metrics_present'])} of {len(CANONICAL_METRIC_NAMES)}: "
                                     + (", ".join(metrics["metrics_present"]) or "none"))
    console.print(Text(clean_text(summary["path"]), style="bold"), soft_wrap=True)
    console.print(facts)
    for kernels in summary.get("kernel_summary", []):
        _print_top(console, f"top {TOP} kernels by total time, stage {kernels['stage']}", kernels["top"], full)
    if metrics and metrics["top"]:
        _print_top(console, f"top {TOP} profiled kernels by duration", metrics["top"], full)
    console.print()


def _print_top(console: Console, title: str, top: list[dict[str, Any]], full: bool) -> None:
    """The kernels by their unique friendly names, or (``full``) their whole profiler names, wrapped."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=Text(title), title_justify="left", expand=True)
    table.add_column("kernel", no_wrap=not full, overflow="fold" if full else "ellipsis", ratio=1)
    table.add_column("time %", justify="right", no_wrap=True)
    table.add_column("total", justify="right", no_wrap=True)
    table.add_column("count", justify="right", no_wrap=True)
    for row in top:
        pct = "unknown" if row["time_pct"] is None else f"{row['time_pct']:.2f}"
        table.add_row(Text(row["name"] if full else row["friendly_name"]), pct, _duration(row["total_ns"]), f"{row['count']:,}")
    console.print(table)
