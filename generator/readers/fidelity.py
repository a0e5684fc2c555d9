"""Whether the measured iteration ran the program the user runs: its kernels per stage (identity ×
launches) against those of an iteration without the capture's instrumentation.

:func:`stage_kernels` reads an nsys export (any NVTX ranges as stages, e.g. ``prefill`` and
``kr.repeat:prefill``, run_layout.REPEAT_NVTX_DOMAIN); :func:`compare` is pure. A kernel's identity
is its demangled name, each launch counted in the stage whose range was open at its launch call.
Several ranks (one process each): :func:`process_kernels` counts per process, :func:`compare_ranks`
compares each rank with itself only and gives the worst verdict of the ranks.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from generator.errors import InputError
from generator.readers.nsys_sqlite import kernel_summary, process_kernel_counts

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


def process_kernels(path: str | Path, ranges: Mapping[str, str], pids: Sequence[int]) -> dict[int, dict[str, dict[str, int]]]:
    """pid → :func:`stage_kernels` of that process alone, for each of ``pids``; InputError for a range
    that is missing, or a process that launched no kernel in any of the ranges (not in the export)."""
    frame = process_kernel_counts(path, list(ranges.values()))
    stage_of = {r: s for s, r in ranges.items()}
    out: dict[int, dict[str, dict[str, int]]] = {int(p): {s: {} for s in ranges} for p in pids}
    for rng, pid, name, count in zip(frame["stage"], frame["pid"], frame["name"], frame["count"]):
        if int(pid) in out:
            out[int(pid)][stage_of[rng]][name] = int(count)
    for pid, stages in out.items():
        if not any(stages.values()):
            raise InputError(Path(path), f"process {pid} launched no kernel in the NVTX ranges "
                                         f"{', '.join(ranges.values())}")
    return out


def compare_ranks(measured: Mapping[int, Kernels], plain: Mapping[int, Kernels], ranks: Sequence[Mapping],
                  stages: Sequence[str], note: str) -> tuple[dict, list[dict]]:
    """(the manifest's ``fidelity``, each rank's ``fidelity``) of a job of several ranks: each rank
    (``ranks[i]["pid"]`` keys ``measured`` and ``plain``) compared with itself only, as
    :func:`compare` without the note; the overall verdict is the worst of the ranks' and its stages
    sum the ranks' launches and surplus kernels."""
    per_rank = []
    for rank in ranks:
        record = compare(measured[rank["pid"]], plain[rank["pid"]], stages, note)
        del record["note"]
        per_rank.append(record)
    total = {}
    for stage in stages:
        rows = [r["stages"][stage] for r in per_rank]
        total[stage] = {"measured_launches": sum(r["measured_launches"] for r in rows),
                        "plain_launches": sum(r["plain_launches"] for r in rows),
                        **{side: dict(sorted(sum((Counter(r[side]) for r in rows), Counter()).items()))
                           for side in ("only_measured", "only_plain")}}
    worst = DIFFERENT if any(r["verdict"] == DIFFERENT for r in per_rank) else SAME
    return {"verdict": worst, "stages": total, "note": note}, per_rank
