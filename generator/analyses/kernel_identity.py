"""One kernel identity for every form a profiler prints a kernel's name in.

``identity(name)`` gives the same :class:`KernelIdentity` for a kernel's full demangled name (nsys,
ncu), ncu's simplified name (its CSV exports), its mangled name (``_Z…``) and — with the template
arguments unknown — its function/base name. Two identities *agree* when they can be the same
kernel: equal function and equal canonical template arguments, or one side carries no arguments
(a base name) or was cut off (a prefix of the other). Distinct template instantiations stay
distinct. The library (from the recognizers) describes an identity but is not part of its key:
ncu's simplified names drop the namespaces that tell it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

from generator.analyses.cpp_names import canonical, demangle, parse_name
from generator.analyses.family_words import families
from generator.analyses.recognizers import recognize

#: how much of a cut-off argument list is compared (ncu/nsys cut names mid-argument)
_CUT_SLACK = 8


@dataclass(frozen=True)
class KernelIdentity:
    """``function`` (base name) and ``args`` (canonical top-level template arguments, None when the
    form carries none); ``truncated`` when the name ended inside its argument list."""

    function: str
    args: str | None
    truncated: bool = False
    library: str | None = field(default=None, compare=False)

    @property
    def key(self) -> str:
        """function<args>, or the function alone when the form has no template arguments."""
        return self.function if self.args is None else f"{self.function}<{self.args}>"

    def agrees(self, other: KernelIdentity) -> bool:
        """Can ``self`` and ``other`` be one kernel (see the module docstring)?"""
        if self.function != other.function:
            return False
        if self.args is None or other.args is None or self.args == other.args:
            return True
        return any(cut.truncated and full.args.startswith(cut.args[:-_CUT_SLACK])
                   for cut, full in ((self, other), (other, self)))


@cache
def identity(name: str) -> KernelIdentity:
    """The identity of a kernel name in any form (demangled, ncu simplified, mangled, base)."""
    text = demangle(name)
    parsed = parse_name(text)
    library = families()["families"][recognize(text).family]["source_lib"]
    if not parsed.template_args and not parsed.truncated:
        return KernelIdentity(parsed.base, None, False, library)
    return KernelIdentity(parsed.base, canonical(",".join(parsed.template_args)), parsed.truncated, library)
