"""What every findings rule reads (one version's typed results) and the helpers they share.

Times come from the nsys kernel summary of each measured stage (``ALL_STAGES`` is the measured
stages together for a capture run), per-kernel hardware numbers from the classified ncu kernels
(one row per kernel and stage), the GPU timeline and CUDA API summary from the nsys export.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import pandas as pd

from generator.analyses.result import Bound, Finding
from generator.analyses.roofline import Peaks
from generator.model import ALL_STAGES, GpuInfo, whole_graphs

#: the busiest unit's share of peak (SOL, ncu) is the documented headroom: a kernel at X % of its
#: busiest unit can at most run 100 / X times faster
SOL_COLUMNS = ("sm_throughput_pct", "memory_throughput_pct")
MIN_STAGE_SHARE_PCT = 1.0  # a stage below this share of all GPU time gets no per-stage finding
MIN_KERNEL_STAGE_PCT = 1.0  # a kernel below this share of its stage is not named on its own


@dataclass(frozen=True)
class FindingInputs:
    """One version's numbers: nsys summary (every stage), classified ncu kernels, kernel names,
    device peaks and GPU, GPU timeline and API summary (None when absent), run parameters."""

    summary: pd.DataFrame
    kernels: pd.DataFrame
    names: dict[str, Any]
    peaks: Peaks
    gpu: GpuInfo | None
    timeline: pd.DataFrame | None
    api_summary: pd.DataFrame | None
    params: dict[str, Any]
    top_n: int

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
    def gpu_arch(self) -> int | None:
        """The GPU's compute capability as smXY's number (9.0 → 90), None when unknown."""
        cc = self.gpu.compute_capability if self.gpu else None
        match = re.fullmatch(r"(\d+)\.(\d+)", cc or "")
        return int(match[1]) * 10 + int(match[2]) if match else None


def sol_pct(row: pd.Series) -> float:
    """The busiest unit's share of peak (max of SM and memory throughput), NaN when unmeasured."""
    values = [float(row[c]) for c in SOL_COLUMNS if c in row and pd.notna(row[c])]
    return max(values) if values else math.nan


def sol_bound(rows: pd.DataFrame, stage_ns: float, total_ns: float) -> Bound:
    """Amdahl bound over ncu rows (``total_ns`` in the stage, SOL share): each kernel can at most
    reach 100 % of its busiest unit; unmeasured kernels are counted as affected but not saved."""
    affected = float(rows["total_ns"].sum())
    saving = sum(float(r["total_ns"]) * (1.0 - sol_pct(r) / 100.0)
                 for _, r in rows.iterrows() if not math.isnan(sol_pct(r)))
    saving = max(saving, 0.0)
    headroom = affected / (affected - saving) if affected > saving else None
    return Bound(affected, stage_ns, total_ns, saving, headroom)


def removal_bound(affected_ns: float, stage_ns: float, total_ns: float, basis: str = "gpu_time") -> Bound:
    """Bound of removing the time altogether (fusing kernels away, closing idle gaps): all of it."""
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
