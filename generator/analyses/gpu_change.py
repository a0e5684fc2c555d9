"""Did the GPU change between two captures? A version compared with the previous one, or the two
profiles of ``generator compare``, may have run on different GPUs (another model, SM count or memory
clock); then every measured difference mixes hardware and code, and the pages and the gate say so.

Facts are model.GPU_IDENTITY; a fact counts only where both sides state it (clocks to within
CLOCK_TOLERANCE_HZ, one device attribute read by two tools).
"""
from __future__ import annotations

from typing import Any

from generator.analyses.registry import Analysis
from generator.analyses.result import VersionResult
from generator.model import GPU_IDENTITY, VersionInputs

CLOCK_TOLERANCE_HZ = 1e6


def _differs(key: str, before: Any, after: Any) -> bool:
    if key.endswith("_hz"):
        return abs(float(before) - float(after)) >= CLOCK_TOLERANCE_HZ
    return before != after


def gpu_change(previous: dict[str, Any] | None, current: dict[str, Any] | None) -> dict[str, Any] | None:
    """``{"previous", "current"`` (GPU_IDENTITY facts), ``"differs"`` (facts both sides state that
    differ), ``"changed"}``; None when no fact is stated on both sides (the GPUs cannot be compared)."""
    before, after = previous or {}, current or {}
    shared = [key for key in GPU_IDENTITY if before.get(key) is not None and after.get(key) is not None]
    if not shared:
        return None
    differs = [key for key in shared if _differs(key, before[key], after[key])]
    return {"previous": {key: before.get(key) for key in GPU_IDENTITY},
            "current": {key: after.get(key) for key in GPU_IDENTITY},
            "differs": differs, "changed": bool(differs)}


def version_gpu_change(previous: VersionResult | None, inputs: VersionInputs) -> dict[str, Any] | None:
    """:func:`gpu_change` from the previous version's GPU to this one's; None for the first version."""
    if previous is None:
        return None
    return gpu_change(previous.gpu.identity() if previous.gpu else None,
                      inputs.gpus[0].identity() if inputs.gpus else None)


ANALYSES = [Analysis("gpu_change", version_gpu_change)]
