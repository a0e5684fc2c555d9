"""CLI defaults that cannot hurt: a bare command builds nothing, `build --out` keeps its Markdown
sources beside the site (never in the committed example sources unless building the example there),
an unknown capture workload fails even with --dry-run, `inspect` names kernels uniquely (or in full)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from generator.cli import main
from generator.commands.build import COMMITTED_SRC, EXAMPLE, default_src

ROOT = Path(__file__).resolve().parents[1]
DECODE_CSV = ROOT / "tests" / "data" / "h200-small" / "small_vlm_decode_ncu_raw.csv.xz"
NSYS = ROOT / "tests" / "data" / "h200-small" / "small_vlm.nsys.sqlite.xz"


def tiny_report(folder: Path) -> Path:
    """A one-version report over one real ncu CSV (the quickest real build)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "report.yaml"
    path.write_text(f"""id: tiny
title: {{en: Tiny, zh: Tiny}}
versions:
  - id: v1
    title: {{en: V1, zh: V1}}
    date: 2026-11-21
    inputs:
      ncu: [{DECODE_CSV}]
""", encoding="utf-8")
    return path


def test_bare_command_prints_help_and_builds_nothing(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main([]) == 0
    assert "usage: python -m generator" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []


def test_build_out_writes_sources_beside_it(tmp_path: Path) -> None:
    report = tiny_report(tmp_path / "in")
    out = tmp_path / "elsewhere" / "site"
    assert main(["build", str(report), "--out", str(out)]) == 0
    assert (out / "v1" / "index.html").is_file()
    assert (tmp_path / "elsewhere" / "site_src" / "tiny" / "v1" / "docs" / "index.md").is_file()
    assert sorted(p.name for p in (tmp_path / "elsewhere").iterdir()) == ["site", "site_src"]


def test_only_the_example_built_into_site_uses_the_committed_sources(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(ROOT)
    assert default_src([EXAMPLE], Path("site")).resolve() == COMMITTED_SRC
    assert default_src([EXAMPLE], tmp_path / "site") == tmp_path / "site_src"
    report = tiny_report(tmp_path / "in")
    before = sorted(os.listdir(COMMITTED_SRC))
    assert main(["build", str(report), "--out", str(ROOT / "site")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--src" in err and "committed" in err
    assert sorted(os.listdir(COMMITTED_SRC)) == before


def test_capture_unknown_workload_dry_run_exits_2_in_one_line() -> None:
    done = subprocess.run([sys.executable, "-m", "capture", "run", "--workload", "nope", "--dry-run"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and "unknown workload 'nope'" in done.stderr


def test_inspect_names_are_unique_and_full_shows_the_profiler_names(capsys) -> None:
    assert main(["inspect", "--json", str(NSYS)]) == 0
    [summary] = json.loads(capsys.readouterr().out)
    rows = [row for part in summary["kernel_summary"] for row in part["top"]]
    pairs = {(row["name"], row["friendly_name"]) for row in rows}
    assert len(pairs) == len({raw for raw, _ in pairs}) == len({friendly for _, friendly in pairs}) == 5
    env = {**os.environ, "COLUMNS": "1000"}
    short = subprocess.run([sys.executable, "-m", "generator", "inspect", str(NSYS)], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=300).stdout
    full = subprocess.run([sys.executable, "-m", "generator", "inspect", "--full", str(NSYS)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300).stdout
    assert all(friendly in short for _, friendly in pairs)
    longest = max((raw for raw, _ in pairs), key=len)
    assert len(longest) > 100 and longest not in short
    assert longest in full
