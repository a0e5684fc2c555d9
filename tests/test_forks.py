"""generator.forks: calls side by side in forked children, or here when forking is unsafe; the build's
read → analyse → render pipeline on top of it.

Each case runs in a fresh interpreter: whether this pytest process may fork depends on what earlier
tests did in it (a chart converted here starts vl-convert's runtime threads)."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from generator.machine import cpus
from generator.pipeline.inputs import AHEAD_NICENESS

ROOT = Path(__file__).resolve().parents[1]
CASE = """
import json, os, sys
from generator.errors import InputError
from generator.forks import Forks, fork_safe, side_by_side
if sys.argv[1] == "chart":
    import vl_convert
    vl_convert.vegalite_to_svg({"data": {"values": [{"a": 1}]}, "mark": "bar"})
here = not fork_safe()
done = []
pids = side_by_side([os.getpid, os.getpid, os.getpid], 2, here=here, done=done.append)
def fail(name):
    raise InputError(name, "bad")
try:
    side_by_side([os.getpid, lambda: fail("second"), lambda: fail("third")], 2, here=here)
    error = None
except InputError as exc:
    error = str(exc)
with Forks(1, here=here) as forks:  # result(): the value of one key, others kept for next()
    forks.submit("a", lambda: "A")
    forks.submit("b", lambda: "B")
    late = forks.result("b"), forks.next()
print(json.dumps({"me": os.getpid(), "pids": pids, "done": sorted(done), "safe": fork_safe(), "error": error,
                  "late": late}))
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
    assert got["late"] == ["B", ["a", True, "A"]]


def test_a_process_running_the_chart_runtime_does_not_fork() -> None:
    """After a vl-convert conversion its V8/tokio threads run here: a forked copy would hang at its
    first conversion, so the tasks run in this process."""
    got = case("chart")
    assert got["safe"] is False
    assert got["pids"] == [got["me"]] * 3 and got["done"] == [0, 1, 2]
    assert got["error"] == "second: bad"
    assert got["late"] == ["B", ["a", True, "A"]]


ORPHAN = """
import os, sys, time
from generator.forks import Forks
def grandchild():
    with open(sys.argv[1], "w") as fh:
        fh.write(str(os.getpid()))
    time.sleep(60)
def child():
    with Forks(1) as forks:
        forks.submit("g", grandchild)
        forks.result("g")
with Forks(1) as forks:
    forks.submit("c", child)
    while not os.path.exists(sys.argv[1]) or not open(sys.argv[1]).read():
        time.sleep(0.05)
# leaving the block kills the child (as a failed or interrupted build does); its child must go too
"""


def test_children_of_a_killed_child_die_with_it(tmp_path: Path) -> None:
    """A child killed mid-way (Ctrl-C, or a failure elsewhere ending the build) takes the children
    it forked (the ncu report's shard readers) with it instead of leaving them running."""
    pid_file = tmp_path / "grandchild.pid"
    out = subprocess.run([sys.executable, "-c", ORPHAN, str(pid_file)], cwd=ROOT, capture_output=True, text=True,
                         timeout=60, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists() and "Z" not in _state(pid):
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists() or "Z" in _state(pid)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


AHEAD = """
import json, os, sys
from pathlib import Path
from generator.forks import Forks
from generator.render import svg
svg.prestart(["v2"])
started = svg._ahead["v2"][0].pid
def render():
    with svg.svg_batch("v2") as svgs:
        svgs.submit({"data": {"values": [{"a": 1}]}, "mark": "bar"}, Path(sys.argv[1]))
    return svg._worker.process.pid, Path(sys.argv[1]).read_text()[:4]
with Forks(1) as forks:
    forks.submit("render", render)
    used, head = forks.result("render")
svg.release("v2")
print(json.dumps({"started": started, "used": used, "head": head, "gone": not os.path.exists(f"/proc/{started}")}))
"""


def test_a_chart_worker_started_ahead_serves_the_child_that_renders_the_version(tmp_path: Path) -> None:
    """The build starts a version's chart worker while its inputs are read; the child forked to
    render the version draws its charts with that worker, and the build ends it afterwards."""
    out = subprocess.run([sys.executable, "-c", AHEAD, str(tmp_path / "chart.svg")], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["used"] == got["started"] and got["head"] == "<svg" and got["gone"]


AHEAD_DIES = """
import os, signal, sys
from pathlib import Path
from generator.errors import InputError
from generator.forks import Forks
from generator.render import svg
svg.prestart(["v2"])
def render():
    with svg.svg_batch("v2") as svgs:
        os.kill(svgs._worker.process.pid, signal.SIGKILL)  # the worker this child took: its parent's child
        svgs.submit({"data": {"values": [{"a": 1}]}, "mark": "bar"}, Path(sys.argv[1]))
    return "no error"
with Forks(1) as forks:
    forks.submit("render", render)
    try:
        print(forks.result("render"))
    except InputError as exc:
        print(exc)
svg.release("v2")
"""


def test_a_chart_worker_started_ahead_that_dies_is_one_line_without_a_made_up_status(tmp_path: Path) -> None:
    """The child rendering a version cannot wait for the worker the build started for it, so that
    worker's death is reported as such, not as an exit status of 0."""
    chart = tmp_path / "chart.svg"
    out = subprocess.run([sys.executable, "-c", AHEAD_DIES, str(chart)], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"{chart}: chart renderer failed (worker ended without answering)"


PREFETCH = """
import json, os, sys
from pathlib import Path
from generator.errors import InputError
from generator.pipeline import inputs
from generator.readers import read
forks, niceness = [], Path(sys.argv[4])
os.register_at_fork(after_in_parent=lambda: forks.append(1))
bad, good, csv = map(Path, sys.argv[1:4])
stored_read = inputs.InputCache._stored_read
def noted(self, path, stage):  # the prefetching child notes its niceness
    niceness.write_text(str(os.nice(0)))
    return stored_read(self, path, stage)
inputs.InputCache._stored_read = noted
with inputs.InputCache() as cache:
    cache.prefetch([bad, good, csv, good])
    got = cache.read(csv).kernel_metrics, cache.read(good).kernel_metrics
    counted = len(forks)
    try:
        cache.read(bad)
        error = None
    except InputError as exc:
        error = str(exc)
same = [got[0].equals(read(csv).kernel_metrics), got[1].equals(read(good).kernel_metrics)]
print(json.dumps({"forks": counted, "error": error, "nice": [os.nice(0), int(niceness.read_text())], "same": same}))
"""


def test_reports_read_ahead_are_read_one_after_the_other_in_one_child(tmp_path: Path) -> None:
    """A version's ncu reports are read ahead in one child, one after the other (a child per file
    would start only once the build collects the one before, after its nsys export), at a lower
    CPU priority: each comes back as reading it here gives it, a file that fails raises its
    one-line error when the build reads it, and a file named twice is read once."""
    bad = tmp_path / "bad.ncu-rep"
    bad.write_bytes(b"not a report")
    data = ROOT / "tests" / "data" / "h200-small"
    out = subprocess.run([sys.executable, "-c", PREFETCH, str(bad), str(data / "small_vlm_prefill.ncu-rep.xz"),
                          str(data / "small_vlm_decode_ncu_raw.csv.xz"), str(tmp_path / "nice")], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["forks"] == 1 and got["same"] == [True, True]
    assert got["nice"][1] == got["nice"][0] + AHEAD_NICENESS  # it yields to the nsys export read meanwhile
    assert got["error"].startswith(f"{bad}: ") and "\n" not in got["error"]


def test_the_error_of_a_pipelined_build_does_not_depend_on_timing(tmp_path: Path) -> None:
    """Versions are read side by side: the error reported is the first failing read in version
    order (here v2's file, though v3's child may fail first), in one line (nothing else on stderr:
    the chart and search libraries loading meanwhile print nothing), exit status 2."""
    good = ROOT / "tests" / "data" / "h200-small" / "small_vlm_decode_ncu_raw.csv.xz"
    (tmp_path / "v2.csv").write_text("ID,Kernel Name\n1\n", encoding="utf-8")  # ragged
    (tmp_path / "v3.csv").write_text("nothing a profiler wrote\n", encoding="utf-8")
    versions = ", ".join(f"{{id: {v}, title: {{en: {v}, zh: {v}}}, date: 2026-01-0{i + 1}, inputs: {{ncu: [{f}]}}}}"
                         for i, (v, f) in enumerate([("v1", good), ("v2", tmp_path / "v2.csv"), ("v3", tmp_path / "v3.csv")]))
    report = tmp_path / "report.yaml"
    report.write_text(f"id: r\ntitle: {{en: R, zh: R}}\nversions: [{versions}]\n", encoding="utf-8")
    for _ in range(3):
        out = subprocess.run([sys.executable, "-m", "generator", "build", str(report), "--out", str(tmp_path / "site"),
                              "--src", str(tmp_path / "src")], cwd=ROOT, capture_output=True, text=True, timeout=300,
                             env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "KERNEL_REPORT_CACHE": "off",
                                  "HOME": str(tmp_path)})
        assert out.returncode == 2, out.stderr[-2000:]
        lines = [line for line in out.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "v2.csv" in lines[0], out.stderr[-2000:]
    assert not (tmp_path / "site").exists()


@pytest.mark.slow
@pytest.mark.skipif(cpus() < 2, reason="one CPU: nothing runs side by side")
def test_example_built_side_by_side_equals_one_process_build(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundled example built by the CLI in a fresh process (versions read, ncu reports read
    ahead and versions rendered in forked children, as a pipeline) is byte-identical to a build
    that reads, analyses and renders in this process, one step after the other."""
    import generator.pipeline.build as build
    import generator.pipeline.inputs as inputs

    report = ROOT / "examples" / "ocr-vlm" / "report.yaml"
    forked = subprocess.run([sys.executable, "-m", "generator", "build", str(report), "--out",
                             str(tmp_path / "a" / "site"), "--src", str(tmp_path / "a" / "src")],
                            cwd=ROOT, capture_output=True, text=True, timeout=600,
                            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "KERNEL_REPORT_CACHE": "off",
                                 "HOME": str(tmp_path)})
    assert forked.returncode == 0, forked.stderr[-2000:]
    monkeypatch.setattr(build, "fork_safe", lambda: False)
    monkeypatch.setattr(inputs, "can_fork", lambda: False)  # the ncu reports read here, not ahead in a child
    build.build_site([report], tmp_path / "b" / "site", tmp_path / "b" / "src")
    for part in ("site", "src"):
        a, b = (tree(tmp_path / side / part) for side in "ab")
        assert a.keys() == b.keys() and a == b, sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))[:5]


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_children_never_walk_the_objects_they_inherit() -> None:
    """A child's cyclic collector would touch, so copy, every object inherited from the build process
    (its pages are shared until written): they are frozen in the child, and only there."""
    code = ("import gc, json\nfrom generator.forks import Forks\ninherited = [[i] for i in range(1000)]\n"
            "with Forks(1) as forks:\n"
            "    forks.submit(0, lambda: (gc.get_freeze_count(), gc.is_tracked(inherited)))\n"
            "    print(json.dumps([forks.next(), gc.get_freeze_count()]))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    (_, ok, (frozen, tracked)), here = json.loads(out.stdout)
    assert ok and tracked and frozen >= 1000 and here == 0
