"""Whether the measured iteration ran the program the user runs: its kernels per stage (identity ×
launches) against those of an iteration without the capture's instrumentation.

:func:`stage_kernels` reads an nsys export (any NVTX ranges as stages, e.g. ``prefill`` and
``kr.repeat:prefill``, run_layout.REPEAT_NVTX_DOMAIN); :func:`compare` is pure. A kernel's identity
is its demangled name, each launch counted in the stage whose range was open at its launch call.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from generator.readers.nsys_sqlite import kernel_summary

SAME = "same kernels"
DIFFERENT = "different kernels"

Kernels = Mapping[str, Mapping[str, int]]  # stage → kernel name → launches


def stage_kernels(path: str | Path, ranges: Mapping[str, str]) -> dict[str, dict[str, int]]:
    """stage → {kernel name: launches} of each stage, counted in the NVTX range ``ranges[stage]``
    (InputError as :func:`~generator.readers.nsys_sqlite.kernel_summary`: a range missing or
    without a kernel launch)."""
    summary = kernel_summary(path, list(ranges.values()))
    stage_of = {r: s for s, r in ranges.items()}
    out: dict[str, dict[str, int]] = {s: {} for s in ranges}
    for rng, name, count in zip(summary["stage"], summary["name"], summary["count"]):
        out[stage_of[rng]][name] = int(count)
    return out


def compare(measured: Kernels, plain: Kernels, stages: Sequence[str], note: str) -> dict:
    """The manifest's ``fidelity``: per stage the launches of each side and the kernels (with their
    surplus launches) only one side ran; "same kernels" when no stage has any."""
    per_stage = {}
    for stage in stages:
        m, p = Counter(measured.get(stage, {})), Counter(plain.get(stage, {}))
        per_stage[stage] = {"measured_launches": sum(m.values()), "plain_launches": sum(p.values()),
                            "only_measured": dict(sorted((m - p).items())), "only_plain": dict(sorted((p - m).items()))}
    same = not any(s["only_measured"] or s["only_plain"] for s in per_stage.values())
    return {"verdict": SAME if same else DIFFERENT, "stages": per_stage, "note": note}
