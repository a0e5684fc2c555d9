"""Benchmark: peak memory of `compare`'s statistics at many launches of one kernel in one stage.

    .venv/bin/python bench/compare_memory.py [--launches 1000000] [--timeout 1800]

The decode launches of the most-launched kernel of the committed examples/runs/llm-decode-small
capture (read by the pipeline's reader) are repeated in start order until there are LAUNCHES of
them in one stage, on either side; the current side's durations are 0.5 % longer. A child process
runs what `compare` runs on two captures' launches (speed_change.stage_speed: the paired bootstrap
of the stage's kernel time; speed_change.kernel_speed: the bootstrap of the kernel's median) and
prints the stage verdict; this process polls the child's peak resident memory (``VmHWM``) and
prints it with the wall time. The child imports this checkout's ``generator``;
``KR_CODE=/path/to/other/checkout`` measures that one's instead.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, os.environ.get("KR_CODE", str(ROOT)))  # this checkout's generator, or KR_CODE's
RUN = ROOT / "examples" / "runs" / "llm-decode-small"
STAGE = "decode"


def child(launches: int) -> None:
    """In the child: the two sides' launches, then the stage and kernel statistics."""
    import numpy as np
    import pandas as pd

    from generator.analyses.speed_change import kernel_speed, stage_speed
    from generator.pipeline.inputs import InputCache

    with InputCache() as cache:
        reading = cache.stages(RUN / "nsys" / "report.sqlite.xz", (STAGE,))
    real = reading.launches[reading.launches["stage"] == STAGE]
    name = real["name"].value_counts().index[0]
    durations = real[real["name"] == name].sort_values("start_ns")["duration_ns"].to_numpy()
    tiled = np.resize(durations, launches)
    frame = pd.DataFrame({"stage": STAGE, "instance": 0, "name": name,
                          "start_ns": np.arange(launches, dtype=np.int64) * 10_000, "duration_ns": tiled})
    current = frame.assign(duration_ns=np.round(tiled * 1.005).astype(tiled.dtype))
    stages = stage_speed(frame, current)
    kernels = kernel_speed(frame, current, {})
    row = stages[stages["stage"] == STAGE].iloc[0]
    print(json.dumps({"kernel": name[:40], "real_launches": len(durations), "stage_verdict": row["kernel_verdict"],
                      "stage_interval_pct": [round(row["kernel_low_pct"], 3), round(row["kernel_high_pct"], 3)],
                      "kernel_verdict": kernels["verdict"].iloc[0]}))


def high_water_mb(pid: int) -> float:
    """``VmHWM`` (peak resident memory) of ``pid`` in MB; 0 once it is gone."""
    try:
        found = re.search(r"^VmHWM:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
    except OSError:
        return 0.0
    return int(found[1]) / 1024 if found else 0.0


def measure(launches: int, timeout: float) -> dict:
    """Run :func:`child` in a new process: its output, exit code, wall time and peak VmHWM (MB)."""
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, __file__, "--child", str(launches)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "KERNEL_REPORT_CACHE": "off"})
    peak = 0.0
    while proc.poll() is None and time.monotonic() - start < timeout:
        peak = max(peak, high_water_mb(proc.pid))
        time.sleep(0.02)
    if proc.poll() is None:
        proc.kill()
    out, err = proc.communicate()
    return {"launches": launches, "exit": proc.returncode, "wall_s": round(time.monotonic() - start, 1),
            "peak_mb": round(peak), "result": out.strip(), "stderr": err.strip()[-500:]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=1_000_000)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return 0
    print(json.dumps(measure(args.launches, args.timeout), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
