"""NVTX ranges around ``nn.Module.forward`` calls, named by qualified module path and class.

Installed by the worker on the models a workload built (each module's ``forward`` is wrapped on
the instance, and restored after), so user code needs no change. The roots are the
``nn.Module`` objects the iteration closes over (or holds as attributes, for a callable object),
named by their variable (``llm``, ``sam`` …); when it holds none, every module alive after
``build`` that is no other module's child, named by class. A module gets a range when its path
has at most ``depth`` dotted parts below its root (the root itself is depth 0). Ranges go to their
own NVTX domain, :data:`DOMAIN`, so stage ranges and ``ncu --nvtx-include STAGE/`` see the same
stack as without them. A range reads ``<root>.<path> [<Class>]``, e.g.
``llm.model.layers.3.mlp [DeepseekV2MoE]``.
"""
from __future__ import annotations

import functools
import gc
import inspect
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import torch

from generator.run_layout import MODULE_NVTX_DOMAIN

#: NVTX domain of the module ranges.
DOMAIN = MODULE_NVTX_DOMAIN
#: How a range name is built from a module's path and class.
NAME_FORMAT = "{path} [{cls}]"
#: ``--module-depth`` when not given: presets get ranges to this depth; module:function gets none.
PRESET_DEPTH = 5


@dataclass
class ModuleRanges:
    """The installed ranges and what they name (recorded in the manifest)."""

    depth: int
    roots: dict[str, str] = field(default_factory=dict)  # root name → class
    modules: int = 0  # modules with a range
    _restore: list[Callable[[], None]] = field(default_factory=list, repr=False)

    def remove(self) -> None:
        for restore in reversed(self._restore):
            restore()
        self._restore.clear()

    def describe(self) -> dict:
        return {"domain": DOMAIN, "depth": self.depth, "name_format": NAME_FORMAT,
                "roots": self.roots, "modules": self.modules}


#: (make a push for a range name, pop): how ranges are emitted.
Backend = tuple[Callable[[str], Callable[[], None]], Callable[[], None]]


def _domain() -> Backend:
    """(make a push for a name, pop) on the module domain; the ``nvtx`` package is required."""
    import nvtx

    domain = nvtx.get_domain(DOMAIN)

    def pusher(name: str) -> Callable[[], None]:
        attributes = domain.get_event_attributes(message=name)
        return lambda: domain.push_range(attributes)

    return pusher, domain.pop_range


def _is_module(obj: object) -> bool:
    try:
        return isinstance(obj, torch.nn.Module)
    except ReferenceError:  # a weak proxy whose object is gone (torch.compile leaves some behind)
        return False


def roots_of(iteration: object) -> dict[str, torch.nn.Module]:
    """The models an iteration runs: modules its closure (or ``__dict__``) holds, by variable name;
    else every module alive that no other module contains, by class (``Linear``, ``Linear#2``)."""
    target = inspect.unwrap(iteration)
    if hasattr(target, "__code__"):  # a function: what its closure holds
        cells = {name: cell.cell_contents for name, cell in zip(target.__code__.co_freevars, target.__closure__ or ())
                 if cell.cell_contents is not None}
    else:  # a callable object: its attributes
        cells = dict(vars(target)) if hasattr(target, "__dict__") else {}
    named = {k: v for k, v in cells.items() if isinstance(v, torch.nn.Module)}
    if named:
        return named
    with warnings.catch_warnings():  # isinstance() on deprecated torch aliases warns
        warnings.simplefilter("ignore")
        alive = [o for o in gc.get_objects() if _is_module(o)]
    children = {id(c) for m in alive for c in m.children()}
    roots: dict[str, torch.nn.Module] = {}
    for module in alive:
        if id(module) not in children:
            base = type(module).__name__
            name = base if base not in roots else f"{base}#{sum(n.split('#')[0] == base for n in roots) + 1}"
            roots[name] = module
    return roots


class Observer(Protocol):
    """Told each wrapped module call, inside its range (the ncu profile windows)."""

    def module_enter(self, name: str) -> None: ...
    def module_exit(self, name: str) -> None: ...


def _wrap(module: torch.nn.Module, push: Callable[[], None], pop: Callable[[], None], name: str,
          observer: Observer | None) -> Callable[[], None]:
    """Give ``module`` an instance ``forward`` that runs the original inside the range; returns
    the undo. (Forward pre/post hooks cost 5 µs a call, 2 µs without ``always_call``, as PyTorch
    leaves its fast call path for hooked modules; this wrapper costs well under 1 µs.)"""
    had = "forward" in vars(module)
    original = module.forward

    if observer is None:
        def forward(*args, **kwargs):
            push()
            try:
                return original(*args, **kwargs)
            finally:
                pop()
    else:
        def forward(*args, **kwargs):
            push()
            observer.module_enter(name)
            try:
                return original(*args, **kwargs)
            finally:
                observer.module_exit(name)
                pop()

    module.forward = functools.wraps(original)(forward)  # signature inspection sees the original

    def restore() -> None:
        if had:
            module.forward = original
        else:
            del module.forward

    return restore


def install(iteration: object, depth: int, backend: Backend | None = None,
            observer: Observer | None = None) -> ModuleRanges:
    """Range every module of ``iteration``'s models down to ``depth``; nothing when depth is 0.
    ``backend`` (make-push, pop) replaces the NVTX domain (tests record with it); ``observer``
    hears every call after its range opens and before it closes."""
    ranges = ModuleRanges(depth=depth)
    if depth <= 0:
        return ranges
    pusher, pop = backend or _domain()
    seen: set[int] = set()
    for root_name, root in roots_of(iteration).items():
        ranges.roots[root_name] = type(root).__name__
        for path, module in root.named_modules():
            if id(module) in seen or (path and path.count(".") + 1 > depth):
                continue
            seen.add(id(module))
            name = NAME_FORMAT.format(path=f"{root_name}.{path}" if path else root_name, cls=type(module).__name__)
            ranges._restore.append(_wrap(module, pusher(name), pop, name, observer))
            ranges.modules += 1
    return ranges
