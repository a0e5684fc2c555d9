"""When two kernel names are the same kernel: the matching rules of the nsys ↔ ncu join, the
regression gate and version comparison, in one place (identities from
generator.analyses.kernel_identity).

The join (:func:`candidates`) matches a name to the summary names with an equal identity, else to
those whose identity agrees (a base name, or a cut-off name); of several, to those whose words hold
the name's in order, then to those that ran with the launch's configuration (:func:`launched_as`);
several still → ambiguous, stated, never a guess.
The gate and version comparison (:func:`match_kernels`) pair two profiles' kernels by raw name,
then by equal identity, then by agreeing identity, each only where it is unique on both sides:
different template instantiations never pair.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping
from functools import cache

from generator.analyses.cpp_names import words
from generator.analyses.kernel_identity import identity


def candidates(name: str, names: Iterable[str]) -> list[str]:
    """The ``names`` that can be ``name``: equal identity; only when none is equal, agreeing ones. Of
    several, those whose words (namespaces included) hold ``name``'s in order, when some do: a form
    that drops namespaces fits every kernel the full name fits, and others that differ in a namespace."""
    own = identity(name)
    agreeing = [n for n in names if own.agrees(identity(n))]
    found = [n for n in agreeing if identity(n) == own] or agreeing
    if len(found) < 2:
        return found
    mine = _words(name)[:-1] if own.truncated else _words(name)  # a cut-off name's last word may be cut
    return [n for n in found if _holds(_words(n), mine)] or found


_words = cache(words)


def _holds(longer: tuple[str, ...], shorter: tuple[str, ...]) -> bool:
    """``shorter`` is a subsequence of ``longer``."""
    it = iter(longer)
    return all(w in it for w in shorter)


#: a launch's (grid, block, registers per thread): grid and block as "(x, y, z)", None/NaN when unknown
Launch = tuple[str | None, str | None, float | None]


def launched_as(found: list[str], launch: Launch, configs: Mapping[str, Collection[Launch]]) -> list[str]:
    """Of several ``found`` kernels, the ones ``configs`` (kernel → every configuration it ran with)
    saw run with ``launch``'s grid, block and registers per thread (registers unknown on either side:
    grid and block); ``found`` unchanged when it holds one kernel, the grid or block is unknown, or
    no kernel fits (a configuration the other capture never ran decides nothing)."""
    grid, block, registers = launch
    if len(found) < 2 or grid is None or block is None:
        return found
    known = registers is not None and not math.isnan(registers)

    def fits(config: Launch) -> bool:
        same_registers = not known or config[2] is None or math.isnan(config[2]) or config[2] == registers
        return config[0] == grid and config[1] == block and same_registers

    kept = [name for name in found if any(fits(c) for c in configs.get(name, ()))]
    return kept or found


def _unique_keys(names: Iterable[str], key: Callable[[str], str]) -> dict[str, str]:
    """key → name for the keys exactly one of ``names`` has."""
    found: dict[str, list[str]] = {}
    for name in names:
        found.setdefault(key(name), []).append(name)
    return {k: v[0] for k, v in found.items() if len(v) == 1}


def _identity_key(name: str) -> str:
    return identity(name).key


def match_kernels(baseline: Iterable[str], current: Iterable[str]) -> list[tuple[str, str, str]]:
    """(baseline name, current name, how) pairs: "name", then "identity", then "agreeing identity"
    (only where exactly one kernel of each side agrees)."""
    left, right = list(dict.fromkeys(baseline)), list(dict.fromkeys(current))
    pairs = [(n, n, "name") for n in left if n in set(right)]
    matched_left, matched_right = {p[0] for p in pairs}, {p[1] for p in pairs}
    a = _unique_keys((n for n in left if n not in matched_left), _identity_key)
    b = _unique_keys((n for n in right if n not in matched_right), _identity_key)
    pairs += [(a[k], b[k], "identity") for k in a if k in b]
    matched_left, matched_right = {p[0] for p in pairs}, {p[1] for p in pairs}
    rest_left = [n for n in left if n not in matched_left]
    rest_right = [n for n in right if n not in matched_right]
    for name in rest_left:
        fits = [r for r in rest_right if identity(name).agrees(identity(r))]
        back = [n for n in rest_left if fits and identity(n).agrees(identity(fits[0]))]
        if len(fits) == 1 and back == [name]:
            pairs.append((name, fits[0], "agreeing identity"))
    return pairs
