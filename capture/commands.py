"""The exact argv of every profiler call a capture makes (pure functions, no side effects)."""
from __future__ import annotations

from pathlib import Path

from capture.workloads.params import Params, to_argv
from generator.metric_table import ncu_metric_names
from generator.run_layout import NSYS_STATS_REPORT as NSYS_STATS_REPORT  # the report capture.run asks for
from generator.run_layout import RunLayout

#: Overhead runs of the nsys pass (timed pairs with and without module ranges, after one iteration
#: that counts the module calls). Each traced iteration costs the pass about 1.5 s all in, half of it
#: after the worker ends (nsys collecting and writing its events; the export and the stats grow with
#: them too): the ocr-vlm nsys pass took 41.7 and 39.2 s with 6 runs against 21.6 s with none (H100).
#: 3 pairs still give a median beside a spread. More also fail CUDA graphs: under nsys 2025.3's
#: ``--cuda-graph-trace=node`` the llm-decode preset's graph replays fail ("unspecified launch
#: failure") once the process has made 15 iterations of 32 replays each (6 runs), not with 9 (3 runs).
OVERHEAD_RUNS = 3

#: ncu sections collected by default besides the report's metrics: Speed of Light holds ncu's own
#: bound breakdown and rule, and costs no extra replay pass over the metrics (14 passes with it,
#: 15 without, on the H200; the nine sections collected before took 27, ``--set full`` 38).
DEFAULT_SECTIONS: tuple[str, ...] = ("SpeedOfLight",)
#: The raw metrics the report reads (generator.metric_table), collected with ``--metrics``.
REPORT_METRICS: tuple[str, ...] = tuple(ncu_metric_names())

NSYS_EXTRA_REPORTS: tuple[str, ...] = ("nvtx_sum", "cuda_api_sum")


def worker_argv(python: str, workload: str, params: Params, stages_out: Path | None = None,
                overhead_runs: int = 0, profile_plan: Path | None = None, calls_out: Path | None = None,
                link: bool = False) -> list[str]:
    """The nsys run (``stages_out``) also marks the operator calls the ncu run's windows are placed by
    and writes their shapes to ``calls_out`` (and, with ``link``, measures the ranks' all-reduce)."""
    argv = [python, "-m", "capture.worker", "--workload", workload, *to_argv(params)]
    argv += ["--stages-out", str(stages_out), "--mark-operators"] if stages_out else []
    argv += ["--calls-out", str(calls_out)] if stages_out and calls_out else []
    argv += ["--link"] if stages_out and link else []
    argv += ["--overhead-runs", str(overhead_runs)] if overhead_runs else []
    return argv + (["--profile-plan", str(profile_plan)] if profile_plan else [])


def torchrun(nproc: int, argv: list[str]) -> list[str]:
    """``argv`` (``PYTHON -m MODULE ARGS…``) as ``nproc`` ranks of one node under torchrun
    (``python -m torch.distributed.run``; a free rendezvous port on this host)."""
    python, flag, module, *args = argv
    assert flag == "-m", argv
    return [python, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(nproc),
            "--module", module, *args]


def ncu_one_rank(nproc: int, profile_rank: int, ncu: list[str], worker: list[str]) -> list[str]:
    """The ncu run of a multi-rank job: torchrun starts ``capture.rank_exec`` per rank, which runs
    ``ncu … worker`` in rank ``profile_rank`` and the plain worker in the others."""
    return torchrun(nproc, [worker[0], "-m", "capture.rank_exec", "--profile-rank", str(profile_rank), "--",
                            *ncu, "--worker", *worker])


def nsys_profile(nsys: str, layout: RunLayout, worker: list[str]) -> list[str]:
    """CUDA graphs are traced node by node: each replayed kernel is a kernel row of its launch."""
    return [nsys, "profile", "--trace=cuda,nvtx", "--sample=none", "--cpuctxsw=none", "--cuda-graph-trace=node",
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


def ncu_profile(ncu: str, layout: RunLayout, worker: list[str], *, includes: list[str], kernel_regex: str,
                sections: tuple[str, ...] = DEFAULT_SECTIONS, section_set: str | None = None,
                metrics: list[str] | None = None, clock_control: str = "none", suffix: str = "",
                launch_count: int = 1) -> list[str]:
    """One model run under ncu: the launches of the selected kernels (matched by mangled name) inside
    the NVTX ``includes`` (profile windows or stages), ``launch_count`` per launch configuration;
    kernels inside CUDA graphs are profiled node by node."""
    argv = [ncu, "--clock-control", clock_control, "--target-processes", "all", "--nvtx"]
    for include in includes:
        argv += ["--nvtx-include", include]
    argv += ["--graph-profiling", "node", "--kernel-name-base", "mangled", "--kernel-name", f"regex:{kernel_regex}",
             "--filter-mode", "per-launch-config", "--launch-count", str(launch_count)]
    if section_set:
        argv += ["--set", section_set]
    for section in sections:
        argv += ["--section", section]
    if metrics:
        argv += ["--metrics", ",".join(metrics)]
    return argv + ["-o", str(layout.ncu_report(suffix)), *worker]


def ncu_export_raw(ncu: str, layout: RunLayout, suffix: str = "") -> list[str]:
    """``--page raw`` CSV (stdout goes to ``raw.csv``), in base units: ncu otherwise scales each column
    to one unit and prints six decimals, so small values lose digits (22,528 bytes as 0.000023 Gbyte)."""
    return [ncu, "--import", str(layout.ncu_rep(suffix)), "--csv", "--page", "raw", "--print-units", "base"]


def ncu_export_mangled(ncu: str, layout: RunLayout, suffix: str = "") -> list[str]:
    """The profiled launches with mangled names and NVTX stacks (stdout goes to a log): coverage
    (kernels, and the stage of each profiled launch) is checked on it."""
    return [ncu, "--import", str(layout.ncu_rep(suffix)), "--csv", "--page", "raw",
            "--print-kernel-base", "mangled", "--metrics", "gpu__time_duration.sum"]
