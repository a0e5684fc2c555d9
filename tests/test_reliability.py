"""Issue 35's reproductions, each derived at run time from a committed file: what used to end in the
CLI's "internal error" catch-all (or a traceback, or an errno naming no file) is one line naming the
file and the problem, exit 2; names are bounded where they are read; ``--debug`` shows the frame an
error was raised in, also in a forked child."""
from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import fuzz_cases as fc
import pytest

import generator.readers.base as readers_base
from generator.cli import main
from generator.readers import read
from generator.readers.nsys_sqlite import kernel_summary
from generator.readers.validate import NAME_LIMIT

ROOT = Path(__file__).resolve().parent.parent
GEMM = fc.DATA / "gemm" / "nsys" / "report.sqlite.xz"
KERN_SUM = fc.DATA / "nsys-stats-2025" / "small_vlm_prefill_cuda_gpu_kern_sum.csv"


def one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """``main(argv)`` exits 2 with exactly one line, no traceback and no internal error: that line."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    assert "internal error" not in err, err
    return err


def gemm_with(tmp_path: Path, label: str) -> Path:
    script, _ = fc.ISSUE35_SQLITE[label]
    return fc.sqlite_script(fc.plain_bytes(GEMM), script, tmp_path / f"{label}.sqlite")


# --- names: bounded where they are read -------------------------------------------------------------

def test_a_huge_name_is_cut_and_marked_where_it_is_read(tmp_path: Path) -> None:
    """A 200 000-character name (the committed llm-decode-small export, one name lengthened) reads as
    its first NAME_LIMIT characters and a mark of how many were cut, the same through read()."""
    length = 200_000
    export = fc.huge_name_export(tmp_path / "huge.sqlite", length)
    con = sqlite3.connect(export)
    (full,) = con.execute("SELECT value FROM StringIds WHERE length(value) = ?", (length,)).fetchone()
    con.close()
    expected = f"{full[:NAME_LIMIT]}…[+{length - NAME_LIMIT} characters]"
    names = kernel_summary(export)["name"].tolist()
    assert expected in names and max(map(len, names)) == len(expected)
    assert expected in read(export).kernel_summary["name"].tolist()  # bounded once, not twice


@pytest.mark.parametrize("label", ["all-names-null", "name-id-beyond-int64"])
def test_missing_or_impossible_name_ids(label: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every demangledName NULL (was TypeError on NAType) or an id beyond int64 (was OverflowError)."""
    path = gemm_with(tmp_path, label)
    message = one_line_error(capsys, ["inspect", str(path)])
    assert f"{path.resolve()}: kernel summary row" in message and "no name (empty or missing)" in message


def test_string_ids_as_a_view_reads_as_the_table(tmp_path: Path) -> None:
    """An export whose StringIds is a view (was refused as lacking the kernel table) reads the same."""
    viewed = gemm_with(tmp_path, "string-ids-view")
    plain = tmp_path / "plain.sqlite"
    plain.write_bytes(fc.plain_bytes(GEMM))
    summary = kernel_summary(viewed)
    assert summary.equals(kernel_summary(plain))
    con = sqlite3.connect(plain)  # plain SQL over the export: the kernels' names and launch counts
    expected = dict(con.execute("SELECT s.value, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
                                "JOIN StringIds AS s ON s.id = k.demangledName GROUP BY s.value").fetchall())
    con.close()
    assert dict(zip(summary["name"], summary["count"])) == expected and len(expected) == 2


def test_nan_timestamps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Kineto "ts": "NaN" (was ValueError) and an nsys end 'NaN' are one line naming the file."""
    case = {c.name: c for c in fc.issue35_cases(tmp_path)}["issue35:kineto-ts-nan"]
    message = one_line_error(capsys, case.argv)
    assert case.argv[1] in message and "non-numeric 'ts': 'NaN'" in message
    path = gemm_with(tmp_path, "end-text-nan")
    assert str(path.resolve()) in one_line_error(capsys, ["inspect", str(path)])


def test_header_only_and_underscore_numbers_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = {c.name: c for c in fc.issue35_cases(tmp_path)}
    header = cases["issue35:header-only-csv"].argv[1]
    assert f"{header}: the kernels table has a header but no rows" in one_line_error(capsys, ["inspect", header])
    underscored = cases["issue35:underscore-numbers"].argv[1]
    assert "_" in Path(underscored).read_text().splitlines()[1].split(",")[1]
    message = one_line_error(capsys, ["inspect", underscored])
    assert f"{underscored}: line 2: Total Time (ns) '146_014' is not a number" in message


def test_an_unreadable_input_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    """/proc/self/mem reads fail with EIO: the message names the file (it named none)."""
    message = one_line_error(capsys, ["inspect", "/proc/self/mem"])
    assert message.startswith("error: /proc/") and "/mem: cannot read: Input/output error" in message


# --- builds ------------------------------------------------------------------------------------------

def report_file(tmp_path: Path, nsys: Path) -> Path:
    report = tmp_path / "report.yaml"
    report.write_text(f"""
id: r
title: {{en: R, zh: R}}
versions: [{{id: v1, title: {{en: V1, zh: 一}}, date: 2026-11-20, inputs: {{nsys: ["{nsys}"]}}}}]
""", encoding="utf-8")
    return report


def test_a_full_tmpdir_mid_build_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """ENOSPC while an .xz input is decompressed into $TMPDIR (injected at the write: no tmpfs
    without root): exit 2, one line naming the input, nothing left (was a traceback and exit 0)."""
    real = readers_base.decompress

    def full_disk(path: Path, dest: Path) -> None:
        real(path, dest)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dest))

    monkeypatch.setattr(readers_base, "decompress", full_disk)
    report = report_file(tmp_path, GEMM)
    out = tmp_path / "site"
    message = one_line_error(capsys, ["build", str(report), "--out", str(out), "--lang", "en"])
    assert f"{GEMM}: cannot decompress into " in message and "(No space left on device)" in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.yaml"]


def test_debug_shows_the_frame_that_raised_in_a_child(tmp_path: Path) -> None:
    """--debug: an error raised while a forked child read the inputs carries the frames it was raised
    in (the traceback ended at the re-raise in the parent). A new interpreter: a test process that has
    rendered charts runs vl-convert's threads and reads in-process, where no child is forked."""
    report = report_file(tmp_path, gemm_with(tmp_path, "all-names-null"))
    done = subprocess.run([sys.executable, "-m", "generator", "--debug", "build", str(report), "--out",
                           str(tmp_path / "site"), "--lang", "en"], env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode != 0 and "no name (empty or missing)" in done.stderr
    notes = done.stderr[done.stderr.index("raised at (most recent call last):"):]
    assert "in _check_names" in notes


def test_jieba_writes_no_cache_into_tmpdir(tmp_path: Path) -> None:
    """jieba's 9 MB dictionary cache goes into the build cache's folder, or nowhere with it off."""
    tmp, cache = tmp_path / "tmp", tmp_path / "cache"
    tmp.mkdir()
    code = ("import generator.pipeline.mkdocs_site as m, jieba; m._DICTIONARY.join(); "
            "print('/'.join(jieba.cut('内核耗时分析')))")
    for setting in (str(cache), "off"):
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp), "KERNEL_REPORT_CACHE": setting}
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        assert done.stdout.strip() == "内核/耗时/分析", done.stderr
        assert list(tmp.iterdir()) == []
    assert [p.name for p in (cache / "jieba").iterdir()] == ["jieba.cache"]
    assert json.dumps(sorted(p.name for p in cache.iterdir())) == '["jieba"]'
