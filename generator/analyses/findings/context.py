"""What every findings rule reads (one version's typed results) and the helpers they share.

Times come from the nsys kernel summary of each measured stage (``ALL_STAGES`` is the measured
stages together for a capture run), per-kernel hardware numbers from the classified ncu kernels
(one row per kernel and stage), the GPU timeline (with each stage's launch calls) from the nsys export.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import pandas as pd

from generator.analyses.floors import datapath, launch_floor
from generator.analyses.result import Bound, Finding
from generator.analyses.roofline import Peaks
from generator.model import ALL_STAGES, GpuInfo, whole_graphs

MIN_STAGE_SHARE_PCT = 1.0  # a stage below this share of all GPU time gets no per-stage finding
MIN_KERNEL_STAGE_PCT = 1.0  # a kernel below this share of its stage is not named on its own
#: per-launch columns a kernel's floor reads (useful work from shapes where known, ncu's counters, and
#: how many of the stage's launches the shapes describe)
FLOOR_COLUMNS = ("useful_flop", "ideal_bytes", "flop_tensor", "flop_fp32", "dram_bytes", "shape_launches")


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

    def with_floor_columns(self, rows: pd.DataFrame, stage: str) -> pd.DataFrame:
        """nsys summary ``rows`` of ``stage`` with the profiled columns a floor reads (NaN where the
        kernel was not profiled: its floor is then the shortest kernel)."""
        profiled = self.profiled(stage)
        columns = [c for c in FLOOR_COLUMNS if len(profiled) and c in profiled]
        extra = profiled[["name", *columns]].drop_duplicates("name") if columns else None
        return rows.merge(extra, on="name", how="left") if extra is not None else rows

    @property
    def shortest_ns(self) -> float:
        """The shortest kernel the GPU ran in the capture (any stage), 0 when no duration is known."""
        shortest = pd.to_numeric(self.summary["min_ns"], errors="coerce").min() if len(self.summary) else math.nan
        return 0.0 if pd.isna(shortest) else float(shortest)

    def kernel_floor(self, row: pd.Series) -> tuple[float, str]:
        """(floor ns, basis) of one launch of a kernel row: useful FLOP and ideal bytes per launch
        where its shapes are known (``useful_flop``, ``ideal_bytes``), else ncu's DRAM bytes; FLOP
        against the datapath that could run them (floors.datapath)."""
        def value(column: str) -> float:
            v = pd.to_numeric(row.get(column), errors="coerce")
            return math.nan if v is None or pd.isna(v) else float(v)

        path = datapath(value("flop_tensor"), value("flop_fp32"))
        return launch_floor(self.shortest_ns, useful_flop=value("useful_flop"),
                            flop_per_s=self.peaks.flop_per_s.get(path), ideal_bytes=value("ideal_bytes"),
                            dram_bytes=value("dram_bytes"), dram_bytes_per_s=self.peaks.dram_bytes_per_s)

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
    """Bound over kernel rows (``total_ns`` and ``count`` in the stage): each launch can at most
    reach its physical floor (floors.launch_floor), so the saving is Σ (measured − floor) over launches;
    rows without a time are affected but not saved. Where the shapes describe only some launches (the
    profiled launch's configuration, ``shape_launches``) the others' floor is the shortest kernel.
    ``floor_basis`` is the term that sets most of the floor time."""
    affected = float(rows["total_ns"].sum()) if len(rows) else 0.0
    parts, basis_ns = [], {}
    for _, row in rows.iterrows():
        if pd.isna(row["total_ns"]) or pd.isna(row.get("count")):
            continue
        floor, basis = inputs.kernel_floor(row)
        count = float(row["count"])
        described = pd.to_numeric(row.get("shape_launches"), errors="coerce")
        described = count if described is None or pd.isna(described) else min(float(described), count)
        floor_total = floor * described + max(inputs.shortest_ns, 0.0) * (count - described)
        parts.append((str(row["name"]), max(float(row["total_ns"]) - floor_total, 0.0)))
        basis_ns[basis] = basis_ns.get(basis, 0.0) + floor_total
    saving = sum(s for _, s in parts)
    headroom = affected / (affected - saving) if affected > saving else None
    floor_basis = max(basis_ns, key=lambda b: basis_ns[b]) if basis_ns else ""
    return Bound(affected, stage_ns, total_ns, saving, headroom, floor_basis=floor_basis, parts=tuple(parts))


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
