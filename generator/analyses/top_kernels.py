"""Top kernels of a stage by total GPU time, with friendly names, library and a description per language."""
from __future__ import annotations

import pandas as pd

from generator.analyses.naming import KernelName
from generator.analyses.registry import Analysis
from generator.analyses.settings import AnalysisSettings
from generator.languages import LANGS
from generator.model import ALL_STAGES, STAT_COLUMNS, VersionInputs

TOP_KERNEL_COLUMNS = [
    "rank", "name", "friendly_name", "library", "category", *(f"description_{lang}" for lang in LANGS),
    *STAT_COLUMNS, "time_pct", "profiled",
]


PROFILED_COLUMNS = ["stage", "class", "sm_throughput_pct", "memory_throughput_pct", "launches"]


def _profiled_by_name(kernels: pd.DataFrame | None) -> dict[str, list[dict]]:
    """Kernel name → [{"stage", "class", "sm_throughput_pct", "memory_throughput_pct", "launches"}]
    of every stage it was measured in, in ``kernels``' order."""
    if kernels is None or not len(kernels):
        return {}
    found: dict[str, list[dict]] = {}
    for name, record in zip(kernels["name"], kernels.reindex(columns=PROFILED_COLUMNS).to_dict("records")):
        found.setdefault(name, []).append(record)
    return found


def _profiled(by_name: dict[str, list[dict]], name: str, stage: str) -> list[dict]:
    """The records of ``name`` measured in ``stage`` (every stage it was profiled in for
    ALL_STAGES); [] = not profiled there."""
    return [r for r in by_name.get(name, []) if stage == ALL_STAGES or r["stage"] == stage]


def top_kernels(summary: pd.DataFrame, stage: str, n: int, names: dict[str, KernelName],
                kernels: pd.DataFrame | None = None) -> pd.DataFrame:
    """The ``n`` kernels of ``stage`` with the most total time (ties by name), ranked from 1.

    The seven duration statistics and ``time_pct`` (share of the stage's kernel time) are the
    summary's own. ``names`` (from :func:`name_kernels` over the summary's names) must name every
    kernel listed. ``profiled`` lists the stage-true classification of the kernel from ``kernels``
    (classified profiled kernels, one row per kernel and stage): only rows measured in this stage,
    or in any stage for ALL_STAGES — an empty list means "not profiled in this stage".
    """
    rows = summary[summary["stage"] == stage].sort_values(["total_ns", "name"], ascending=[False, True]).head(n)
    missing = [name for name in rows["name"] if name not in names]
    if missing:
        raise ValueError(f"top_kernels: {len(missing)} kernel(s) not in names, e.g. {missing[0][:80]!r}")
    named = [names[name] for name in rows["name"]]
    by_name = _profiled_by_name(kernels)
    return pd.DataFrame(
        {
            "rank": range(1, len(rows) + 1),
            "name": rows["name"].to_list(),
            "friendly_name": [k.friendly_name for k in named],
            "library": [k.source_lib for k in named],
            "category": [k.category for k in named],
            **{f"description_{lang}": [k.description[lang] for k in named] for lang in LANGS},
            **{column: rows[column].to_list() for column in STAT_COLUMNS},
            "time_pct": rows["time_pct"].to_list(),
            "profiled": [_profiled(by_name, name, stage) for name in rows["name"]],
        },
        columns=TOP_KERNEL_COLUMNS,
    )


def stages_in_order(inputs: VersionInputs) -> list[str]:
    """"all" first, then the NVTX stages in the order the kernel summary first lists them."""
    seen = [s for s in dict.fromkeys(inputs.kernel_summary["stage"]) if s != ALL_STAGES]
    return [ALL_STAGES, *seen]


def top_kernels_per_stage(inputs: VersionInputs, stages: list[str], settings: AnalysisSettings,
                          names: dict[str, KernelName], ncu_metrics: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Stage → its :func:`top_kernels` table (``settings.top_n`` rows at most)."""
    return {stage: top_kernels(inputs.kernel_summary, stage, settings.top_n, names, ncu_metrics)
            for stage in stages}


ANALYSES = [Analysis("stages", stages_in_order), Analysis("top_kernels", top_kernels_per_stage)]
