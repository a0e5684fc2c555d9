"""One capture: nsys pass → stats → top-N → one ncu pass over all selected kernels → coverage.

Every step is a manifest phase; a failed step records its one-line error (its tool output stays
in ``logs/``) and the steps that need its output are skipped, while earlier artifacts stay usable.
"""
from __future__ import annotations

import csv
import json
import lzma
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from capture import commands as cmd
from capture.kernel_filter import exact_regex
from capture.manifest import Manifest, PhaseFailed, create_run_dir
from capture.tools import CaptureError, find_tool, run_logged, tool_version
from capture.topn import TopN, mangled_names, select, stage_summaries
from capture.workloads import declared_stages
from capture.workloads.params import Params
from generator.run_layout import NCU_PASSES

Progress = Callable[[str], None]


@dataclass(frozen=True)
class RunConfig:
    workload: str
    params: Params
    run_dir: Path
    top_n: int = 20
    stages: tuple[str, ...] | None = None  # restrict to these measured stages
    nsys: str | None = None
    ncu: str | None = None
    skip_ncu: bool = False
    include_nccl: bool = False
    ncu_set: str | None = None
    ncu_sections: tuple[str, ...] = cmd.DEFAULT_SECTIONS
    ncu_metrics: tuple[str, ...] = ()
    clock_control: str = "none"
    python: str = field(default_factory=lambda: sys.executable)

    def __post_init__(self) -> None:
        object.__setattr__(self, "run_dir", self.run_dir.absolute())

    @property
    def layout(self) -> cmd.RunLayout:
        return cmd.RunLayout(self.run_dir)

    def worker(self, stages_out: Path | None = None) -> list[str]:
        return cmd.worker_argv(self.python, self.workload, self.params, stages_out)


def planned_commands(cfg: RunConfig, nsys: str, ncu: str | None) -> list[tuple[str, list[str], Path | None]]:
    """Every command a capture would run, in order, with the file its stdout goes to (if any);
    the kernel regex and stages that only the nsys pass can tell are ``<…>`` placeholders
    (what ``--dry-run`` prints)."""
    lay = cfg.layout
    stages = list(cfg.stages or declared_stages(cfg.workload) or ["<stages of the nsys pass>"])
    plan = [
        ("nsys profile", cmd.nsys_profile(nsys, lay, cfg.worker(lay.stages_json)), None),
        ("nsys export", cmd.nsys_export(nsys, lay), None),
        ("nsys stats all", cmd.nsys_stats(nsys, lay, [cmd.NSYS_STATS_REPORT, *cmd.NSYS_EXTRA_REPORTS], "all"), None),
        *((f"nsys stats {s}", cmd.nsys_stats(nsys, lay, [cmd.NSYS_STATS_REPORT], s, stage=s), None) for s in stages),
    ]
    if ncu:
        plan += [
            ("ncu profile", _ncu_profile(cfg, ncu, stages, "<regex of the top-N kernels' mangled names>"), None),
            ("ncu export raw", cmd.ncu_export_raw(ncu, lay), lay.raw_csv()),
            ("ncu export names", cmd.ncu_export_mangled(ncu, lay), lay.names_csv()),
        ]
    return plan


def _ncu_profile(cfg: RunConfig, ncu: str, stages: list[str], regex: str, suffix: str = "") -> list[str]:
    return cmd.ncu_profile(
        ncu, cfg.layout, cfg.worker(), stages=stages, kernel_regex=regex, sections=cfg.ncu_sections,
        section_set=cfg.ncu_set, metrics=list(cfg.ncu_metrics), clock_control=cfg.clock_control, suffix=suffix,
    )


def environment(python: str) -> dict:
    """``python -m capture.environment`` in the workload's interpreter."""
    out = subprocess.run([python, "-m", "capture.environment"], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise CaptureError(f"cannot inspect the environment: {(out.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(out.stdout)


def check(cfg: RunConfig) -> tuple[str, str | None, dict]:
    """Tools and GPU, before anything is written: (nsys, ncu or None, environment)."""
    nsys = find_tool("nsys", cfg.nsys)
    ncu = None if cfg.skip_ncu else find_tool("ncu", cfg.ncu)
    env = environment(cfg.python)
    if cfg.params.device.startswith("cuda") and not env["gpus"]:
        raise CaptureError("no CUDA GPU visible to torch (use a GPU machine, or --device cpu for a dry run)")
    return nsys, ncu, env


def _tool(label: str, argv: list[str], lay: cmd.RunLayout, stdout_to: Path | None = None) -> None:
    result = run_logged(argv, lay.logs, label, stdout_to=stdout_to)
    if result.returncode != 0:
        raise PhaseFailed(f"{label} exited {result.returncode}: {result.last_error_line()} (logs/{label}.stderr)")


def _stats(nsys: str, lay: cmd.RunLayout, stages: list[str], man: Manifest) -> None:
    jobs = [("all", None, [cmd.NSYS_STATS_REPORT, *cmd.NSYS_EXTRA_REPORTS]),
            *((s, s, [cmd.NSYS_STATS_REPORT]) for s in stages)]
    lay.stats.mkdir(parents=True, exist_ok=True)
    with man.phase("nsys_stats", [cmd.nsys_stats(nsys, lay, r, p, stage=s) for p, s, r in jobs]):
        for prefix, stage, reports in jobs:
            _tool(f"nsys_stats_{prefix}", cmd.nsys_stats(nsys, lay, reports, prefix, stage=stage), lay)
            for report in reports:  # nsys names them <prefix>_<report>[_nvtx=<stage>].csv
                target = lay.kern_sum_csv(prefix) if report == cmd.NSYS_STATS_REPORT else lay.stats / f"{report}.csv"
                written = sorted(lay.stats.glob(f"{prefix}_{report}*.csv"))
                if len(written) == 1 and written[0] != target:
                    written[0].rename(target)
        missing = [p.name for p in [*(lay.kern_sum_csv(s) for s in ["all", *stages]),
                                    *(lay.stats / f"{r}.csv" for r in cmd.NSYS_EXTRA_REPORTS)] if not p.is_file()]
        if missing:
            raise PhaseFailed(f"nsys stats wrote no {', '.join(missing)}")
    man.note("nsys/stats/all_cuda_gpu_kern_sum.csv covers the whole process (warm-up included); "
             "<stage>_cuda_gpu_kern_sum.csv (nsys --filter-nvtx) counts kernels whose GPU execution overlaps "
             "the range, while top_n attributes each kernel to the stage that launched it")


def profiled_mangled(csv_path: Path) -> list[str]:
    """Kernel names (mangled) of an ``ncu --page raw --csv --print-kernel-base mangled`` export."""
    opener = lzma.open if csv_path.suffix == ".xz" else open
    with opener(csv_path, "rt", newline="") as fh:
        rows = list(csv.reader(fh))
    if not rows or "Kernel Name" not in rows[0]:
        raise PhaseFailed(f"{csv_path.name}: no 'Kernel Name' column in the ncu export")
    i = rows[0].index("Kernel Name")
    return [r[i] for r in rows[2:] if len(r) > i]  # row 1 holds units


def coverage(top: TopN, mangled: dict[str, list[str]], profiled: set[str]) -> dict:
    """Selected kernels vs profiled ones, matched on mangled names."""
    def missing(kernels: list) -> list[str]:
        return [k.name for k in kernels if not set(mangled.get(k.name, [])) & profiled]

    overall_missing = missing(top.overall)
    selected = top.selected()
    selected_missing = missing(selected)
    return {
        "top_n": len(top.overall),
        "profiled": len(top.overall) - len(overall_missing),
        "missing": overall_missing,
        "selected": len(selected),
        "selected_profiled": len(selected) - len(selected_missing),
        "selected_missing": selected_missing,
    }


def _ncu_pass(cfg: RunConfig, ncu: str, stages: list[str], mangled: list[str], suffix: str, man: Manifest) -> set[str]:
    lay = cfg.layout
    lay.ncu_report().parent.mkdir(parents=True, exist_ok=True)
    name = f"ncu_profile{suffix}"
    with man.phase(name) as entry:
        if not mangled:
            raise PhaseFailed("the nsys export names no mangled name for the selected kernels")
        entry["commands"] = [_ncu_profile(cfg, ncu, stages, exact_regex(mangled), suffix)]
        man.save()
        _tool(name, entry["commands"][0], lay)
        if not lay.ncu_rep(suffix).is_file():
            raise PhaseFailed(f"ncu wrote no {lay.ncu_rep(suffix).name} (logs/{name}.stdout)")
    with man.phase(f"ncu_export{suffix}", [cmd.ncu_export_raw(ncu, lay, suffix), cmd.ncu_export_mangled(ncu, lay, suffix)]):
        _tool(f"ncu_export_raw{suffix}", cmd.ncu_export_raw(ncu, lay, suffix), lay, stdout_to=lay.raw_csv(suffix))
        names = lay.names_csv(suffix)
        _tool(f"ncu_export_names{suffix}", cmd.ncu_export_mangled(ncu, lay, suffix), lay, stdout_to=names)
        return set(profiled_mangled(names))


def capture(cfg: RunConfig, progress: Progress = print) -> Manifest:
    """Run the whole capture into ``cfg.run_dir`` (created here; never an existing one)."""
    nsys, ncu, env = check(cfg)
    lay = cfg.layout
    create_run_dir(lay.root)
    lay.logs.mkdir()
    man = Manifest(
        lay.manifest,
        status="running",
        workload=cfg.workload,
        params=cfg.params.as_dict(),
        argv=sys.argv,
        top_n_requested=cfg.top_n,
        environment=env,
        tools={"nsys": {"path": nsys, "version": tool_version(nsys)},
               "ncu": {"path": ncu, "version": tool_version(ncu)} if ncu else None},
    )
    try:
        _capture(cfg, nsys, ncu, man, progress)
    finally:
        failed = [p["name"] for p in man.data["phases"] if p["status"] == "failed"]
        man.set(status="failed" if failed else "ok", failed_phases=failed)
    return man


def _capture(cfg: RunConfig, nsys: str, ncu: str | None, man: Manifest, progress: Progress) -> None:
    lay = cfg.layout
    progress("nsys: profiling the workload")
    lay.nsys_rep.parent.mkdir()
    with man.phase("nsys_profile", [cmd.nsys_profile(nsys, lay, cfg.worker(lay.stages_json))]):
        _tool("nsys_profile", cmd.nsys_profile(nsys, lay, cfg.worker(lay.stages_json)), lay)
        if not lay.nsys_rep.is_file():
            raise PhaseFailed("nsys wrote no report.nsys-rep (logs/nsys_profile.stdout)")
        if not lay.stages_json.is_file():
            raise PhaseFailed("the workload did not finish its measured iteration (logs/nsys_profile.stderr)")
        measured = json.loads(lay.stages_json.read_text())
        stages = [s for s in measured if not cfg.stages or s in cfg.stages]
        man.set(stages=stages, stages_entered=measured)
        if not stages:
            raise PhaseFailed(f"no measured stage to profile (entered: {', '.join(measured) or 'none'})")
    unknown = sorted(set(cfg.stages or ()) - set(measured))
    if unknown:
        man.note(f"requested stages not entered by the workload: {', '.join(unknown)}")

    progress("nsys: exporting SQLite")
    with man.phase("nsys_export", [cmd.nsys_export(nsys, lay)]):
        _tool("nsys_export", cmd.nsys_export(nsys, lay), lay)
    progress("nsys: stats per stage")
    try:
        _stats(nsys, lay, stages, man)
    except PhaseFailed:
        pass  # recorded; top-N reads the SQLite export, not these CSVs

    progress(f"top-{cfg.top_n}: selecting kernels")
    with man.phase("top_n"):
        summaries = stage_summaries(lay.sqlite, stages)
        top = select(summaries, cfg.top_n, include_nccl=cfg.include_nccl)
        mangled = mangled_names(lay.sqlite, [k.name for k in top.selected()])
        man.set(top_n=top.as_dict(), mangled_names=mangled)
    if not ncu:
        man.skip("ncu_profile", "--skip-ncu")
        return

    selected = [m for k in top.selected() for m in mangled[k.name]]
    progress(f"ncu: profiling {len(top.selected())} kernels in one model run")
    profiled = _ncu_pass(cfg, ncu, stages, selected, "", man)
    cov = coverage(top, mangled, profiled)
    man.set(coverage=cov)
    if cov["selected_missing"]:
        missing = [m for name in cov["selected_missing"] for m in mangled[name]]
        progress(f"ncu: second pass for {len(cov['selected_missing'])} missing kernels")
        profiled |= _ncu_pass(cfg, ncu, stages, missing, NCU_PASSES[1], man)
        man.set(coverage={**coverage(top, mangled, profiled), "first_pass": cov})
