"""Workload presets: callables that build a model and return one NVTX-staged iteration.

A workload is ``build(params: Params) -> iteration``; ``iteration()`` runs one inference inside
:func:`capture.workloads.stages.stage` ranges. Presets are named here; ``module:function`` names
user code with the same signature.

A workload that generates tokens says how many one iteration generates by setting the attribute
``generated_tokens`` (int) on the iteration it returns (``iteration.generated_tokens = batch *
new_tokens``; a callable object may carry it too); the manifest's ``tokens.generated`` is that
number, and null for a workload that does not set it (it generates none: no tokens are quoted).
"""
from __future__ import annotations

import importlib
from collections.abc import Callable

from capture.workloads.params import Params

Iteration = Callable[[], None]
Workload = Callable[[Params], Iteration]

#: preset name → (module:function, stages in order, one-line description)
PRESETS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "ocr-vlm": (
        "capture.workloads.ocr_vlm:build",
        ("sam", "clip", "projector", "prefill", "decode"),
        "DeepSeek-OCR-shaped VLM: SAM ViT-B 1024 px → CLIP-L 224 px → projector → 3B MoE decoder",
    ),
    "llm-decode": (
        "capture.workloads.llm_decode:build",
        ("prefill", "decode"),
        "Llama-style dense decoder (GQA): prefill + greedy decode",
    ),
    "vit": ("capture.workloads.vit:build", ("vit",), "ViT image classifier at --image-size and --batch"),
    "gemm": ("capture.workloads.gemm:build", ("gemm",), "one a @ b of --m --n --k"),
}


class WorkloadError(Exception):
    """A workload name or parameter that cannot be used (one line)."""


def check_name(spec: str) -> str:
    """The ``module:function`` a preset name or ``module:function`` stands for, without importing it;
    an unknown name is a WorkloadError."""
    target = PRESETS[spec][0] if spec in PRESETS else spec
    if ":" not in target:
        raise WorkloadError(f"unknown workload {spec!r} (presets: {', '.join(PRESETS)}; or module:function)")
    return target


def resolve(spec: str) -> Workload:
    """The build function for a preset name or ``module:function``."""
    target = check_name(spec)
    module_name, func_name = target.split(":", 1)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise WorkloadError(f"cannot import workload module {module_name!r}: {exc}") from None
    func = getattr(module, func_name, None)
    if not callable(func):
        raise WorkloadError(f"{module_name!r} has no callable {func_name!r}")
    return func


def generated_tokens(iteration: Iteration) -> int | None:
    """The tokens one iteration generates, as the workload declared them (None: not declared)."""
    tokens = getattr(iteration, "generated_tokens", None)
    return int(tokens) if tokens is not None else None


def declared_stages(spec: str) -> tuple[str, ...] | None:
    """A preset's stages in order; None for user code (known only once it has run)."""
    return PRESETS[spec][1] if spec in PRESETS else None
