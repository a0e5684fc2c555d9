"""Numbers and units as ncu prints them → canonical units."""
from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from generator.units import convert, normalize, parse_number


@pytest.mark.parametrize(("text", "value"), [
    ("1,031,877,059.00", 1031877059.0), ("10,776,576", 10776576.0), ("0.000061", 6.1e-05),
    ("-221", -221.0), ("8,334,424,242,424.24", 8334424242424.24), (" 3.072000 ", 3.072),
])
def test_parse_number(text, value):
    assert parse_number(text) == value


@pytest.mark.parametrize("text", ["n/a", "", "  ", "N/A"])
def test_missing_numbers_are_nan(text):
    assert math.isnan(parse_number(text))


@pytest.mark.parametrize("text", ["1,2", "CachePreferNone", "12abc", "1,0000"])
def test_non_numbers_raise(text):
    with pytest.raises(ValueError):
        parse_number(text)


@pytest.mark.parametrize(("value", "unit", "expected"), [
    (3.072, "us", (3072.0, "ns")), (3.072, "usecond", (3072.0, "ns")),
    (10776576, "nsecond", (10776576.0, "ns")), (1.5, "ms", (1.5e6, "ns")),
    (1.5, "msecond", (1.5e6, "ns")), (2.0, "second", (2e9, "ns")),
    (1.504, "Kbyte/cycle", (1504.0, "byte/cycle")), (2.166667, "Gbyte/s", (2.166667e9, "byte/s")),
    (1.0, "Tbyte/s", (1e12, "byte/s")), (1.5, "Gbyte/second", (1.5e9, "byte/s")),
    (3.153646, "Ghz", (3.153646e9, "Hz")), (1.91, "cycle/nsecond", (1.91e9, "Hz")),
    (1031877059.0, "cycle/second", (1031877059.0, "Hz")), (1.024, "Kbyte/block", (1024.0, "byte/block")),
    (7, "Mbyte", (7e6, "byte")), (32, "register/thread", (32.0, "register/thread")),
    (12.5, "%", (12.5, "%")), (5, "", (5.0, "")), (520, "inst", (520.0, "inst")),
])
def test_normalize(value, unit, expected):
    got = normalize(value, unit)
    assert got[1] == expected[1] and got[0] == pytest.approx(expected[0], rel=1e-12)


def test_convert_refuses_other_quantities():
    assert convert(3.072, "us", "ns") == pytest.approx(3072.0)
    with pytest.raises(ValueError):
        convert(3.0, "cycle", "ns")
    with pytest.raises(ValueError):
        convert(3.0, "%", "count")
    with pytest.raises(ValueError):
        convert(3.0, "furlong", "count")


@given(st.integers(min_value=0, max_value=10**15), st.sampled_from([0, 2, 6]))
def test_thousands_separators_round_trip(number, decimals):
    text = f"{number:,.{decimals}f}"
    assert parse_number(text) == float(f"{number:.{decimals}f}")
