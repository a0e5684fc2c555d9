# ruff: noqa: F811 - the fixtures imported from test_ranks are the tests' arguments
"""Ranks read as a per-rank map (generator.pipeline.rank_map): forked workers here and a Dask
LocalCluster give the reductions and the collectives / ranks frames of the sequential read, on the
real 2 × H200 export as one export and as one export per rank."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_ranks import FIXTURE, STAGES, _inputs, analysed, export, split  # noqa: F401 - test_ranks' fixtures, shared

from generator.analyses import collectives as coll
from generator.cli import main
from generator.commands.inspect import rank_facts
from generator.pipeline import rank_map
from generator.pipeline.inputs import InputCache

pytestmark = pytest.mark.skipif(not FIXTURE.is_file(), reason=f"{FIXTURE} not present")


def _ranks(cache: InputCache, exports: list[Path]) -> list:
    found = pd.concat([cache.rank_processes(p) for p in exports], ignore_index=True)
    return [(Path(r.path), int(r.global_pid), int(r.gpu), 0) for r in found.itertuples()]


def _same_reductions(got: list, want: list) -> None:
    assert len(got) == len(want) == 2
    for a, b in zip(got, want, strict=True):
        assert (a.path, a.global_pid, a.pid, a.gpu, a.launches) == (b.path, b.global_pid, b.pid, b.gpu, b.launches)
        pd.testing.assert_frame_equal(a.stages, b.stages)
        pd.testing.assert_frame_equal(a.collectives, b.collectives)
        for field in ("spans", "busy"):
            x, y = getattr(a, field), getattr(b, field)
            assert (x is None) == (y is None)
            if x is not None:
                assert x.keys() == y.keys() and all(np.array_equal(np.asarray(x[k]), np.asarray(y[k])) for k in x)
        assert (a.calls is None) == (b.calls is None)
        if a.calls is not None:
            pd.testing.assert_frame_equal(a.calls, b.calls)


@pytest.mark.parametrize("which", ["one", "per_rank"])
def test_forked_workers_reduce_what_the_sequential_read_does(which: str, export: Path, split: list[Path],
                                                             monkeypatch) -> None:
    exports = [export] if which == "one" else split
    with InputCache() as cache:
        ranks = _ranks(cache, exports)
        got = rank_map.read_ranks(cache, ranks, STAGES, STAGES, workers=2)
        monkeypatch.setattr(rank_map, "fork_safe", lambda: False)  # read here, one rank after the other
        want = rank_map.read_ranks(cache, ranks, STAGES, STAGES)
    _same_reductions(got, want)
    assert [t.launches for t in got] == [15717, 15717]
    # what comes back: each rank's collective kernels (682 of its 15,717 kernels), not its kernels,
    # NVTX ranges or CUDA calls; the busy intervals already merged
    assert [len(t.collectives) for t in got] == [682, 682]
    assert all(part.dtype == np.int64 for t in got for s in STAGES for part in t.busy[s])


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
        yield c.scheduler_address


def _frames(exports: list[Path]) -> dict[str, pd.DataFrame]:
    inputs = _inputs(exports)
    instances = coll.collective_instances(inputs)
    return {"ranks": coll.ranks(inputs, instances), "collectives": coll.collectives(inputs, instances),
            "tables": inputs.ranks}


@pytest.mark.parametrize("which", ["one", "per_rank"])
def test_dask_cluster_gives_the_same_ranks_and_collectives(which: str, cluster: str, split: list[Path],
                                                           analysed: dict) -> None:
    exports = [FIXTURE] if which == "one" else split  # the compressed export is decompressed on a worker
    here = _frames(exports)
    with rank_map.scheduler(cluster):
        there = _frames(exports)
    pd.testing.assert_frame_equal(there["ranks"], here["ranks"])
    pd.testing.assert_frame_equal(there["collectives"], here["collectives"])
    pd.testing.assert_frame_equal(there["collectives"], analysed["collectives"])
    _same_reductions(list(there["tables"]), list(here["tables"]))
    assert rank_map._scheduler is None  # the block's end restores reading here


def test_inspect_lists_ranks_on_the_cluster(cluster: str, capsys) -> None:
    assert main(["inspect", "--json", "--dask-scheduler", cluster, str(FIXTURE)]) == 0
    (summary,) = json.loads(capsys.readouterr().out)
    facts = rank_facts(FIXTURE)
    assert {k: summary[k] for k in facts} == facts and len(facts["ranks"]) == 2


def test_unreachable_scheduler_is_one_line(monkeypatch, capsys) -> None:
    monkeypatch.setattr(rank_map, "CONNECT_TIMEOUT", 1)
    assert main(["inspect", "--dask-scheduler", "tcp://127.0.0.1:9", str(FIXTURE)]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --dask-scheduler: no Dask scheduler answers at tcp://127.0.0.1:9")
    assert captured.out == ""


def test_missing_dask_is_one_line(monkeypatch, capsys, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import fails as when not installed
    assert main(["build", str(FIXTURE), "--dask-scheduler", "tcp://127.0.0.1:9", "--out", str(tmp_path / "site"),
                 "--src", str(tmp_path / "src")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --dask-scheduler: needs Dask's distributed package (pip install 'kernel-report[cluster]')"]
    assert not (tmp_path / "site").exists() and not (tmp_path / "src").exists()


def test_help_does_not_import_dask() -> None:
    code = ("import sys\nfrom generator.cli import main\n"
            "for cmd in ('build', 'inspect'):\n"
            "    try:\n        main([cmd, '--help'])\n    except SystemExit:\n        pass\n"
            "print('distributed' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).parent.parent).stdout
    assert "--dask-scheduler" in out and out.strip().splitlines()[-1] == "False"
