"""Where a version's GPU time went, stage by stage: kernel time, its share of the measured work, the
top-N kernels' share, the part that ran inside CUDA graphs (and how many replays), replays traced
only as whole graphs, and the split by library within each stage."""
from __future__ import annotations

import pandas as pd

from generator.analyses.naming import KernelName
from generator.analyses.registry import Analysis
from generator.analyses.settings import AnalysisSettings
from generator.model import ALL_STAGES, VersionInputs, whole_graphs

#: One row per stage ("all" first), ns and counts; graph columns NaN where the input has no
#: graph data (not an nsys SQLite export).
STAGE_TIME_COLUMNS = [
    "stage",
    "launches",  # kernel launches in the stage (not whole-graph replays)
    "kernel_ns",  # GPU time of the stage's kernel-summary rows (kernels and whole graphs)
    "share_pct",  # kernel_ns / the "all" row's kernel_ns × 100
    "top_n",  # kernels counted as the top N (fewer when the stage has fewer; whole graphs are none)
    "top_n_ns",  # GPU time of the stage's top-N kernels
    "top_n_pct",  # top_n_ns / kernel_ns × 100
    "graph_launches",  # CUDA graph replays launched in the stage
    "graph_kernel_ns",  # GPU time of the kernels that ran as graph nodes
    "graph_pct",  # graph_kernel_ns / kernel_ns × 100
    "whole_graph_launches",  # replays traced as whole graphs (kernels unknown)
    "whole_graph_ns",  # their GPU time (in kernel_ns: each graph is a row of the kernel summary)
    "span_ns",  # first kernel start to last kernel end, summed over the stage's range instances
    "idle_ns",  # gaps with no kernel running inside the span
]
#: Per stage and library: GPU time and its share of the stage.
STAGE_LIBRARY_COLUMNS = ["stage", "library", "kernel_ns", "pct"]


def stage_time(summary: pd.DataFrame, graphs: pd.DataFrame, timeline: pd.DataFrame, stages: list[str],
               top_n: int) -> pd.DataFrame:
    """STAGE_TIME_COLUMNS for ``stages`` from the kernel summary, the graph figures
    (nsys_sqlite.GRAPH_COLUMNS) and the timeline figures per stage (VersionInputs.stage_spans); a stage
    without a row in one of them has those figures unknown."""
    total = float(summary.loc[summary["stage"] == ALL_STAGES, "total_ns"].sum())
    by_stage = graphs.set_index("stage") if len(graphs) else None
    spans = timeline.set_index("stage") if len(timeline) else None
    rows = []
    for stage in stages:
        in_stage = summary[summary["stage"] == stage].sort_values(["total_ns", "name"], ascending=[False, True])
        ns = float(in_stage["total_ns"].sum())
        kernels = in_stage[~whole_graphs(in_stage["name"])]
        top = kernels.head(top_n)
        graph = by_stage.loc[stage] if by_stage is not None and stage in by_stage.index else None

        def value(column: str, graph: pd.Series | None = graph) -> float:
            return float("nan") if graph is None else float(graph[column])

        graph_ns = value("graph_kernel_ns")
        rows.append({
            "stage": stage,
            "launches": int(kernels["count"].sum()),
            "kernel_ns": ns,
            "share_pct": ns * 100.0 / total if total else float("nan"),
            "top_n": len(top),
            "top_n_ns": float(top["total_ns"].sum()),
            "top_n_pct": float(top["total_ns"].sum()) * 100.0 / ns if ns else float("nan"),
            "graph_launches": value("graph_launches"),
            "graph_kernel_ns": graph_ns,
            "graph_pct": graph_ns * 100.0 / ns if ns else float("nan"),
            "whole_graph_launches": value("whole_graph_launches"),
            "whole_graph_ns": value("whole_graph_ns"),
            "span_ns": float(spans.at[stage, "span_ns"]) if spans is not None and stage in spans.index else float("nan"),
            "idle_ns": float(spans.at[stage, "idle_ns"]) if spans is not None and stage in spans.index else float("nan"),
        })
    return pd.DataFrame(rows, columns=STAGE_TIME_COLUMNS)


def stage_libraries(summary: pd.DataFrame, names: dict[str, KernelName], stages: list[str]) -> pd.DataFrame:
    """STAGE_LIBRARY_COLUMNS: each stage's kernel time by the library that ships the kernel (most
    time first, ties by library)."""
    frame = summary[summary["stage"].isin(stages)]
    frame = frame.assign(library=[names[n].source_lib if n in names else None for n in frame["name"]])
    frame = frame.assign(library=frame["library"].fillna("unknown"))
    grouped = frame.groupby(["stage", "library"], sort=False)["total_ns"].sum().reset_index(name="kernel_ns")
    grouped["pct"] = grouped["kernel_ns"] * 100.0 / grouped.groupby("stage")["kernel_ns"].transform("sum")
    order = {s: i for i, s in enumerate(stages)}
    grouped = grouped.sort_values(["stage", "kernel_ns", "library"], ascending=[True, False, True],
                                  key=lambda col: col.map(order) if col.name == "stage" else col)
    return grouped.reset_index(drop=True)[STAGE_LIBRARY_COLUMNS]


def version_stage_time(inputs: VersionInputs, stages: list[str], settings: AnalysisSettings) -> pd.DataFrame:
    """:func:`stage_time` of the version (its kernel summary and CUDA graph figures)."""
    return stage_time(inputs.kernel_summary, inputs.graphs, inputs.stage_spans, stages, settings.top_n)


def version_stage_libraries(inputs: VersionInputs, names: dict[str, KernelName], stages: list[str]) -> pd.DataFrame:
    """:func:`stage_libraries` of the version."""
    return stage_libraries(inputs.kernel_summary, names, stages)


ANALYSES = [Analysis("stage_time", version_stage_time, publish=True),
            Analysis("stage_libraries", version_stage_libraries, publish=True)]
