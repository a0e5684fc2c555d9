"""Written paths never overlap inputs; `--force` never leaves --out missing; the tool's leftovers only.

Issue 43's output cases, each replayed on real captures copied into the test's folder: `--json`
over a run's manifest, into a run, through a link, over a user's file; `--out` holding an input
through a link inside a run; a `kill -9` between the steps of a `--force` swap; a stale staging
folder holding a user's file; `$TMPDIR/kr-fonts-*` left by a killed run. Every case checks that no
input changed (checksums before and after).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from generator import output_dirs, temp_dirs
from generator.cli import main
from tests.test_output_safety import snapshot

ROOT = Path(__file__).parent.parent
RUNS = ROOT / "examples" / "runs"
SMALL = RUNS / "llm-decode-small"
H200_RUN = RUNS / "ocr-vlm-sdpa-h200"  # nsys and ncu: what `project` needs
COMPRESSED = ROOT / "tests" / "data" / "nsys-stats-2025" / "small_vlm_decode_cuda_gpu_kern_sum.csv.xz"


def copied_run(tmp_path: Path, source: Path = SMALL, name: str = "run") -> Path:
    run = tmp_path / name
    shutil.copytree(source, run, ignore=shutil.ignore_patterns("*.nsys-rep", "logs"))
    return run


def refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """``argv`` exits 2 with exactly one line on stderr, returned."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    return " ".join(err.split())


@pytest.mark.parametrize("command", ["project", "compare"])
def test_json_over_the_runs_manifest_is_refused(command: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The reproduced case: `project RUN --chip h100-sxm --json RUN/manifest.json` and
    `compare RUN RUN --json RUN/manifest.json` replaced the run's manifest."""
    run = copied_run(tmp_path)
    before = snapshot(tmp_path)
    argv = {"project": ["project", str(run), "--chip", "h100-sxm"], "compare": ["compare", str(run), str(run)]}[command]
    message = refused(capsys, [*argv, "--json", str(run / "manifest.json")])
    assert f"--json {run / 'manifest.json'}: is inside an input directory of this command ({run})" in message
    assert snapshot(tmp_path) == before


def test_json_targets_around_inputs_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An input itself, a file in a run, a link to an input, a link's target inside a run, a chip
    file, a directory, a missing folder, a user's file: each one line, exit 2, nothing changed."""
    run, other = copied_run(tmp_path), copied_run(tmp_path, name="other")
    elsewhere = tmp_path / "store"
    elsewhere.mkdir()
    manifest = run / "manifest.json"
    moved = elsewhere / "manifest.json"  # the run's manifest kept elsewhere, linked from the run
    other_manifest = other / "manifest.json"
    shutil.move(other_manifest, moved)
    other_manifest.symlink_to(moved)
    (tmp_path / "link.json").symlink_to(manifest)
    chip = tmp_path / "chip.yaml"
    shutil.copy(ROOT / "generator" / "chips" / "h100-sxm.yaml", chip)
    mine = tmp_path / "mine.json"
    mine.write_text('{"my": "results"}\n')
    before = snapshot(tmp_path)
    cases = [
        (["compare", str(run), str(other)], run, f"is an input of this command ({run})"),
        (["compare", str(run), str(other)], run / "nsys" / "new.json", f"is inside an input directory of this command ({run})"),
        (["compare", str(run), str(other)], tmp_path / "link.json", "is inside an input directory"),
        (["compare", str(run), str(other)], moved, f"is an input of this command ({moved} (through {other_manifest}))"),
        (["project", str(run), "--chip", str(chip)], chip, f"is an input of this command ({chip})"),
        (["project", str(run), "--chip", "h100-sxm", "--validate", str(other)], other / "x.json", "inside an input"),
        (["compare", str(run), str(other)], tmp_path, "holds an input"),
        (["compare", str(run), str(other)], elsewhere / "nowhere" / "x.json", "does not exist"),
        (["compare", str(run), str(other)], mine, 'exists and is not an earlier `compare --json` output (no "kernel_report": "compare")'),
        (["project", str(run), "--chip", "h100-sxm"], mine, "is not an earlier `project --json` output"),
    ]
    for argv, target, expected in cases:
        assert expected in refused(capsys, [*argv, "--json", str(target)]), (argv, target)
    assert snapshot(tmp_path) == before


def test_json_is_written_atomically_and_replaces_only_its_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`compare --json` carries its mark, replaces an earlier output of `compare` (not of `project`)
    with no temporary file left beside it, and gets the umask's mode."""
    out = tmp_path / "out"
    out.mkdir()
    a, b = copied_run(tmp_path, name="a"), copied_run(tmp_path, name="b")
    inputs = snapshot(a), snapshot(b)
    target = out / "cmp.json"
    target.write_text('{"kernel_report": "compare", "stages": "an earlier output"}')
    target.chmod(0o600)
    assert main(["compare", str(a), str(b), "--json", str(target)]) == 0  # its own earlier output: replaced
    first = target.read_bytes()
    data = json.loads(first)
    assert data["kernel_report"] == "compare" and data["failed"] is False and data["stages"] != "an earlier output"
    assert target.stat().st_mode & 0o777 == 0o666 & ~output_dirs.umask()
    assert sorted(p.name for p in out.iterdir()) == ["cmp.json"]
    capsys.readouterr()
    assert "not an earlier `project --json` output" in refused(capsys, ["project", str(a), "--chip", "h100-sxm",
                                                                         "--json", str(target)])
    assert target.read_bytes() == first
    assert (snapshot(a), snapshot(b)) == inputs


def test_project_json_rewrites_its_own(tmp_path: Path) -> None:
    target = tmp_path / "p.json"
    target.write_text('{"kernel_report": "project", "target": "an earlier output"}')
    assert main(["project", str(H200_RUN), "--chip", "h100-sxm", "--json", str(target)]) == 0
    data = json.loads(target.read_text())
    assert data["kernel_report"] == "project" and data["target"]["name"] == "NVIDIA H100 SXM"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.json"]


def test_out_holding_an_input_through_a_link_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run whose nsys export is a link to a file kept elsewhere: that folder is an input's too."""
    run = copied_run(tmp_path)
    store = tmp_path / "store"
    store.mkdir()
    export = next((run / "nsys").glob("report.sqlite*"))
    shutil.move(export, store / export.name)
    export.symlink_to(store / export.name)
    (store / "notes.txt").write_text("mine\n")
    before = snapshot(tmp_path)
    for extra in ([], ["--force"]):
        message = refused(capsys, ["build", str(run), "--out", str(store), "--src", str(tmp_path / "s"), *extra])
        assert f"--out {store}: holds an input of this command ({store / export.name} (through {export}))" in message
    assert snapshot(tmp_path) == before
    assert not (tmp_path / "s").exists()


def test_stale_staging_without_the_marker_is_kept(tmp_path: Path) -> None:
    """A user's folder named like the build's staging keeps its files; a dead build's is removed."""
    target = tmp_path / "site"
    users = tmp_path / f".site{output_dirs.STAGING}thesis"
    users.mkdir()
    (users / "thesis.tex").write_text("\\documentclass{article}\n")
    retired = tmp_path / f".site{output_dirs.RETIRED}notes"
    retired.mkdir()
    (retired / "notes.txt").write_text("notes\n")
    (retired / output_dirs.MARKER).write_text("not the marker's text\n")
    dead = tmp_path / f".site{output_dirs.STAGING}dead"
    dead.mkdir()
    (dead / output_dirs.MARKER).write_text(output_dirs.BUILDING)
    before = snapshot(users), snapshot(retired)
    output_dirs.recover(target)
    assert (snapshot(users), snapshot(retired)) == before
    assert not dead.exists() and not target.exists()


# --- kill -9 between the steps of a --force swap -------------------------------------------------

#: Builds a site into a staging folder and swaps it into argv[2] (a user's directory, as --force
#: does) in a fresh interpreter, SIGKILLed right after the step named by argv[1].
DRIVER = r"""
import os, signal, sys
from pathlib import Path
from generator import output_dirs

point, target, exchange = sys.argv[1], Path(sys.argv[2]), sys.argv[3] == "exchange"
die = lambda: os.kill(os.getpid(), signal.SIGKILL)
real_exchange, real_rename, real_unlink = output_dirs._exchange, os.rename, Path.unlink

def exchanged(a, b):
    if not exchange:
        return False
    done = real_exchange(a, b)
    if point == "after exchange":
        die()
    return done

def rename(a, b):
    real_rename(a, b)
    if point == f"after rename {Path(b).name}":
        die()

def unlink(self, *args, **kwargs):
    real_unlink(self, *args, **kwargs)
    if point == "after journal removed" and self.name.endswith(output_dirs.JOURNAL):
        die()

output_dirs._exchange, output_dirs.os.rename, Path.unlink = exchanged, rename, unlink
with output_dirs.staging(target) as new:
    (new / "index.html").write_text("the new site\n")
    (new / "v1").mkdir()
    (new / "v1" / "page.html").write_text("a page\n")
    if point == "before swap":
        die()
    output_dirs.swap_in(new, target)
die()  # after the staging folder is removed: the end of a build
"""

POINTS = {"exchange": ["before swap", "after exchange", "after rename site.kr-backup-1", "after journal removed"],
          "two renames": ["before swap", "after rename site.kr-backup-1", "after rename site"]}


@pytest.mark.parametrize("mode", sorted(POINTS))
def test_kill_9_between_force_steps_never_loses_out(mode: str, tmp_path: Path) -> None:
    """--out is a whole directory after a kill at any step of a --force swap (with renameat2's
    exchange; with two renames only the next build's recovery closes the window), and the next
    build completes the move: the user's files end, byte for byte, in ``site.kr-backup-1``."""
    for point in POINTS[mode]:
        case = tmp_path / point.replace(" ", "-")
        target = case / "site"
        (target / "sub").mkdir(parents=True)
        (target / "thesis.tex").write_text("\\documentclass{article}\n")
        (target / "sub" / "data.csv").write_text("a,b\n1,2\n")
        users = snapshot(target)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        done = subprocess.run([sys.executable, "-c", DRIVER, point, str(target), mode], env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == -signal.SIGKILL, (point, done.stderr[-2000:])
        window = mode == "two renames" and point == "after rename site.kr-backup-1"
        assert target.is_dir() != window, point  # never missing, but in the two renames' window
        if not window:  # the user's directory as it was, or the whole new site
            new = output_dirs.owned(target) and (target / "index.html").read_text() == "the new site\n"
            assert new or snapshot(target) == users, point
        output_dirs.recover(target)  # what the next build does first
        assert target.is_dir(), point
        backup = case / "site.kr-backup-1"
        if output_dirs.owned(target):
            assert snapshot(backup) == users, point
        else:
            assert snapshot(target) == users and not backup.exists(), point
        assert sorted(p.name for p in case.iterdir() if p.name.startswith(".")) == [], point


def test_kill_9_leaves_no_temporary_folder_for_long(tmp_path: Path) -> None:
    """`$TMPDIR/kr-fonts-*` (and `kernel-report-*`) a killed run left are removed by the next run;
    a live run's, and a folder of that name without the marker, are kept."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)}
    hold = ("import os, signal, sys; from generator.temp_dirs import TempDir; t = TempDir(sys.argv[1]); "
            "print(t.name, flush=True); sys.stdin.read() if sys.argv[2] == 'live' else os.kill(os.getpid(), signal.SIGKILL)")
    dead = subprocess.run([sys.executable, "-c", hold, "kr-fonts-", "dead"], env=env, capture_output=True, text=True)
    assert dead.returncode == -signal.SIGKILL
    left = Path(dead.stdout.strip())
    assert left.parent == tmp_path and (left / temp_dirs.MARKER).is_file()
    live = subprocess.Popen([sys.executable, "-c", hold, "kernel-report-", "live"], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        held = Path(live.stdout.readline().strip())
        users = tmp_path / "kr-fonts-mine"
        users.mkdir()
        (users / "font.ttf").write_text("mine\n")
        compressed = tmp_path / "input" / COMPRESSED.name
        compressed.parent.mkdir()
        shutil.copy(COMPRESSED, compressed)
        before = snapshot(compressed)
        done = subprocess.run([sys.executable, "-m", "generator", "inspect", str(compressed)], env=env,
                              capture_output=True, text=True, timeout=300)  # the next run: decompresses into $TMPDIR
        assert done.returncode == 0, done.stderr[-2000:]
        assert not left.exists() and held.is_dir() and (users / "font.ttf").read_text() == "mine\n"
        assert snapshot(compressed) == before
    finally:
        live.communicate("")
    assert not held.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["input", "kr-fonts-mine"]


@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_site_gets_the_umasks_mode_and_others_read_it(mask: int) -> None:
    """Issue 46: the staging folder (mkdtemp: 0700) became the site, unreadable to a web server's user.
    Now the umask decides; under 022 the user `nobody` lists and reads it (run as root), under 077
    only the owner does."""
    parent = Path(tempfile.mkdtemp(prefix="kr-mode-test-", dir="/tmp"))
    try:
        parent.chmod(0o755)
        target = parent / "site"
        old = os.umask(mask)
        try:
            with output_dirs.staging(target) as new:
                (new / "index.html").write_text("the site\n")
                output_dirs.swap_in(new, target)
        finally:
            os.umask(old)
        assert target.stat().st_mode & 0o777 == 0o777 & ~mask
        runuser = shutil.which("runuser")
        if os.geteuid() != 0 or runuser is None:
            return
        read = subprocess.run([runuser, "-u", "nobody", "--", "cat", str(target / "index.html")],
                              capture_output=True, text=True)
        assert (read.returncode == 0 and read.stdout == "the site\n") == (mask == 0o022), read.stderr
    finally:
        shutil.rmtree(parent)


def test_cache_folder_around_inputs_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The build cache is a written path too: never in, at or around a run the build reads."""
    run = copied_run(tmp_path)
    before = snapshot(tmp_path)
    for cache, expected in ((run / "cache", "is inside an input directory"), (tmp_path, "holds an input")):
        monkeypatch.setenv("KERNEL_REPORT_CACHE", str(cache))
        message = refused(capsys, ["build", str(run), "--out", str(tmp_path / "site"), "--lang", "en"])
        assert f"KERNEL_REPORT_CACHE {cache}: {expected} of this command" in message
    assert snapshot(tmp_path) == before
