"""C++ kernel-name parsing: what nsys, ncu and Kineto print for one kernel → its scopes, base name and
template arguments (``parse_name``), one spelling of a name for matching (``canonical``) and the
kernel's identity (``identity``), the same from every form a profiler prints:

* full demangled names (nsys ``demangledName``, ncu ``--print-kernel-base demangled``);
* ncu's simplified names (CSV exports): middle scopes, casts and ``const`` dropped, enum casts
  ``(cute::SM90::GMMA::Major)0`` printed as ``0``, ``at::native::<unnamed>::`` cut to ``unnamed>::``;
* function/base names (nsys ``shortName``, ncu ``function``): no template arguments;
* mangled names (``_Z…``), demangled first (generator.analyses.kernel_identity).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import cpp_demangle

#: ``ns::<unnamed>::`` (full) and ncu's cut ``unnamed>::`` — also right after a template's ``<``, as in
#: ``CatArrayBatchedCopy<unnamed>::OpaqueType<2>, …>`` where the ``<`` opens the arguments.
_ANON = re.compile(r"\(anonymous namespace\)|(?<!\w)<unnamed>|(?<!\w)unnamed>(?=::)")
_LAMBDA_NSYS = re.compile(r"\[?lambda\((.*?)\) \(instance (\d+)\)\]")
_LAMBDA_GCC = re.compile(r"\{lambda\((.*?)\)#(\d+)\}")
#: a C-style cast of a literal: `(int)4`, `(unsigned long)2`, `(cute::SM90::GMMA::Major)0`
_CAST = re.compile(r"\([A-Za-z_][\w:]*(?:\s+[A-Za-z_][\w:]*)*\s*\)\s*(?=[-\d])")  # words apart: no backtracking blow-up
_INT_SUFFIX = re.compile(r"(?<![\w.])(-?\d+)(?:ull|ul|ll|u|l)\b", re.IGNORECASE)
_SCOPES = re.compile(r"(?:[A-Za-z_]\w*::)+")
_OPEN, _CLOSE = "<([{", ">)]}"
_WORD = re.compile(r"[A-Za-z_]\w*|-?\d+|#\d+")
#: the anonymous namespace, which forms spell differently (`<unnamed>`, `(anonymous namespace)`)
_DROPPABLE = frozenset({"unnamed", "anonymous", "namespace"})


@dataclass(frozen=True)
class ParsedName:
    """A demangled kernel name split at its top level (return type and parameters dropped)."""

    scopes: tuple[str, ...]  # enclosing namespaces/classes, e.g. ("at", "native")
    base: str  # function name without scope or template arguments
    template_args: tuple[str, ...]  # top-level template arguments as written
    truncated: bool  # the name ended inside its template argument list


def _split_top(text: str, sep: str) -> list[str]:
    """Split ``text`` at ``sep`` where no bracket is open."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE and depth:
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            i += len(sep)
            start = i
            continue
        i += 1
    parts.append(text[start:])
    return parts


def parse_name(raw: str) -> ParsedName:
    """Parse nsys/ncu/Kineto kernel names: `void ns::f<T…>(params)`, `f`, `ret<…>::type ns::f<…>(…)`."""
    s = _LAMBDA_NSYS.sub(r"lambda(\1)#\2", _ANON.sub("_anon_", raw.strip()))
    angle = paren = 0
    cut, last_space = len(s), -1
    for i, ch in enumerate(s):
        if ch == "<":
            angle += 1
        elif ch == ">" and angle:
            angle -= 1
        elif ch == "(":
            if angle == 0 and paren == 0 and i > 0:
                cut = i
                break
            paren += 1
        elif ch == ")" and paren:
            paren -= 1
        elif ch == " " and angle == 0 and paren == 0:
            last_space = i
    head = s[last_space + 1 : cut].strip()
    *scopes, last = _split_top(head, "::")
    lt = last.find("<")
    if lt < 0:
        return ParsedName(tuple(scopes), last, (), False)
    inner = last[lt + 1 :]
    depth = 0
    for ch in inner:
        depth += ch == "<"
        depth -= ch == ">"
    truncated = depth >= 0  # the closing '>' of the argument list is missing
    if not truncated:
        inner = inner[: inner.rfind(">")]
    args = tuple(a.strip() for a in _split_top(inner, ",") if a.strip())
    return ParsedName(tuple(scopes), last[:lt], args, truncated)


def canonical(text: str) -> str:
    """One spelling for what nsys, ncu and Kineto print differently: scopes, casts, lambdas, spaces."""
    text = _ANON.sub("_anon_", text)
    text = _LAMBDA_NSYS.sub(r"lambda(\1)#\2", text)
    text = _LAMBDA_GCC.sub(r"lambda(\1)#\2", text)
    text = _CAST.sub("", text)
    text = re.sub(r"\btrue\b", "1", text)
    text = re.sub(r"\bfalse\b", "0", text)
    text = _INT_SUFFIX.sub(r"\1", text)
    text = re.sub(r"\b(?:const|volatile|void)\b", "", text)
    text = re.sub(r"\s+", "", _SCOPES.sub("", text))  # scopes first: `bool at::f` and `bool f` both `boolf`
    text = _drop_scope_parameters(text)
    # ncu's function form drops `const::[` before a nested lambda: `::` carries nothing
    return _SCOPES.sub("", text).replace("::", "")


def words(name: str) -> tuple[str, ...]:
    """The identifiers and numbers of a name in order, namespaces and qualifiers kept (casts and lambda
    spellings aside): a form that drops parts of a name keeps a subsequence of its words."""
    text = _LAMBDA_GCC.sub(r"lambda(\1)#\2", _LAMBDA_NSYS.sub(r"lambda(\1)#\2", demangle(name)))
    text = re.sub(r"\bfalse\b", "0", re.sub(r"\btrue\b", "1", _INT_SUFFIX.sub(r"\1", _CAST.sub("", text))))
    return tuple(w for w in _WORD.findall(text) if w not in _DROPPABLE)


def _drop_scope_parameters(text: str) -> str:
    """`f(at::TensorIteratorBase &, const T1 &)::lambda` → `f()::lambda`: nsys prints template
    parameters in an enclosing function's parameter list where Kineto prints the substituted types."""
    end = text.find(")::")
    while end >= 0:
        depth, start = 0, end
        while start >= 0:
            depth += {")": 1, "(": -1}.get(text[start], 0)
            if depth == 0:
                break
            start -= 1
        text = text[: max(start, 0)] + "()" + text[end + 1 :]
        end = text.find(")::", max(start, 0) + 2)
    return text


def demangle(name: str) -> str:
    """A mangled (``_Z…``) name demangled by the C++ runtime; other names unchanged."""
    text = name.strip()
    if not text.startswith("_Z"):
        return text
    try:
        return cpp_demangle.demangle(text)
    except ValueError:  # not a valid Itanium name: keep it as the tool printed it
        return text
