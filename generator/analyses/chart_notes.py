"""What each chart shows, in numbers: one note per chart, computed from the same tables the chart and
the data files hold. A note is ``{"id": word key under notes. of the translation files, "values":
{name: value}}``; the words are in the templates, the numbers here. Value names say how a page
prints them: ``*_pct`` a percentage, ``*_ns`` milliseconds, ``*_count`` / ``n`` an integer,
``*_name`` a kernel or library name, ``stage`` a stage, ``class`` a class, ``value*`` a number
in the metric's unit."""
from __future__ import annotations

from typing import Any

import pandas as pd

from generator.analyses.modules import OUTSIDE, ModulesResult
from generator.analyses.registry import Analysis
from generator.metric_table import DISPLAY
from generator.model import ALL_STAGES, whole_graphs

#: Histograms of a percentage: kernels below LOW_PCT and at or above HIGH_PCT are counted.
LOW_PCT, HIGH_PCT = 20.0, 60.0
#: Top-kernels charts: how many of the first kernels make up this share of the stage.
HALF_PCT = 50.0
#: Roofline: kernels reaching at least this share of their roof are counted.
ROOF_PCT = 50.0
#: The sweep page's chart key (render.sweep_charts.CHART_SLUG).
SWEEP_CHART = "sweep-metrics"

Note = dict[str, Any]


def histogram_note(metric: str, values: pd.DataFrame) -> Note | None:
    """Percent metrics: kernels below LOW_PCT / at or above HIGH_PCT and the most common class of
    the latter; other units: median and the largest value with its kernel."""
    if not len(values):
        return None
    v = values["value"].astype(float)
    if DISPLAY[metric].unit != "%":
        top = values.loc[v.idxmax()]
        return {"id": "hist_value", "values": {"n": len(v), "value_median": float(v.median()),
                                               "value_max": float(top["value"]),
                                               "kernel_name": top["friendly_name"]}}
    high = values[v >= HIGH_PCT]
    note: Note = {"id": "hist_pct", "values": {
        "n": len(v), "below_count": int((v < LOW_PCT).sum()), "low_pct": LOW_PCT,
        "above_count": len(high), "high_pct": HIGH_PCT, "median_pct": float(v.median())}}
    classes = high["class"].dropna() if "class" in high else pd.Series(dtype=object)
    if len(classes):
        counts = classes.value_counts(sort=False)
        best = max(counts.index, key=lambda c: (counts[c], -list(counts.index).index(c)))
        note["id"] = "hist_pct_class"
        note["values"].update({"class": best, "class_count": int(counts[best])})
    return note


def top_note(stage: str, top: pd.DataFrame) -> Note | None:
    """The first kernel's share and how many of the first kernels make up HALF_PCT of the stage; CUDA
    graphs traced as whole graphs are no kernels: their share is stated apart and not counted."""
    graphs = float(top.loc[whole_graphs(top["name"]), "time_pct"].astype(float).sum())
    top = top[~whole_graphs(top["name"])].reset_index(drop=True)
    if not len(top):
        return {"id": "top_graphs_only", "values": {"stage": stage, "graph_pct": graphs}} if graphs else None
    share = top["time_pct"].astype(float)
    cumulative = share.cumsum()
    reached = cumulative[cumulative >= HALF_PCT]
    values = {"stage": stage, "kernel_name": top["friendly_name"].iloc[0], "first_pct": float(share.iloc[0]),
              "n": len(top), "shown_pct": float(cumulative.iloc[-1])}
    if graphs:
        return {"id": "top_graphs", "values": {**values, "graph_pct": graphs}}
    if not len(reached):
        return {"id": "top_spread", "values": values}
    k = int(reached.index[0]) + 1  # ``top`` is indexed 0 … n-1 in rank order
    return {"id": "top_half", "values": {**values, "half_count": k, "half_pct": float(reached.iloc[0])}}


def stage_time_note(stage_time: pd.DataFrame, libraries: pd.DataFrame) -> Note | None:
    """The stage with the most GPU time, its share, its largest library and the lowest top-N share."""
    staged = stage_time[stage_time["stage"] != ALL_STAGES]
    if not len(staged):
        return None
    big = staged.loc[staged["kernel_ns"].astype(float).idxmax()]
    low = staged.loc[staged["top_n_pct"].astype(float).idxmin()]
    libs = libraries[libraries["stage"] == big["stage"]]
    lib = libs.iloc[0] if len(libs) else None  # most time first
    total = stage_time.loc[stage_time["stage"] == ALL_STAGES, "kernel_ns"]
    return {"id": "stage_time", "values": {
        "stage": big["stage"], "stage_ns": float(big["kernel_ns"]), "total_ns": float(total.iloc[0]),
        "share_pct": float(big["share_pct"]), "library_name": None if lib is None else lib["library"],
        "library_pct": None if lib is None else float(lib["pct"]), "low_stage": low["stage"],
        "top_n_count": int(low["top_n"]), "top_n_pct": float(low["top_n_pct"])}}


def stage_floor_note(decomposition: pd.DataFrame | None) -> Note | None:
    """The stage whose kernel time stands furthest above the sum of its launches' floors: both, and
    how many times the floor it is (stage_decomposition)."""
    if decomposition is None or "floor_ns" not in decomposition:
        return None
    staged = decomposition[(decomposition["stage"] != ALL_STAGES) & (decomposition["floor_ns"].astype(float) > 0)]
    if not len(staged):
        return None
    gap = staged["kernel_ns"].astype(float) - staged["floor_ns"].astype(float)
    far = staged.loc[gap.idxmax()]
    return {"id": "stage_floor", "values": {
        "stage": far["stage"], "kernel_ns": float(far["kernel_ns"]), "floor_ns": float(far["floor_ns"]),
        "gap_ns": float(gap.max()), "value_times": float(far["kernel_ns"]) / float(far["floor_ns"])}}


def normalized_note(points: pd.DataFrame | None) -> Note | None:
    """Kernels nearer SM peak than memory peak (above the diagonal) and the highest SM throughput."""
    if points is None or not len(points):
        return None
    sm, mem = points["sm_throughput_pct"].astype(float), points["memory_throughput_pct"].astype(float)
    known = sm.notna() & mem.notna()
    if not known.any():
        return None
    top = points.loc[sm[known].idxmax()]
    return {"id": "roofline_normalized", "values": {
        "n": int(known.sum()), "sm_side_count": int((sm[known] > mem[known]).sum()),
        "memory_side_count": int((sm[known] <= mem[known]).sum()), "kernel_name": top["friendly_name"],
        "sm_pct": float(top["sm_throughput_pct"]), "memory_pct": float(top["memory_throughput_pct"])}}


def roof_note(kernels: pd.DataFrame) -> Note | None:
    """Median share of the roof at the kernel's arithmetic intensity, and how many reach ROOF_PCT."""
    roof = pd.to_numeric(kernels.get("roof_pct", pd.Series(dtype=float)), errors="coerce").dropna()
    if not len(roof):
        return None
    return {"id": "roofline_roof", "values": {"n": len(roof), "median_pct": float(roof.median()),
                                              "reach_count": int((roof >= ROOF_PCT).sum()), "reach_pct": ROOF_PCT}}


def module_note(stage: str, tree: pd.DataFrame) -> Note | None:
    """The deepest module (folded) holding at least HALF_PCT of the stage, else the largest one, and
    the share of the stage's time launched outside any module."""
    inside = tree[tree["key"] != OUTSIDE]
    if not len(inside):
        return None
    outside = tree.loc[tree["key"] == OUTSIDE, "share_pct"].astype(float).sum()
    half = inside[inside["share_pct"].astype(float) >= HALF_PCT]
    pick = (half.sort_values(["depth", "share_pct"], ascending=[False, False]) if len(half)
            else inside.sort_values("share_pct", ascending=False)).iloc[0]
    return {"id": "modules_half" if len(half) else "modules_spread",
            "values": {"stage": stage, "module_name": pick["key"], "module_pct": float(pick["share_pct"]),
                       "outside_pct": float(outside)}}


def sweep_note(configs: pd.DataFrame) -> Note | None:
    """The sweep chart: GPU time of the baseline and of the configurations with the least and most."""
    time = configs["gpu_time_ns"].astype(float)
    if not time.notna().any():
        return None
    base = configs[configs["baseline"].astype(bool)].iloc[0]
    low, high = configs.loc[time.idxmin()], configs.loc[time.idxmax()]
    return {"id": "sweep", "values": {
        "n": len(configs), "baseline_name": base["label"], "baseline_ns": float(base["gpu_time_ns"]),
        "least_name": low["label"], "least_ns": float(low["gpu_time_ns"]),
        "most_name": high["label"], "most_ns": float(high["gpu_time_ns"])}}


def with_sweep_note(notes: dict[str, Note], configs: pd.DataFrame) -> dict[str, Note]:
    """``notes`` plus the sweep chart's (its key as the sweep page names it), when it has data."""
    note = sweep_note(configs)
    return notes if note is None else {**notes, SWEEP_CHART: note}


def chart_notes(stage_time: pd.DataFrame, stage_libraries: pd.DataFrame, stages: list[str],
                top_kernels: dict[str, pd.DataFrame], histograms: dict[str, pd.DataFrame],
                roofline: dict[str, Any], ncu_metrics: pd.DataFrame, module_tree: ModulesResult,
                stage_decomposition: pd.DataFrame | None = None) -> dict[str, Note]:
    """Chart key (as the pages name charts) → its note; charts without data have none."""
    notes: dict[str, Note | None] = {"stage-time": stage_time_note(stage_time, stage_libraries),
                                     "stage-floor": stage_floor_note(stage_decomposition)}
    for index, stage in enumerate(stages):
        top = top_kernels.get(stage)
        notes[f"top-{index}"] = None if top is None else top_note(stage, top.reset_index(drop=True))
    for key, values in histograms.items():
        notes[f"hist-{key}"] = histogram_note(key, values)
    notes["roofline-normalized"] = normalized_note(roofline.get("normalized"))
    roof = roof_note(ncu_metrics)
    notes["roofline-physical"] = roof
    notes["roofline-per-kernel"] = roof
    tree = module_tree.tree
    for index, stage in enumerate(s for s in stages if s in module_tree.stage_ns):
        notes[f"modules-{index}"] = module_note(stage, tree[tree["stage"] == stage])
    return {key: note for key, note in notes.items() if note is not None}


ANALYSES = [Analysis("chart_notes", chart_notes, publish=True)]
