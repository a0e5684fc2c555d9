"""``gemm``: one ``a @ b`` of random (m×k)·(k×n) matrices, stage ``gemm``."""
from __future__ import annotations

import torch

from capture.workloads import Iteration
from capture.workloads.params import Params
from capture.workloads.stages import stage


def build(params: Params) -> Iteration:
    if params.model:
        raise ValueError("gemm takes no --model")
    gen = torch.Generator(device=params.device).manual_seed(params.seed)
    a = torch.randn(params.m, params.k, device=params.device, dtype=params.torch_dtype(), generator=gen)
    b = torch.randn(params.k, params.n, device=params.device, dtype=params.torch_dtype(), generator=gen)

    def iteration() -> None:
        with stage("gemm"):
            a @ b

    return iteration
