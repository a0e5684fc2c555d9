"""`python -m generator inspect PATH…`: what each profiler file is and what it holds."""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console
from rich.table import Table
from rich.text import Text

from generator.analyses.naming import name_kernels
from generator.errors import InputError
from generator.metric_table import CANONICAL_METRIC_NAMES
from generator.model import Dataset
from generator.readers import read
from generator.text_safety import clean_text

HELP = "say what each profiler file is and summarize its kernels, GPUs and NVTX ranges"
TOP = 5
SHOWN_STAGES = 12


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="nsys/ncu/PyTorch profiler files")
    parser.add_argument("--stage", metavar="NAME", help="restrict kernels to this NVTX / record_function range")
    parser.add_argument("--json", action="store_true", help="print the summaries as JSON (deterministic)")
    parser.add_argument("--full", action="store_true",
                        help="show the kernels' full profiler names (default: unique friendly names)")


def run(args: argparse.Namespace) -> int:
    console = Console(highlight=False)
    summaries: list[dict[str, Any]] = []
    failed = False
    for path in args.paths:
        try:
            summary = summarize(read(path, stage=args.stage))
        except (InputError, OSError, UnicodeDecodeError) as exc:
            if args.debug:
                raise
            failed = True
            print(f"error: {clean_text(str(_as_input_error(path, exc)))}", file=sys.stderr)
            summaries.append({"path": str(path), "error": _as_input_error(path, exc).problem})
            continue
        summaries.append(summary)
        if not args.json:
            _print(console, summary, full=args.full)
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
    top = rows.sort_values(["total_ns", "name"], ascending=[False, True]).head(TOP)
    return {
        "stage": stage,
        "kernels": int(rows["name"].nunique()),
        "launches": int(rows["count"].sum()),
        "total_ns": _number(rows["total_ns"].sum(min_count=1)),
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
    facts = Table.grid(padding=(0, 2))
    facts.add_column(style="bold")
    facts.add_column(overflow="fold")
    version = f" ({summary['format_version']})" if summary["format_version"] else ""
    facts.add_row("format", Text(f"{summary['format']}{version}"))
    facts.add_row("GPUs", Text("; ".join(_gpu_text(g) for g in summary["gpus"]) or "unknown"))
    stages = summary["stages"]
    more = f", … ({len(stages)} in all)" if len(stages) > SHOWN_STAGES else ""
    facts.add_row("NVTX ranges", Text(", ".join(stages[:SHOWN_STAGES]) + more if stages else "none"))
    for note in summary["notes"]:
        facts.add_row("note", Text(note))
    for kernels in summary.get("kernel_summary", []):
        facts.add_row(Text(f"kernels [{kernels['stage']}]"),
                      f"{kernels['kernels']} distinct, {kernels['launches']:,} launches, "
                      f"{_duration(kernels['total_ns'])} GPU time")
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
    table = Table(title=Text(title), title_justify="left", expand=True)
    table.add_column("kernel", no_wrap=not full, overflow="fold" if full else "ellipsis", ratio=1)
    table.add_column("time %", justify="right", no_wrap=True)
    table.add_column("total", justify="right", no_wrap=True)
    table.add_column("count", justify="right", no_wrap=True)
    for row in top:
        pct = "unknown" if row["time_pct"] is None else f"{row['time_pct']:.2f}"
        table.add_row(Text(row["name"] if full else row["friendly_name"]), pct, _duration(row["total_ns"]), f"{row['count']:,}")
    console.print(table)
