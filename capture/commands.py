"""The exact argv of every profiler call a capture makes (pure functions, no side effects)."""
from __future__ import annotations

from pathlib import Path

from capture.workloads.params import Params, to_argv
from generator.run_layout import NSYS_STATS_REPORT as NSYS_STATS_REPORT  # the report capture.run asks for
from generator.run_layout import RunLayout

#: ncu sections collected by default (``--set`` and ``--metrics`` add to them).
DEFAULT_SECTIONS: tuple[str, ...] = (
    "SpeedOfLight",
    "MemoryWorkloadAnalysis",
    "Occupancy",
    "LaunchStats",
    "SchedulerStats",
    "WarpStateStats",
    "ComputeWorkloadAnalysis",
    "SpeedOfLight_RooflineChart",
    "SpeedOfLight_HierarchicalTensorRooflineChart",
)

NSYS_EXTRA_REPORTS: tuple[str, ...] = ("nvtx_sum", "cuda_api_sum")


def worker_argv(python: str, workload: str, params: Params, stages_out: Path | None = None) -> list[str]:
    argv = [python, "-m", "capture.worker", "--workload", workload, *to_argv(params)]
    return argv + (["--stages-out", str(stages_out)] if stages_out else [])


def nsys_profile(nsys: str, layout: RunLayout, worker: list[str]) -> list[str]:
    return [nsys, "profile", "--trace=cuda,nvtx", "--sample=none", "--cpuctxsw=none",
            "-o", str(layout.nsys_report), *worker]


def nsys_export(nsys: str, layout: RunLayout) -> list[str]:
    return [nsys, "export", "--type", "sqlite", "--output", str(layout.sqlite), str(layout.nsys_rep)]


def nsys_stats(nsys: str, layout: RunLayout, reports: list[str], prefix: str, stage: str | None = None) -> list[str]:
    """``nsys stats`` of the SQLite export; writes ``<stats>/<prefix>_<report>.csv`` per report."""
    argv = [nsys, "stats", "--report", ",".join(reports), "--format", "csv",
            "--output", str(layout.stats / prefix)]
    if stage is not None:
        argv += ["--filter-nvtx", stage]
    return argv + [str(layout.sqlite)]


def ncu_profile(ncu: str, layout: RunLayout, worker: list[str], *, stages: list[str], kernel_regex: str,
                sections: tuple[str, ...] = DEFAULT_SECTIONS, section_set: str | None = None,
                metrics: list[str] | None = None, clock_control: str = "none", suffix: str = "") -> list[str]:
    """One model run under ncu: the measured stages' launches of the selected kernels (matched by
    mangled name), one launch per distinct launch configuration."""
    argv = [ncu, "--clock-control", clock_control, "--target-processes", "all", "--nvtx"]
    for stage in stages:
        argv += ["--nvtx-include", f"{stage}/"]
    argv += ["--kernel-name-base", "mangled", "--kernel-name", f"regex:{kernel_regex}",
             "--filter-mode", "per-launch-config", "--launch-count", "1"]
    if section_set:
        argv += ["--set", section_set]
    for section in sections:
        argv += ["--section", section]
    if metrics:
        argv += ["--metrics", ",".join(metrics)]
    return argv + ["-o", str(layout.ncu_report(suffix)), *worker]


def ncu_export_raw(ncu: str, layout: RunLayout, suffix: str = "") -> list[str]:
    """``--page raw`` CSV (stdout goes to ``raw.csv``)."""
    return [ncu, "--import", str(layout.ncu_rep(suffix)), "--csv", "--page", "raw"]


def ncu_export_mangled(ncu: str, layout: RunLayout, suffix: str = "") -> list[str]:
    """The profiled launches with mangled names (stdout goes to a log): coverage is checked on it."""
    return [ncu, "--import", str(layout.ncu_rep(suffix)), "--csv", "--page", "raw",
            "--print-kernel-base", "mangled", "--metrics", "gpu__time_duration.sum"]
