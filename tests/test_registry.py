"""generator.analyses.registry: discovery of every module's ANALYSES, dependency order, errors."""
from __future__ import annotations

import pandas as pd
import pytest

from generator.analyses import registry
from generator.analyses.registry import Analysis


def double(count: int) -> int:
    return 2 * count


def count(version_id: str) -> int:
    return len(version_id)


def test_runs_each_after_what_it_reads() -> None:
    values = registry.analyze({"version_id": "v12", "inputs": None, "settings": None, "previous": None},
                              [Analysis("double", double), Analysis("count", count)])
    assert values == {"count": 3, "double": 6}


def test_missing_input_and_cycle_are_named() -> None:
    with pytest.raises(ValueError, match="'double' reads count"):
        registry.in_order([Analysis("double", double)])
    with pytest.raises(ValueError, match="cycle: count, double"):
        registry.in_order([Analysis("count", lambda double: double), Analysis("double", double)])


def test_discovers_the_existing_analyses_with_typed_results() -> None:
    found = {a.key: a for a in registry.discover()}
    assert {"metrics", "names", "ncu_metrics", "top_kernels", "classification", "roofline", "top_by_duration",
            "histograms", "findings", "comparison", "kernels_yaml"} <= set(found)
    assert found["ncu_metrics"].result_type is pd.DataFrame
    assert found["ncu_metrics"].inputs == ("metrics", "names", "settings", "peaks")


def test_analyses_not_reading_the_previous_version_run_ahead() -> None:
    """Those reading ``previous`` (directly or through another analysis) wait for the version
    before; the others are run ahead (build._read_group) and not run again."""
    analyses = [Analysis("count", count), Analysis("double", double),
                Analysis("grown", lambda count, previous: count - (previous or 0)), Analysis("twice", lambda grown: 2 * grown)]
    ahead = registry.not_reading("previous", analyses)
    assert [a.key for a in ahead] == ["count", "double"]
    given = {"version_id": "v12", "inputs": None, "settings": None}
    early = registry.analyze(given, ahead)
    calls: list[str] = []
    counted = Analysis("count", lambda version_id: calls.append(version_id) or 0)  # would give another count
    rest = registry.analyze({**given, "previous": 1, **early}, [counted, *analyses[1:]])
    assert calls == [] and rest == {"grown": 2, "twice": 4}
    assert {a.key for a in registry.discover()} - {a.key for a in registry.not_reading("previous", registry.discover())} \
        == {"gpu_change", "like_with_like", "timer_tick", "module_changes", "stage_speed", "kernel_speed",
            "kernel_changes", "comparison"}
