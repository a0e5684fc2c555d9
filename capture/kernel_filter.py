"""Kernel-name regexes for ``ncu --kernel-name regex:…``: exact, anchored alternations."""
from __future__ import annotations

#: Characters with a meaning in ECMAScript/POSIX-extended regexes (what ncu parses).
_META = frozenset("\\^$.|?*+()[]{}")

#: ncu's launch-matching names for NCCL kernels start with this.
NCCL_PREFIX = "nccl"


def escape(name: str) -> str:
    """``name`` with every regex metacharacter backslash-escaped, nothing else touched."""
    return "".join("\\" + c if c in _META else c for c in name)


def exact_regex(names: list[str]) -> str:
    """A regex that matches exactly the given names and nothing else."""
    if not names:
        raise ValueError("no kernel names to match")
    return "^(" + "|".join(escape(n) for n in dict.fromkeys(names)) + ")$"


def is_nccl(name: str) -> bool:
    base = name.removeprefix("void ").lstrip()
    return base.lower().startswith(NCCL_PREFIX)
