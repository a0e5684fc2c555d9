"""NVTX stage ranges: the one way a workload marks its stages.

``stage(name)`` pushes an NVTX range (the ``nvtx`` package, else ``torch.cuda.nvtx``) and tells
every registered hook. While ``quiet()`` is active (warm-up iterations) stages emit nothing, so
only the measured iteration carries stage ranges. ``timed()`` measures each stage's wall time
(the module-range overhead runs use it). ``ranges_to(push, pop)`` sends the stage ranges elsewhere
(the plain repeat's own NVTX domain), hooks still told.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_hooks: list[Callable[[str], None]] = []
_exit_hooks: list[Callable[[str], None]] = []
_quiet = 0
_timer: tuple[dict[str, float], Callable[[], None]] | None = None
_elsewhere: tuple[Callable[[str], object], Callable[[], object]] | None = None
#: The stage the process is in now (set in quiet iterations too), or None between stages.
current: str | None = None


def _nvtx_backend() -> tuple[str, Callable[[str], object], Callable[[], object]]:
    try:
        import nvtx

        return "nvtx", (lambda name: nvtx.push_range(name)), nvtx.pop_range
    except ImportError:
        import torch

        return "torch.cuda.nvtx", torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop


#: Which NVTX API the ranges go through ("nvtx" package, else "torch.cuda.nvtx").
BACKEND, _push, _pop = _nvtx_backend()


def add_hook(hook: Callable[[str], None]) -> None:
    """Call ``hook(name)`` each time a stage range is entered (not during ``quiet()``)."""
    _hooks.append(hook)


def remove_hook(hook: Callable[[str], None]) -> None:
    _hooks.remove(hook)


def add_exit_hook(hook: Callable[[str], None]) -> None:
    """Call ``hook(name)`` each time a stage range is about to close (not during ``quiet()``)."""
    _exit_hooks.append(hook)


def remove_exit_hook(hook: Callable[[str], None]) -> None:
    _exit_hooks.remove(hook)


@contextmanager
def range_(name: str) -> Iterator[None]:
    """A plain NVTX range (not a stage), e.g. ``warmup``."""
    _push(name)
    try:
        yield
    finally:
        _pop()


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Run the block inside the NVTX range ``name`` (a measured stage)."""
    global current
    outer, current = current, name
    try:
        with _stage_body(name):
            yield
    finally:
        current = outer


@contextmanager
def _stage_body(name: str) -> Iterator[None]:
    with _timed(name):
        if _quiet:
            yield
            return
        for hook in _hooks:
            hook(name)
        with range_(name) if _elsewhere is None else _range_elsewhere(name, *_elsewhere):
            try:
                yield
            finally:
                for hook in _exit_hooks:
                    hook(name)


@contextmanager
def _range_elsewhere(name: str, push: Callable[[str], object], pop: Callable[[], object]) -> Iterator[None]:
    push(name)
    try:
        yield
    finally:
        pop()


@contextmanager
def ranges_to(push: Callable[[str], object], pop: Callable[[], object]) -> Iterator[None]:
    """Stage ranges are ``push(name)`` … ``pop()`` instead of default-domain ranges while inside."""
    global _elsewhere
    _elsewhere = (push, pop)
    try:
        yield
    finally:
        _elsewhere = None


@contextmanager
def _timed(name: str) -> Iterator[None]:
    if _timer is None:
        yield
        return
    seconds, synchronize = _timer
    synchronize()
    start = time.perf_counter()
    yield
    synchronize()
    seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - start


@contextmanager
def timed(seconds: dict[str, float], synchronize: Callable[[], None]) -> Iterator[dict[str, float]]:
    """Add each stage's wall time (``synchronize()`` at both ends) to ``seconds`` while inside."""
    global _timer
    _timer = (seconds, synchronize)
    try:
        yield seconds
    finally:
        _timer = None


@contextmanager
def quiet() -> Iterator[None]:
    """Stages inside this block emit no ranges and call no hooks (warm-up iterations)."""
    global _quiet
    _quiet += 1
    try:
        yield
    finally:
        _quiet -= 1
