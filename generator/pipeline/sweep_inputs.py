"""The inputs of a version's ``sweep:`` configs → :class:`generator.analyses.sweep.SweepConfig`.

A config's measured stages are its capture runs' manifest stages, else the stages its explicit nsys
inputs are restricted to, else the whole capture. Its GPU timeline comes from the nsys SQLite
exports among them (none: the timeline figures are unknown).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from generator.analyses.result import SweepResult
from generator.analyses.sweep import SweepConfig, analyze_sweep
from generator.model import ALL_STAGES, VersionInputs
from generator.pipeline.config import SweepPoint, VersionConfig
from generator.pipeline.inputs import (
    InputCache,
    first_existing,
    load_manifest,
    manifest_stages,
    version_inputs,
)
from generator.readers.nsys_sqlite import READER as NSYS_SQLITE
from generator.run_layout import NSYS_CANDIDATES


def _measured(point: SweepPoint) -> tuple[str, ...]:
    if point.runs:
        stages = [s for run in point.runs for s in manifest_stages(run, load_manifest(run))]
    else:
        stages = [entry.stage for entry in point.inputs.nsys if entry.stage]
    return tuple(dict.fromkeys(stages)) or (ALL_STAGES,)


def _timeline(point: SweepPoint, stages: tuple[str, ...], cache: InputCache) -> pd.DataFrame | None:
    """TIMELINE_COLUMNS of the measured stages from every nsys SQLite export of the config."""
    wanted: dict[Path, list[str]] = {}
    for run in point.runs:
        sqlite = first_existing(run, NSYS_CANDIDATES, "nsys SQLite export")
        wanted.setdefault(sqlite, []).extend(manifest_stages(run, load_manifest(run)))
    for entry in point.inputs.nsys:
        stage = entry.stage or ALL_STAGES
        for path in entry.path.paths:
            if stage in stages and cache.read(path, entry.stage).provenance.format == NSYS_SQLITE.format:
                wanted.setdefault(path, []).append(stage)
    frames = [cache.stages(path, tuple(dict.fromkeys(s))).timeline for path, s in wanted.items()]
    return pd.concat(frames, ignore_index=True) if frames else None


def sweep_config(point: SweepPoint, cache: InputCache, report_file: Path,
                 index: int) -> tuple[SweepConfig, VersionInputs]:
    """One config of ``versions[index]``: its SweepConfig and its inputs as a version would read them."""
    inputs = version_inputs(point, cache, report_file, index)
    stages = _measured(point)
    config = SweepConfig(point.label, dict(point.params), stages, inputs.kernel_summary,
                         _timeline(point, stages, cache), inputs.kernel_metrics)
    return config, inputs


def sweep_version(version: VersionConfig, cache: InputCache, report_file: Path,
                  index: int) -> tuple[VersionInputs, SweepResult | None]:
    """A version's inputs and, when it declares a sweep, the sweep's result.

    A sweep-only version's other pages show its baseline config (the one marked ``baseline``, else
    the first).
    """
    if not version.sweep:
        return version_inputs(version, cache, report_file, index), None
    baseline = next((p for p in version.sweep if p.baseline), version.sweep[0])
    configs = [sweep_config(point, cache, report_file, index) for point in version.sweep]
    has_own = version.runs or version.inputs.nsys or version.inputs.ncu or version.inputs.torch
    inputs = (version_inputs(version, cache, report_file, index) if has_own
              else configs[version.sweep.index(baseline)][1])
    return inputs, analyze_sweep([config for config, _ in configs], baseline.label)
