"""The nsys ↔ ncu join: which nsys kernel (and its share of stage time) each ncu launch is.

nsys gives full demangled names; ncu gives function names or demangled names whose scopes, casts
and spelling differ by version (`at::native::` vs `at::`, `(int)4` vs `4`, `<unnamed>` vs
`(anonymous namespace)`). Names match on their base name, then on their canonical template
arguments; what still matches several nsys kernels is marked ``ambiguous`` and left unjoined.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from generator.analyses.cpp_names import canonical, parse_name
from generator.model import ALL_STAGES

JOIN_COLUMNS = ["summary_stage", "summary_name", "stage_time_pct", "total_ns", "count", "ambiguous"]


def base_name(name: str) -> str:
    """The function name without return type, scopes, template arguments or parameters."""
    return parse_name(name).base


def _signature(name: str) -> tuple[str, str | None, bool]:
    """(base name, canonical template arguments or None when the name has none, truncated)."""
    parsed = parse_name(name)
    if not parsed.template_args and not parsed.truncated:
        return parsed.base, None, False
    return parsed.base, canonical(",".join(parsed.template_args)), parsed.truncated


def _args_agree(a: tuple[str, str | None, bool], b: tuple[str, str | None, bool]) -> bool:
    """Template arguments are equal, or one side is a cut-off prefix of the other."""
    if a[1] is None or b[1] is None:
        return True  # a short name carries no template arguments to compare
    if a[1] == b[1]:
        return True
    for cut, full in ((a, b), (b, a)):
        if cut[2] and full[1].startswith(cut[1][:-8]):
            return True
    return False


def _candidates(name: str, summary_names: list[str], signatures: dict[str, tuple]) -> list[str]:
    """The summary names ``name`` can be: same base name, then agreeing template arguments."""
    sig = _signature(name)
    return [s for s in summary_names if signatures[s][0] == sig[0] and _args_agree(sig, signatures[s])]


def _stage_of(stage: object, stages: set[str]) -> str:
    return stage if isinstance(stage, str) and stage in stages else ALL_STAGES


def attach_stage_time(metrics: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """``metrics`` plus, per launch, the nsys kernel it is (JOIN_COLUMNS).

    A launch is looked up in its own stage's summary when the summary has that stage, else in
    ALL_STAGES. ``ambiguous`` is True where several nsys kernels fit; those rows, and rows that
    match nothing, have no summary_name and NaN numbers.
    """
    stages = set(summary["stage"])
    by_stage = {stage: frame.set_index("name") for stage, frame in summary.groupby("stage", sort=False)}
    signatures = {name: _signature(name) for name in summary["name"].unique()}
    rows = []
    for name, stage in zip(metrics["name"], metrics["stage"]):
        used = _stage_of(stage, stages)
        table = by_stage.get(used)
        found = _candidates(name, list(table.index), signatures) if table is not None else []
        if len(found) == 1:
            hit = table.loc[found[0]]
            rows.append((used, found[0], hit["time_pct"], hit["total_ns"], hit["count"], False))
        else:
            rows.append((used, None, np.nan, np.nan, np.nan, len(found) > 1))
    joined = pd.DataFrame(rows, columns=JOIN_COLUMNS, index=metrics.index)
    joined["count"] = joined["count"].astype("Int64")
    return pd.concat([metrics.drop(columns=JOIN_COLUMNS, errors="ignore"), joined], axis=1)


def coverage(summary: pd.DataFrame, metrics: pd.DataFrame, top_n: int, stage: str = ALL_STAGES) -> dict:
    """Of the stage's top-N kernels by total time, how many have ncu metrics.

    A kernel counts as profiled when some launch (of that stage, or of unknown stage) matches it
    and nothing else. ``top_n`` is the number of kernels looked at (fewer if the stage has fewer).
    """
    in_stage = summary[summary["stage"] == stage].sort_values(["total_ns", "name"], ascending=[False, True])
    top = list(in_stage["name"].head(top_n))
    if stage != ALL_STAGES:
        metrics = metrics[metrics["stage"].isna() | (metrics["stage"] == stage)]
    names = list(in_stage["name"])
    signatures = {name: _signature(name) for name in names}
    profiled = set()
    for name in metrics["name"].unique():
        found = _candidates(name, names, signatures)
        if len(found) == 1:
            profiled.add(found[0])
    return {
        "top_n": len(top),
        "profiled": sum(name in profiled for name in top),
        "missing": [name for name in top if name not in profiled],
    }
