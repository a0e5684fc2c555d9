"""Kernel-name regexes for ncu: every metacharacter escaped, exact match only."""
from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capture.kernel_filter import escape, exact_regex, is_nccl

NASTY = [
    "void at::native::vectorized_elementwise_kernel<(int)4, at::native::FillFunctor<float>, "
    "std::array<char *, (unsigned long)1>>(int, T2, T3)",
    "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_tn_align1>(T1::Params)",
    "k[0]*+?|.^${}\\",
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_",
    "a.b",
]


@pytest.mark.parametrize("name", NASTY)
def test_each_name_matches_itself_exactly(name: str) -> None:
    pattern = re.compile(exact_regex(NASTY))
    assert pattern.fullmatch(name)
    assert pattern.search(name)  # anchored: search finds only the whole name
    assert not pattern.search("x" + name)
    assert not pattern.search(name + "x")


def test_metacharacters_lose_their_meaning() -> None:
    pattern = re.compile(exact_regex(["a.b", "k[0]*"]))
    assert not pattern.search("axb")  # '.' is literal
    assert not pattern.search("k0")  # '[0]' is literal
    assert not pattern.search("k[0]]]")  # '*' is literal
    assert pattern.search("k[0]*")


def test_escape_touches_only_metacharacters() -> None:
    assert escape("<a, b>(c) d|e") == "<a, b>\\(c\\) d\\|e"
    assert escape("plain_name") == "plain_name"


def test_duplicates_and_empty() -> None:
    assert exact_regex(["a", "a", "b"]) == "^(a|b)$"
    with pytest.raises(ValueError):
        exact_regex([])


@given(st.lists(st.text(min_size=1, max_size=40), min_size=1, max_size=6))
def test_any_names_match_exactly_themselves(names: list[str]) -> None:
    pattern = re.compile(exact_regex(names), re.DOTALL)
    for name in names:
        assert pattern.fullmatch(name)
    for other in ("\x00" + names[0], names[0] + "\x00"):
        assert bool(pattern.fullmatch(other)) == (other in names)


def test_nccl_detection() -> None:
    assert is_nccl("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm *, unsigned long, ncclWork *)")
    assert is_nccl("void ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)")
    assert not is_nccl(NASTY[0])
