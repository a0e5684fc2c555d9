"""Version comparison on real H200 versions: decode-only ncu (v1) → decode + prefill ncu (v2)."""
from __future__ import annotations

import dataclasses
import math
import pickle

import pandas as pd
import pytest
from test_version import h200_inputs

from generator.analyses.compare_versions import change, compare_versions
from generator.analyses.version import AnalysisSettings, analyze_alone, analyze_version


@pytest.fixture(scope="module")
def v1():
    return analyze_version("v1", h200_inputs("small_vlm_decode_ncu_raw.csv.xz"), AnalysisSettings())


@pytest.fixture(scope="module")
def v2(v1):
    inputs = h200_inputs("small_vlm_decode_ncu_raw.csv.xz", "small_vlm_prefill.ncu-rep.xz")
    return analyze_version("v2", inputs, AnalysisSettings(), previous=v1)


def test_change_arithmetic():
    assert change(10.0, 15.0) == {"previous": 10.0, "current": 15.0, "abs": 5.0, "rel_pct": 50.0}
    assert change(0, 3)["rel_pct"] is None and change(0, 3)["abs"] == 3
    assert change(None, 3.0) == {"previous": None, "current": 3.0, "abs": None, "rel_pct": None}


def test_newly_profiled_and_coverage(v1, v2):
    comp = v2.comparison
    assert comp["previous_version"] == "v1" and comp["rule_changed"] is False
    def keys(result):
        return list(zip(result.ncu_metrics["stage"], result.ncu_metrics["name"]))

    before, after = set(keys(v1)), keys(v2)
    # v2 adds prefill launches: every prefill row is newly profiled (no kernel had prefill metrics)
    assert [(k["stage"], k["name"]) for k in comp["newly_profiled"]] == [k for k in after if k not in before]
    assert {k["stage"] for k in comp["newly_profiled"]} == {"prefill"} and len(comp["newly_profiled"]) == 20
    assert comp["kernels_profiled"] == change(len(before), len(after))  # kernel-stage rows
    assert comp["coverage"]["profiled"]["previous"] == v1.coverage["profiled"]
    assert comp["coverage"]["profiled"]["current"] == v2.coverage["profiled"]
    assert comp["coverage"]["profiled"]["current"] >= comp["coverage"]["profiled"]["previous"]
    # a kernel v1 did not profile is newly profiled, not "newly classified" (no v1 kernel was unknown)
    assert v1.classification["counts"]["unknown"] == 0 and comp["newly_classified"] == []


def test_mean_changes_absolute_and_relative(v1, v2):
    comp = v2.comparison
    for key, delta in comp["overall_means"].items():
        prev, cur = v1.classification["overall_means"][key], v2.classification["overall_means"][key]
        assert delta["previous"] == prev and delta["current"] == cur
        assert delta["abs"] == pytest.approx(cur - prev)
        assert delta["rel_pct"] == pytest.approx((cur - prev) / prev * 100)
    latency = comp["class_means"]["latency-bound"]["duration_us"]
    assert latency["abs"] == pytest.approx(v2.classification["class_means"]["latency-bound"]["duration_us"]
                                           - v1.classification["class_means"]["latency-bound"]["duration_us"])
    assert comp["counts"]["latency-bound"]["abs"] == v2.classification["counts"]["latency-bound"] - 25


def test_longest_kernel_change(v1, v2):
    longest = v2.comparison["longest_kernel"]
    assert longest["same_kernel"] is True  # the same kernel is the longest in both: its change is given
    assert longest["previous"]["duration_us"] == pytest.approx(v1.top_by_duration["duration_us"].iloc[0])
    assert longest["current"]["name"] == v2.top_by_duration["name"].iloc[0]
    assert longest["duration_us"]["abs"] == pytest.approx(
        v2.top_by_duration["duration_us"].iloc[0] - v1.top_by_duration["duration_us"].iloc[0])


def test_class_changes_and_newly_classified_after_missing_data(v1):
    # v0: the same decode version with one real number removed (the first kernel's SM throughput),
    # so that kernel is "unknown"; v1 classifies it → newly classified and a class change
    inputs = h200_inputs("small_vlm_decode_ncu_raw.csv.xz")
    metrics = inputs.kernel_metrics
    first = metrics["name"].iloc[0]
    inputs.kernel_metrics = metrics.assign(sm_throughput_pct=metrics["sm_throughput_pct"].where(metrics["name"] != first,
                                                                                                 math.nan))
    v0 = analyze_version("v0", inputs, AnalysisSettings())
    assert v0.classification["counts"]["unknown"] == 1
    comp = compare_versions(v0, v1)
    assert [(k["previous"], k["current"]) for k in comp["newly_classified"]] == [("unknown", "latency-bound")]
    assert comp["newly_profiled"] == []
    assert [(c["previous"], c["current"]) for c in comp["class_changes"]] == [("unknown", "latency-bound")]
    assert comp["class_changes"][0]["friendly_name"] == "Index Select (BF16)"


def test_results_computed_ahead_in_another_process_are_the_same(v1, v2):
    """The build runs the analyses that do not read the previous version in the reading child and
    sends their results back pickled (build._read_group): the version's result is the same."""
    inputs = h200_inputs("small_vlm_decode_ncu_raw.csv.xz", "small_vlm_prefill.ncu-rep.xz")
    alone = pickle.loads(pickle.dumps(analyze_alone("v2", inputs, AnalysisSettings())))
    ahead = analyze_version("v2", inputs, AnalysisSettings(), previous=v1, alone=alone)
    # the eight that read the previous version: gpu_change, like_with_like, timer_tick, stage_speed,
    # kernel_speed, kernel_changes, module_changes, comparison
    assert list(ahead.values) == list(v2.values) and len(alone) == len(v2.values) - 8
    for key, value in v2.values.items():
        assert _same(value, ahead.values[key]), key


def _same(a: object, b: object) -> bool:
    """Equal values, DataFrames and Series by ``equals``, through dataclasses and containers."""
    if type(a) is not type(b):
        return False
    if isinstance(a, pd.DataFrame | pd.Series):
        return a.equals(b)
    if dataclasses.is_dataclass(a):
        return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b or (a != a and b != b)  # NaN equals NaN


def test_removed_and_added_kernels_carry_friendly_names(v1):
    """A kernel only the previous version ran is named by its friendly name (the raw one on hover),
    like an added one: here v1's kernel summary against itself less its longest kernel."""
    from generator.analyses.speed_change import kernel_changes

    summary, names = v1.values["kernel_summary"], v1.values["names"]
    every = summary[summary["stage"] == "all"]
    longest = every.sort_values("total_ns").iloc[-1]["name"]
    removed = kernel_changes(summary, summary[summary["name"] != longest], names)
    added = kernel_changes(summary[summary["name"] != longest], summary, names)
    for frame, status in ((removed, "removed"), (added, "added")):
        row = frame[frame["status"] == status].iloc[0]
        assert row["friendly_name"] == names[longest].friendly_name != longest
