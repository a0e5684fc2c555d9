"""Numbers and units as Nsight Compute prints them, converted to the model's canonical units.

ncu scales units with SI prefixes ("Kbyte", "Gbyte/s", "usecond", "Ghz", "cycle/nsecond") and
prints numbers with thousands separators ("1,031,877,059.00") or "n/a". Canonical bases: time in
ns, frequency in Hz, sizes in bytes, rates per second; other counts keep their own unit word.
"""
from __future__ import annotations

import math
import re

_MISSING = {"", "n/a", "N/A", "nan", "NaN", "-"}
_NUMBER = re.compile(r"^[+-]?(\d{1,3}(,\d{3})+|\d+)?(\.\d*)?([eE][+-]?\d+)?$")
_SCALE = {"": 1.0, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_TIME = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1.0}  # seconds per unit
_TIME_UNIT = re.compile(r"^([num]?)(?:second|s)$")
_HZ = re.compile(r"^([KkMGT]?)hz$", re.IGNORECASE)
_COUNT_WORDS = (
    "byte|inst|cycle|sector|warp|thread|block|request|register|wavefront|pass|cluster|flop|op"
)
_COUNT = re.compile(rf"^([KkMGTP]?)({_COUNT_WORDS})$")
_PLAIN_WORDS = {"%", "SM", "warp", "thread", "block", "register", "inst", "cycle"}

#: Normalized units each canonical unit accepts ("count" accepts any non-physical unit).
_ACCEPTS = {
    "ns": {"ns"},
    "%": {"%"},
    "byte": {"byte", "byte/block"},
    "byte/s": {"byte/s"},
    "byte/cycle": {"byte/cycle"},
    "Hz": {"Hz"},
    "FLOP": {"", "inst", "thread", "flop", "op"},
    "FLOP/s": {"flop/s", "op/s", "inst/s", "/s"},
}
_PHYSICAL = {"ns", "byte", "byte/block", "byte/s", "Hz", "%"}


def parse_number(text: str | float | int | None) -> float:
    """A printed ncu number as float: thousands separators dropped, `n/a`/empty → NaN.

    Raises ValueError for text that is not a number.
    """
    if text is None:
        return math.nan
    if isinstance(text, (int, float)):
        return float(text)
    cell = text.strip()
    if cell in _MISSING:
        return math.nan
    if not _NUMBER.match(cell) or not any(ch.isdigit() for ch in cell):
        raise ValueError(f"not a number: {text!r}")
    return float(cell.replace(",", ""))


def _numerator(part: str) -> tuple[float, str]:
    if part in ("", "%"):
        return 1.0, part
    if m := _TIME_UNIT.match(part):
        return _TIME[m[1]] * 1e9, "ns"
    if m := _HZ.match(part):
        return _SCALE[m[1]], "Hz"
    if m := _COUNT.match(part):
        return _SCALE[m[1]], m[2]
    if part in _PLAIN_WORDS:
        return 1.0, part
    raise ValueError(f"unknown unit {part!r}")


def _denominator(part: str) -> tuple[float, str]:
    """Factor to multiply a value by, and the normalized denominator."""
    if m := _TIME_UNIT.match(part):
        return 1.0 / _TIME[m[1]], "s"
    if m := _COUNT.match(part):
        return 1.0 / _SCALE[m[1]], m[2]
    if part in _PLAIN_WORDS:
        return 1.0, part
    raise ValueError(f"unknown unit denominator {part!r}")


def normalize(value: float, unit: str) -> tuple[float, str]:
    """``value`` in ``unit`` → (value, normalized unit): ns, Hz, byte, byte/s, %, inst/cycle, ….

    Raises ValueError for a unit ncu does not print.
    """
    unit = (unit or "").strip()
    num, _, den = unit.partition("/")
    factor, base = _numerator(num)
    if den:
        if base == "ns" and den not in ("", "s"):
            raise ValueError(f"unknown unit {unit!r}")
        den_factor, den_base = _denominator(den)
        factor *= den_factor
        base = "Hz" if (base, den_base) == ("cycle", "s") else f"{base}/{den_base}"
    return value * factor, base


def convert(value: float, unit: str, canonical: str) -> float:
    """``value`` in ``unit`` expressed in a canonical unit of :mod:`generator.metric_table`.

    Raises ValueError when the unit is unknown or measures something else.
    """
    scaled, base = normalize(value, unit)
    accepted = _ACCEPTS.get(canonical)
    if accepted is None:  # "count": any unit that is not time, size, rate or share
        if base in _PHYSICAL or base.endswith("/s"):
            raise ValueError(f"unit {unit!r} is not a count")
        return scaled
    if base not in accepted:
        raise ValueError(f"unit {unit!r} cannot be expressed in {canonical}")
    return scaled
