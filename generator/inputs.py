"""A report version's inputs (capture run directories and explicit files) → VersionInputs.

A run directory (written by ``python -m capture run``) holds ``manifest.json`` (stages in order,
GPU, versions, commands, top-N, coverage), ``nsys/report.sqlite[.xz]`` and ``ncu/report.ncu-rep[.xz]``
or ``ncu/raw.csv[.xz]`` (the report is preferred: it carries NVTX and device attributes). Kernel
summaries are read for "all" and every manifest stage. Explicit inputs: nsys files (optionally one
NVTX stage each), ncu files, PyTorch traces (their kernel summary is used only when no nsys input
gives one). Each file is read once per build (:class:`InputCache`).
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from generator.analyses.version import VersionInputs
from generator.config import VersionConfig
from generator.errors import InputError
from generator.model import ALL_STAGES, KERNEL_SUMMARY_COLUMNS, Dataset, GpuInfo, Provenance
from generator.readers import read
from generator.readers.nsys_sqlite import kernel_summary as nsys_kernel_summary

NSYS_CANDIDATES = ("nsys/report.sqlite", "nsys/report.sqlite.xz")
NCU_CANDIDATES = ("ncu/report.ncu-rep", "ncu/report.ncu-rep.xz", "ncu/raw.csv", "ncu/raw.csv.xz")


class InputCache:
    """Memoizes reads within one build: datasets by (path, stage), stage summaries by (path, stages)."""

    def __init__(self) -> None:
        self._datasets: dict[tuple[Path, str | None], Dataset] = {}
        self._summaries: dict[tuple[Path, tuple[str, ...]], pd.DataFrame] = {}

    def read(self, path: Path, stage: str | None = None) -> Dataset:
        key = (path.resolve(), stage)
        if key not in self._datasets:
            self._datasets[key] = read(path, stage=stage)
        return self._datasets[key]

    def stage_summaries(self, path: Path, stages: tuple[str, ...]) -> pd.DataFrame:
        key = (path.resolve(), stages)
        if key not in self._summaries:
            self._summaries[key] = nsys_kernel_summary(path, list(stages))
        return self._summaries[key]


def load_manifest(run: Path) -> dict:
    path = run / "manifest.json"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(path, f"not a readable manifest ({exc})") from None
    if not isinstance(manifest, dict):
        raise InputError(path, "expected a JSON object")
    return manifest


def manifest_stages(run: Path, manifest: dict) -> list[str]:
    """The measured stages, in capture order (entries are names or {"name": …})."""
    stages = manifest.get("stages")
    if not isinstance(stages, list):
        raise InputError(run / "manifest.json", "no 'stages' list")
    names = [s.get("name") if isinstance(s, dict) else s for s in stages]
    if not all(isinstance(n, str) and n for n in names):
        raise InputError(run / "manifest.json", "'stages' entries must be names")
    return [n for n in names if n != ALL_STAGES]


def _first_existing(run: Path, candidates: tuple[str, ...], what: str) -> Path:
    for name in candidates:
        if (run / name).is_file():
            return run / name
    raise InputError(run, f"no {what} (looked for {', '.join(candidates)})")


def version_inputs(version: VersionConfig, cache: InputCache, where: str) -> VersionInputs:
    """Read everything version ``version`` names; ``where`` ("report.yaml: versions[0]") prefixes errors."""
    summaries: list[pd.DataFrame] = []
    metrics: list[Dataset] = []
    others: list[Dataset] = []
    manifests = []
    for run in version.runs:
        manifest = load_manifest(run)
        manifests.append(manifest)
        sqlite = _first_existing(run, NSYS_CANDIDATES, "nsys SQLite export")
        nsys = cache.read(sqlite)
        summaries += [nsys.kernel_summary, cache.stage_summaries(sqlite, tuple(manifest_stages(run, manifest)))]
        others.append(nsys)
        metrics.append(cache.read(_first_existing(run, NCU_CANDIDATES, "ncu report or raw CSV")))
    for entry in version.inputs.nsys:
        for path in entry.path.paths:
            dataset = cache.read(path, entry.stage)
            summaries.append(dataset.kernel_summary)
            others.append(dataset)
    for entry in version.inputs.ncu:
        metrics += [cache.read(path) for path in entry.paths]
    torch = [cache.read(path) for entry in version.inputs.torch for path in entry.paths]
    summaries = [s for s in summaries if s is not None]
    if not summaries:
        summaries = [d.kernel_summary for d in torch if d.kernel_summary is not None]
    kernel_summary = _concat_summaries(summaries, where)
    kernel_metrics = _concat_metrics(metrics, where)
    datasets = others + metrics + torch
    return VersionInputs(
        kernel_summary=kernel_summary,
        kernel_metrics=kernel_metrics,
        gpus=_unique([gpu for d in datasets for gpu in d.gpus]),
        provenance=_unique([d.provenance for d in datasets]),
        manifest=manifests[0] if len(manifests) == 1 else None,
    )


def _concat_summaries(summaries: list[pd.DataFrame], where: str) -> pd.DataFrame:
    if not summaries:
        raise InputError(where, "no kernel summary among the inputs (give an nsys export or a capture run)")
    table = pd.concat(summaries, ignore_index=True)[KERNEL_SUMMARY_COLUMNS]
    overlap = table.duplicated(["stage", "name"])
    if overlap.any():
        stage = table.loc[overlap, "stage"].iloc[0]
        raise InputError(where, f"several inputs give kernel summaries of stage {stage!r}; give one per stage")
    return table


def _concat_metrics(datasets: list[Dataset], where: str) -> pd.DataFrame:
    """Per-launch metrics of every ncu input; a file whose launch ids overlap earlier ones is shifted past them."""
    frames = [d.kernel_metrics for d in datasets if d.kernel_metrics is not None and len(d.kernel_metrics)]
    if not frames:
        raise InputError(where, "no ncu kernel metrics among the inputs (give an ncu report/CSV or a capture run)")
    kept = frames[:1]
    for frame in frames[1:]:
        highest = max(int(f["launch_id"].max()) for f in kept)
        lowest = int(frame["launch_id"].min())
        kept.append(frame.assign(launch_id=frame["launch_id"] + (highest + 1 - lowest)) if lowest <= highest else frame)
    return kept[0] if len(kept) == 1 else pd.concat(kept, ignore_index=True)


def _unique(items: list[GpuInfo] | list[Provenance]) -> list:
    return list(dict.fromkeys(items))
