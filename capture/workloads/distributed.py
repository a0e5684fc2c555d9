"""The worker as one rank of a ``torchrun`` job: the process group, what each rank is, the link.

``torchrun`` (``python -m capture run --nproc-per-node N``) starts one worker per GPU with ``RANK``,
``LOCAL_RANK`` and ``WORLD_SIZE`` in its environment; :func:`join` starts the process group (NCCL on
CUDA devices, gloo on the CPU) and binds the rank to GPU ``LOCAL_RANK``. A workload may call
``torch.distributed`` itself once it has. :func:`describe` is one rank's record (rank → pid → GPU)
and :func:`gather` brings every rank's record to rank 0, which writes the stages file.

:func:`link` measures all-reduce over the job's GPUs at a few sizes outside every stage range, in
the NVTX range :data:`LINK_RANGE`, with nccl-tests' definitions: algorithm bandwidth = bytes /
time, bus bandwidth = algorithm bandwidth × 2(n−1)/n (the bytes each rank's link carries in a
ring all-reduce), n = the world size. Time is the slowest rank's median over the repeats.
"""
from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass

#: NVTX range around the link measurement (never a stage).
LINK_RANGE = "kr.link"
#: all-reduce payloads of the link measurement (bytes): latency-bound to bandwidth-bound.
LINK_SIZES: tuple[int, ...] = (1 << 16, 1 << 20, 1 << 24, 1 << 27)
#: timed repeats per size, after as many untimed ones.
LINK_REPEATS = 5


@dataclass(frozen=True)
class Rank:
    """This process's place in the job (environment set by torchrun)."""

    rank: int
    local_rank: int
    world_size: int


def from_environment(env: dict[str, str] | None = None) -> Rank | None:
    """The rank torchrun set, or None outside a multi-process job (WORLD_SIZE unset or 1)."""
    env = os.environ if env is None else env
    world = int(env.get("WORLD_SIZE", "1"))
    if world <= 1:
        return None
    return Rank(int(env["RANK"]), int(env.get("LOCAL_RANK", env["RANK"])), world)


def join(rank: Rank, device: str) -> str:
    """Start the process group of ``rank`` (NCCL on CUDA, gloo otherwise) and bind the rank to its
    GPU; the device string the rank's workload should use."""
    import torch
    import torch.distributed as dist

    if device.startswith("cuda"):
        torch.cuda.set_device(rank.local_rank)
        device = f"cuda:{rank.local_rank}"
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.startswith("cuda") else "gloo",
                                **({"device_id": torch.device(device)} if device.startswith("cuda") else {}))
    return device


def leave() -> None:
    """End the process group (if one was started)."""
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()


def describe(rank: Rank, device: str) -> dict:
    """One rank's record: rank, local rank, pid, and the GPU it ran on (index, name, UUID; None on CPU)."""
    gpu = None
    if device.startswith("cuda"):
        import torch

        index = torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        gpu = {"index": index, "name": props.name, "uuid": f"GPU-{props.uuid}",
               "pci_bus_id": getattr(props, "pci_bus_id", None)}
    return {"rank": rank.rank, "local_rank": rank.local_rank, "pid": os.getpid(), "device": device, "gpu": gpu}


def gather(record: dict) -> list[dict] | None:
    """Every rank's ``record`` in rank order on rank 0; None on the other ranks."""
    import torch.distributed as dist

    records: list[dict | None] = [None] * dist.get_world_size()
    dist.all_gather_object(records, record)
    return records if dist.get_rank() == 0 else None


def bus_factor(world_size: int) -> float:
    """nccl-tests' all-reduce bus-bandwidth factor 2(n−1)/n."""
    return 2 * (world_size - 1) / world_size


def link_rows(world_size: int, seconds: dict[int, list[float]]) -> list[dict]:
    """Per payload size: the median of each repeat's slowest-rank time, algorithm and bus bandwidth (GB/s)."""
    rows = []
    for size, times in sorted(seconds.items()):
        median = statistics.median(times)
        algbw = size / median / 1e9
        rows.append({"bytes": size, "time_s": median, "repeats": len(times), "algbw_gbps": algbw,
                     "busbw_gbps": algbw * bus_factor(world_size)})
    return rows


def link(device: str, sizes: tuple[int, ...] = LINK_SIZES, repeats: int = LINK_REPEATS) -> dict:
    """All-reduce of float32 buffers of ``sizes`` bytes over the job's ranks: the manifest's ``link``."""
    import torch
    import torch.distributed as dist

    from capture.workloads.stages import range_

    world = dist.get_world_size()
    cuda = device.startswith("cuda")
    seconds: dict[int, list[float]] = {}

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    with range_(LINK_RANGE):
        for size in sizes:
            buf = torch.ones(size // 4, dtype=torch.float32, device=device)
            for _ in range(repeats):
                dist.all_reduce(buf)
            sync()
            times = []
            for _ in range(repeats):
                dist.barrier()
                sync()
                start = time.perf_counter()
                dist.all_reduce(buf)
                sync()
                took = torch.tensor([time.perf_counter() - start], dtype=torch.float64, device=device)
                dist.all_reduce(took, op=dist.ReduceOp.MAX)
                times.append(float(took.item()))
            seconds[size] = times
            del buf
    return {"collective": "all_reduce", "dtype": "float32", "backend": dist.get_backend(), "world_size": world,
            "method": "nccl-tests definitions: algbw = bytes / time, busbw = algbw * 2(n-1)/n; time = median over "
                      f"{repeats} repeats of the slowest rank's wall time (after {repeats} untimed)",
            "sizes": link_rows(world, seconds)}
