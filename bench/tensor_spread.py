"""The tensor peaks' repeat spread against the repeat's length, with NVML's SM clock and power every
5 ms meanwhile (on the device, from the repository root: ``python3 bench/tensor_spread.py``; writes
``$OUT/tensor_spread.json``). Why the chip probe times its peaks in repeats of 1 s
(bench/PROJECTION.md; the 2026-12-07 H100 output is tests/data/chip-probe/h100-c-tensor-spread.json.xz).
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from capture import chip_probe  # noqa: E402
from capture.probe_math import rate, summarize  # noqa: E402

N = 8192
#: (repeat length in s, repeats)
LENGTHS = ((0.05, 30), (0.25, 12), (1.0, 6))


def traced(clocks: chip_probe.Clocks, body) -> tuple[list[float], list[tuple[float, int, float]]]:
    """``body()`` and (seconds since start, SM MHz, W) every 5 ms meanwhile."""
    trace: list[tuple[float, int, float]] = []
    stop = threading.Event()
    nvml, handle = clocks.nvml, clocks.handle

    def poll() -> None:
        began = time.monotonic()
        while not stop.is_set():
            trace.append((round(time.monotonic() - began, 3), nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM),
                          round(nvml.nvmlDeviceGetPowerUsage(handle) / 1000, 1)))
            stop.wait(0.005)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        return body(), trace
    finally:
        stop.set()
        thread.join()


def main() -> None:
    dev = torch.device("cuda:0")
    clocks = chip_probe.Clocks(0)
    out = {}
    for name, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        a = torch.randn(N, N, device=dev).to(dtype)
        b = torch.randn(N, N, device=dev).to(dtype)
        for length, repeats in LENGTHS:
            secs, trace = traced(clocks, lambda a=a, b=b, length=length, repeats=repeats: chip_probe.time_events(
                torch, lambda: a @ b, repeats=repeats, warm_s=2.0, repeat_s=length))
            samples = rate(2.0 * N ** 3, secs, 1e12)
            found = summarize(samples)
            out[f"{name}-{length}"] = {"summary": found, "samples": samples, "trace": trace}
            print(name, length, repeats, {k: round(v, 2) for k, v in found.items()}, flush=True)
    Path(os.environ["OUT"], "tensor_spread.json").write_text(json.dumps(out), encoding="utf-8")


if __name__ == "__main__":
    main()
