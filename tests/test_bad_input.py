"""Bad input, CLI-wide: `python -m generator inspect BAD` says one line naming the file, exits 2, no traceback."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from generator.cli import main
from generator.commands import inspect as inspect_command

ROOT = Path(__file__).parent.parent
DATA = ROOT / "tests" / "data"


def make_truncated_sqlite(tmp: Path) -> Path:
    path = tmp / "truncated.sqlite"
    path.write_bytes((DATA / "nvtx-examples/cudf-groupby.sqlite").read_bytes()[:8192])
    return path


def make_not_sqlite(tmp: Path) -> Path:
    path = tmp / "notes.sqlite"
    path.write_text("these are meeting notes, not a database\n" * 20)
    return path


def make_unknown_csv(tmp: Path) -> Path:
    path = tmp / "prices.csv"
    path.write_text("date,open,high,low,close\n2024-01-02,10.5,11.0,10.1,10.9\n2024-01-03,10.9,11.2,10.7,11.1\n")
    return path


def make_empty(tmp: Path) -> Path:
    path = tmp / "empty.csv"
    path.write_bytes(b"")
    return path


def make_ragged_ncu_csv(tmp: Path) -> Path:
    """The real ESMM details CSV with one metric row given three extra fields."""
    lines = (DATA / "ESMM-Research/metrics.csv").read_text().splitlines()
    lines[5] += ',"x","y","z"'
    path = tmp / "ragged_metrics.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def make_json_not_trace(tmp: Path) -> Path:
    path = tmp / "config.json"
    path.write_text('{"model": "llama", "hidden_size": 1024, "layers": [1, 2, 3]}\n')
    return path


def make_missing(tmp: Path) -> Path:
    return tmp / "never_written.sqlite"


def make_corrupt_xz(tmp: Path) -> Path:
    """A real .xz fixture with a run of bytes in the middle overwritten."""
    data = bytearray((DATA / "hta/alexnet_benchmark_result_2869224_1695835535_trace.json.xz").read_bytes())
    middle = len(data) // 2
    data[middle:middle + 64] = bytes(64)
    path = tmp / "corrupt_trace.json.xz"
    path.write_bytes(bytes(data))
    return path


def make_truncated_gz_trace(tmp: Path) -> Path:
    data = (DATA / "h200-small/small_vlm_torch_trace.json.gz").read_bytes()
    path = tmp / "cut.json.gz"
    path.write_bytes(data[: len(data) // 3])
    return path


CASES = {
    "truncated sqlite": make_truncated_sqlite,
    "not sqlite": make_not_sqlite,
    "unknown csv": make_unknown_csv,
    "empty file": make_empty,
    "ragged ncu csv": make_ragged_ncu_csv,
    "json not a trace": make_json_not_trace,
    "missing file": make_missing,
    "corrupt xz": make_corrupt_xz,
    "truncated json.gz": make_truncated_gz_trace,
}


def inspect(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "generator", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("case", CASES)
def test_one_line_exit_2_no_traceback(case, tmp_path):
    path = CASES[case](tmp_path)
    done = inspect("inspect", str(path))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    prefix = f"error: {path}: "
    assert lines[0].startswith(prefix) and len(lines[0]) > len(prefix) + 5
    assert "Traceback" not in done.stderr + done.stdout


@pytest.mark.parametrize("case", CASES)
def test_debug_shows_traceback(case, tmp_path):
    path = CASES[case](tmp_path)
    done = inspect("--debug", "inspect", str(path))
    assert done.returncode != 0
    assert "Traceback (most recent call last)" in done.stderr
    assert str(path) in done.stderr


def test_all_bad_files_in_one_run_one_line_each(tmp_path):
    paths = [make(tmp_path) for make in CASES.values()]
    done = inspect("inspect", *map(str, paths))
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert [line.split(": ")[1] for line in lines] == [str(p) for p in paths]
    assert "Traceback" not in done.stderr


@pytest.mark.skipif(not Path("/proc/self/mem").is_file(), reason="needs Linux /proc")
def test_unreadable_file_is_one_line():
    done = inspect("inspect", "/proc/self/mem")  # a regular file whose first read fails with EIO
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["error: /proc/self/mem: cannot read: Input/output error"]


def decode_failure(args):
    b"\xffabc".decode("utf-8")


def missing_file(args):
    raise FileNotFoundError(2, "No such file or directory", "/nowhere/report.yaml")


@pytest.mark.parametrize("command, expected", [
    (decode_failure, "error: an input is not valid utf-8 text (invalid start byte at byte 0)"),
    (missing_file, "error: /nowhere/report.yaml: No such file or directory"),
])
def test_cli_reports_uncaught_os_and_decode_errors_in_one_line(command, expected, monkeypatch, capsys):
    monkeypatch.setattr(inspect_command, "run", command)
    assert main(["inspect", "x"]) == 2
    assert capsys.readouterr().err.splitlines() == [expected]
    with pytest.raises((OSError, UnicodeDecodeError)):
        main(["--debug", "inspect", "x"])
