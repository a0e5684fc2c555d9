"""`compare` and `project` compute only what they read (issue 46): a comparison runs the analyses
compare.READS names and those they read, of the baseline what those read of the previous version,
never a site build's whole set; neither command reads a run's operator calls or its kernels' module attribution."""
from __future__ import annotations

from pathlib import Path

import pytest

from generator.analyses import registry
from generator.analyses.version import AnalysisSettings, LeftOut, analyze_version
from generator.cli import main
from generator.commands.compare import compare_paths
from generator.pipeline import inputs as pipeline_inputs
from generator.readers import nsys_sqlite

RUNS = Path(__file__).resolve().parent.parent / "examples" / "runs"
#: what each side of a comparison computes: compare.READS (stage_speed, …), what they read
#: (launches, names, …) and of the baseline (measured_stages, kernel_summary)
ALONE = {"collective_instances", "metrics", "launches", "stages", "ranks", "coverage", "names", "peaks", "stage_time",
         "ncu_metrics", "classification", "top_by_duration", "measured_stages", "kernel_summary"}
AGAINST_BASELINE = {"gpu_change", "like_with_like", "stage_speed", "kernel_speed", "kernel_changes", "comparison"}


@pytest.fixture
def executed(monkeypatch) -> list[str]:
    """The keys of the analyses run (registry.analyze), and operator calls and module attribution made
    unreadable."""
    ran: list[str] = []
    analyze = registry.analyze

    def spy(given, analyses=None):
        computed = analyze(given, analyses)
        ran.extend(computed)
        return computed

    def no_calls(*_):
        raise AssertionError("operator calls read")

    def no_modules(*_):
        raise AssertionError("module attribution read")

    monkeypatch.setattr(registry, "analyze", spy)
    monkeypatch.setattr(pipeline_inputs, "run_calls", no_calls)
    monkeypatch.setattr(nsys_sqlite, "_module_kernels", no_modules)
    return ran


def test_compare_runs_only_the_analyses_it_reads(executed):
    base, current = RUNS / "vit-sweep" / "image-size224_batch1", RUNS / "vit-sweep" / "image-size448_batch4"
    compared = compare_paths(base, current)
    assert compared.verdicts is not None and len(compared.verdicts.kernels)
    # each side's, then the verdicts: the baseline's (against no version: empty) and the current one's
    assert sorted(executed) == sorted([*ALONE, *ALONE, *AGAINST_BASELINE, *AGAINST_BASELINE])
    assert len(registry.discover()) > len(ALONE | AGAINST_BASELINE) + 10  # a build runs many more
    assert compared.baseline.inputs.op_calls is None and compared.baseline.inputs.module_kernels is None


def test_project_runs_no_analysis_and_reads_no_operator_calls_or_modules(executed, tmp_path):
    run = RUNS / "compiled-block-h200"
    assert (run / "ops" / "calls.csv").is_file()  # recorded, and not read
    assert main(["project", str(run), "--chip", "h100-sxm", "--json", str(tmp_path / "p.json")]) == 0
    assert executed == [] and (tmp_path / "p.json").is_file()


def test_a_partial_version_refuses_what_it_left_out():
    """A baseline computed for a comparison holds what the comparison reads; reading anything else
    is an error, never an empty table or a default."""
    from generator.pipeline.chips import read_run

    inputs = read_run(RUNS / "compiled-block-h200")
    partial = analyze_version("v1", inputs, AnalysisSettings(), keys=["measured_stages"])
    assert partial.values["measured_stages"] == ["block"]
    assert isinstance(partial.findings, LeftOut) and isinstance(partial.stage_time, LeftOut)
    for read in (lambda: partial.values.get("launch_floors", None), lambda: partial.values["findings"],
                 lambda: len(partial.stage_time), lambda: partial.module_tree.tree):
        with pytest.raises(LookupError, match="was not run"):
            read()
    assert registry.read_before(["like_with_like"], registry.discover()) == ("measured_stages",)


def test_what_analyses_read_of_the_previous_version_is_declared_by_key():
    found = registry.discover()
    keys = {a.key for a in found}
    declared = {a.key: a.previous for a in found if a.previous}
    assert all("previous" in a.inputs for a in found if a.previous)
    assert {k for reads in declared.values() for k in reads} <= keys
    assert declared["stage_speed"] == ("launches", "stage_time") and declared["module_changes"] == ("module_tree",)


def test_a_run_read_again_from_the_cache_is_not_decompressed(tmp_path, monkeypatch):
    """The second compare or project of a run takes everything it reads from the build cache, its
    ranks included: the export is neither decompressed nor queried again."""
    from generator.pipeline.build_cache import BuildCache
    from generator.pipeline.config import Inputs, VersionConfig
    from generator.readers import nsys_ranks

    run = RUNS / "compiled-block-h200"
    store = BuildCache(tmp_path / "cache")

    def read():
        with pipeline_inputs.InputCache(store) as cache:
            return pipeline_inputs.version_inputs(VersionConfig.model_construct(runs=[run], inputs=Inputs()), cache,
                                                  run / "manifest.json", 0, operator_calls=False)

    first = read()
    misses = store.misses

    def refused(*_):
        raise AssertionError("read again")

    monkeypatch.setattr(pipeline_inputs.InputCache, "_plain_copy", refused)
    monkeypatch.setattr(nsys_ranks, "rank_processes", refused)
    again = read()
    assert store.misses == misses and store.hits >= misses
    assert again.kernel_summary.equals(first.kernel_summary) and again.launches.equals(first.launches)


def test_compare_reuses_a_builds_reading_of_the_stages(tmp_path):
    """A reading with module attribution, stored by a build, serves compare and project (which read
    without) from the cache; theirs is stored apart and never serves a build."""
    from generator.pipeline.build_cache import BuildCache
    from generator.pipeline.config import Inputs, VersionConfig

    run = RUNS / "compiled-block-h200"
    store = BuildCache(tmp_path / "cache")

    def read(modules):
        with pipeline_inputs.InputCache(store) as cache:
            return pipeline_inputs.version_inputs(VersionConfig.model_construct(runs=[run], inputs=Inputs()), cache,
                                                  run / "manifest.json", 0, operator_calls=False, modules=modules)

    alone = read(False)
    assert alone.module_kernels is None and alone.module_form is None and alone.module_classes == {}
    misses = store.misses
    built = read(True)
    assert store.misses == misses + 1 and built.module_kernels is not None and len(built.module_kernels)
    again = read(False)
    assert store.misses == misses + 1 and again.module_kernels is None
    assert again.kernel_summary.equals(alone.kernel_summary) and again.launches.equals(alone.launches)
