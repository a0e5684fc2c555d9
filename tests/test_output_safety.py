"""`build --out/--src` never loses a user's files: refusals, --force, the swap under kill -9, stale dirs.

Every data-loss case the fuzzing campaign found (issue 9) is replayed here: the build exits 2 with
one line and the directory that held the user's files is byte for byte what it was.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from generator import output_dirs
from generator.cli import main

ROOT = Path(__file__).parent.parent
DATA = ROOT / "tests" / "data"
H200 = DATA / "h200-small"
RUN = ROOT / "examples" / "runs" / "llm-decode-small"


def snapshot(root: Path) -> dict[str, str]:
    """Every file and directory under ``root`` (hidden ones too) → sha256 or "dir"."""
    found = {".": "dir"} if root.is_dir() else {}
    if root.is_file():
        return {".": hashlib.sha256(root.read_bytes()).hexdigest()}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        found[rel] = "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def project(tmp_path: Path, title: str = "V1") -> Path:
    """A user's project: report.yaml, a copied capture run, an explicit input, notes and a .git."""
    root = tmp_path / "project"
    shutil.copytree(RUN, root / "runs" / "decode", ignore=shutil.ignore_patterns("*.nsys-rep", "logs"))
    (root / "inputs").mkdir()
    shutil.copy(H200 / "small_vlm_prefill.ncu-rep.xz", root / "inputs" / "prefill.ncu-rep.xz")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "thesis.tex").write_text("\\documentclass{article}\n")
    (root / "report.yaml").write_text(f"""
id: mine
title: {{en: Mine, zh: 我的}}
versions:
  - id: v1
    title: {{en: {title}, zh: 第一版}}
    date: 2026-11-20
    runs: [runs/decode]
    inputs: {{ncu: [inputs/prefill.ncu-rep.xz]}}
""", encoding="utf-8")
    return root


def refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run ``build`` expecting a refusal: exit 2, exactly one line on stderr, returned."""
    assert main(["build", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("case", ["user dir", "report dir", "run dir", "inside run dir", "regular file",
                                  "src holds inputs", "parent of inputs", "overlapping src"])
def test_refusals_keep_user_files(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = project(tmp_path)
    mydocs = tmp_path / "mydocs"
    mydocs.mkdir()
    (mydocs / "thesis.tex").write_text("my thesis\n")
    out, src = tmp_path / "site", tmp_path / "site_src"
    target, expect = {
        "user dir": (["--out", str(mydocs)], "no .kernel-report-output"),
        "report dir": (["--out", str(root)], "holds an input"),
        "run dir": (["--out", str(root / "runs" / "decode")], "is an input"),
        "inside run dir": (["--out", str(root / "runs" / "decode" / "ncu")], "inside an input directory"),
        "regular file": (["--out", str(mydocs / "thesis.tex")], "not a directory"),
        "src holds inputs": (["--out", str(out), "--src", str(root / "runs")], "holds an input"),
        "parent of inputs": (["--out", str(tmp_path)], "holds an input"),
        "overlapping src": (["--out", str(mydocs / "site"), "--src", str(mydocs / "site" / "src")], "overlaps"),
    }[case]
    argv = [str(root / "report.yaml"), "--out", str(out), "--src", str(src), *target]
    before = snapshot(tmp_path)
    assert expect in refused(capsys, argv)
    assert snapshot(tmp_path) == before
    if case != "overlapping src":  # --force never deletes inputs or non-directories either
        argv.append("--force")
        if case == "user dir":  # … but it does replace a directory that holds none, moving its content aside
            assert main(["build", *argv, "--lang", "en"]) == 0
            backup = tmp_path / "mydocs.kr-backup-1"
            assert output_dirs.owned(mydocs) and not (mydocs / "thesis.tex").exists()
            assert (backup / "thesis.tex").read_text() == "my thesis\n"
            assert f"kept: what {mydocs} held that no build wrote was moved to {backup}" in " ".join(capsys.readouterr().err.split())
        else:
            assert expect in refused(capsys, argv)
            assert snapshot(tmp_path) == before


def test_symlink_targets_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A symbolic link as --out or --src is refused, with or without --force, before it is followed:
    the directory it points at keeps its files (issue 35: --force through a link emptied it)."""
    root = project(tmp_path)
    userdir = tmp_path / "userdir"
    userdir.mkdir()
    (userdir / "thesis.txt").write_text("mine\n")
    link = tmp_path / "link"
    link.symlink_to(userdir, target_is_directory=True)
    before = snapshot(tmp_path)
    for option, other in (("--out", "--src"), ("--src", "--out")):
        for force in ([], ["--force"]):
            argv = [str(root / "report.yaml"), option, str(link), other, str(tmp_path / "other"), *force]
            message = refused(capsys, argv)
            assert f"{option} {link}: is a symbolic link" in message and "remove" not in message
    assert snapshot(tmp_path) == before


def test_unowned_refusal_names_only_safe_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = project(tmp_path)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("notes\n")
    message = refused(capsys, [str(root / "report.yaml"), "--out", str(mine), "--src", str(tmp_path / "s")])
    assert "choose a new directory, or pass --force to move its content aside to a backup" in message
    assert "remove" not in message and not (tmp_path / "s").exists()


def test_failed_build_leaves_no_empty_src(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A build that fails reading its inputs leaves neither ``<out>_src/`` nor the site folder behind."""
    broken = tmp_path / "broken.csv"
    broken.write_text("a,b\n1,2\n")
    report = tmp_path / "report.yaml"
    report.write_text(f"""
id: bad
title: {{en: Bad, zh: 坏}}
versions: [{{id: v1, title: {{en: V1, zh: 一}}, date: 2026-11-20, inputs: {{ncu: ["{broken}"]}}}}]
""", encoding="utf-8")
    assert "broken.csv" in refused(capsys, [str(report), "--out", str(tmp_path / "deep" / "site"), "--lang", "en"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.csv", "report.yaml"]


def test_dot_root_and_home_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    root = project(tmp_path)
    monkeypatch.chdir(root)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    before = snapshot(tmp_path)
    for out in (".", "/", str(tmp_path / "home"), "..", str(ROOT)):
        for force in ([], ["--force"]):
            assert "refusing to replace" in refused(capsys, ["report.yaml", "--out", out, *force])
    assert snapshot(tmp_path) == before


def test_rebuild_keeps_the_users_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A second build swaps the first one's site (it carries the marker); files the user added to the
    site or its sources are moved to ``<name>.kr-backup-<n>`` (same paths, same bytes) and named;
    no sibling is left. The site and its sources get the mode the umask gives a new directory."""
    root = project(tmp_path)
    out, src = tmp_path / "site", tmp_path / "site_src"
    argv = ["build", str(root / "report.yaml"), "--out", str(out), "--src", str(src), "--lang", "en"]
    inputs = snapshot(root)
    mask = os.umask(0o027)
    try:
        assert main(argv) == 0
    finally:
        os.umask(mask)
    for folder in (out, src / "mine"):  # not mkdtemp's 0700: the group may read it, others not
        assert folder.stat().st_mode & 0o777 == 0o750, folder
    first = snapshot(out)
    written = (out / output_dirs.FILES).read_text().splitlines()
    assert "index.html" in written and "v1/index.html" in written and output_dirs.MARKER not in written
    assert len(written) == len([p for p in out.rglob("*") if p.is_file()]) - 2  # all but the marker and the list
    (out / "MY-NOTES.txt").write_text("left by hand in a generated site\n")
    (out / "v1" / "mine").mkdir()
    (out / "v1" / "mine" / "draft.md").write_text("a draft\n")
    (src / "mine" / "todo.txt").write_text("to do\n")
    capsys.readouterr()
    assert main(argv) == 0
    said = " ".join(capsys.readouterr().err.split())
    assert snapshot(out) == first
    assert snapshot(tmp_path / "site.kr-backup-1") == {".": "dir", "MY-NOTES.txt": snapshot_of(
        "left by hand in a generated site\n"), "v1": "dir", "v1/mine": "dir", "v1/mine/draft.md": snapshot_of("a draft\n")}
    assert (src / "mine.kr-backup-1" / "todo.txt").read_text() == "to do\n"
    assert f"kept: what {out} held that no build wrote was moved to {tmp_path / 'site.kr-backup-1'}" in said
    assert f"kept: what {src / 'mine'} held that no build wrote was moved to {src / 'mine.kr-backup-1'}" in said
    # a site built before the tool listed its files: what this build writes again counts as written
    (out / output_dirs.FILES).unlink()
    (out / "MY-NOTES.txt").write_text("second\n")
    assert main(argv) == 0
    assert (tmp_path / "site.kr-backup-2" / "MY-NOTES.txt").read_text() == "second\n"
    assert snapshot(out) == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["project", "site", "site.kr-backup-1", "site.kr-backup-2",
                                                          "site_src"]
    assert sorted(p.name for p in src.iterdir()) == ["mine", "mine.kr-backup-1"]
    assert snapshot(root) == inputs


def snapshot_of(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_live_build_staging_is_not_stale(tmp_path: Path) -> None:
    target = tmp_path / "site"
    with output_dirs.staging(target) as live:
        (live / "page.html").write_text("half-built\n")
        dead = tmp_path / f".site{output_dirs.STAGING}dead"
        dead.mkdir()
        (dead / output_dirs.MARKER).write_text(output_dirs.BUILDING)  # a killed build's: it carries the marker
        (dead / "page.html").write_text("from a killed build\n")
        output_dirs.recover(target)
        assert live.is_dir() and not dead.exists()
    assert not live.exists()


# --- kill -9 at points of a real build's swap ------------------------------------------------------

#: Runs one build in a fresh interpreter and SIGKILLs it at the point named by argv[1].
DRIVER = r"""
import os, shutil, signal, sys
from generator import output_dirs
from generator.cli import main

point, target = sys.argv[1], sys.argv[2]
build = os.getpid()  # the build: MkDocs runs in a child it forks, which dies with it
die = lambda: os.kill(build, signal.SIGKILL)
real_swap, real_exchange, real_rename, real_discard = (output_dirs.swap_in, output_dirs._exchange,
                                                       os.rename, output_dirs.discard)
swapped = []

def swap_in(new, to):
    if point == "before swap" and str(to) == target:
        die()
    real_swap(new, to)
    swapped.append(str(to))

def exchange(a, b):
    if point == "between renames":
        return False
    done = real_exchange(a, b)
    if point == "after exchange" and str(b) == target:
        die()
    return done

def rename(a, b):
    real_rename(a, b)
    if point == "between renames" and str(a) == target:
        die()

def discard(path):
    staged = os.path.dirname(path) == os.path.dirname(target) and ".kr-" in os.path.basename(path)
    if point == "deleting old site" and target in swapped and staged:
        files = sorted(p for p in os.listdir(path) if os.path.isfile(os.path.join(path, p)))
        for name in [f for f in files if f != output_dirs.MARKER][: len(files) // 2]:  # the marker goes last
            os.unlink(os.path.join(path, name))
        die()
    real_discard(path)

def mkdocs(*args, **kwargs):
    die()

output_dirs.swap_in, output_dirs._exchange, output_dirs.os.rename = swap_in, exchange, rename
output_dirs.discard = discard
if point == "during mkdocs":
    import generator.pipeline.mkdocs_site as mkdocs_site  # build.py imports it when it builds
    mkdocs_site.build_version_site = mkdocs
sys.exit(main(sys.argv[3:]))
"""

KILL_POINTS = ["during mkdocs", "before swap", "after exchange", "deleting old site", "between renames"]


@pytest.mark.slow
def test_kill_9_during_the_swap_leaves_a_complete_site(tmp_path: Path) -> None:
    """At every point the site at --out is the old or the new build, whole; the next build cleans up."""
    old_root, new_root = project(tmp_path / "old", "Old"), project(tmp_path / "new", "New")
    out, src = tmp_path / "site", tmp_path / "site_src"

    def build(root: Path, site: Path, point: str | None = None) -> int:
        argv = ["build", str(root / "report.yaml"), "--out", str(site), "--src", str(src), "--lang", "en"]
        if point is None:
            return main(argv)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        done = subprocess.run([sys.executable, "-c", DRIVER, point, str(out), *argv], env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == -signal.SIGKILL, (point, done.stderr[-2000:])
        return done.returncode

    assert build(new_root, tmp_path / "new-site") == 0
    new = snapshot(tmp_path / "new-site")
    assert build(old_root, out) == 0
    old = snapshot(out)
    assert old != new
    seen = []
    for point in KILL_POINTS:
        assert build(new_root, out, point) == -signal.SIGKILL, point
        assert [p for p in tmp_path.iterdir() if ".kr-" in p.name], point  # a dead build's staging …
        if point == "between renames":  # no exchange: --out is gone until the next build puts it back
            assert not out.exists()
            output_dirs.recover(out)
        state = snapshot(out)
        assert state in (old, new), point
        seen.append("new" if state == new else "old")
        if state == new:  # back to the old site for the next point
            assert build(old_root, out) == 0
    assert seen == ["old", "old", "new", "new", "new"]
    assert build(old_root, out, "during mkdocs") == -signal.SIGKILL
    assert build(new_root, out) == 0  # … is removed by the next build
    assert snapshot(out) == new
    assert [p.name for p in [*tmp_path.iterdir(), *src.iterdir()] if ".kr-" in p.name] == []
