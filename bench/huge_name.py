"""Benchmark: an ordinary nsys SQLite export with one 100 MB kernel name, through `inspect` and `build`.

    .venv/bin/python bench/huge_name.py [--length 100000000] [--lang en,zh]

Derives the export from the committed examples/runs/llm-decode-small capture in a temporary folder
(tests/fuzz_cases.py ``huge_name_export``: its most-launched kernel's name lengthened to
``--length`` characters, then VACUUM: an ordinary ~101 MB file), runs ``python -m generator inspect``
and ``build`` on it, each in a fresh process with the build cache off, and prints wall time, peak
RSS (``ru_maxrss`` of the process and the children it waited for: the largest of them) and the exit
status. The temporary folder is removed afterwards; nothing is written elsewhere.
Targets (issue 35): build bounded in memory (it grew past 6 GB and ran past 200 s before names were
bounded where they are read); the name reaches the data download as its first 65 536 characters
and a mark.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fuzz_cases import huge_name_export  # noqa: E402  (the one derivation, shared with the fuzz suite)


def timed(argv: list[str], cwd: Path) -> tuple[float, float, int, str]:
    """Wall seconds, peak RSS in MiB, exit status and last stderr line of ``python -m generator ARGV``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KERNEL_REPORT_CACHE": "off"}
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "generator", *argv], cwd=cwd, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = child.stderr.read().decode("utf-8", "replace") if child.stderr else ""
    _, status, usage = os.wait4(child.pid, 0)  # not child.wait(): wait4 also gives the peak RSS
    child.returncode = code = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - start
    last = (err.strip().splitlines() or [""])[-1][:200]
    return seconds, usage.ru_maxrss / 1024, code, last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=100_000_000, help="characters of the huge name")
    parser.add_argument("--lang", default="en,zh")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kr-huge-name-") as tmp:
        work = Path(tmp)
        start = time.perf_counter()
        export = huge_name_export(work / "huge.sqlite", args.length)
        print(f"export: {export.stat().st_size / 2**20:.1f} MiB, one name of {args.length:,} characters "
              f"(made in {time.perf_counter() - start:.1f} s)")
        report = work / "report.yaml"
        report.write_text(f"""
id: huge
title: {{en: Huge name, zh: 超长名称}}
versions: [{{id: v1, title: {{en: V1, zh: 一}}, date: 2026-11-20, inputs: {{nsys: ["{export}"]}}}}]
""", encoding="utf-8")
        for label, argv in (("inspect", ["inspect", str(export)]),
                            ("build", ["build", str(report), "--out", str(work / "site"), "--lang", args.lang])):
            seconds, peak, code, last = timed(argv, work)
            print(f"{label:8s} {seconds:6.1f} s  peak RSS {peak:7.0f} MiB  exit {code}  {last}")
        csv = work / "site" / "v1" / "data" / "top_kernels.csv"
        if csv.is_file():
            text = csv.read_text(encoding="utf-8")
            longest = max(len(line) for line in text.splitlines())
            marked = f"…[+{args.length - (1 << 16)} characters]" in text
            print(f"top_kernels.csv: longest line {longest:,} characters, the name cut and marked: {marked}")


if __name__ == "__main__":
    main()
