"""When two kernel names are the same kernel: the matching rules of the nsys ↔ ncu join and of the
regression gate, in one place (names parsed by generator.analyses.cpp_names).

The join (:func:`candidates`) matches a name to the summary names with its base name whose
canonical template arguments agree (equal, or one a cut-off prefix of the other). The gate
(:func:`match_kernels`) pairs two profiles' kernels by raw name, then by :func:`template_key`,
then by :func:`base_name`, each only where the key is unique on both sides. Version comparison
matches kernels by raw name.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

from generator.analyses.cpp_names import canonical, parse_name


def base_name(name: str) -> str:
    """The function name without return type, scopes, template arguments or parameters."""
    return parse_name(name).base


def signature(name: str) -> tuple[str, str | None, bool]:
    """(base name, canonical template arguments or None when the name has none, truncated)."""
    parsed = parse_name(name)
    if not parsed.template_args and not parsed.truncated:
        return parsed.base, None, False
    return parsed.base, canonical(",".join(parsed.template_args)), parsed.truncated


def args_agree(a: tuple[str, str | None, bool], b: tuple[str, str | None, bool]) -> bool:
    """Template arguments are equal, or one side is a cut-off prefix of the other."""
    if a[1] is None or b[1] is None:
        return True  # a short name carries no template arguments to compare
    if a[1] == b[1]:
        return True
    return any(cut[2] and full[1].startswith(cut[1][:-8]) for cut, full in ((a, b), (b, a)))


def candidates(name: str, summary_names: list[str], signatures: dict[str, tuple]) -> list[str]:
    """The summary names ``name`` can be: same base name, then agreeing template arguments."""
    sig = signature(name)
    return [s for s in summary_names if signatures[s][0] == sig[0] and args_agree(sig, signatures[s])]


def template_key(name: str) -> str:
    """``base<canonical template arguments>``: one key per template instantiation."""
    parsed = parse_name(name)
    return f"{parsed.base}<{canonical(','.join(parsed.template_args))}>"


def _unique_keys(names: Iterable[str], key: Callable[[str], str]) -> dict[str, str]:
    """key → name for the keys exactly one of ``names`` has."""
    found: dict[str, list[str]] = {}
    for name in names:
        found.setdefault(key(name), []).append(name)
    return {k: v[0] for k, v in found.items() if len(v) == 1}


def match_kernels(baseline: Iterable[str], current: Iterable[str]) -> list[tuple[str, str, str]]:
    """(baseline name, current name, how) pairs: "name", then "signature", then "base name"."""
    left, right = list(dict.fromkeys(baseline)), list(dict.fromkeys(current))
    pairs = [(n, n, "name") for n in left if n in set(right)]
    for how, key in (("signature", template_key), ("base name", base_name)):
        matched_left = {p[0] for p in pairs}
        matched_right = {p[1] for p in pairs}
        a = _unique_keys((n for n in left if n not in matched_left), key)
        b = _unique_keys((n for n in right if n not in matched_right), key)
        pairs += [(a[k], b[k], how) for k in a if k in b]
    return pairs
