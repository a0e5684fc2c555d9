"""A ``torch.compile``'d block (LayerNorm → Linear → GELU → Linear, Inductor), stage ``block``.

Not a preset: ``--workload capture.workloads.compiled:build``, as a user's compiled program is
captured. ``--m`` rows of width ``--k`` (the hidden size; the MLP is 4× wider), ``--dtype``. The
block is compiled and run once while it is built, so the warm-up and measured iterations run the
compiled code (Inductor's fused kernels: Triton on a GPU, C++ on the CPU).
"""
from __future__ import annotations

import torch

from capture.workloads import Iteration
from capture.workloads.params import Params
from capture.workloads.stages import stage


def build(params: Params) -> Iteration:
    if params.model:
        raise ValueError("capture.workloads.compiled builds its own block; it takes no --model")
    dtype, hidden = params.torch_dtype(), params.k
    with torch.device(params.device):
        block = torch.nn.Sequential(torch.nn.LayerNorm(hidden), torch.nn.Linear(hidden, 4 * hidden), torch.nn.GELU(),
                                    torch.nn.Linear(4 * hidden, hidden)).to(dtype).eval()
    gen = torch.Generator(device=params.device).manual_seed(params.seed)
    x = torch.randn(params.m, hidden, device=params.device, dtype=dtype, generator=gen)
    compiled = torch.compile(block)
    with torch.inference_mode():
        compiled(x)

    @torch.inference_mode()
    def iteration() -> None:
        with stage("block"):
            compiled(x)

    return iteration
