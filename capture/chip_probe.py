"""``python -m capture chip-probe --out FILE.yaml``: about a minute of microbenchmarks on the GPU at
hand, written as a chip file whose figures are ``measured`` (capture/probe_math.py does the
arithmetic; the raw records go beside it as FILE.raw.json).

Each benchmark is one record: its method, the repeats (seconds or rates, each timed with CUDA
events after warm-up), and ``status`` ok / skipped / failed with the reason; one failing benchmark
never stops the others. Without CUDA every record is skipped, and the file says so.
"""
from __future__ import annotations

import json
import math
import os
import platform
import threading
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from capture.probe_math import RAW_SCHEMA, busbw, rate

MiB = 1 << 20
#: repeats of every timed benchmark (after WARMUP untimed ones)
REPEATS, WARMUP = 15, 3
#: GEMM side for the tensor and FP32 peaks
GEMM_N = 8192
#: launches per repeat of the tiny kernels (20,000 launches each: 20 repeats); 100 left the H200's empty
#: kernel alternating between two 32 ns CUPTI ticks (0.480 / 0.543 µs, a 13 % spread)
BLOCK, TINY_LAUNCHES = 1000, 20000
#: eager launches per repeat of the host-bound launch interval
EAGER = 2000
#: repeats of the arithmetic peaks, after WARM_S seconds of the same work, each REPEAT_S long
PEAK_REPEATS, WARM_S = 6, 2.0  # 0.5 s left the H100's BF16 5.5 % apart between runs (power limit)
#: under the power limit the SM clock swings for hundreds of ms: the H100's BF16 repeats spread 6.6 %
#: at 50 ms each, 2.8 % at 250 ms, 0.4 % at 1 s (bench/PROJECTION.md); DRAM's 2.9 % at 50 ms
REPEAT_S, DRAM_REPEAT_S = 1.0, 0.25
#: one replay of the graph of 1,000 adds (1.2 ms) per repeat spread the H100's interval 4.5–6.2 %
GRAPH_REPEAT_S = 0.05
#: one sweep of ~2 GiB (0.3 ms) per repeat spread the H100's L2 plateau 3.0 %
L2_REPEAT_S = 0.02
_PEAK = (f"best of {PEAK_REPEATS} repeats of ≥ {REPEAT_S:g} s of back-to-back calls after {WARM_S:g} s of "
         "warm-up; SM clock by NVML")


def _say(text: str) -> None:
    print(f"chip-probe: {text}", flush=True)


class Clocks:
    """NVML SM clock (MHz) and power (W) sampled every 5 ms in a thread while a block runs."""

    def __init__(self, index: int) -> None:
        self.handle, self.nvml = None, None
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nvml, self.handle = pynvml, pynvml.nvmlDeviceGetHandleByIndex(index)
        except Exception:  # noqa: BLE001 — no NVML: clocks are not recorded
            pass

    def max_sm_mhz(self) -> float | None:
        if self.handle is None:
            return None
        try:
            return float(self.nvml.nvmlDeviceGetMaxClockInfo(self.handle, self.nvml.NVML_CLOCK_SM))
        except Exception:  # noqa: BLE001
            return None

    def sample(self, body: Callable[[], object]) -> tuple[object, dict]:
        """``body()`` and the clocks seen meanwhile: median and min SM MHz, median W."""
        if self.handle is None:
            return body(), {}
        seen: list[tuple[float, float]] = []
        stop = threading.Event()

        def poll() -> None:
            while not stop.is_set():
                try:
                    mhz = self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM)
                    watts = self.nvml.nvmlDeviceGetPowerUsage(self.handle) / 1000.0
                    seen.append((float(mhz), watts))
                except Exception:  # noqa: BLE001
                    return
                stop.wait(0.005)

        thread = threading.Thread(target=poll, daemon=True)
        thread.start()
        try:
            result = body()
        finally:
            stop.set()
            thread.join()
        if not seen:
            return result, {}
        mhz = sorted(s[0] for s in seen)
        watts = sorted(s[1] for s in seen)
        return result, {"clock_mhz": mhz[len(mhz) // 2], "clock_min_mhz": mhz[0],
                        "power_w": round(watts[len(watts) // 2], 1), "clock_samples": len(mhz)}


def time_events(torch, fn: Callable[[], object], repeats: int = REPEATS, warmup: int = WARMUP,
                inner: int = 1, warm_s: float = 0.0, repeat_s: float = 0.0) -> list[float]:
    """Seconds per call of ``fn``: each repeat times ``inner`` calls between two CUDA events, after
    ``warmup`` calls and then more until ``warm_s`` seconds have passed (clocks settle under load);
    with ``repeat_s``, ``inner`` is as many calls as fill that many seconds."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    began, calls = time.monotonic(), 0
    while time.monotonic() - began < max(warm_s, 1e-9 if repeat_s else 0.0):
        for _ in range(4):
            fn()
        torch.cuda.synchronize()
        calls += 4
    if repeat_s and calls:
        inner = max(inner, math.ceil(repeat_s / ((time.monotonic() - began) / calls)))
    out = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end) / 1e3 / inner)
    return out


def _record(name: str, method: str, body: Callable[[], dict], skip: str | None = None) -> dict:
    """One benchmark's record: body()'s fields with status ok, or skipped / failed with the reason."""
    rec: dict = {"name": name, "method": method}
    if skip:
        _say(f"{name}: skipped ({skip})")
        return rec | {"status": "skipped", "reason": skip}
    began = time.monotonic()
    try:
        rec |= body() | {"status": "ok"}
    except Exception as exc:  # noqa: BLE001 — one benchmark failing leaves the others
        rec |= {"status": "failed", "reason": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(limit=4)}
    rec["seconds"] = round(time.monotonic() - began, 2)
    shown = rec.get("samples") and f"best {max(rec['samples']) if rec.get('higher_is_better', True) else min(rec['samples']):.4g}"
    _say(f"{name}: {rec['status']} {shown or rec.get('reason', '')} ({rec['seconds']} s)")
    return rec


def _triton():
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None
    return triton, tl


def _kernels():
    """The Triton kernels: a read-only sweep over a working set (loads cached in L2 only, .cg)
    ``reps`` times, and an FMA chain in registers. None without Triton."""
    found = _triton()
    if found is None:
        return None
    triton, tl = found

    @triton.jit
    def read_sweep(x_ptr, out_ptr, n, reps, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        step = tl.num_programs(0) * BLOCK
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for _ in range(reps):
            for start in range(pid * BLOCK, n, step):
                offs = start + tl.arange(0, BLOCK)
                acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0, cache_modifier=".cg")
        tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), acc)

    @triton.jit
    def fma_chain(out_ptr, iters, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        a = offs.to(tl.float32) * 1e-9
        b, c, d = a + 1.0, a + 2.0, a + 3.0
        for _ in range(iters):
            a = a * 0.9999 + 0.0001
            b = b * 0.9999 + 0.0001
            c = c * 0.9999 + 0.0001
            d = d * 0.9999 + 0.0001
        tl.store(out_ptr + offs, a + b + c + d)

    @triton.jit
    def empty(x_ptr):
        pass

    return read_sweep, fma_chain, empty


def dram(torch, dev, budget_bytes: int) -> list[dict]:
    size = min(2 << 30, budget_bytes // 3)
    n = size // 4

    def copy() -> dict:
        src = torch.randn(n, device=dev)
        dst = torch.empty_like(src)
        secs = time_events(torch, lambda: dst.copy_(src), repeat_s=DRAM_REPEAT_S)
        return {"bytes": 2 * size, "samples": rate(2 * size, secs, 1e9), "unit": "GB/s"}

    def read() -> dict:
        x = torch.randn(n, device=dev)
        secs = time_events(torch, lambda: x.sum(), repeat_s=DRAM_REPEAT_S)
        return {"bytes": size, "samples": rate(size, secs, 1e9), "unit": "GB/s"}

    return [
        _record("dram_copy", f"device-to-device copy of {size // MiB} MiB (torch copy_), bytes read + written "
                             f"over CUDA-event time, best of {REPEATS} repeats of ≥ {DRAM_REPEAT_S * 1e3:.0f} ms", copy),
        _record("dram_read", f"read-only reduction of {size // MiB} MiB fp32 (torch sum), bytes read over "
                             f"CUDA-event time, best of {REPEATS} repeats of ≥ {DRAM_REPEAT_S * 1e3:.0f} ms", read),
    ]


def l2_sweep(torch, dev, l2_bytes: int, sm_count: int, kernels) -> dict:
    method = ("Triton read-only sweep (loads cached in L2 only) over working sets from 1 MiB to 2 × L2, each "
              "re-read until ~2 GiB were read; bytes read over CUDA-event time, best of 7 repeats of ≥ 20 ms per set")

    def body() -> dict:
        read_sweep = kernels[0]
        block = 1024
        top = 2 * l2_bytes
        sizes = sorted({MiB << i for i in range(12) if MiB << i <= top}
                       | {int(l2_bytes * f) // MiB * MiB for f in (0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0, 1.25,
                                                                  1.5, 2.0)})
        x = torch.randn(top // 4 + block, device=dev)
        out = torch.empty(sm_count * 16 * block, device=dev)
        samples = []
        for size in sizes:
            n = size // 4
            grid = (max(1, min(sm_count * 16, n // block)),)
            reps = max(1, (2 << 30) // size)
            secs = time_events(torch, lambda n=n, reps=reps, grid=grid: read_sweep[grid](x, out, n, reps, BLOCK=block,
                                                                                         num_warps=4),
                               repeats=7, warmup=2, repeat_s=L2_REPEAT_S)
            samples.append(rate(size * reps, secs, 1e9))
        return {"sizes": sizes, "samples_by_size": samples, "unit": "GB/s", "l2_bytes_driver": l2_bytes}

    return _record("l2_read", method, body, None if kernels else "Triton is not installed")


def tensor(torch, dev, clocks: Clocks) -> list[dict]:
    n = GEMM_N
    flop = 2.0 * n * n * n
    records = []

    def gemm(dtype) -> Callable[[], dict]:
        def body() -> dict:
            a = torch.randn(n, n, device=dev, dtype=torch.float32).to(dtype)
            b = torch.randn(n, n, device=dev, dtype=torch.float32).to(dtype)
            secs, seen = clocks.sample(lambda: time_events(torch, lambda: a @ b, repeats=PEAK_REPEATS, warm_s=WARM_S, repeat_s=REPEAT_S))
            return {"flop": flop, "samples": rate(flop, secs, 1e12), "unit": "TFLOP/s", **seen}
        return body

    for name, dtype in (("tensor_bf16", torch.bfloat16), ("tensor_fp16", torch.float16)):
        records.append(_record(name, f"{n}×{n}×{n} {name[7:]} matrix product on random data (torch @, cuBLAS), "
                                     f"2·N³ FLOP over CUDA-event time, {_PEAK}", gemm(dtype)))

    def tf32() -> dict:
        before = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            return gemm(torch.float32)()
        finally:
            torch.backends.cuda.matmul.allow_tf32 = before

    records.append(_record("tensor_tf32", f"{n}×{n}×{n} fp32 matrix product with TF32 allowed (torch @, cuBLAS), "
                                          f"2·N³ FLOP over CUDA-event time, {_PEAK}", tf32))
    fp8 = getattr(torch, "float8_e4m3fn", None)
    major = torch.cuda.get_device_capability(dev)[0]

    def scaled() -> dict:
        a = torch.randn(n, n, device=dev).to(fp8)
        b = torch.randn(n, n, device=dev).to(fp8).t()  # column-major, as _scaled_mm wants
        one = torch.ones((), device=dev)
        secs, seen = clocks.sample(lambda: time_events(
            torch, lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
            repeats=PEAK_REPEATS, warm_s=WARM_S, repeat_s=REPEAT_S))
        return {"flop": flop, "samples": rate(flop, secs, 1e12), "unit": "TFLOP/s", **seen}

    records.append(_record("tensor_fp8", f"{n}×{n}×{n} fp8 e4m3 matrix product, bf16 out (torch._scaled_mm), "
                                         f"2·N³ FLOP over CUDA-event time, {_PEAK}", scaled,
                           None if fp8 is not None and major >= 9 else "no FP8 tensor path (needs sm_89+ and torch FP8)"))
    return records


def fp32(torch, dev, sm_count: int, clocks: Clocks, kernels) -> list[dict]:
    block, iters = 1024, 8192
    programs = sm_count * 16
    flop = 2.0 * 4 * iters * block * programs

    def fma() -> dict:
        out = torch.empty(programs * block, device=dev)
        secs, seen = clocks.sample(lambda: time_events(
            torch, lambda: kernels[1][(programs,)](out, iters, BLOCK=block, num_warps=4), repeats=PEAK_REPEATS,
            warm_s=WARM_S, repeat_s=REPEAT_S))
        return {"flop": flop, "samples": rate(flop, secs, 1e12), "unit": "TFLOP/s", **seen}

    def sgemm() -> dict:
        before = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        try:
            n = 4096
            a, b = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)
            secs, seen = clocks.sample(lambda: time_events(torch, lambda: a @ b, repeats=PEAK_REPEATS, warm_s=WARM_S, repeat_s=REPEAT_S))
            return {"flop": 2.0 * n ** 3, "samples": rate(2.0 * n ** 3, secs, 1e12), "unit": "TFLOP/s", **seen}
        finally:
            torch.backends.cuda.matmul.allow_tf32 = before

    return [
        _record("fp32_fma", f"Triton kernel of 4 independent FMA chains × {iters} per element, {programs} programs × "
                            f"{block}; 2 FLOP per FMA over CUDA-event time, {_PEAK}", fma,
                None if kernels else "Triton is not installed"),
        _record("fp32_sgemm", f"4096³ fp32 matrix product with TF32 off (cuBLAS SGEMM on the FMA units), "
                              f"{_PEAK}", sgemm),
    ]


def launch(torch, dev, kernels) -> list[dict]:
    x = torch.zeros(1, device=dev)
    count = TINY_LAUNCHES  # eager launches of each tiny kernel; a repeat is the shortest of BLOCK in launch order
    add = "one-element add (torch)"
    tiny = {add: lambda: x.add_(1.0), "torch.cuda._sleep(0)": lambda: torch.cuda._sleep(0)}
    if kernels:
        tiny["empty Triton kernel"] = lambda: kernels[2][(1,)](x)
    timed: dict[str, dict] = {}

    def cupti() -> dict[str, dict]:
        """Per tiny kernel, profiled alone: its kernel name, the durations (µs) in launch order, and
        the start-to-start gaps."""
        from torch.profiler import ProfilerActivity, profile

        if timed:
            return timed
        for label, launch_one in tiny.items():
            for _ in range(50):
                launch_one()
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(count):
                    launch_one()
                torch.cuda.synchronize()
            # kineto's raw events: building torch's FunctionEvents for 20,000 launches takes seconds
            spans = sorted((e.start_ns() / 1e3, e.duration_ns() / 1e3, e.name())
                           for e in prof.profiler.kineto_results.events()
                           if str(e.device_type()).endswith("CUDA") and e.duration_ns() > 0)
            if not spans:
                raise RuntimeError(f"the profiler recorded no kernel of the {label}")
            timed[label] = {"kernel": spans[0][2], "durations": [d for _, d, _ in spans],
                            "gaps": [b[0] - a[0] - a[1] for a, b in zip(spans, spans[1:])]}
        return timed

    def blocks(durations: list[float]) -> list[float]:
        return [min(durations[i:i + BLOCK]) for i in range(0, len(durations) - BLOCK + 1, BLOCK)]

    def shortest() -> dict:
        per = {label: sorted(t["durations"]) for label, t in cupti().items()}
        label = min(per, key=lambda k: (per[k][len(per[k]) // 2], k))  # the kernel of the shortest median
        gaps = sorted(timed[label]["gaps"])
        return {"samples": blocks(timed[label]["durations"]), "kernel": timed[label]["kernel"], "launched": label,
                "unit": "µs", "higher_is_better": False, "launches_per_repeat": BLOCK,
                "shortest_by_kernel": {timed[k]["kernel"]: v[0] for k, v in per.items()},
                "median_by_kernel": {timed[k]["kernel"]: v[len(v) // 2] for k, v in per.items()},
                "gap_median_us": gaps[len(gaps) // 2] if gaps else None}

    def memory() -> dict:
        durations = cupti()[add]["durations"]
        return {"samples": blocks(durations), "kernel": timed[add]["kernel"], "unit": "µs",
                "higher_is_better": False, "launches_per_repeat": BLOCK,
                "median": sorted(durations)[len(durations) // 2]}

    def graph_gap() -> dict:
        per = 1000
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                x.add_(1.0)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(per):
                x.add_(1.0)
        secs = time_events(torch, graph.replay, repeat_s=GRAPH_REPEAT_S)
        return {"samples": [s / per * 1e6 for s in secs], "unit": "µs", "higher_is_better": False,
                "launches_per_repeat": per}

    def eager_gap() -> dict:
        secs = time_events(torch, lambda: x.add_(1.0), repeats=REPEATS, inner=EAGER)
        return {"samples": [s * 1e6 for s in secs], "unit": "µs", "higher_is_better": False,
                "launches_per_repeat": EAGER, "note": "host-bound: the harness's eager launch rate, not a chip fact"}

    return [
        _record("launch_shortest", f"duration of the shortest of {', '.join(tiny)}, {count} eager launches each "
                                   "timed by CUPTI (torch.profiler, as nsys times kernels); the kernel of the "
                                   f"shortest median; a repeat is its shortest of {BLOCK} consecutive launches "
                                   "(one launch's duration is quantised to CUPTI's 32 ns tick)", shortest),
        _record("launch_memory", f"duration of a one-element add (torch add_, a kernel that loads and stores), "
                                 f"{count} eager launches timed by CUPTI; a repeat is the shortest of {BLOCK} "
                                 "consecutive launches", memory),
        _record("launch_gap_graph", "start-to-start interval of one-element add kernels back to back in a CUDA graph "
                                    f"of 1000, CUDA events over ≥ {GRAPH_REPEAT_S * 1e3:.0f} ms of replays; shortest", graph_gap),
        _record("launch_gap_eager", f"start-to-start interval of {EAGER} eager one-element adds (host-bound), "
                                    "CUDA events; shortest", eager_gap),
    ]


def _allreduce_worker(rank: int, world: int, size: int, port: int, queue) -> None:
    import torch
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), NCCL_NVLS_ENABLE="0")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    x = torch.ones(size // 2, device=f"cuda:{rank}", dtype=torch.bfloat16)
    secs = time_events(torch, lambda: dist.all_reduce(x), repeats=10, warmup=3)
    dist.barrier()
    if rank == 0:
        queue.put(secs)
    dist.destroy_process_group()


def multi_gpu(torch, count: int) -> list[dict]:
    """Peer copy GPU 0 → 1 and the all-reduce bus bandwidth over every GPU (nccl-tests' busbw);
    skipped with one GPU."""
    skip = None if count >= 2 else f"{count} GPU at hand: needs 2 or more"
    size = 1 << 30

    def peer() -> dict:
        src = torch.randn(size // 4, device="cuda:0")
        dst = torch.empty(size // 4, device="cuda:1")
        secs = time_events(torch, lambda: dst.copy_(src, non_blocking=True))
        return {"bytes": size, "samples": rate(size, secs, 1e9), "unit": "GB/s",
                "peer_access": torch.cuda.can_device_access_peer(0, 1)}

    def allreduce() -> dict:
        import torch.multiprocessing as mp

        ctx = mp.get_context("spawn")
        queue = ctx.SimpleQueue()
        mp.start_processes(_allreduce_worker, args=(count, size, 29511, queue), nprocs=count, start_method="spawn")
        secs = queue.get()
        return {"bytes_per_rank": size, "ranks": count, "unit": "GB/s",
                "samples": [busbw(size, s, count)[1] for s in secs], "algbw": [busbw(size, s, count)[0] for s in secs]}

    return [
        _record("peer_copy", "1 GiB copy GPU 0 → GPU 1 (torch copy_), bytes over CUDA-event time, best of repeats",
                peer, skip),
        _record("all_reduce", "NCCL all-reduce of 1 GiB bf16 per rank over every GPU, one process each; bus bandwidth "
                              "= size / time × 2(n−1)/n (nccl-tests), best of 10", allreduce, skip),
    ]


def probe(only: set[str] | None = None) -> dict:
    """Every benchmark on GPU 0 (and the multi-GPU ones across all): the raw records."""
    began = time.monotonic()
    raw: dict = {"schema": RAW_SCHEMA, "date": datetime.now(UTC).isoformat(timespec="seconds"),
                 "host": platform.node(), "torch": None, "cuda": None, "driver": None, "gpus": 0, "device": {},
                 "records": []}
    try:
        import torch
    except ImportError:
        raw["records"].append({"name": "all", "status": "skipped", "reason": "torch is not installed"})
        return raw
    raw.update(torch=str(torch.__version__), cuda=torch.version.cuda)
    if not torch.cuda.is_available():
        raw["records"].append({"name": "all", "status": "skipped", "reason": "no CUDA device"})
        return raw
    dev = torch.device("cuda:0")
    props = torch.cuda.get_device_properties(dev)
    clocks = Clocks(0)
    raw["gpus"] = torch.cuda.device_count()
    raw["device"] = {"name": props.name, "sm_count": props.multi_processor_count, "memory_bytes": props.total_memory,
                     "l2_bytes": props.L2_cache_size, "compute_capability": f"{props.major}.{props.minor}",
                     "max_sm_clock_mhz": clocks.max_sm_mhz()}
    if clocks.handle is not None:
        try:
            raw["driver"] = clocks.nvml.nvmlSystemGetDriverVersion()
        except Exception:  # noqa: BLE001
            pass
    try:
        kernels = _kernels()
    except Exception as exc:  # noqa: BLE001 — the Triton benchmarks are then skipped, saying why
        kernels = None
        raw["triton_error"] = f"{type(exc).__name__}: {exc}"
    free = torch.cuda.mem_get_info(dev)[0]
    steps = {
        "dram": lambda: dram(torch, dev, free // 2),
        "l2": lambda: [l2_sweep(torch, dev, props.L2_cache_size, props.multi_processor_count, kernels)],
        "tensor": lambda: tensor(torch, dev, clocks),
        "fp32": lambda: fp32(torch, dev, props.multi_processor_count, clocks, kernels),
        "launch": lambda: launch(torch, dev, kernels),
        "multi": lambda: multi_gpu(torch, raw["gpus"]),
    }
    for name, step in steps.items():
        if only and name not in only:
            continue
        raw["records"].extend(step())
        torch.cuda.empty_cache()
    raw["seconds"] = round(time.monotonic() - began, 1)
    return raw


def datasheet_for(name: str | None) -> tuple[str | None, dict | None]:
    """The shipped datasheet chip file (generator/chips/<key>.yaml) naming this GPU, parsed."""
    import yaml

    chips = Path(__file__).resolve().parent.parent / "generator" / "chips"
    for path in sorted(chips.glob("*.yaml")):
        if path.stem.endswith("-measured"):
            continue
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if name and name in (data.get("gpu_names") or []):
            return path.stem, data
    return None, None


def _clean(value):
    """NaN → None, recursively (YAML and JSON both carry null)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def write(raw: dict, out: Path) -> Path:
    """The chip file at ``out`` and the raw records at ``out`` with ``.raw.json``; returns the latter."""
    import yaml

    from capture.probe_math import chip_file

    raw_path = out.with_suffix(".raw.json")
    key, sheet = datasheet_for(raw.get("device", {}).get("name"))
    chip = _clean(chip_file(raw, sheet, key))
    header = (f"# Measured by `python -m capture chip-probe` on {chip['probe'].get('device')} ({raw.get('date')});\n"
              f"# raw records: {raw_path.name}. Figures with source `measured` carry their method, repeats and\n"
              "# spread ((p90 − p10) / median of the repeats, %), and the datasheet figure beside them.\n")
    text = header + yaml.safe_dump(chip, sort_keys=False, allow_unicode=True, width=120)
    raw_path.write_text(json.dumps(_clean(raw), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    out.write_text(text, encoding="utf-8")
    return raw_path


def main(argv: list[str] | None = None) -> int:
    """``python -m capture.chip_probe --out FILE.yaml [--only STEP ...]`` (what ``capture chip-probe``
    and ``capture run --probe-chip`` run)."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m capture chip-probe", description=__doc__.split("\n\n")[0])
    add_arguments(p)
    from capture.tools import CaptureError

    try:
        return run(p.parse_args(argv))
    except CaptureError as exc:
        print(f"capture: {exc}", flush=True)
        return 2


STEPS = ("dram", "l2", "tensor", "fp32", "launch", "multi")


def add_arguments(p) -> None:
    p.add_argument("--out", type=Path, required=True, help="chip file to write (the raw records go beside it, "
                                                           ".raw.json); never overwritten")
    p.add_argument("--only", nargs="+", choices=STEPS, help="run only these benchmark groups (default: all)")


def run(args) -> int:
    from capture.tools import CaptureError

    raw_out = args.out.with_suffix(".raw.json")
    for path in (args.out, raw_out):
        if path.exists():
            raise CaptureError(f"{path} exists (never overwritten)")
    if not args.out.parent.is_dir():
        raise CaptureError(f"{args.out.parent}: no such directory")
    raw = probe(set(args.only) if args.only else None)
    if not raw["gpus"]:
        raise CaptureError(f"nothing measured: {raw['records'][0]['reason']} (run it on the GPU to describe)")
    write(raw, args.out)
    ran = [r for r in raw["records"] if r.get("status") == "ok"]
    _say(f"wrote {args.out} and {raw_out.name}: {len(ran)} of {len(raw['records'])} benchmarks ran")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
