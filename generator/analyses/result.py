"""The contract between analyses and rendering: everything one report version shows.

Built by :func:`generator.analyses.version.analyze_version`; rendered by generator.render.
Every number here traces to an input row; missing data is NaN/None and is shown as "unknown".
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from generator.model import GpuInfo, Provenance


@dataclass(frozen=True)
class Finding:
    """A rule that fired: its id selects the EN/ZH text in templates/findings/; no canned prose.

    ``evidence`` holds the numbers the text quotes (keys referenced by the template) and
    ``kernels`` the friendly names of the kernels that triggered it.
    ``kind`` is "finding", "recommendation" or "hardware" (NPU / architecture section).
    """

    id: str
    kind: str
    evidence: dict[str, Any]
    kernels: tuple[str, ...] = ()


@dataclass
class VersionResult:
    version_id: str
    stages: list[str]  # NVTX stages present, in capture order; "all" first
    #: stage → top kernels table: rank, name, friendly_name, library, description_en,
    #: description_zh, count, total_ns, avg_ns, time_pct
    top_kernels: dict[str, pd.DataFrame]
    #: kernels.yaml entries (schema of seed 003, descriptions {en, zh})
    kernel_names: list[dict[str, Any]]
    #: one row per profiled kernel: canonical metrics + name, friendly_name, library, class,
    #: stage, stage_time_pct (share of its stage's time, from the nsys ↔ ncu join)
    ncu_metrics: pd.DataFrame
    coverage: dict[str, Any]  # {"top_n", "profiled", "missing": [names]}
    classification: dict[str, Any]  # {"rule", "params", "counts", "class_means", "overall_means"}
    top_by_duration: pd.DataFrame
    histograms: dict[str, pd.DataFrame]  # canonical metric → per-kernel values (friendly_name, class, value)
    roofline: dict[str, Any]  # {"normalized": df, "physical": df, "roofs": {...}}
    findings: list[Finding]
    gpu: GpuInfo | None
    provenance: list[Provenance]
    comparison: dict[str, Any] | None = None  # vs the previous version, None for the first
    extra: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """data/summary.json content (machine-readable, stable keys)."""
        return {
            "version": self.version_id,
            "kernels_profiled": int(len(self.ncu_metrics)),
            "coverage": {k: self.coverage[k] for k in ("top_n", "profiled")},
            "classification": {
                "rule": self.classification["rule"],
                "counts": self.classification["counts"],
            },
            "overall_means": self.classification["overall_means"],
            "class_means": self.classification["class_means"],
        }
