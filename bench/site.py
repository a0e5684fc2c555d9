"""Benchmark (not a test): cold, warm and one-changed builds of the bundled example, with peak RSS.

    .venv/bin/python bench/site.py [--repeat N] [--root CHECKOUT]

The bundled example (2 versions, EN + ZH) is built from copies of its runs in a temporary folder,
each build a fresh ``python -m generator build`` process with its own build cache
(KERNEL_REPORT_CACHE):

- cold: empty cache, no earlier site;
- warm: the same build again, nothing changed;
- one-changed: the compressed files of v2's runs re-encoded (each decompressed and compressed
  again at another level: new bytes, same content), so v2's inputs are read afresh and v1's come from the
  cache.

Printed per case: the least wall time of ``--repeat`` runs, that run's CPU time (build and
children), the peak RSS of the build process and of its largest child (the forked .ncu-rep
reader), beside the load average when it started (the machine may be shared). ``--root``
measures another checkout of the project (e.g. an older commit from ``git archive``) with the
same cases. Targets on a 2-core machine: cold ≤ 8 s, warm ≤ 2 s, one-changed ≤ 5 s, peak RSS
≤ 512 MiB.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {"cold": 8.0, "warm": 2.0, "one-changed": 5.0}
RSS_TARGET = 512 * 2**20
#: Runs in the build process: the CLI, then its peak RSS and that of its children (forked readers).
#: CPU time counts every process the build started, also those that outlived their parent (a
#: chart worker whose rendering child ended before it).
CHILD = """
import ctypes, json, os, resource, sys, time
from generator.cli import main
ctypes.CDLL(None).prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: processes orphaned inside the build come here
start = time.perf_counter()
rc = main(sys.argv[1:])
seconds = time.perf_counter() - start
for pid in os.listdir("/proc"):  # end what still runs (a chart worker kept for the next build of this process)
    try:
        if pid.isdigit() and open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1] == str(os.getpid()):
            os.kill(int(pid), 9)
    except OSError:
        pass
while True:  # and reap everything, so that the CPU time of all counts
    try:
        os.wait()
    except ChildProcessError:
        break
usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
print(json.dumps({"rc": rc, "seconds": seconds, "cpu": sum(u.ru_utime + u.ru_stime for u in usage),
                  "rss": usage[0].ru_maxrss * 1024, "child_rss": usage[1].ru_maxrss * 1024}), file=sys.stderr)
"""


REENCODE = """
import lzma, sys
from pathlib import Path
from generator.readers.inflate import zstd
codec = zstd()
for path in sorted(Path(sys.argv[1]).rglob("*.xz")):
    path.write_bytes(lzma.compress(lzma.decompress(path.read_bytes()), preset=1))
for path in sorted(Path(sys.argv[1]).rglob("*.zst")):
    path.write_bytes(codec.compress(codec.decompress(path.read_bytes()), level=1))
"""


def example_copy(root: Path, work: Path) -> tuple[Path, list[Path]]:
    """The bundled example's report.yaml and its runs, copied under ``work``: the copied report and
    the copied run folders of its last version."""
    report = root / "examples" / "ocr-vlm" / "report.yaml"
    (work / "examples" / "ocr-vlm").mkdir(parents=True)
    shutil.copy(report, work / "examples" / "ocr-vlm" / "report.yaml")
    config = yaml.safe_load(report.read_text(encoding="utf-8"))
    versions = config["versions"]
    checks = [{"runs": [chip["validate"]]} for chip in config.get("chips") or []
              if isinstance(chip, dict) and chip.get("validate")]
    copies: dict[Path, Path] = {}  # each run folder once, though versions share it
    for version in [*versions, *checks]:  # and the runs the what-if validates against
        for run in version.get("runs", []):
            source = (report.parent / run).resolve()
            if source not in copies:
                copies[source] = work / "examples" / "runs" / source.name
                shutil.copytree(source, copies[source])
    last = [copies[(report.parent / run).resolve()] for run in versions[-1].get("runs", [])]
    return work / "examples" / "ocr-vlm" / "report.yaml", last


def reencode(folder: Path) -> None:
    """Decompress and recompress every .xz and .zst under ``folder`` at another level, in a child process:
    Linux carries a process's peak RSS over fork and exec, so this one must stay small for the
    builds' figures to be theirs."""
    subprocess.run([sys.executable, "-c", REENCODE, str(folder)], check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})


def build(root: Path, report: Path, work: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(root), "KERNEL_REPORT_CACHE": str(work / "cache")}
    load = os.getloadavg()[0]
    out = subprocess.run([sys.executable, "-c", CHILD, "build", str(report), "--out", str(work / "site"),
                          "--src", str(work / "site_src")], cwd=root, env=env, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"build failed ({out.returncode}): {out.stderr[-2000:]}")
    result = json.loads(out.stderr.strip().splitlines()[-1])
    if result["rc"]:
        raise SystemExit(f"build failed (exit {result['rc']}): {out.stderr[-2000:]}")
    result["load"] = load
    return result


def measure(root: Path, repeat: int) -> dict[str, dict]:
    best: dict[str, dict] = {}

    def keep(case: str, result: dict) -> None:
        if case not in best or result["seconds"] < best[case]["seconds"]:
            best[case] = result

    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="bench-site-") as tmp:
            work = Path(tmp)
            report, last_runs = example_copy(root, work)
            keep("cold", build(root, report, work))
            keep("warm", build(root, report, work))
            for run in last_runs:
                reencode(run)
            keep("one-changed", build(root, report, work))
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="runs per case; the least wall time is shown")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to measure (default: this one)")
    args = parser.parse_args()
    best = measure(args.root.resolve(), args.repeat)
    print(f"{args.root}: bundled example, 2 versions, EN+ZH, min of {args.repeat} runs, {os.cpu_count()} CPUs")
    ok = True
    for case, r in best.items():
        fine = r["seconds"] <= TARGETS[case] and r["rss"] <= RSS_TARGET
        ok &= fine
        print(f"{case:12s} {r['seconds']:6.2f} s wall {r['cpu']:6.2f} s CPU  peak RSS {r['rss'] / 2**20:5.0f} MiB "
              f"(largest child {r['child_rss'] / 2**20:5.0f} MiB)  "
              f"(target ≤ {TARGETS[case]:.0f} s, ≤ 512 MiB: {'OK' if fine else 'MISSED'}; load {r['load']:.1f})")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
