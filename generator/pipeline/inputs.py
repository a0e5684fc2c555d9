"""A report version's inputs (capture run directories and explicit files) → VersionInputs.

A run directory (written by ``python -m capture run``, laid out as generator.run_layout says) holds
``manifest.json`` (stages in order, GPU, versions, commands, top-N, coverage), the nsys SQLite export
and, for each ncu pass (the first, and the retry over kernels it missed when there was one), its
report or raw CSV (the report is preferred: it carries NVTX and device attributes); the passes'
launches are joined, launch ids kept unique. Kernel
summaries are read for every manifest stage, and "all" is those stages together
(:func:`measured_union`). Explicit inputs: nsys files (optionally one
NVTX stage each), ncu files, PyTorch traces (their kernel summary is used only when no nsys input
gives one). Each file is read once per build (:class:`InputCache`), and not at all when the build
cache (:mod:`generator.pipeline.build_cache`) holds what it read as; a run's ncu reports are read
in a forked child meanwhile, and its nsys export's facts in another beside its stages.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from generator.analyses.collectives import BusyUnion, cause_windows
from generator.errors import InputError
from generator.forks import Forks, can_fork
from generator.model import (
    ALL_STAGES,
    KERNEL_SUMMARY_COLUMNS,
    STAT_COLUMNS,
    Dataset,
    GpuInfo,
    Provenance,
    RankReduction,
    VersionInputs,
    duration_stats,
    ranked,
    renumber_launches,
)
from generator.pipeline import rank_map
from generator.pipeline.build_cache import BuildCache
from generator.pipeline.config import VersionConfig
from generator.pipeline.stage_choice import entry_stages
from generator.readers import nsys_ranks, read, sniffed, torch_trace
from generator.readers.base import decompressed_copy, naming, no_room, read_from
from generator.readers.manifest import read_manifest
from generator.readers.ncu_rep import kernel_metrics_frame
from generator.readers.nsys_sqlite import (
    GRAPH_COLUMNS,
    TIMELINE_COLUMNS,
    ModuleAttribution,
    StageReading,
    capture_facts,
    read_stages,
)
from generator.readers.nvtx_stages import workload_stages
from generator.readers.op_calls import calls_file, run_calls
from generator.run_layout import COMPRESSED, MANIFEST, NCU_PASSES, NSYS_CANDIDATES, ncu_candidates
from generator.temp_dirs import TempDir

T = TypeVar("T")
#: How much lower the CPU priority of the child reading ncu reports ahead is (``nice``): the
#: version's nsys export, read meanwhile, is the longer chain (decompressing, then its stages).
AHEAD_NICENESS = 5


class InputCache:
    """Reads each file once per build: datasets by (path, stage), nsys stages by (path, stages).

    Compressed files (``.xz``, ``.zst``) are decompressed once into a temporary folder (removed on exit); provenance and
    errors still name the file the report gave. What ``store`` holds is not read again. Use as a
    context manager.
    """

    def __init__(self, store: BuildCache | None = None) -> None:
        self.store = store or BuildCache(None)
        self._tmp = TempDir("kernel-report-inputs-")
        self._plain: dict[Path, Path] = {}
        self._datasets: dict[tuple[Path, str | None], Dataset] = {}
        self._stages: dict[tuple[Path, tuple[str, ...], bool], StageReading] = {}
        self._facts: dict[Path, Dataset] = {}
        self._ahead = Forks(1, here=not can_fork(), niceness=AHEAD_NICENESS)
        self._beside = Forks(1, here=not can_fork())  # an nsys export's facts, read beside its stages
        self._pending: dict[Path, tuple[Path, ...]] = {}  # path → the prefetched batch reading it
        self._fetched: dict[tuple[Path, ...], dict[Path, tuple[bool, Any, int, int]]] = {}

    def __enter__(self) -> InputCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self._ahead.close()
        self._beside.close()
        self._tmp.cleanup()

    def prefetch(self, paths: list[Path]) -> None:
        """Start reading ``paths`` (whole files, no stage) in one forked child, one file after the
        other, while this process reads the rest; :meth:`read` collects them. Files read, stored or
        prefetched already are left alone."""
        batch: list[Path] = []
        for path in paths:
            path = path.resolve()
            if (path, None) in self._datasets or path in self._pending or path in batch \
                    or self.store.holds(path, "read", [None]):
                continue
            batch.append(path)
        if batch:
            self._pending.update(dict.fromkeys(batch, tuple(batch)))
            self._ahead.submit(tuple(batch), functools.partial(self._counted_reads, batch))

    def read(self, path: Path, stage: str | None = None) -> Dataset:
        key = (path.resolve(), stage)
        if key not in self._datasets:
            if stage is None and key[0] in self._pending:
                batch = self._pending.pop(key[0])
                if batch not in self._fetched:
                    self._fetched[batch] = self._ahead.result(batch)
                dataset = self._collected(self._fetched[batch].pop(key[0]))
            else:
                dataset = self._stored_read(path, stage)
            self._datasets[key] = read_from(dataset, path) if path.suffix in COMPRESSED else dataset
        return self._datasets[key]

    def _stored_read(self, path: Path, stage: str | None) -> Dataset:
        """What the store holds for ``path`` read at ``stage``, else read (and stored) now."""
        return self.store.get(path, "read", [stage], lambda: self._on_plain(path, lambda plain: read(plain, stage=stage)))

    def _counted_reads(self, paths: list[Path]) -> dict[Path, tuple[bool, Any, int, int]]:
        """In the prefetching child: per path, :meth:`_counted` :meth:`_stored_read`; one file after
        the other, all of them, as the parent asks for each in turn."""
        return {path: self._counted(functools.partial(self._stored_read, path, None)) for path in paths}

    def stages(self, path: Path, stages: tuple[str, ...], modules: bool = True) -> StageReading:
        """Kernel summaries, range instances, CUDA graph and timeline figures and (with ``modules``)
        module attribution of ``stages`` (ALL_STAGES included) of an nsys SQLite export, read in one
        pass (nsys_sqlite.read_stages). Without ``modules`` a reading with them, stored by a build, is
        taken as it is; one read now is stored under a key of its own."""
        key = (path.resolve(), stages, modules)
        if key not in self._stages:
            full = modules or self.store.holds(path, "read_stages", list(stages))
            call = "read_stages" if full else "read_stages_without_modules"
            self._stages[key] = self.store.get(path, call, list(stages), lambda: self._on_plain(
                path, lambda plain: read_stages(plain, list(stages), full)))
        return self._stages[key]

    def workload_stages(self, path: Path) -> list[str]:
        """The workload's top-level NVTX ranges holding kernels of an nsys SQLite export (readers.nvtx_stages)."""
        return self.store.get(path, "workload_stages", [], lambda: self._on_plain(path, workload_stages))

    def facts(self, path: Path) -> Dataset:
        """Provenance, GPUs and CUDA API summary of an nsys SQLite export (nsys_sqlite.capture_facts)."""
        key = path.resolve()
        if key not in self._facts:
            dataset = self.store.get(path, "capture_facts", [], lambda: self._on_plain(path, capture_facts))
            self._facts[key] = read_from(dataset, path) if path.suffix in COMPRESSED else dataset
        return self._facts[key]

    def facts_and_stages(self, path: Path, stages: tuple[str, ...],
                         modules: bool = True) -> tuple[Dataset, StageReading]:
        """:meth:`facts` and :meth:`stages` of one nsys SQLite export, the facts read in a forked child
        (the file decompressed once, here, before) while this process reads the stages; the facts'
        error, when both fail, is the one raised (as when they are read one after the other)."""
        key = path.resolve()
        if key in self._facts or self.store.holds(path, "capture_facts", []):
            return self.facts(path), self.stages(path, stages, modules)
        self._plain_copy(key)
        self._beside.submit(key, functools.partial(self._counted, lambda: self.facts(path)))
        try:
            reading = self.stages(path, stages, modules)
        except Exception:
            self._facts_beside(key)  # its error first
            raise
        return self._facts_beside(key), reading

    def _facts_beside(self, key: Path) -> Dataset:
        """The facts the child of :meth:`facts_and_stages` read (waiting for it), or its error raised."""
        self._facts[key] = self._collected(self._beside.result(key))
        return self._facts[key]

    def _counted(self, read: Callable[[], T]) -> tuple[bool, T | Exception, int, int]:
        """In a forked child: (True, ``read()``) or (False, its error), with the store's hits and misses
        of it."""
        hits, misses = self.store.hits, self.store.misses
        try:
            ok, value = True, read()
        except Exception as exc:  # noqa: BLE001 - raised in the parent, where it collects the value
            ok, value = False, exc
        return ok, value, self.store.hits - hits, self.store.misses - misses

    def _collected(self, outcome: tuple[bool, T | Exception, int, int]) -> T:
        """Here, what :meth:`_counted` gave in a child: its hits and misses added to the store's, its
        value returned or its error raised."""
        ok, value, hits, misses = outcome
        self.store.hits, self.store.misses = self.store.hits + hits, self.store.misses + misses
        if not ok:
            raise value
        return value

    def rank_processes(self, path: Path) -> pd.DataFrame:
        """The ranks of an nsys SQLite export (readers.nsys_ranks.RANK_COLUMNS), ``path`` named; stored,
        as the reads are, so that an export read before is not decompressed again for them."""
        found = self.store.get(path, "rank_processes", [], lambda: self._on_plain(path, nsys_ranks.rank_processes))
        return found.assign(path=str(path))

    def rank_rows(self, path: Path, global_pid: int, gpu: int, keep_range: Callable[[str], bool],
                  offset: int = 0) -> nsys_ranks.RankRows:
        """One rank's kernels and NVTX ranges (readers.nsys_ranks.read_rank) of an nsys SQLite export."""
        return self._on_plain(path, lambda plain: nsys_ranks.read_rank(plain, global_pid, gpu, keep_range, offset))

    def window_calls(self, path: Path, windows: list[tuple[int, int, int]], offset: int = 0) -> pd.DataFrame:
        """CUDA calls in host windows (readers.nsys_ranks.window_calls) of an nsys SQLite export."""
        return self._on_plain(path, lambda plain: nsys_ranks.window_calls(plain, windows, offset))

    def _on_plain(self, path: Path, action: Callable[[Path], T]) -> T:
        """``action`` on the decompressed copy of ``path``; its InputErrors name ``path``."""
        path = path.resolve()
        if path.suffix not in COMPRESSED:
            return action(path)
        with naming(path):
            return action(self._plain_copy(path))

    def _plain_copy(self, path: Path) -> Path:
        """The decompressed copy of the resolved compressed ``path``, made at the first call (a folder of its
        own: a prefetching child decompresses here too); any other ``path`` itself."""
        if path.suffix not in COMPRESSED:
            return path
        if path not in self._plain:
            try:
                folder = Path(tempfile.mkdtemp(dir=self._tmp.name))
            except OSError as exc:  # a full $TMPDIR
                raise InputError(path, no_room(self._tmp.name, exc)) from None
            self._plain[path] = decompressed_copy(path, folder / path.stem)
        return self._plain[path]


def load_manifest(run: Path) -> dict:
    """The run's manifest, checked by its schema (readers.manifest)."""
    return read_manifest(run / MANIFEST)


def manifest_stages(run: Path, manifest: dict) -> list[str]:
    """The measured stages, in capture order (entries are names or {"name": …})."""
    stages = manifest.get("stages")
    if not isinstance(stages, list):
        raise InputError(run / MANIFEST, "no 'stages' list")
    names = [s.get("name") if isinstance(s, dict) else s for s in stages]
    if not all(isinstance(n, str) and n for n in names):
        raise InputError(run / MANIFEST, "'stages' entries must be names")
    return [n for n in names if n != ALL_STAGES]


def measured_union(staged: pd.DataFrame) -> pd.DataFrame:
    """The ALL_STAGES summary of a capture run: its measured stages together (disjoint NVTX ranges).

    The capture's export also holds warm-up and model set-up launches outside the stages, so the
    unrestricted summary is not the measured work. Count, total, min and max add up exactly; the
    mean is total/count and the sample stddev is pooled exactly from each stage's count, mean and
    stddev; a median does not combine, so it is unknown (NaN) unless the kernel ran in one stage.
    """
    groups = staged.groupby("name", sort=False)
    count = groups["count"].sum()
    total = groups["total_ns"].sum()
    mean = total / count
    spread = (staged["count"] - 1) * staged["stddev_ns"] ** 2 + staged["count"] * (
        staged["avg_ns"] - staged["name"].map(mean)
    ) ** 2
    squares = spread.groupby(staged["name"], sort=False).sum()
    single = groups.size() == 1
    table = pd.DataFrame({
        "stage": ALL_STAGES,
        "name": count.index,
        "short_name": groups["short_name"].first().values,
        "count": count.values,
        "total_ns": total.values,
        "avg_ns": mean.values,
        "med_ns": groups["med_ns"].first().where(single).values,
        "min_ns": groups["min_ns"].min().values,
        "max_ns": groups["max_ns"].max().values,
        "stddev_ns": (squares / (count - 1)).pow(0.5).where(count > 1, 0.0).values,
        "time_pct": (total * 100.0 / total.sum()).values,
    })
    return table.sort_values(["total_ns", "name"], ascending=[False, True], ignore_index=True)[KERNEL_SUMMARY_COLUMNS]


def first_existing(run: Path, candidates: tuple[str, ...], what: str) -> Path:
    for name in candidates:
        if (run / name).is_file():
            return run / name
    raise InputError(run, f"no {what} (looked for {', '.join(candidates)})")


def ncu_passes(run: Path) -> list[Path]:
    """The file of each ncu pass of a run directory: the first pass's, then the retry's when there was one."""
    first = first_existing(run, ncu_candidates(), "ncu report or raw CSV")
    retries = [next((run / name for name in ncu_candidates(suffix) if (run / name).is_file()), None)
               for suffix in NCU_PASSES[1:]]
    return [first, *(path for path in retries if path is not None)]


def _ncu_passes_found(run: Path) -> list[Path]:
    """:func:`ncu_passes`, or none where a file is missing (reported where the run is read)."""
    try:
        return ncu_passes(run)
    except InputError:
        return []


def version_inputs(version: VersionConfig, cache: InputCache, report_file: Path, index: int,
                   operator_calls: bool = True, modules: bool = True) -> VersionInputs:
    """Read everything ``versions[index]`` of ``report_file`` names (a run's operator calls only
    with ``operator_calls``: ``op_calls`` and ``launch_calls`` are None without; the kernels' module
    attribution only with ``modules``: ``module_kernels`` is None and ``module_form`` None without).

    Provenance paths are made relative to the report file's folder, so pages do not depend on where
    the checkout lives.
    """
    where = f"versions[{index}]"
    summaries: list[pd.DataFrame] = []
    metrics: list[Dataset] = []
    others: list[Dataset] = []
    manifests = []
    timelines: list[pd.DataFrame] = []
    sources: dict[str, dict] = {}  # stage → where its summary came from (which range instances / which file)
    attributed: list[ModuleAttribution] = []  # kernel → module attribution of each staged nsys SQLite export
    graphs: list[pd.DataFrame] = []  # per stage, CUDA graph figures of the nsys SQLite exports
    spans: list[pd.DataFrame] = []  # per stage, their GPU timeline figures (span, idle)
    launches: list[pd.DataFrame] = []  # every kernel launch of the stages of the nsys SQLite exports
    configs: list[pd.DataFrame] = []  # their kernels' launch configurations
    op_calls: list[pd.DataFrame] = []  # per (stage, kernel), the operator call of its profiled launch
    exports: list[Path] = []  # the nsys SQLite exports, for their ranks
    launch_calls: list[pd.DataFrame] = []  # every launch of the stages, with its operator call
    # the ncu reports are read in a child meanwhile (the .ncu-rep reader is the slowest)
    cache.prefetch([path for run in version.runs for path in _ncu_passes_found(run)]
                   + [path for entry in version.inputs.ncu for path in entry.paths])
    for run in version.runs:
        manifest = load_manifest(run)
        manifests.append(manifest)
        sqlite = first_existing(run, NSYS_CANDIDATES, "nsys SQLite export")
        exports.append(sqlite)
        stages = tuple(manifest_stages(run, manifest))
        # no stages: the whole capture is the measured work
        nsys, reading = cache.facts_and_stages(sqlite, stages or (ALL_STAGES,), modules)
        if stages:
            summaries += [measured_union(reading.summary), reading.summary]
            sources.update(reading.instances)
            sources[ALL_STAGES] = {"union": list(stages)}
            attributed.append(reading.modules)
            timelines.append(reading.timeline)
        else:
            summaries.append(reading.summary)
        graphs.append(reading.graphs)
        spans.append(reading.timeline)
        launches.append(reading.launches)
        configs.append(reading.launch_configs)
        others.append(nsys)
        metrics += [cache.read(path) for path in ncu_passes(run)]
        if operator_calls and (found := calls_file(run)) is not None:  # shapes recorded: the call of each profiled launch
            joined, every = run_calls(found, sqlite, stages or (ALL_STAGES,),
                                      list(dict.fromkeys(reading.summary["name"])))
            op_calls.append(joined)
            launch_calls.append(every)
    found: list[str] = []  # NVTX range names found as stages (build FILE… without --stages)
    for entry, path in ((e, p) for e in version.inputs.nsys for p in e.path.paths):
        choice = entry_stages(entry.stage, version.stages_from, _is_nsys_sqlite(path),
                              lambda path=path: cache.workload_stages(path))
        found += choice.found
        for stage in choice.names or (None,):
            dataset = cache.read(path, stage)
            summaries.append(dataset.kernel_summary)
            others.append(dataset)
            if dataset.provenance.format == "nsys-sqlite":
                exports.append(path)
                reading = cache.stages(path, (stage or ALL_STAGES,), modules)
                graphs.append(reading.graphs)
                spans.append(reading.timeline)
                timelines.append(reading.timeline)
                launches.append(reading.launches)
                configs.append(reading.launch_configs)
            if stage is not None and dataset.provenance.format == "nsys-sqlite":
                sources.update(reading.instances)
                attributed.append(reading.modules)
            elif stage is not None:
                sources[stage] = {"file": path.name}
    for entry in version.inputs.ncu:
        metrics += [cache.read(path) for path in entry.paths]
    torch = [cache.read(path) for entry in version.inputs.torch for path in entry.paths]
    # operator shapes of the traces recorded with them (record_shapes=True)
    shaped = [ops for ops in (torch_trace.kernel_ops(path) for entry in version.inputs.torch for path in entry.paths)
              if ops["op"].notna().any()]
    summaries = [s for s in summaries if s is not None]
    if not summaries:
        summaries = [d.kernel_summary for d in torch if d.kernel_summary is not None]
    stage_spans = _per_stage(spans, [c for c in TIMELINE_COLUMNS if c not in ("device", "idle_med_ns", "launch_call_med_ns")])
    rank_stages = [ALL_STAGES, *dict.fromkeys(s for f in summaries for s in f["stage"] if s != ALL_STAGES)]
    reading = version_ranks(list(dict.fromkeys(exports)), cache, rank_stages, list(stage_spans["stage"]),
                            any((f["stage"] == ALL_STAGES).any() for f in spans))
    ranks, rank_order = reading.ranks, reading.order
    kernel_summary = _concat_summaries(summaries, report_file, where,
                                       launches if len({t.path for t in ranks}) > 1 else None)
    kernel_metrics = _concat_metrics(metrics)
    if not len(kernel_summary) and not len(kernel_metrics):
        raise InputError(report_file, f"{where}: no kernels among the inputs (give an nsys export, an ncu "
                                      "report/CSV or a capture run)")
    base = report_file.resolve().parent
    return VersionInputs(
        kernel_summary=kernel_summary,
        kernel_metrics=kernel_metrics,
        gpus=merged_gpus([gpu for d in metrics + others + torch for gpu in d.gpus]),  # ncu describes devices best
        provenance=_unique([_relative(d.provenance, base) for d in others + metrics + torch]),
        manifest=manifests[0] if len(manifests) == 1 else None,
        stage_sources=sources,
        module_form=next((m.form for m in attributed if m.form is not None), None) if modules else None,
        module_kernels=pd.concat([m.kernels for m in attributed], ignore_index=True) if attributed and modules else None,
        module_classes={k: v for m in attributed for k, v in m.classes.items()} if modules else {},
        graphs=_per_stage(graphs, GRAPH_COLUMNS),
        timeline=_timeline(timelines, bool(version.runs)),
        api_summary=next((d.api_summary for d in others if d.api_summary is not None), None)
        if len(others) == 1 else None,
        launches=pd.concat(launches, ignore_index=True) if launches else None,
        stage_spans=_over_ranks(stage_spans, reading.spans),
        launch_configs=pd.concat(configs, ignore_index=True).drop_duplicates(ignore_index=True) if configs else None,
        kernel_ops=pd.concat(shaped, ignore_index=True) if shaped else None,
        op_calls=pd.concat(op_calls, ignore_index=True) if op_calls else None,
        ranks=ranks,
        rank_order=rank_order,
        stages_from=version.stages_from,
        stages_found=found,
        launch_calls=pd.concat(launch_calls, ignore_index=True) if launch_calls else None,
    )


@dataclasses.dataclass(frozen=True)
class RankReading:
    """A version's ranks as read (:func:`version_ranks`): their reductions in launcher order, how they
    were ordered, and per stage asked for its span, busy and idle time over all ranks together
    (analyses.collectives.BusyUnion.table; None: no stages asked for, or one rank)."""

    ranks: tuple[RankReduction, ...] = ()
    order: str | None = None
    spans: pd.DataFrame | None = None


def version_ranks(exports: list[Path], cache: InputCache, stages: list[str], span_stages: Sequence[str] = (),
                  whole: bool = True) -> RankReading:
    """The ranks of a version's nsys SQLite exports in launcher order, each on the earliest session's
    clock and reduced where it is read (pipeline.rank_map) for ``stages`` (ALL_STAGES, then the named
    ones in kernel-summary order), with the CUDA calls of the host windows the late-rank analysis
    reads, and the span, busy and idle time over all ranks of ``span_stages`` (``whole``: the inputs
    read the whole capture, else ALL_STAGES is the union of the named ones); nothing for one rank (a
    single-GPU version reads as before)."""
    found = [f for f in rank_map.processes(exports, cache) if len(f)]
    if not found or sum(len(f) for f in found) < 2:
        return RankReading()
    ordered, source = nsys_ranks.order_ranks(pd.concat(found, ignore_index=True))
    first = int(ordered["session_utc_ns"].min())
    offsets = [int(row.session_utc_ns) - first for row in ordered.itertuples()]
    paths = [Path(row.path) for row in ordered.itertuples()]
    union = BusyUnion(span_stages, None if whole else [s for s in span_stages if s != ALL_STAGES])
    reduced = rank_map.read_ranks(cache, [(path, row.global_pid, row.gpu, offset) for path, row, offset
                                          in zip(paths, ordered.itertuples(), offsets, strict=True)],
                                  list(dict.fromkeys([*stages, *span_stages])), union.busy_stages(), union.add)
    windows = cause_windows(reduced, [s for s in stages if s != ALL_STAGES])
    wanted = [i for i, w in enumerate(windows) if w]
    calls = dict(zip(wanted, rank_map.host_calls(cache, [(paths[i], windows[i], offsets[i]) for i in wanted]),
                     strict=True))
    ranks = tuple(dataclasses.replace(r, calls=calls.get(i, _NO_CALLS)) for i, r in enumerate(reduced))
    return RankReading(ranks, source, union.table(ranks) if span_stages else None)


#: The host calls of a rank none of whose windows is read.
_NO_CALLS = pd.DataFrame({c: pd.Series(dtype=object if c == "name" else "int64") for c in nsys_ranks.WINDOW_CALL_COLUMNS})


def _over_ranks(spans: pd.DataFrame, union: pd.DataFrame | None) -> pd.DataFrame:
    """``spans`` (:func:`_per_stage`) of several ranks with each stage's span the union over the ranks,
    never their sum, and its busy and idle time that of all GPUs together (idle: no GPU ran a kernel):
    ``union``, :class:`RankReading`'s spans (None: one rank)."""
    if union is None or not len(spans):
        return spans
    union = union.set_index("stage")
    spans = spans.copy()
    for column in ("span_ns", "busy_ns", "idle_ns"):
        spans[column] = spans["stage"].map(union[column]).astype(spans[column].dtype)
    return spans


def _is_nsys_sqlite(path: Path) -> bool:
    reader = sniffed(path)
    return reader is not None and reader.format == "nsys-sqlite"


def _timeline(timelines: list[pd.DataFrame], runs: bool) -> pd.DataFrame | None:
    """The GPU timeline the findings measure idle gaps on: one capture run's, or the nsys SQLite
    exports' (one row per stage and device; None when a stage comes from several of them)."""
    frames = [t for t in timelines if t is not None and len(t)]
    if not frames or (runs and len(timelines) != 1):
        return None
    table = pd.concat(frames, ignore_index=True)
    return None if table.duplicated(["stage", "device"]).any() else table


def _per_stage(frames: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    """Every stage's additive figures (``columns``: "stage" then counts and ns), summed over devices;
    without a whole-capture row, "all" is the stages' sum (the union, as for kernel summaries)."""
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=columns)
    table = pd.concat(frames, ignore_index=True)[columns]
    table = table.groupby("stage", sort=False).sum().reset_index()
    if not (table["stage"] == ALL_STAGES).any():
        union = table.drop(columns="stage").sum().to_frame().T.assign(stage=ALL_STAGES)
        table = pd.concat([union[columns], table], ignore_index=True)
    return table


def _concat_summaries(summaries: list[pd.DataFrame], report_file: Path, where: str,
                      rank_launches: list[pd.DataFrame] | None = None) -> pd.DataFrame:
    """Every kernel summary of the version (empty: no nsys data given); without a whole-capture
    summary, "all" is the union of the stages given (:func:`measured_union`). With
    ``rank_launches`` (the launches of one export per rank), summaries of one stage from several
    exports are one summary over all their launches, as nsys gives for one export of every rank."""
    if not summaries:
        numeric = {"count": "int64", "time_pct": "float64", **{c: "float64" for c in STAT_COLUMNS if c != "count"}}
        return pd.DataFrame({c: pd.Series(dtype=numeric.get(c, "object")) for c in KERNEL_SUMMARY_COLUMNS})
    table = pd.concat(summaries, ignore_index=True)[KERNEL_SUMMARY_COLUMNS]
    overlap = table.duplicated(["stage", "name"])
    if overlap.any() and rank_launches:
        table = _summary_over_ranks(table, pd.concat(rank_launches, ignore_index=True))
        overlap = table.duplicated(["stage", "name"])
    if overlap.any():
        stage = table.loc[overlap, "stage"].iloc[0]
        raise InputError(report_file, f"{where}: several inputs give kernel summaries of stage {stage!r}; give one per stage")
    if len(table) and not (table["stage"] == ALL_STAGES).any():
        table = pd.concat([measured_union(table), table], ignore_index=True)
    return table


def _summary_over_ranks(table: pd.DataFrame, launches: pd.DataFrame) -> pd.DataFrame:
    """KERNEL_SUMMARY_COLUMNS per (stage, name) of several ranks' exports: the statistics of every
    launch of that kernel in that stage over all ranks (``launches``: LAUNCH_COLUMNS)."""
    short = table.drop_duplicates(["stage", "name"]).set_index(["stage", "name"])["short_name"]
    parts = []
    for stage in dict.fromkeys(table["stage"]):
        own = launches[launches["stage"] == stage]
        stats = ranked(duration_stats(own["duration_ns"].astype("int64"), own["name"]), "name")
        stats["stage"] = stage
        stats["short_name"] = [short.get((stage, n)) for n in stats["name"]]
        parts.append(stats[KERNEL_SUMMARY_COLUMNS])
    return pd.concat(parts, ignore_index=True)


def _concat_metrics(datasets: list[Dataset]) -> pd.DataFrame:
    """Per-launch metrics of every ncu input; a file whose launch ids overlap earlier ones is shifted past them."""
    frames = [d.kernel_metrics for d in datasets if d.kernel_metrics is not None and len(d.kernel_metrics)]
    if not frames:
        return kernel_metrics_frame([], None)[0]  # no ncu data given
    kept = renumber_launches(frames)
    return kept[0] if len(kept) == 1 else pd.concat(kept, ignore_index=True)


def _relative(provenance: Provenance, base: Path) -> Provenance:
    return dataclasses.replace(provenance, path=Path(os.path.relpath(provenance.path, base)).as_posix())


def merged_gpus(gpus: list[GpuInfo]) -> list[GpuInfo]:
    """One GpuInfo per device (by index, else name), the first description's values first and what it
    leaves unknown from the others (the driver is in nsys exports, not in ncu reports): one value
    for each fact on every page."""
    merged: dict[object, GpuInfo] = {}
    for gpu in gpus:
        key = gpu.index if gpu.index is not None else gpu.name
        known = merged.get(key)
        if known is None:
            merged[key] = gpu
            continue
        if gpu.name is not None and known.name is not None and gpu.name != known.name:
            merged[(key, gpu.name)] = gpu  # another machine's device of the same index
            continue
        merged[key] = dataclasses.replace(known, **{
            f.name: getattr(gpu, f.name) for f in dataclasses.fields(known)
            if getattr(known, f.name) is None and getattr(gpu, f.name) is not None})
    return list(merged.values())


def _unique(items: list[Provenance]) -> list[Provenance]:
    return list(dict.fromkeys(items))
