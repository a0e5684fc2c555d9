"""Workload parameters: one dataclass, its command-line flags, and the way back to flags."""
from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass, fields


@dataclass(frozen=True)
class Params:
    """What a workload may read. ``None`` means "the preset's default"."""

    device: str = "cuda"
    dtype: str = "bfloat16"
    layers: int | None = None
    batch: int = 1
    image_size: int | None = None
    prompt_len: int = 64
    new_tokens: int = 32
    attn_impl: str = "sdpa"
    m: int = 4096
    n: int = 4096
    k: int = 4096
    model: str | None = None
    warmup: int = 2
    seed: int = 0
    cuda_graph: bool = False
    module_depth: int | None = None
    tp: int | None = None

    def torch_dtype(self):  # -> torch.dtype
        import torch

        return getattr(torch, self.dtype)

    def as_dict(self) -> dict:
        return asdict(self)


_HELP = {
    "device": "torch device (cuda, cpu)",
    "dtype": "weights and activations dtype (bfloat16, float16, float32)",
    "layers": "decoder/encoder layers (default: the preset's)",
    "batch": "batch size",
    "image_size": "input image size in pixels (default: the preset's)",
    "prompt_len": "prompt tokens before decoding",
    "new_tokens": "greedy decode steps",
    "attn_impl": "attention implementation: eager or sdpa",
    "m": "GEMM rows of a",
    "n": "GEMM columns of b",
    "k": "GEMM inner dimension",
    "model": "local Hugging Face model directory (real weights) instead of random ones",
    "warmup": "warm-up iterations before the measured one (outside stage ranges); the capture marks the "
              "operator calls of the first and of the last one",
    "seed": "random seed",
    "cuda_graph": "llm-decode: static KV cache, the decode step captured once as a CUDA graph and replayed",
    "module_depth": "NVTX ranges around nn.Module forwards down to this depth of the module tree "
                    "(default: 5 for presets, 0 for module:function; 0 = off)",
    "tp": "llm-decode: tensor-parallel ranks through transformers' own plan (tp_plan='auto'); needs "
          "--nproc-per-node equal to it (default: none, each rank holds the whole model)",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add one ``--flag`` per Params field to ``parser``."""
    group = parser.add_argument_group("workload parameters")
    for f in fields(Params):
        flag = "--" + f.name.replace("_", "-")
        if f.type == "bool":
            group.add_argument(flag, dest=f.name, action="store_true", help=_HELP[f.name])
            continue
        kind = int if f.type in ("int", "int | None") else str
        extra = {"choices": ["eager", "sdpa"]} if f.name == "attn_impl" else {}
        group.add_argument(flag, dest=f.name, type=kind, default=f.default, help=_HELP[f.name], **extra)


def from_namespace(ns: argparse.Namespace) -> Params:
    return Params(**{f.name: getattr(ns, f.name) for f in fields(Params)})


def to_argv(params: Params) -> list[str]:
    """Flags that make ``from_namespace`` rebuild ``params`` (defaults left out)."""
    argv: list[str] = []
    for f in fields(Params):
        value = getattr(params, f.name)
        if value != f.default:
            flag = "--" + f.name.replace("_", "-")
            argv += [flag] if f.type == "bool" else [flag, str(value)]
    return argv
