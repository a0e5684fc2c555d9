"""Reading a 10 M-launch export and building one version, against an earlier commit: CPU and peak RSS.

    .venv/bin/python bench/baseline.py [--commit 835b7f8] [--rounds 3] [--rows 10000000] [--only build]

Unpacks ``--commit`` (default: the last commit of main up to 2026-11-28, issue 46's baseline) with
``git archive`` into a temporary folder and builds the export as bench/ingest.py does (kernel rows
of tests/data/h200-small copied to ``--rows``). Each round runs, for the commit's tree and then this
one (from its own tree, PYTHONPATH set to it, KERNEL_REPORT_CACHE=off), under /usr/bin/time:
``python -m generator inspect EXPORT`` and ``python -m generator build PAIR.yaml --out …``, a
one-version report of tests/data/h200-small's nsys export and ncu report. It prints every run
(wall, user, sys, peak RSS, load average), the medians and their ratios, and whether both trees
printed the same inspect output. ``--only inspect`` or ``--only build`` runs that command alone (the
export is made only for ``inspect``). Everything it made is deleted.
Targets (issue 46): ≤ 1.0× CPU time (user + sys: the machine is shared), ≤ 256 MiB peak RSS.
"""
from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ingest  # noqa: E402  (bench/ingest.py, beside this file)

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests/data/h200-small"
PAIR = f"""id: pair
title: {{en: "h200-small", zh: "h200-small"}}
versions:
  - id: v1
    title: {{en: "v1", zh: "v1"}}
    date: 2026-11-20
    inputs:
      nsys: [{DATA / "small_vlm.nsys.sqlite.xz"}]
      ncu: [{DATA / "small_vlm_prefill.ncu-rep.xz"}]
"""


def timed(tree: Path, args: list[str], out: Path) -> tuple[list[float], str]:
    """``python -m generator ARGS`` run in ``tree``: ([wall s, user s, sys s, peak RSS MiB, load], stdout)."""
    env = dict(os.environ, PYTHONPATH=str(tree), KERNEL_REPORT_CACHE="off")
    cmd = ["/usr/bin/time", "-f", "%e %U %S %M", "-o", str(out), sys.executable, "-m", "generator", *args]
    done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, check=True)
    wall, user, system, rss = out.read_text().split()[-4:]
    return [float(wall), float(user), float(system), int(rss) / 1024, os.getloadavg()[0]], done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commit", default="835b7f8")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--only", choices=("inspect", "build"))
    args = parser.parse_args()
    commands = (args.only,) if args.only else ("inspect", "build")
    with tempfile.TemporaryDirectory(prefix="kernel-report-baseline-", dir="/tmp") as tmp:
        tmp_path = Path(tmp)
        before = tmp_path / "before"
        before.mkdir()
        archive = subprocess.run(["git", "archive", args.commit], cwd=ROOT, capture_output=True, check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(before, filter="data")
        export = tmp_path / "bench.sqlite"
        (tmp_path / "pair.yaml").write_text(PAIR)
        if "inspect" in commands:
            launches = ingest.build(ingest.DEFAULT_SOURCE, export, args.rows, 0)
            print(f"{args.commit} vs {ROOT}; export {launches:,} launches, {export.stat().st_size / 2**20:,.0f} MiB")
        else:
            print(f"{args.commit} vs {ROOT}")
        runs: dict[tuple[str, str], list[list[float]]] = {}
        printed: dict[str, set[str]] = {"inspect": set()}
        for _ in range(args.rounds):
            for what in commands:
                for label, tree in (("before", before), ("after", ROOT)):
                    site = tmp_path / f"site-{label}"
                    for folder in (site, site.with_name(site.name + "_src")):  # every build from nothing
                        shutil.rmtree(folder, ignore_errors=True)
                    command = ["inspect", str(export)] if what == "inspect" else \
                        ["build", str(tmp_path / "pair.yaml"), "--out", str(site)]
                    figures, stdout = timed(tree, command, tmp_path / "time.txt")
                    if what == "inspect":
                        printed["inspect"].add(stdout)
                    runs.setdefault((what, label), []).append(figures)
                    print(f"{what:8s} {label:7s} wall {figures[0]:6.2f} s  user {figures[1]:6.2f} s  sys "
                          f"{figures[2]:5.2f} s  peak RSS {figures[3]:5.0f} MiB  load {figures[4]:.1f}", flush=True)
    for what in commands:
        med = {label: [statistics.median(r[i] for r in runs[(what, label)]) for i in range(4)]
               for label in ("before", "after")}
        cpu = {label: statistics.median(r[1] + r[2] for r in runs[(what, label)]) for label in med}
        print(f"{what}: median CPU {cpu['before']:.2f} → {cpu['after']:.2f} s ({cpu['after'] / cpu['before']:.2f}×), "
              f"peak RSS {med['before'][3]:.0f} → {med['after'][3]:.0f} MiB "
              f"({med['after'][3] / med['before'][3]:.2f}×), wall {med['before'][0]:.2f} → {med['after'][0]:.2f} s")
    if "inspect" in commands:
        print(f"inspect printed the same in both trees: {len(printed['inspect']) == 1}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
