"""Benchmark: reading 1, 2, 4 and 8 ranks of N kernel launches each as a per-rank map.

    .venv/bin/python bench/ranks.py [--rows 10000000] [--ranks 1,2,4,8] [--source FILE.sqlite[.xz]] [--no-dask]

Builds one export of ≥ N kernel rows as bench/ingest.py does (a real capture's kernel rows replicated
with shifted timestamps inside SQLite) and gives each rank its own file: a hard link of it per
rank (same bytes, distinct paths, one page cache). Each measurement runs in a fresh process that
reads and reduces the ranks as a build does (generator.pipeline.rank_map.read_ranks over the whole
capture, each rank's busy intervals folded into the union over ranks as it arrives:
analyses.collectives.BusyUnion): forked workers (one per rank, the machine's CPUs at a time; and one
worker for the one-rank reference), then the same through a local Dask cluster of as many
single-thread worker processes. Printed per run: wall time of the read (a
cluster's start excluded, printed apart), speed-up over one rank on one worker scaled by the ranks,
the workers' CPU time per rank (the work, apart from how much of the machine the run got),
peak RSS (VmHWM) of each worker (forked workers: polled every 20 ms from /proc while they live; Dask
workers: read on them at the end) and of the parent, and whether the reductions and the union equal
the forked ones.
Targets (issue 49): 8 ranks in ≤ 1.3 × (8 / workers) × the one-rank time; peak per worker ≤ the
one-rank peak + 10 %. The files are deleted afterwards.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ingest import DEFAULT_SOURCE, build  # noqa: E402 - bench/ on the path first


def _hwm(pid: int | str) -> int:
    """VmHWM of ``pid`` in bytes (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _children() -> list[str]:
    found = []
    for task in Path("/proc/self/task").iterdir():
        try:
            found += (task / "children").read_text().split()
        except OSError:
            pass
    return found


class Poller(threading.Thread):
    """Polls the VmHWM of this process' children while they live (the highest seen per pid)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peaks: dict[str, int] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.02):
            for pid in _children():
                self.peaks[pid] = max(self.peaks.get(pid, 0), _hwm(pid))


def _digest(ranks: list, union) -> str:
    """One hash of every rank's reduction (figures, collective kernels, spans) and the busy union."""
    import numpy as np
    import pandas as pd

    h = hashlib.sha256()
    for t in ranks:
        for frame in (t.stages, t.collectives):
            h.update(str(list(frame.dtypes)).encode())
            h.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
        for stage in sorted(t.spans):
            h.update(np.ascontiguousarray(t.spans[stage]).tobytes())
    for stage in sorted(union.busy):
        for part in union.busy[stage]:
            h.update(part.tobytes())
    return h.hexdigest()[:16]


def measure(mode: str, files: list[str], workers: int) -> None:
    """Child process: read one rank of each of ``files``; print the figures as JSON."""
    from generator.analyses.collectives import BusyUnion
    from generator.model import ALL_STAGES
    from generator.pipeline import rank_map
    from generator.pipeline.inputs import InputCache
    from generator.readers.nsys_ranks import rank_processes

    ranks = [(Path(f), int(r.global_pid), int(r.gpu), 0) for f in files for r in rank_processes(f).itertuples()]
    union = BusyUnion([ALL_STAGES])
    stages = ([ALL_STAGES], union.busy_stages(), union.add)
    out: dict = {"mode": mode, "ranks": len(ranks), "workers": workers}
    with InputCache() as cache:
        if mode == "dask":
            from distributed import LocalCluster

            start = time.perf_counter()
            with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                              dashboard_address=None) as cluster, rank_map.scheduler(cluster.scheduler_address):
                out["cluster_start_s"] = time.perf_counter() - start
                from distributed import Client

                with Client(cluster.scheduler_address) as client:
                    cpu = client.run(time.process_time)
                    start = time.perf_counter()
                    tables = rank_map.read_ranks(cache, ranks, *stages)
                    out["seconds"] = time.perf_counter() - start
                    out["worker_cpu_s"] = sum(client.run(time.process_time).values()) - sum(cpu.values())
                    peaks = client.run(lambda: _hwm("self"))
                out["worker_peaks"] = sorted(peaks.values())
        else:
            poller = Poller()
            poller.start()
            cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            tables = rank_map.read_ranks(cache, ranks, *stages, workers=workers)
            out["seconds"] = time.perf_counter() - start
            done = resource.getrusage(resource.RUSAGE_CHILDREN)
            out["worker_cpu_s"] = done.ru_utime + done.ru_stime - cpu.ru_utime - cpu.ru_stime
            poller.stop.set()
            poller.join()
            out["worker_peaks"] = sorted(poller.peaks.values())
    out["parent_peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out["kernels"] = sum(t.launches for t in tables)
    out["digest"] = _digest(tables, union)
    print(json.dumps(out))


def run_child(mode: str, files: list[Path], workers: int) -> dict:
    done = subprocess.run([sys.executable, __file__, "--measure", mode, str(workers), *map(str, files)],
                          capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--ranks", default="1,2,4,8")
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--no-dask", action="store_true", help="skip the local Dask cluster runs")
    parser.add_argument("--measure", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(args.measure[0], args.measure[2:], int(args.measure[1]))
        return 0
    from generator.machine import cpus

    counts = [int(n) for n in args.ranks.split(",")]
    workers = cpus()
    mib = 1 << 20
    with tempfile.TemporaryDirectory(prefix="kr-bench-ranks-") as tmp:
        base = Path(tmp) / "base.sqlite"
        start = time.perf_counter()
        rows = build(args.source, base, args.rows, 0)
        print(f"export: {rows:,} kernel rows, {base.stat().st_size / mib:,.0f} MiB, built in "
              f"{time.perf_counter() - start:.1f} s; {workers} CPUs")
        files = []
        for i in range(max(counts)):
            files.append(Path(tmp) / f"rank_{i}.sqlite")
            os.link(base, files[-1])
        run_child("forked", files[:1], 1)  # warm the page cache
        one = run_child("forked", files[:1], 1)
        print(f"one rank, one worker: {one['seconds']:.2f} s (worker CPU {one['worker_cpu_s']:.2f} s), "
              f"worker peak {max(one['worker_peaks']) / mib:,.0f} MiB, parent peak {one['parent_peak'] / mib:,.0f} MiB")
        modes = ["forked"] + ([] if args.no_dask else ["dask"])
        print("| how | ranks | workers | wall s | speed-up | target s | worker CPU s per rank | worker peak MiB (max) "
              "| parent peak MiB | same |")
        print("|---|--:|--:|--:|--:|--:|--:|--:|--:|---|")
        for n in counts:
            want = None
            for mode in modes:
                got = run_child(mode, files[:n], workers)
                want = want or got["digest"]
                speed = n * one["seconds"] / got["seconds"]
                target = 1.3 * n / min(workers, n) * one["seconds"]
                extra = f" (cluster start {got['cluster_start_s']:.1f} s)" if mode == "dask" else ""
                print(f"| {mode}{extra} | {n} | {min(workers, n) if mode == 'forked' else workers} | "
                      f"{got['seconds']:.2f} | {speed:.2f} | {target:.2f} | {got['worker_cpu_s'] / n:.2f} | "
                      f"{max(got['worker_peaks']) / mib:,.0f} | {got['parent_peak'] / mib:,.0f} | "
                      f"{'yes' if got['digest'] == want and got['kernels'] == n * one['kernels'] else 'NO'} |",
                      flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
