"""The nsys ↔ ncu join: which nsys kernel (and its share of stage time) each ncu launch is.

nsys gives full demangled names; ncu gives demangled, simplified, function or mangled names. Names
match by kernel identity (generator.analyses.kernel_match.candidates). Where a launch's identity
agrees with several nsys kernels (a base name shared by several instantiations), the nsys kernels
that ran with the launch's grid, block and registers per thread anywhere in the capture are kept
(kernel_match.launched_as); a launch that still fits several is marked ``ambiguous`` and left
unjoined — the pages say so.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from generator.analyses.kernel_match import Launch, candidates, launched_as
from generator.analyses.registry import Analysis
from generator.analyses.settings import AnalysisSettings
from generator.model import ALL_STAGES, LAUNCH_CONFIG_COLUMNS, VersionInputs

JOIN_COLUMNS = ["summary_stage", "summary_name", "stage_time_pct", "total_ns", "count", "ambiguous"]


def _stage_of(stage: object, stages: set[str]) -> str:
    return stage if isinstance(stage, str) and stage in stages else ALL_STAGES


def _configs_by_name(configs: pd.DataFrame | None) -> dict[str, list[Launch]]:
    """kernel name → the launch configurations it ran with (LAUNCH_CONFIG_COLUMNS rows)."""
    found: dict[str, list[Launch]] = {}
    if configs is not None:
        for name, grid, block, registers in configs[LAUNCH_CONFIG_COLUMNS].itertuples(index=False):
            found.setdefault(name, []).append((grid, block, registers))
    return found


def _launches(metrics: pd.DataFrame) -> list[Launch]:
    columns = [metrics[c] if c in metrics else pd.Series(None, index=metrics.index, dtype=object)
               for c in ("grid", "block", "registers_per_thread")]
    return [(g if isinstance(g, str) else None, b if isinstance(b, str) else None,
             float(r) if r is not None and not pd.isna(r) else None) for g, b, r in zip(*columns)]


def attach_stage_time(metrics: pd.DataFrame, summary: pd.DataFrame,
                      configs: pd.DataFrame | None = None) -> pd.DataFrame:
    """``metrics`` plus, per launch, the nsys kernel it is (JOIN_COLUMNS).

    A launch is looked up in its own stage's summary when the summary has that stage, else in
    ALL_STAGES; where several nsys kernels fit, ``configs`` (LAUNCH_CONFIG_COLUMNS of the nsys
    capture) keeps those that ran with the launch's configuration. ``ambiguous`` is True where
    several still fit; those rows, and rows that match nothing, have no summary_name and NaN numbers.
    """
    stages = set(summary["stage"])
    by_stage = {stage: frame.set_index("name") for stage, frame in summary.groupby("stage", sort=False)}
    by_name = _configs_by_name(configs)
    rows = []
    for name, stage, launch in zip(metrics["name"], metrics["stage"], _launches(metrics)):
        used = _stage_of(stage, stages)
        table = by_stage.get(used)
        found = launched_as(candidates(name, table.index), launch, by_name) if table is not None else []
        if len(found) == 1:
            hit = table.loc[found[0]]
            rows.append((used, found[0], hit["time_pct"], hit["total_ns"], hit["count"], False))
        else:
            rows.append((used, None, np.nan, np.nan, np.nan, len(found) > 1))
    joined = pd.DataFrame(rows, columns=JOIN_COLUMNS, index=metrics.index)
    joined["count"] = joined["count"].astype("Int64")
    return pd.concat([metrics.drop(columns=JOIN_COLUMNS, errors="ignore"), joined], axis=1)


def coverage(summary: pd.DataFrame, metrics: pd.DataFrame, top_n: int, stage: str = ALL_STAGES,
             configs: pd.DataFrame | None = None) -> dict:
    """Of the stage's top-N kernels by total time, how many have ncu metrics.

    A kernel counts as profiled when some launch (of that stage, or of unknown stage) matches it
    and nothing else (``configs`` as in :func:`attach_stage_time`). ``top_n`` is the number of
    kernels looked at (fewer if the stage has fewer).
    """
    in_stage = summary[summary["stage"] == stage].sort_values(["total_ns", "name"], ascending=[False, True])
    top = list(in_stage["name"].head(top_n))
    if stage != ALL_STAGES:
        metrics = metrics[metrics["stage"].isna() | (metrics["stage"] == stage)]
    names = list(in_stage["name"])
    by_name = _configs_by_name(configs)
    profiled = set()
    for name, launch in dict.fromkeys(zip(metrics["name"], _launches(metrics))):
        found = launched_as(candidates(name, names), launch, by_name)
        if len(found) == 1:
            profiled.add(found[0])
    return {
        "top_n": len(top),
        "profiled": sum(name in profiled for name in top),
        "missing": [name for name in top if name not in profiled],
    }


def joined_metrics(inputs: VersionInputs) -> pd.DataFrame:
    """The version's per-launch ncu metrics joined to its nsys kernels (:func:`attach_stage_time`)."""
    return attach_stage_time(inputs.kernel_metrics, inputs.kernel_summary, inputs.launch_configs)


def version_coverage(inputs: VersionInputs, metrics: pd.DataFrame, settings: AnalysisSettings) -> dict:
    """:func:`coverage` of the whole capture, plus ``ambiguous``: the ncu names that fit several nsys kernels."""
    ambiguous = list(dict.fromkeys(metrics.loc[metrics["ambiguous"].astype(bool), "name"]))
    return {**coverage(inputs.kernel_summary, metrics, settings.top_n, configs=inputs.launch_configs),
            "ambiguous": ambiguous}


ANALYSES = [Analysis("metrics", joined_metrics), Analysis("coverage", version_coverage)]
