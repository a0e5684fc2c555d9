"""Diagnostic: tensor-peak spread against repeat length, with the NVML clock trace."""
import json, os, sys, time
import torch
sys.path.insert(0, os.getcwd())
import capture.chip_probe as cp
from capture.probe_math import summarize, rate
dev = torch.device("cuda:0")
clocks = cp.Clocks(0)
n = 8192
out = {}
for name, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
    a = torch.randn(n, n, device=dev).to(dtype); b = torch.randn(n, n, device=dev).to(dtype)
    for rs, reps in ((0.05, 30), (0.25, 12), (1.0, 6)):
        trace = []
        def body():
            return cp.time_events(torch, lambda: a @ b, repeats=reps, warm_s=2.0, repeat_s=rs)
        # trace clocks at 5 ms
        import threading
        stop = threading.Event()
        def poll():
            t0 = time.monotonic()
            while not stop.is_set():
                trace.append((round(time.monotonic() - t0, 3), clocks.nvml.nvmlDeviceGetClockInfo(clocks.handle, clocks.nvml.NVML_CLOCK_SM),
                              round(clocks.nvml.nvmlDeviceGetPowerUsage(clocks.handle) / 1000, 1)))
                stop.wait(0.005)
        th = threading.Thread(target=poll, daemon=True); th.start()
        secs = body(); stop.set(); th.join()
        s = summarize(rate(2.0 * n ** 3, secs, 1e12))
        out[f"{name}-{rs}"] = {"summary": s, "samples": rate(2.0 * n ** 3, secs, 1e12), "trace": trace}
        print(name, rs, reps, {k: round(v, 2) for k, v in s.items()}, flush=True)
json.dump(out, open(os.path.join(os.environ["OUT"], "tensor_spread.json"), "w"))
