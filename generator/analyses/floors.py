"""The physical floor of one kernel launch: the least time the hardware needs for the work.

floor = max(useful FLOP / the datapath's peak, ideal bytes / DRAM peak, the shortest kernel the GPU
ran in the capture). Useful FLOP and ideal bytes come from operator shapes; where shapes are unknown
the bytes ncu measured (DRAM bytes) stand in for the ideal bytes and no FLOP term applies. The basis
names the term that sets the floor; "at most X can be saved" is measured − floor, summed over launches.
"""
from __future__ import annotations

import math

USEFUL_FLOP, IDEAL_BYTES, DRAM_BYTES, SHORTEST = "useful_flop", "ideal_bytes", "dram_bytes", "shortest_kernel"
FROM_SHAPES = frozenset({USEFUL_FLOP, IDEAL_BYTES})


def _known(value: float | None) -> bool:
    return value is not None and not math.isnan(value) and value >= 0


def launch_floor(shortest_ns: float, *, useful_flop: float | None = None, flop_per_s: float | None = None,
                 ideal_bytes: float | None = None, dram_bytes: float | None = None,
                 dram_bytes_per_s: float | None = None) -> tuple[float, str]:
    """(floor in ns, basis) of one launch. Shapes known (``useful_flop`` or ``ideal_bytes``): the
    FLOP and ideal-byte terms; else ncu's ``dram_bytes``; the shortest kernel always. Ties go to the
    shape terms, then bytes, then the shortest kernel."""
    terms: list[tuple[float, str]] = []
    shapes = _known(useful_flop) or _known(ideal_bytes)
    if _known(useful_flop) and flop_per_s:
        terms.append((1e9 * useful_flop / flop_per_s, USEFUL_FLOP))
    if _known(ideal_bytes) and dram_bytes_per_s:
        terms.append((1e9 * ideal_bytes / dram_bytes_per_s, IDEAL_BYTES))
    if not shapes and _known(dram_bytes) and dram_bytes_per_s:
        terms.append((1e9 * dram_bytes / dram_bytes_per_s, DRAM_BYTES))
    terms.append((max(shortest_ns, 0.0), SHORTEST))
    floor, basis = max(terms, key=lambda t: t[0])
    return floor, basis


def datapath(flop_tensor: float | None, flop_fp32: float | None) -> str:
    """The datapath whose peak bounds a launch's useful FLOP: FP32 where ncu measured FP32 work and
    no tensor work, else the tensor cores (the fastest: a floor never above what the chip can do)."""
    if _known(flop_tensor) and flop_tensor == 0 and _known(flop_fp32) and flop_fp32 > 0:
        return "fp32"
    return "tensor"
