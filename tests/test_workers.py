"""generator.pipeline.workers: tasks side by side in forked processes, or here when forking is unsafe.

Each case runs in a fresh interpreter: whether this pytest process may fork depends on what earlier
tests did in it (a chart converted here starts vl-convert's runtime threads)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from generator.pipeline.workers import cpus

ROOT = Path(__file__).resolve().parents[1]
CASE = """
import json, os, sys
from generator.errors import InputError
from generator.pipeline.workers import fork_safe, run_side_by_side
if sys.argv[1] == "chart":
    import vl_convert
    vl_convert.vegalite_to_svg({"data": {"values": [{"a": 1}]}, "mark": "bar"})
done = []
pids = run_side_by_side([os.getpid, os.getpid, os.getpid], done.append)
def fail(name):
    raise InputError(name, "bad")
try:
    run_side_by_side([os.getpid, lambda: fail("second"), lambda: fail("third")])
    error = None
except InputError as exc:
    error = str(exc)
print(json.dumps({"me": os.getpid(), "pids": pids, "done": sorted(done), "safe": fork_safe(), "error": error}))
"""


def case(kind: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CASE, kind], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.skipif(cpus() < 2, reason="one CPU: nothing runs side by side")
def test_tasks_run_in_forked_workers_and_come_back_in_order() -> None:
    got = case("plain")
    assert got["safe"] is True
    assert got["me"] not in got["pids"] and len(got["pids"]) == 3  # computed elsewhere, one value per task
    assert got["done"] == [0, 1, 2]
    assert got["error"] == "second: bad"  # the first failure in task order, whatever finished first


def test_a_process_running_the_chart_runtime_does_not_fork() -> None:
    """After a vl-convert conversion its V8/tokio threads run here: a forked copy would hang at its
    first conversion, so the tasks run in this process."""
    got = case("chart")
    assert got["safe"] is False
    assert got["pids"] == [got["me"]] * 3 and got["done"] == [0, 1, 2]
    assert got["error"] == "second: bad"
