"""Top-N kernels by GPU time inside the measured stages, overall and per stage.

Per-stage kernel summaries come from the generator's nsys SQLite reader, which puts a kernel in a
stage when its launch call ran inside the stage's NVTX range (as ncu's NVTX filter does); the
overall list adds the stages up, so warm-up launches (outside every stage) never count.
Each selected kernel also carries its mangled name(s), the identity ncu filters on.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from capture.kernel_filter import is_nccl
from generator.model import ALL_STAGES
from generator.readers.base import plain_file
from generator.readers.sqlite_file import connect_readonly


@dataclass(frozen=True)
class Kernel:
    name: str  # demangled, as nsys reports it
    short_name: str | None
    count: int  # launches inside the stage (or all measured stages)
    total_ns: float
    time_pct: float  # share of the stage's (or all measured stages') kernel time, 0–100


@dataclass(frozen=True)
class TopN:
    n: int
    overall: list[Kernel]
    per_stage: dict[str, list[Kernel]]

    def selected(self) -> list[Kernel]:
        """Every kernel in any list, once, overall order first."""
        seen: dict[str, Kernel] = {}
        for k in [*self.overall, *(k for ks in self.per_stage.values() for k in ks)]:
            seen.setdefault(k.name, k)
        return list(seen.values())

    def as_dict(self) -> dict:
        return {
            "n": self.n,
            ALL_STAGES: [asdict(k) for k in self.overall],
            "stages": {s: [asdict(k) for k in ks] for s, ks in self.per_stage.items()},
        }


def stage_summaries(sqlite: Path, stages: list[str]) -> dict[str, pd.DataFrame]:
    """The nsys SQLite reader's kernel summary of each stage (model.KERNEL_SUMMARY_COLUMNS)."""
    from generator.readers.nsys_sqlite import kernel_summary

    with plain_file(sqlite) as plain:
        table = kernel_summary(plain, stages)
    return {stage: table[table["stage"] == stage] for stage in stages}


def _top(table: pd.DataFrame, n: int, include_nccl: bool) -> list[Kernel]:
    total = table["total_ns"].sum()
    if not include_nccl:
        table = table[~table["name"].map(is_nccl)]
    table = table.sort_values(["total_ns", "name"], ascending=[False, True]).head(n)
    return [
        Kernel(
            name=row.name,
            short_name=row.short_name,
            count=int(row.count),
            total_ns=float(row.total_ns),
            time_pct=float(100.0 * row.total_ns / total) if total else float("nan"),
        )
        for row in table.itertuples(index=False)
    ]


def select(summaries: dict[str, pd.DataFrame], n: int, *, include_nccl: bool = False) -> TopN:
    """Top ``n`` kernels by total GPU time per stage, and over all stages together."""
    frames = [t[["name", "short_name", "count", "total_ns"]] for t in summaries.values() if t is not None and len(t)]
    overall = (
        pd.concat(frames).groupby(["name"], as_index=False, dropna=False)
        .agg(short_name=("short_name", "first"), count=("count", "sum"), total_ns=("total_ns", "sum"))
        if frames else pd.DataFrame(columns=["name", "short_name", "count", "total_ns"])
    )
    return TopN(
        n=n,
        overall=_top(overall, n, include_nccl),
        per_stage={s: _top(t, n, include_nccl) for s, t in summaries.items()},
    )


def mangled_names(sqlite: Path, names: list[str]) -> dict[str, list[str]]:
    """demangled kernel name → its mangled name(s) in the nsys export (the identity ncu can match)."""
    from generator.readers.nsys_sqlite import KERNEL_SUMMARY_TABLES  # the kernels and their names, as here

    wanted = set(names)
    found: dict[str, list[str]] = {n: [] for n in names}
    with plain_file(sqlite) as plain:
        con = connect_readonly(plain, KERNEL_SUMMARY_TABLES)
        try:
            rows = con.execute(
                "SELECT DISTINCT d.value, m.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                "JOIN StringIds d ON d.id = k.demangledName JOIN StringIds m ON m.id = k.mangledName"
            ).fetchall()
        finally:
            con.close()
    for demangled, mangled in rows:
        if demangled in wanted and mangled not in found[demangled]:
            found[demangled].append(mangled)
    return found
