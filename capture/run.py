"""One capture: nsys pass → stats → top-N → targets → one ncu pass over all selected kernels → coverage.

Every step is a manifest phase; a failed step records its one-line error (its tool output stays
in ``logs/``) and the steps that need its output are skipped, while earlier artifacts stay usable.
"""
from __future__ import annotations

import csv
import dataclasses
import json
import lzma
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from capture import commands as cmd
from capture.commands import OVERHEAD_RUNS
from capture.kernel_filter import exact_regex
from capture.manifest import Manifest, PhaseFailed, create_run_dir
from capture.targets import describe, launch_count, ncu_params, targets, windows_plan
from capture.tools import CaptureError, ToolResult, find_tool, run_logged, tool_version
from capture.topn import TopN, mangled_names, select, stage_summaries
from capture.workloads import declared_stages, resolve
from capture.workloads.params import Params
from capture.workloads.windows import NCU_INCLUDE, Plan
from generator.readers.fidelity import SAME, compare, compare_ranks, process_kernels, stage_kernels
from generator.readers.nsys_sqlite import graph_summary
from generator.run_layout import NCU_PASSES, REPEAT_NVTX_DOMAIN

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
    ncu_metrics: tuple[str, ...] = cmd.REPORT_METRICS
    clock_control: str = "none"
    all_launch_configs: bool = False  # every launch configuration in every stage, not one launch per (kernel, stage)
    overhead_runs: int = OVERHEAD_RUNS  # iterations timed with and without module ranges during the nsys pass
    nproc_per_node: int = 1  # ranks under torchrun, one per GPU (1: the worker alone)
    ncu_rank: int = 0  # the rank ncu profiles when nproc_per_node > 1
    python: str = field(default_factory=lambda: sys.executable)
    probe_chip: bool = False  # run the chip probe first and record its figures in the manifest

    def __post_init__(self) -> None:
        object.__setattr__(self, "run_dir", self.run_dir.absolute())

    @property
    def layout(self) -> cmd.RunLayout:
        return cmd.RunLayout(self.run_dir)

    def worker(self, stages_out: Path | None = None, plan: Path | None = None, params: Params | None = None
               ) -> list[str]:
        """The worker's argv: the nsys run writes the stages and times the module ranges, the ncu
        run opens the profile windows of ``plan`` (with ``params``, else the capture's)."""
        overhead = self.overhead_runs if stages_out else 0
        return cmd.worker_argv(self.python, self.workload, params or self.params, stages_out, overhead, plan,
                               self.layout.calls_csv, link=self.nproc_per_node > 1)

    def launch(self, worker: list[str]) -> list[str]:
        """The nsys run's worker, under torchrun with several ranks."""
        return cmd.torchrun(self.nproc_per_node, worker) if self.nproc_per_node > 1 else worker


def planned_commands(cfg: RunConfig, nsys: str, ncu: str | None) -> list[tuple[str, list[str], Path | None]]:
    """Every command a capture would run, in order, with the file its stdout goes to (if any);
    the kernel regex and stages that only the nsys pass can tell are ``<…>`` placeholders
    (what ``--dry-run`` prints)."""
    lay = cfg.layout
    stages = list(cfg.stages or declared_stages(cfg.workload) or ["<stages of the nsys pass>"])
    plan = [
        *((("chip probe", _probe_argv(cfg), None),) if cfg.probe_chip else ()),
        ("nsys profile", cmd.nsys_profile(nsys, lay, cfg.launch(cfg.worker(lay.stages_json))), None),
        ("nsys export", cmd.nsys_export(nsys, lay), None),
        ("nsys stats all", cmd.nsys_stats(nsys, lay, [cmd.NSYS_STATS_REPORT, *cmd.NSYS_EXTRA_REPORTS], "all"), None),
        *((f"nsys stats {s}", cmd.nsys_stats(nsys, lay, [cmd.NSYS_STATS_REPORT], s, stage=s), None) for s in stages),
    ]
    if ncu:
        plan += [
            ("ncu profile", _ncu_profile(cfg, ncu, _includes(cfg, stages), "<regex of the top-N kernels' mangled names>",
                                         None if cfg.all_launch_configs else lay.profile_plan), None),
            ("ncu export raw", cmd.ncu_export_raw(ncu, lay), lay.raw_csv()),
            ("ncu export names", cmd.ncu_export_mangled(ncu, lay), lay.names_csv()),
        ]
    return plan


def _includes(cfg: RunConfig, stages: list[str]) -> list[str]:
    """NVTX includes of the first ncu pass: the profile windows, or every stage (all launch configs)."""
    return [f"{s}/" for s in stages] if cfg.all_launch_configs else [NCU_INCLUDE]


def _ncu_profile(cfg: RunConfig, ncu: str, includes: list[str], regex: str, plan: Path | None,
                 suffix: str = "", launches: int = 1, params: Params | None = None) -> list[str]:
    """The ncu run; with several ranks, ncu wraps rank ``cfg.ncu_rank``'s worker only."""
    worker = cfg.worker(plan=plan, params=params)
    ranks = cfg.nproc_per_node > 1
    argv = cmd.ncu_profile(
        ncu, cfg.layout, [] if ranks else worker, includes=includes, kernel_regex=regex, sections=cfg.ncu_sections,
        section_set=cfg.ncu_set, metrics=list(cfg.ncu_metrics), clock_control=cfg.clock_control, suffix=suffix,
        launch_count=launches,
    )
    return cmd.ncu_one_rank(cfg.nproc_per_node, cfg.ncu_rank, argv, worker) if ranks else argv


def environment(python: str) -> dict:
    """``python -m capture.environment`` in the workload's interpreter."""
    out = subprocess.run([python, "-m", "capture.environment"], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise CaptureError(f"cannot inspect the environment: {(out.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(out.stdout)


def check(cfg: RunConfig) -> tuple[str, str | None, dict, dict]:
    """Tools, their versions, the workload and the GPU, before anything is written: (nsys, ncu or
    None, environment, the manifest's tools). The environment probe and the tools' ``--version``
    run beside the import of the workload's module (on this thread: a module may set signal handlers)."""
    nsys = find_tool("nsys", cfg.nsys)
    ncu = None if cfg.skip_ncu else find_tool("ncu", cfg.ncu)
    with ThreadPoolExecutor(3) as pool:
        probe = pool.submit(environment, cfg.python)
        versions = {name: pool.submit(tool_version, path) for name, path in (("nsys", nsys), ("ncu", ncu)) if path}
        resolve(cfg.workload)
        env = probe.result()
        tools = {"nsys": {"path": nsys, "version": versions["nsys"].result()},
                 "ncu": {"path": ncu, "version": versions["ncu"].result()} if ncu else None}
    if cfg.params.device.startswith("cuda") and not env["gpus"]:
        raise CaptureError("no CUDA GPU visible to torch (use a GPU machine, or --device cpu for a dry run)")
    return nsys, ncu, env, tools


def _tool(label: str, argv: list[str], lay: cmd.RunLayout, stdout_to: Path | None = None) -> None:
    _succeeded(label, run_logged(argv, lay.logs, label, stdout_to=stdout_to))


def _succeeded(label: str, result: ToolResult) -> None:
    """PhaseFailed naming the call ``label``, its exit status, its last error line and its log, if it failed."""
    if result.returncode != 0:
        raise PhaseFailed(f"{label} exited {result.returncode}: {result.last_error_line()} (logs/{label}.stderr)")


@contextmanager
def stats_beside(nsys: str, lay: cmd.RunLayout, stages: list[str], man: Manifest) -> Iterator[None]:
    """nsys stats of the whole capture and of each stage, all side by side while the block runs
    (they only read the export, as top-N and the targets do: its bytes are unchanged after them);
    their phase is recorded when the block is left. A failure is recorded, not raised: top-N reads
    the SQLite export, not these CSVs."""
    jobs = [("all", None, [cmd.NSYS_STATS_REPORT, *cmd.NSYS_EXTRA_REPORTS]),
            *((s, s, [cmd.NSYS_STATS_REPORT]) for s in stages)]
    commands = [cmd.nsys_stats(nsys, lay, reports, prefix, stage=stage) for prefix, stage, reports in jobs]
    lay.stats.mkdir(parents=True, exist_ok=True)
    started = man.now()
    with ThreadPoolExecutor(len(jobs)) as pool:
        runs = [pool.submit(run_logged, argv, lay.logs, f"nsys_stats_{prefix}")
                for argv, (prefix, _, _) in zip(commands, jobs)]
        try:
            yield
        finally:
            results = [run.result() for run in runs]
            try:
                with man.phase("nsys_stats", commands, started=started):
                    _collect_stats(lay, stages, jobs, results)
                man.note("nsys/stats/all_cuda_gpu_kern_sum.csv covers the whole process (warm-up included); "
                         "<stage>_cuda_gpu_kern_sum.csv (nsys --filter-nvtx) counts kernels whose GPU execution "
                         "overlaps the range, while top_n attributes each kernel to the stage that launched it")
            except PhaseFailed:
                pass


def _collect_stats(lay: cmd.RunLayout, stages: list[str], jobs: list[tuple[str, str | None, list[str]]],
                   results: list[ToolResult]) -> None:
    """Give the CSVs nsys stats wrote their run-layout names; PhaseFailed if a call failed or one is missing."""
    for (prefix, _, reports), result in zip(jobs, results):
        _succeeded(f"nsys_stats_{prefix}", result)
        for report in reports:  # nsys names them <prefix>_<report>[_nvtx=<stage>].csv
            target = lay.kern_sum_csv(prefix) if report == cmd.NSYS_STATS_REPORT else lay.stats / f"{report}.csv"
            written = sorted(lay.stats.glob(f"{prefix}_{report}*.csv"))
            if len(written) == 1 and written[0] != target:
                written[0].rename(target)
    missing = [p.name for p in [*(lay.kern_sum_csv(s) for s in ["all", *stages]),
                                *(lay.stats / f"{r}.csv" for r in cmd.NSYS_EXTRA_REPORTS)] if not p.is_file()]
    if missing:
        raise PhaseFailed(f"nsys stats wrote no {', '.join(missing)}")


def _read_csv(csv_path: Path) -> list[list[str]]:
    opener = lzma.open if csv_path.suffix == ".xz" else open
    with opener(csv_path, "rt", newline="") as fh:
        rows = list(csv.reader(fh))
    if not rows or "Kernel Name" not in rows[0]:
        raise PhaseFailed(f"{csv_path.name}: no 'Kernel Name' column in the ncu export")
    return rows


#: The column of ``--page raw --csv`` that holds each launch's push/pop NVTX ranges per thread.
NVTX_PUSH_POP = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"


def profiled_launches(csv_path: Path, stages: list[str]) -> list[tuple[str, str | None]]:
    """(mangled name, stage) per profiled launch: the stage is the default-domain push/pop range
    of ``stages`` open at the launch (ncu prints each as ``"<default domain>:NAME:…"``)."""
    rows = _read_csv(csv_path)
    name = rows[0].index("Kernel Name")
    nvtx = rows[0].index(NVTX_PUSH_POP) if NVTX_PUSH_POP in rows[0] else None
    out = []
    for r in rows[2:]:
        text = r[nvtx] if nvtx is not None and len(r) > nvtx else ""
        stage = next((s for s in stages if f'"<default domain>:{s}:' in text), None)
        out.append((r[name], stage))
    return out


def profiled_processes(csv_path: Path) -> list[tuple[int, int]]:
    """(process id, device) of every process ncu profiled, as ncu's ``--page raw`` export names them."""
    rows = _read_csv(csv_path)
    if "Process ID" not in rows[0] or "Device" not in rows[0]:
        raise PhaseFailed(f"{csv_path.name}: no 'Process ID' or 'Device' column in the ncu export")
    pid, device = rows[0].index("Process ID"), rows[0].index("Device")
    return sorted({(int(r[pid]), int(r[device])) for r in rows[2:] if len(r) > max(pid, device)})


def ncu_profiled(rank: int, ranks: list[dict], csv_path: Path) -> dict:
    """The manifest's ``ncu_profiled``: the rank ncu profiled among ``ranks`` (the nsys run's records:
    its pid and GPU there), and the processes and devices ncu's own export names (the ncu run's);
    the other ranks ran unprofiled and no collective was replayed."""
    processes = profiled_processes(csv_path)
    record = next(r for r in ranks if r["rank"] == rank)
    return {"rank": rank, "world_size": len(ranks), "nsys_pid": record["pid"], "gpu": record.get("gpu"),
            "ncu_pids": sorted({p for p, _ in processes}), "ncu_devices": sorted({d for _, d in processes}),
            "collectives_replayed": False}


def coverage(top: TopN, mangled: dict[str, list[str]], launches: list[tuple[str, str | None]],
             pairs: list[tuple[str, str]]) -> dict:
    """Selected kernels vs profiled launches, matched on mangled names; and the (stage, kernel)
    pairs to profile vs the stages the profiled launches ran in (stage-true metrics)."""
    profiled = {m for m, _ in launches}
    staged = set(launches)

    def missing(kernels: list) -> list[str]:
        return [k.name for k in kernels if not set(mangled.get(k.name, [])) & profiled]

    overall_missing = missing(top.overall)
    selected = top.selected()
    selected_missing = missing(selected)
    pairs_missing = [[s, n] for s, n in pairs if not any((m, s) in staged for m in mangled.get(n, []))]
    return {
        "top_n": len(top.overall),
        "profiled": len(top.overall) - len(overall_missing),
        "missing": overall_missing,
        "selected": len(selected),
        "selected_profiled": len(selected) - len(selected_missing),
        "selected_missing": selected_missing,
        "stage_pairs": len(pairs),
        "stage_pairs_profiled": len(pairs) - len(pairs_missing),
        "stage_pairs_missing": pairs_missing,
        "profiled_launches": len(launches),
    }


class _NcuProgress:
    """Turns ncu's ``==PROF== Profiling "…"`` lines into "profiled / expected, elapsed" lines."""

    def __init__(self, progress: Progress, expected: int, every_s: float = 10.0) -> None:
        self.progress, self.expected, self.every_s = progress, expected, every_s
        self.start = self.last = time.monotonic()
        self.count = 0

    def __call__(self, line: str) -> None:
        if not line.startswith("==PROF== Profiling"):
            return
        self.count += 1
        now = time.monotonic()
        if now - self.last >= self.every_s or self.count == self.expected:
            self.last = now
            self.progress(f"ncu: {self.count} launches profiled for {self.expected} targets, {now - self.start:.0f} s")


def _ncu_pass(cfg: RunConfig, ncu: str, stages: list[str], includes: list[str], mangled: list[str],
              plan: Path | None, expected: int, suffix: str, man: Manifest,
              progress: Progress, launches: int = 1, params: Params | None = None) -> list[tuple[str, str | None]]:
    lay = cfg.layout
    lay.ncu_report().parent.mkdir(parents=True, exist_ok=True)
    name = f"ncu_profile{suffix}"
    with man.phase(name) as entry:
        if not mangled:
            raise PhaseFailed("the nsys export names no mangled name for the selected kernels")
        entry["commands"] = [_ncu_profile(cfg, ncu, includes, exact_regex(mangled), plan, suffix, launches, params)]
        man.save()
        counter = _NcuProgress(progress, expected)
        result = run_logged(entry["commands"][0], lay.logs, name, on_line=counter)
        entry["launches_profiled"] = counter.count
        _succeeded(name, result)
        if not lay.ncu_rep(suffix).is_file():
            raise PhaseFailed(f"ncu wrote no {lay.ncu_rep(suffix).name} (logs/{name}.stdout)")
    with man.phase(f"ncu_export{suffix}", [cmd.ncu_export_raw(ncu, lay, suffix), cmd.ncu_export_mangled(ncu, lay, suffix)]):
        _tool(f"ncu_export_raw{suffix}", cmd.ncu_export_raw(ncu, lay, suffix), lay, stdout_to=lay.raw_csv(suffix))
        names = lay.names_csv(suffix)
        _tool(f"ncu_export_names{suffix}", cmd.ncu_export_mangled(ncu, lay, suffix), lay, stdout_to=names)
        return profiled_launches(names, stages)


def capture(cfg: RunConfig, progress: Progress = print) -> Manifest:
    """Run the whole capture into ``cfg.run_dir`` (created here; never an existing one)."""
    nsys, ncu, env, tools = check(cfg)
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
        tools=tools,
    )
    try:
        _capture(cfg, nsys, ncu, man, progress)
    finally:
        failed = [p["name"] for p in man.data["phases"] if p["status"] == "failed"]
        man.set(status="failed" if failed else "ok", failed_phases=failed)
    return man


def _select(cfg: RunConfig, lay: cmd.RunLayout, stages: list[str], man: Manifest, profile: bool
            ) -> tuple[TopN, dict[str, list[str]], Plan | None, pd.DataFrame | None]:
    """Top-N, the selected kernels' mangled names and, when ncu will ``profile``, the targets and
    the windows that reach them (the plan written for the ncu run)."""
    with man.phase("top_n"):
        summaries = stage_summaries(lay.sqlite, stages)
        top = select(summaries, cfg.top_n, include_nccl=cfg.include_nccl)
        mangled = mangled_names(lay.sqlite, [k.name for k in top.selected()])
        man.set(top_n=top.as_dict(), mangled_names=mangled,
                cuda_graphs=graph_summary(lay.sqlite, stages).to_dict(orient="records"))
    if not profile:
        return top, mangled, None, None
    with man.phase("ncu_targets") as entry:
        table = targets(lay.sqlite, top)
        windows = windows_plan(table)
        lay.profile_plan.write_text(json.dumps(windows.to_json(), indent=1))
        entry["windows"] = len(windows)
        entry["operator_windows"] = len(windows.operators)
        man.set(ncu_selection="all launch configurations" if cfg.all_launch_configs
                else "one launch per (kernel, stage): the configuration with most of the stage's time",
                ncu_targets=describe(table),
                ncu_collection={"metrics": list(cfg.ncu_metrics), "sections": list(cfg.ncu_sections), "set": cfg.ncu_set})
    return top, mangled, windows, table


#: What the manifest's ``fidelity`` compared.
FIDELITY_NOTE = ("kernels (demangled name x launches) per stage of the measured iteration (module ranges on, after "
                 "the marked warm-ups) against its plain repeat in the same process (no module range, no operator "
                 f"mark; stage ranges in the NVTX domain {REPEAT_NVTX_DOMAIN}); any difference is 'different kernels'")
#: The note a capture whose measured iteration differed from its plain repeat makes.
FALLBACK_NOTE = ("the measured iteration launched other kernels than its plain repeat (manifest fidelity): ncu "
                 "profiled the selected kernels inside their stage ranges only, with no module range and no "
                 "operator window, which do not change the program")


#: What a multi-rank manifest's top-level records are.
RANKS_NOTE = ("several ranks (torchrun): 'ranks' holds each rank's pid, GPU, stages, energy and clocks; the "
              "top-level energy, clocks and tokens are rank 0's; top-N and nsys stats count the launches of "
              "every rank; the fidelity check compares each rank with itself ('ranks'[i].fidelity, the "
              "top-level verdict the worst rank's); ncu profiled rank 'ncu_rank' alone while the others ran "
              "unprofiled (collectives are never replayed; 'ncu_profiled' names its processes and GPU); "
              "ops/calls.csv is rank 0's operator calls, calls.rank<N>.csv the others'")
#: What a multi-rank manifest's ``fidelity`` compared.
FIDELITY_RANKS_NOTE = (f"{FIDELITY_NOTE}; each rank's kernels against its own repeat ('ranks'[i].fidelity): the "
                       "verdict is the worst rank's, the launches and kernels the sum over ranks")


def fidelity(sqlite: Path, stages: list[str], ranks: list[dict] | None = None) -> tuple[dict, list[dict] | None]:
    """The manifest's ``fidelity`` (the measured stages' kernels against the plain repeat's) and, with
    several ``ranks`` (the worker's records), each rank's, counted in its own process (pid)."""
    measured, plain = {s: s for s in stages}, {s: f"{REPEAT_NVTX_DOMAIN}:{s}" for s in stages}
    if not ranks:
        return compare(stage_kernels(sqlite, measured), stage_kernels(sqlite, plain), stages, FIDELITY_NOTE), None
    pids = [r["pid"] for r in ranks]
    return compare_ranks(process_kernels(sqlite, measured, pids), process_kernels(sqlite, plain, pids), ranks,
                         stages, FIDELITY_RANKS_NOTE)


def keeps_windows(record: dict | None) -> bool:
    """Whether ncu may place its windows by operator calls and module ranges: unless the measured
    iteration ran other kernels than the program without them (no record: nothing says so)."""
    return record is None or record["verdict"] == SAME


def _fidelity_phase(lay: cmd.RunLayout, stages: list[str], repeated: bool, man: Manifest) -> dict | None:
    """Record ``fidelity``, and each rank's in ``ranks`` (a failure is recorded, not raised: the
    capture goes on without it)."""
    if not repeated:
        man.skip("fidelity", "the worker made no plain repeat of the measured iteration")
        return None
    try:
        with man.phase("fidelity"):
            ranks = man.data.get("ranks")
            record, per_rank = fidelity(lay.sqlite, stages, ranks)
            if per_rank:
                man.set(ranks=[{**r, "fidelity": f} for r, f in zip(ranks, per_rank)])
            man.set(fidelity=record)
            return record
    except PhaseFailed:
        return None


def _probe_argv(cfg: RunConfig) -> list[str]:
    """The chip probe's command, writing chip-probe.yaml into the run directory."""
    return [cfg.python, "-m", "capture.chip_probe", "--out", str(cfg.run_dir / "chip-probe.yaml")]


def _probe_chip(cfg: RunConfig, man: Manifest) -> None:
    """``python -m capture.chip_probe`` in the workload's interpreter into the run directory; the
    manifest's ``chip_probe`` holds its figures (probe_math.figures) and the file's name."""
    from capture.probe_math import figures

    argv = _probe_argv(cfg)
    out = Path(argv[-1])
    with man.phase("chip_probe", [argv]):
        _tool("chip_probe", argv, cfg.layout)
        raw = json.loads(out.with_suffix(".raw.json").read_text())
        man.set(chip_probe={"file": out.name, "device": raw.get("device"), "figures": figures(raw)})


def _capture(cfg: RunConfig, nsys: str, ncu: str | None, man: Manifest, progress: Progress) -> None:
    lay = cfg.layout
    if cfg.probe_chip:
        progress("chip probe: measuring the GPU (about a minute)")
        _probe_chip(cfg, man)
    progress("nsys: profiling the workload")
    lay.nsys_rep.parent.mkdir()
    profile = cmd.nsys_profile(nsys, lay, cfg.launch(cfg.worker(lay.stages_json)))
    with man.phase("nsys_profile", [profile]):
        _tool("nsys_profile", profile, lay)
        if not lay.nsys_rep.is_file():
            raise PhaseFailed("nsys wrote no report.nsys-rep (logs/nsys_profile.stdout)")
        if not lay.stages_json.is_file():
            raise PhaseFailed("the workload did not finish its measured iteration (logs/nsys_profile.stderr)")
        worker = json.loads(lay.stages_json.read_text())
        measured = worker["stages"]
        stages = [s for s in measured if not cfg.stages or s in cfg.stages]
        man.set(stages=stages, stages_entered=measured, module_ranges=worker["module_ranges"],
                module_overhead=worker["module_overhead"], operator_calls_marked=worker["operator_calls"],
                tokens=worker.get("tokens"), energy=worker.get("energy"), clocks=worker.get("clocks"))
        if worker.get("ranks"):
            man.set(ranks=worker["ranks"], link=worker.get("link"), ncu_rank=cfg.ncu_rank)
            man.note(RANKS_NOTE)
        if not stages:
            raise PhaseFailed(f"no measured stage to profile (entered: {', '.join(measured) or 'none'})")
    unknown = sorted(set(cfg.stages or ()) - set(measured))
    if unknown:
        man.note(f"requested stages not entered by the workload: {', '.join(unknown)}")

    progress("nsys: exporting SQLite")
    with man.phase("nsys_export", [cmd.nsys_export(nsys, lay)]):
        _tool("nsys_export", cmd.nsys_export(nsys, lay), lay)
    record = _fidelity_phase(lay, stages, bool(worker.get("repeat")), man)
    progress(f"top-{cfg.top_n}: selecting kernels (nsys stats per stage meanwhile)")
    with stats_beside(nsys, lay, stages, man):
        top, mangled, windows, table = _select(cfg, lay, stages, man, ncu is not None)
    if not ncu:
        man.skip("ncu_profile", "--skip-ncu")
        return
    pairs = list(zip(table["stage"], table["name"]))
    selected = [m for k in top.selected() for m in mangled[k.name]]
    progress(f"ncu: {len(pairs)} (kernel, stage) launches of {len(top.selected())} kernels in one model run")
    plain = None if keeps_windows(record) else dataclasses.replace(cfg.params, module_depth=0)
    if cfg.all_launch_configs or plain:  # every launch configuration of the stages, no window
        if plain:
            man.note(FALLBACK_NOTE)
        launches = _ncu_pass(cfg, ncu, stages, [f"{s}/" for s in stages], selected, None, len(pairs), "", man,
                             progress, params=plain)
    else:
        launches = _ncu_pass(cfg, ncu, stages, _includes(cfg, stages), selected, lay.profile_plan, len(pairs), "", man,
                             progress, launch_count(table, windows), ncu_params(cfg.params, windows))
    cov = coverage(top, mangled, launches, pairs)
    man.set(coverage=cov, ncu_launches=[{"kernel": m, "stage": s, "pass": 1} for m, s in launches])
    if man.data.get("ranks"):
        try:
            man.set(ncu_profiled=ncu_profiled(cfg.ncu_rank, man.data["ranks"], lay.names_csv()))
        except PhaseFailed as exc:  # the profile stands; which process it holds is unknown
            man.note(f"which process ncu profiled is unknown: {exc}")
    missing = cov["stage_pairs_missing"]  # a selected kernel missing altogether misses its pairs too
    if missing:
        names = list(dict.fromkeys(m for _, n in missing for m in mangled[n]))
        retry_stages = list(dict.fromkeys(s for s, _ in missing))
        progress(f"ncu: second pass for {len(missing)} (kernel, stage) pairs the first one missed")
        again = _ncu_pass(cfg, ncu, stages, [f"{s}/" for s in retry_stages], names, None, len(missing),
                          NCU_PASSES[1], man, progress, params=plain)
        launches += again
        man.set(coverage={**coverage(top, mangled, launches, pairs), "first_pass": cov},
                ncu_launches=man.data["ncu_launches"] + [{"kernel": m, "stage": s, "pass": 2} for m, s in again])
