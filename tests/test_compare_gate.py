"""The gate never passes what it cannot judge (issue 43): a capture whose kernels ran once each has
too few launches for any verdict. Against the full capture its kernel time grew far beyond
launch_stats.UNJUDGED_LIMIT: FAIL, exit 1 (it used to print "+…%" and then "OK", exit 0). Against
itself nothing grew: NOT JUDGED, exit 3, never "OK". Both made from the committed llm-decode-small run."""
from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from helpers_runs import committed, content

from generator.analyses.launch_stats import UNJUDGED_LIMIT
from generator.cli import main
from generator.pipeline.inputs import InputCache

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "examples" / "runs" / "llm-decode-small"
STAGES = ("prefill", "decode")


@pytest.fixture(scope="module")
def once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """llm-decode-small with only the first launch of each kernel in each stage kept in its nsys
    export (the stages' launches as the pipeline's reader assigns them)."""
    run = tmp_path_factory.mktemp("once") / "llm-decode-once"
    shutil.copytree(RUN, run, ignore=shutil.ignore_patterns("report.sqlite*"))
    sqlite = run / "nsys" / "report.sqlite"
    sqlite.write_bytes(content(committed(RUN, "nsys/report.sqlite")))
    with InputCache() as cache:
        launches = cache.stages(sqlite, STAGES).launches
    first = launches.sort_values("start_ns").drop_duplicates(["stage", "name"])["start_ns"].astype(int).tolist()
    with sqlite3.connect(sqlite) as db:
        db.execute("CREATE TEMP TABLE kept (start INTEGER)")
        db.executemany("INSERT INTO kept VALUES (?)", [(s,) for s in first])
        db.execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start NOT IN (SELECT start FROM kept)")
        left = db.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    db.close()
    assert len(launches) > 10 * left and left >= len(first)
    return run


def _compare(baseline: Path, current: Path, tmp_path: Path) -> tuple[int, dict]:
    out = tmp_path / "cmp.json"
    code = main(["compare", str(baseline), str(current), "--json", str(out)])
    return code, json.loads(out.read_text(encoding="utf-8"))


def test_unjudged_growth_beyond_the_limit_fails(once: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _compare(once, RUN, tmp_path)
    stages = {r["stage"]: r for r in report["stages"]}
    assert {r["kernel_verdict"] for r in stages.values()} == {"not enough launches"}
    assert min(r["kernel_rel_pct"] for r in stages.values()) > UNJUDGED_LIMIT * 100
    assert code == 1 and report["failed"] is True
    assert report["gate"] == {"status": "fail", "slower": [], "over_limit": list(stages), "not_judged": [],
                              "limit_pct": pytest.approx(48.0), "exit_code": 1}
    out = capsys.readouterr().out
    assert "OK" not in out and "too few launches for a verdict, but kernel time grew beyond +48%" in out
    assert f"FAIL: kernel time got slower in {', '.join(stages)}." in out


def test_nothing_judged_is_not_ok(once: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _compare(once, once, tmp_path)
    stages = [r["stage"] for r in report["stages"]]
    assert {r["kernel_verdict"] for r in report["stages"]} == {"not enough launches"}
    assert {r["kernel_rel_pct"] for r in report["stages"]} == {0.0}
    assert code == 3 and report["failed"] is False
    assert report["gate"]["status"] == "not judged" and report["gate"]["not_judged"] == stages
    out = capsys.readouterr().out
    assert "OK" not in out and "NOT JUDGED: the measured stages together have too few launches" in out
    assert "not judged (too few launches; growth up to +48% passes): prefill (" in " ".join(out.split())


@pytest.mark.slow
def test_compare_statistics_memory_does_not_grow_with_launches() -> None:
    """bench/compare_memory.py at 50,000 launches of one kernel in one stage, where the 2,000 × N
    index matrix took 2.5 GB (bench/RELIABILITY.md has 10⁶): the child's peak VmHWM stays under 1 GB and
    the 0.5 % change is found."""
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "compare_memory.py"), "--launches", "50000",
                           "--timeout", "900"], capture_output=True, text=True, timeout=1000)
    measured = json.loads(done.stdout)
    assert measured["exit"] == 0, measured["stderr"]
    result = json.loads(measured["result"])
    assert result["stage_verdict"] == "slower" and 0.49 < result["stage_interval_pct"][0] <= 0.5
    assert 0 < measured["peak_mb"] < 1024
