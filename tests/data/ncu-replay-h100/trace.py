"""Profile probe.py under ncu for each MODE given and print, per profiled launch, the seconds from its
``==PROF== Profiling`` line to its ``100% - N passes`` and the longest time between two of its
progress marks, as ncu's output came through a pseudo-terminal (a pipe may buffer it).

    python3 trace.py METRICS_FILE MODE…   (on the GPU machine, from the repository root)

METRICS_FILE holds the capture's ``--metrics`` value (``capture.commands.REPORT_METRICS`` joined by
commas). The lines of ``states.txt`` were printed this way.
"""
import itertools
import os
import pty
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def traced(argv: list[str], env: dict[str, str]) -> tuple[float, list[tuple[float, str]]]:
    """(wall seconds, [(seconds since start, chunk of output)]) of ``argv`` run on a pseudo-terminal."""
    main, child = pty.openpty()
    start = time.time()
    proc = subprocess.Popen(argv, stdout=child, stderr=child, stdin=subprocess.DEVNULL, env=env)
    os.close(child)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append((time.time() - start, chunk.decode(errors="replace")))
    proc.wait()
    return time.time() - start, chunks


def launch_marks(chunks: list[tuple[float, str]]) -> list[list[float]]:
    """Per profiled launch, the seconds of its ``==PROF== Profiling`` line and of each progress mark after it."""
    launches: list[list[float]] = []
    for seconds, text in chunks:
        if text.startswith("==PROF== Profiling"):
            launches.append([seconds])
        elif launches and ("%" in text or text == "."):
            launches[-1].append(seconds)
    return launches


def per_launch(chunks: list[tuple[float, str]]) -> list[tuple[float, float]]:
    """(total, longest step) of each profiled launch."""
    return [(round(m[-1] - m[0], 2), round(max(b - a for a, b in itertools.pairwise(m)), 2))
            for m in launch_marks(chunks) if len(m) > 1]


def main(metrics_file: str, *modes: str) -> None:
    metrics = Path(metrics_file).read_text().strip()
    for mode in modes:
        env = dict(os.environ, MODE=mode)
        if mode in ("live", "freed-allocations"):
            env["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
        wall, chunks = traced(["ncu", "--clock-control", "none", "--nvtx", "--nvtx-include", "probe/",
                               "--section", "SpeedOfLight", "--metrics", metrics, "-f", "-o", "/tmp/probe",
                               "python3", str(HERE / "probe.py")], env)
        printed = " ".join(" ".join(re.findall(r"(?:state: )?(?:reserved|used) GiB [^\r\n]*", text)) for _, text in chunks).strip()
        print(f"{mode}: wall {wall:.1f} s; per launch (total, largest gap): {per_launch(chunks)}; {printed}", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
