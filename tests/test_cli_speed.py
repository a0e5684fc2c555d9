"""The CLIs answer `--help` and argument errors at once: the parsers import no pandas, SciPy,
NumPy, Altair, DuckDB or readers (the commands import those where they run), and `--help` costs
well under HELP_CPU of processor time and answers inside HELP_WALL even on a loaded CI machine
(bench/CLI.md has the measured figures: 0.10 s of CPU, 1.5 s wall at load 25 on 2 cores)."""
from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("pandas", "scipy", "numpy", "altair", "duckdb", "pyarrow", "generator.readers", "generator.analyses",
         "generator.pipeline")
#: seconds of CPU (user + system): five times what `--help` costs (0.10 s), a quarter of what it cost
#: with SciPy and pandas imported at start-up (2.0 s); CPU time does not grow with the machine's load
HELP_CPU = 0.5
#: seconds of wall time, best of three: twice what it took at load 25 on 2 shared cores (bench/CLI.md)
HELP_WALL = 3.0

_IMPORTED = """
import contextlib, io, json, sys
from {module} import {main}
for argv in {argvs!r}:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            {main}(argv)
        except SystemExit:
            pass
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))
"""


def _imported(module: str, main: str, argvs: list[list[str]]) -> list[str]:
    """The HEAVY modules a fresh interpreter holds after ``main(argv)`` for each of ``argvs``."""
    code = _IMPORTED.format(module=module, main=main, argvs=argvs, heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


COMMANDS = ["build", "compare", "inspect", "project"]


def test_generator_help_and_argument_errors_import_nothing_heavy() -> None:
    argvs = [["--help"], *([c, "--help"] for c in COMMANDS), ["compare"], ["project", "RUN"],
             ["inspect"], ["build", "--date", "yesterday"], ["nosuchcommand"]]
    assert _imported("generator.cli", "main", argvs) == []


def test_capture_help_imports_nothing_heavy() -> None:
    argvs = [["--help"], ["run", "--help"], ["sweep", "--help"], ["list-workloads", "--help"], ["run"]]
    assert _imported("capture.cli", "main", argvs) == []


def test_importing_the_cli_imports_nothing_heavy() -> None:
    code = ("import sys, generator.cli; generator.cli.build_parser(); "
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "[]", done.stderr


@pytest.mark.parametrize("argv", [["generator", "--help"], ["generator", "compare", "--help"],
                                  ["generator", "project", "--help"], ["capture", "--help"]])
def test_help_answers_within_the_bound(argv: list[str]) -> None:
    wall = cpu = float("inf")
    for _ in range(3):  # best of three: another process may hold both cores for a moment
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", *argv], cwd=ROOT, capture_output=True, text=True, timeout=60)
        wall = min(wall, time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = min(cpu, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        assert done.returncode == 0 and "usage:" in done.stdout
    assert cpu < HELP_CPU and wall < HELP_WALL, f"{' '.join(argv)}: {cpu:.2f} s CPU, {wall:.2f} s wall"


def test_piped_reports_are_80_columns_or_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Piped (a file, a CI log), `compare`/`project` tables are 80 columns wide, or $COLUMNS; a figure
    too wide for its cell folds onto the next line instead of ending in "…"; text lines stay whole."""
    import io

    from generator.commands import report_console, report_table

    monkeypatch.delenv("COLUMNS", raising=False)
    for columns, width in ((None, 80), ("100", 100)):
        if columns:
            monkeypatch.setenv("COLUMNS", columns)
        console = report_console(highlight=False)
        console.file = io.StringIO()
        table = report_table("stage", "kernel ms", "change", "95% interval", "verdict", "span verdict", title="stages")
        table.add_row("decode", "60.183 → 60.201", "+0.0%", "[-0.0%, +0.1%]", "unchanged",
                      "not enough instances (host-dominated)" * 2)
        console.print(table)
        console.print("x" * 200)
        lines = console.file.getvalue().splitlines()
        assert max(len(line) for line in lines[:-1]) == width and len(lines[-1]) == 200
        assert "…" not in console.file.getvalue() and "unchanged" in console.file.getvalue()
