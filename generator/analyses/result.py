"""The contract between analyses and rendering: everything one report version shows.

Built by :func:`generator.analyses.version.analyze_version`; rendered by generator.render.
Every number here traces to an input row; missing data is NaN/None and is shown as "unknown".
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from generator.analyses.modules import ModulesResult, empty_modules
from generator.model import GpuInfo, Provenance


@dataclass(frozen=True)
class Bound:
    """Amdahl bound of acting on a finding: ``affected_ns`` of ``stage_ns`` (its stage) and of
    ``total_ns`` (all measured GPU time, or the wall span for idle time), at most ``saving_ns`` of it
    saved; ``headroom`` is the documented speed-up factor (None: not a speed claim)."""

    affected_ns: float
    stage_ns: float
    total_ns: float
    saving_ns: float
    headroom: float | None = None
    basis: str = "gpu_time"  # what stage_ns/total_ns measure: "gpu_time" (kernel time) or "span" (wall)
    #: the part of ``saving_ns`` that a larger finding of the same stage already claims (shared time)
    shared_ns: float = 0.0
    #: what ``saving_ns`` is measured against: "useful_flop", "ideal_bytes", "dram_bytes",
    #: "shortest_kernel" (a physical floor per launch), or "" where no floor applies (idle time)
    floor_basis: str = ""
    #: (kernel name, saving ns) of each kernel the saving sums over: what overlapping findings share
    parts: tuple[tuple[str, float], ...] = ()
    #: the upper end of the saving where some floors are ranges ("shapes unknown"), None where every
    #: floor is exact (``saving_ns`` is always the lower end, the one findings are ranked by)
    saving_hi_ns: float | None = None
    #: every launch group the saving counts (launch_floors.LAUNCH_FLOOR_COLUMNS as dicts): Σ(measured −
    #: floor_hi) is ``saving_ns`` (before a rule lowers it), Σ(measured − floor) the upper end
    kernels: tuple[dict[str, Any], ...] = ()

    @property
    def stage_pct(self) -> float:
        return 100.0 * self.affected_ns / self.stage_ns if self.stage_ns else 0.0

    @property
    def total_pct(self) -> float:
        return 100.0 * self.affected_ns / self.total_ns if self.total_ns else 0.0

    @property
    def saving_pct(self) -> float:
        return 100.0 * self.saving_ns / self.total_ns if self.total_ns else 0.0

    @property
    def exclusive_saving_ns(self) -> float:
        """The saving no other finding of the stage claims: what may be added across findings."""
        return max(self.saving_ns - self.shared_ns, 0.0)


@dataclass(frozen=True)
class Finding:
    """A rule's verdict: its id selects the EN/ZH text in generator/templates/findings/; no canned prose.

    ``evidence`` holds the numbers the text quotes (keys referenced by the template), ``units`` the
    unit of each, and ``kernels`` the friendly names (``kernel_ids`` the raw names, same order) of
    the kernels it rests on. ``kind`` is "finding" or "hardware" (NPU / architecture section).
    ``abstained`` marks an explicit "not enough data" verdict (its template says why).
    """

    id: str
    kind: str
    evidence: dict[str, Any]
    kernels: tuple[str, ...] = ()
    stage: str | None = None
    units: dict[str, str] = field(default_factory=dict)
    kernel_ids: tuple[str, ...] = ()
    bound: Bound | None = None
    confidence: str | None = None  # "high" | "medium" | "low"
    abstained: bool = False
    #: findings of the same stage with the same kernels and bound, shown with this one under its bound
    merged: tuple[Finding, ...] = ()


@dataclass
class SweepResult:
    """A version's sweep page (analyses.sweep): configs (sweep.CONFIG_COLUMNS), deltas
    (sweep.DELTA_COLUMNS), findings and the thresholds the page quotes."""

    baseline: str
    configs: pd.DataFrame
    deltas: pd.DataFrame
    findings: list[Finding]
    short_kernel_ns: float
    launch_bound_idle_pct: float
    break_even_min_extra_pct: float


@dataclass
class VersionResult:
    version_id: str
    stages: list[str]  # NVTX stages present, in capture order; "all" first
    #: stage → top kernels table: rank, name, friendly_name, library, description_en,
    #: description_zh, count, total_ns, avg_ns, time_pct
    top_kernels: dict[str, pd.DataFrame]
    #: kernels.yaml entries (schema of seed 003, descriptions {en, zh})
    kernel_names: list[dict[str, Any]]
    kernels_yaml: str  # the same entries as data/kernels.yaml text
    #: one row per profiled kernel (classify.profiled_kernels): canonical metrics (means over its
    #: launches) + name, friendly_name, library, category, ncu_name, launches, class, qualifier,
    #: stage, stage_time_pct (share of its stage's time, from the nsys ↔ ncu join)
    ncu_metrics: pd.DataFrame
    #: {"top_n", "profiled", "missing": [names], "ambiguous": [ncu names that fit several nsys kernels]}
    coverage: dict[str, Any]
    has_nsys: bool  # kernel times (nsys, or a PyTorch trace) were given; pages without them say so
    has_ncu: bool  # ncu per-launch metrics were given; pages without them say so
    #: {"rule", "params", "counts", "percent", "class_means", "overall_means"} (classify.class_stats)
    classification: dict[str, Any]
    #: per profiled launch, the rule's class vs ncu's own verdict (classify.ncu_agreement; the
    #: disagreements table gains ``friendly_name``)
    ncu_agreement: dict[str, Any]
    top_by_duration: pd.DataFrame
    #: histograms.HISTOGRAMS key → per-kernel values (name, friendly_name, class, value in display unit)
    histograms: dict[str, pd.DataFrame]
    roofline: dict[str, Any]  # {"normalized": df, "physical": df, "roofs": {...}} (roofline.roofline_datasets)
    findings: list[Finding]
    gpu: GpuInfo | None
    provenance: list[Provenance]
    comparison: dict[str, Any] | None = None  # vs the previous version, None for the first
    manifest: dict[str, Any] | None = None  # capture run manifest.json when the version came from one run
    sweep: SweepResult | None = None  # when the version declares a sweep
    #: stage → which NVTX range instances (or which stats file) its summary counts (VersionInputs.stage_sources)
    stage_sources: dict[str, dict] = field(default_factory=dict)
    #: kernel → module attribution: module tree per stage (analyses.modules; form None: no module ranges)
    module_tree: ModulesResult = field(default_factory=empty_modules)
    #: per folded module, GPU time vs the previous version (analyses.modules.COMPARISON_COLUMNS; None: first)
    module_changes: pd.DataFrame | None = None
    #: GPU time per stage: share, top-N share, CUDA graph time and replays (stage_time.STAGE_TIME_COLUMNS)
    stage_time: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: GPU time per stage and library (stage_time.STAGE_LIBRARY_COLUMNS)
    stage_libraries: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: GPU time per stage vs the previous version, kernel time and span (speed_change.STAGE_SPEED_COLUMNS)
    stage_speed: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: kernels added, removed and paired vs the previous version (speed_change.KERNEL_CHANGE_COLUMNS)
    kernel_changes: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: the GPU of the previous version vs this one's (gpu_change.gpu_change; None: first version or unknown)
    gpu_change: dict[str, Any] | None = None
    #: every registered analysis's result by its key (analyses.registry); the fields above are the
    #: ones the pages name, the rest are read here (e.g. by a chart entry)
    values: dict[str, Any] = field(default_factory=dict)
    #: keys of the analyses declared ``publish=True``: each is written to data/<key>.csv|json
    published: tuple[str, ...] = ()

    def summary(self) -> dict[str, Any]:
        """data/summary.json content (machine-readable, stable keys)."""
        return {
            "version": self.version_id,
            "gpu": self.gpu.identity() if self.gpu else None,
            "kernels_profiled": int(len(self.ncu_metrics)),
            "coverage": {k: self.coverage[k] for k in ("top_n", "profiled")},
            "classification": {
                "rule": self.classification["rule"],
                "params": self.classification["params"],
                "counts": self.classification["counts"],
                "percent": self.classification["percent"],
            },
            "overall_means": self.classification["overall_means"],
            "ncu_agreement": {k: self.ncu_agreement[k] for k in
                              ("rule", "compared", "agree", "pct", "units_compared", "units_agree")},
            "class_means": self.classification["class_means"],
        }
