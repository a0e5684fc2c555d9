"""What every findings rule reads (one version's typed results) and the helpers they share.

Times come from the nsys kernel summary of each measured stage (``ALL_STAGES`` is the measured
stages together for a capture run), per-kernel hardware numbers from the classified ncu kernels
(one row per kernel and stage), the GPU timeline (with each stage's launch calls) from the nsys export.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import pandas as pd

from generator.analyses.launch_floors import measured_rows, summary_floors
from generator.analyses.result import Bound, Finding
from generator.analyses.roofline import Peaks
from generator.model import ALL_STAGES, GpuInfo, whole_graphs

MIN_STAGE_SHARE_PCT = 1.0  # a stage below this share of all GPU time gets no per-stage finding
MIN_KERNEL_STAGE_PCT = 1.0  # a kernel below this share of its stage is not named on its own


@dataclass(frozen=True)
class FindingInputs:
    """One version's numbers: nsys summary (every stage), classified ncu kernels, kernel names,
    device peaks and GPU, GPU timeline (None when absent), run parameters and tokens generated."""

    summary: pd.DataFrame
    kernels: pd.DataFrame
    names: dict[str, Any]
    peaks: Peaks
    gpu: GpuInfo | None
    timeline: pd.DataFrame | None
    params: dict[str, Any]
    top_n: int
    #: tokens the measured iteration generated (workload_params.generated_tokens), None: no tokens
    tokens: int | None = None
    #: the GPU's L2 capacity in bytes (manifest environment.gpus[0].l2_cache_bytes), None: not recorded
    l2_bytes: int | None = None
    #: the manifest's ``energy`` record (NVML energy per stage), None: not recorded
    energy: dict[str, Any] | None = None
    #: several ranks: data/ranks.csv (analyses.collectives.ranks) and the Overview's rank summary
    #: (analyses.collectives.rank_overview); None for one GPU
    ranks: pd.DataFrame | None = None
    rank_overview: dict[str, Any] | None = None
    #: every launch group's floor (launch_floors.LAUNCH_FLOOR_COLUMNS); None: from the summary and
    #: ``kernels`` (launch_floors.summary_floors)
    floors: pd.DataFrame | None = None
    #: (stage, kernel) whose profiled launch's operator call asked for FP32 (every floating input float32)
    fp32_calls: frozenset[tuple[str, str]] = frozenset()

    @property
    def stages(self) -> list[str]:
        """Measured stages in capture order (not ALL_STAGES)."""
        return [s for s in dict.fromkeys(self.summary["stage"]) if s != ALL_STAGES]

    def stage_ns(self, stage: str) -> float:
        return float(self.summary.loc[self.summary["stage"] == stage, "total_ns"].sum())

    @property
    def total_ns(self) -> float:
        return self.stage_ns(ALL_STAGES)

    def rows(self, stage: str) -> pd.DataFrame:
        """The stage's nsys kernel rows, most time first, with friendly name and category: not the
        CUDA graphs traced as whole graphs (model.is_whole_graph; their kernels are unknown), whose
        time :meth:`stage_ns` counts."""
        rows = self.summary[(self.summary["stage"] == stage) & ~whole_graphs(self.summary["name"])]
        rows = rows.sort_values("total_ns", ascending=False, kind="stable")
        known = [self.names.get(n) for n in rows["name"]]
        return rows.assign(friendly_name=[getattr(k, "friendly_name", n) for k, n in zip(known, rows["name"])],
                           category=[getattr(k, "category", None) for k in known])

    def profiled(self, stage: str) -> pd.DataFrame:
        """The ncu kernels measured in ``stage`` (one row per kernel), most stage time first."""
        k = self.kernels
        if not len(k):
            return k
        return k[k["stage"] == stage].sort_values("total_ns", ascending=False, kind="stable")

    @property
    def timed_kernels(self) -> pd.DataFrame:
        """The ncu kernels nsys timed in their stage (stage time and launches known): the ones a
        finding can quote a cost for (an ncu-only version has none)."""
        k = self.kernels
        return k[k["total_ns"].notna() & k["count"].notna()] if len(k) else k

    def measured_stages(self) -> list[str]:
        """Stages at or above MIN_STAGE_SHARE_PCT of all GPU time."""
        total = self.total_ns
        return [s for s in self.stages if total and 100.0 * self.stage_ns(s) / total >= MIN_STAGE_SHARE_PCT]

    @property
    def shortest_ns(self) -> float:
        """The shortest kernel the GPU ran in the capture (any stage), 0 when no duration is known."""
        shortest = pd.to_numeric(self.summary["min_ns"], errors="coerce").min() if len(self.summary) else math.nan
        return 0.0 if pd.isna(shortest) else float(shortest)

    @cached_property
    def launch_groups(self) -> pd.DataFrame:
        """Every launch group's floor (:attr:`floors`, else launch_floors.summary_floors)."""
        if self.floors is not None:
            return self.floors
        return summary_floors(measured_rows(self.summary), self.kernels, self.peaks, self.shortest_ns)

    @property
    def gpu_arch(self) -> int | None:
        """The GPU's compute capability as smXY's number (9.0 → 90), None when unknown."""
        cc = self.gpu.compute_capability if self.gpu else None
        match = re.fullmatch(r"(\d+)\.(\d+)", cc or "")
        return int(match[1]) * 10 + int(match[2]) if match else None


def column(rows: pd.DataFrame, name: str) -> pd.Series:
    """``rows[name]``, or NaN for every row where the frame has no such column (e.g. no useful work)."""
    return rows[name] if name in rows else pd.Series(math.nan, index=rows.index, dtype=object)


def floor_bound(rows: pd.DataFrame, stage_ns: float, total_ns: float, inputs: FindingInputs) -> Bound:
    """Bound over kernel rows (``name`` and ``total_ns`` in one stage): each launch can at most reach
    its own floor (launch_floors), so the saving is Σ(measured − floor) over the launch groups of those
    kernels, the lower end where a floor is a range (``saving_hi_ns`` the upper end). ``kernels``
    lists every group; ``floor_basis`` is the term that sets most of the floor time."""
    affected = float(rows["total_ns"].sum()) if len(rows) else 0.0
    groups = inputs.launch_groups
    stages = set(rows["stage"]) if "stage" in rows and len(rows) else set()
    mine = groups[groups["stage"].isin(stages) & groups["name"].isin(set(rows["name"]))] if len(groups) else groups
    kernels, parts, basis_ns = [], {}, {}
    saving = saving_hi = 0.0
    for g in mine.to_dict("records"):
        low, high = float(g["measured_ns"]) - float(g["floor_hi_ns"]), float(g["measured_ns"]) - float(g["floor_ns"])
        saving, saving_hi = saving + low, saving_hi + high
        parts[str(g["name"])] = parts.get(str(g["name"]), 0.0) + low
        basis_ns[g["basis"]] = basis_ns.get(g["basis"], 0.0) + float(g["floor_ns"])
        kernels.append({"name": str(g["name"]), "stage": g["stage"], "shape": g["shape"], "source": g["source"],
                        "launches": int(g["launches"]), "measured_ns": round(float(g["measured_ns"])),
                        "floor_ns": round(float(g["floor_hi_ns"])), "floor_lo_ns": round(float(g["floor_ns"])),
                        "basis": g["basis"]})
    headroom = affected / (affected - saving) if affected > saving else None
    floor_basis = max(basis_ns, key=lambda b: basis_ns[b]) if basis_ns else ""
    return Bound(affected, stage_ns, total_ns, saving, headroom, floor_basis=floor_basis,
                 parts=tuple(parts.items()), saving_hi_ns=saving_hi if saving_hi > saving + 0.5 else None,
                 kernels=tuple(kernels))


def removal_bound(affected_ns: float, stage_ns: float, total_ns: float, basis: str = "span") -> Bound:
    """Bound of closing idle time altogether (no kernel runs in it, so no floor applies): all of it."""
    return Bound(affected_ns, stage_ns, total_ns, affected_ns, None, basis)


def r(value: float, digits: int = 2) -> float:
    """A value as the evidence and the pages quote it."""
    return round(float(value), digits)


def us(ns: float) -> float:
    return r(ns / 1e3, 1)


def ms(ns: float) -> float:
    return r(ns / 1e6, 2)


def share(part: float, whole: float) -> float:
    return r(100.0 * part / whole, 1) if whole else 0.0


def make(finding_id: str, stage: str | None, evidence: dict[str, tuple[Any, str]], rows: pd.DataFrame | None = None,
         bound: Bound | None = None, confidence: str | None = None, kind: str = "finding",
         abstained: bool = False) -> Finding:
    """A Finding from ``evidence`` (name → (value, unit)) naming the kernels of ``rows`` (raw ``name``,
    ``friendly_name``)."""
    names = tuple(rows["friendly_name"]) if rows is not None else ()
    ids = tuple(rows["name"]) if rows is not None else ()
    return Finding(finding_id, kind, {k: v for k, (v, _) in evidence.items()}, names, stage,
                   {k: u for k, (_, u) in evidence.items()}, ids, bound, confidence, abstained)
