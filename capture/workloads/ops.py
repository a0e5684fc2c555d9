"""Every ATen operator call of one iteration, numbered from 1 in the order the iteration makes them.

The nsys run marks the calls of its first iteration and of its last warm-up iteration (when that is
another), each inside an NVTX range of :data:`~generator.run_layout.OPS_NVTX_DOMAIN`
(:data:`~generator.run_layout.FIRST_OP_RANGE`, :data:`~generator.run_layout.OP_RANGE`), and
encloses its measured iteration in :data:`~generator.run_layout.MEASURED_RANGE`. Where a marked
iteration launched the same kernels in the same order as the measured one (checked on the export,
generator.readers.nsys_sqlite), the call that made a measured launch is known by its number. The
ncu run numbers the calls of its measured iteration the same way and opens a profile window around
exactly the calls it was given (capture.workloads.windows), instead of a whole module call.

The calls are seen by a ``TorchDispatchMode``: an operator another one calls from inside its own
implementation is not seen, in both runs alike. The mode ignores torch.compile's internals
(:meth:`Operators.ignore_compile_internals`): a compiled region runs its compiled code while marked,
and the calls it makes itself (its extern kernels, e.g. ``mm``) are numbered like any other.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from torch.utils._python_dispatch import TorchDispatchMode

from generator.run_layout import FIRST_OP_RANGE, MEASURED_RANGE, OP_RANGE, OPS_NVTX_DOMAIN, REPEAT_NVTX_DOMAIN

#: Told each call's number before it runs and after it returns (or raises).
Hook = Callable[[int], None]
#: Told each call that returned: its number, the operator, its arguments and its result.
Record = Callable[[int, object, tuple, dict, object], None]


class Operators(TorchDispatchMode):
    """Numbers each operator call while active; ``before``/``after`` hear every number, ``record``
    (after ``after``, outside the call's range) each call that returned."""

    def __init__(self, before: Hook, after: Hook, record: Record | None = None) -> None:
        super().__init__()
        self.before, self.after, self.record = before, after, record
        self.calls = 0

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        """True: dynamo compiles and runs compiled code while the mode is active. With the default
        (False) dynamo refuses to trace under a user dispatch mode, marks the frame skipped for the
        whole process (torch/_dynamo/convert_frame.py, "non-infra torch dispatch mode present"),
        and every later iteration, the measured one too, runs eager."""
        return True

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls += 1
        number = self.calls
        kwargs = kwargs or {}
        self.before(number)
        try:
            out = func(*args, **kwargs)
        finally:
            self.after(number)
        if self.record is not None:
            self.record(number, func, args, kwargs, out)
        return out


Backend = tuple[Callable[[str], None], Callable[[], None]]


def _domain() -> Backend:
    """(push a range of this name, pop) on the operator domain."""
    import nvtx

    domain = nvtx.get_domain(OPS_NVTX_DOMAIN)
    attributes = {m: domain.get_event_attributes(message=m) for m in (FIRST_OP_RANGE, OP_RANGE, MEASURED_RANGE)}
    return (lambda name: domain.push_range(attributes[name])), domain.pop_range


def _repeat_domain() -> Backend:
    """(push a range of this name, pop) on the plain repeat's domain."""
    import nvtx

    domain = nvtx.get_domain(REPEAT_NVTX_DOMAIN)
    return (lambda name: domain.push_range(domain.get_event_attributes(message=name))), domain.pop_range


class Marks:
    """The nsys run's marks: :meth:`operators` around a warm-up iteration (``first``: the first,
    else the last), :meth:`measured` around the measured one, and the stage ranges of its plain repeat
    (:attr:`repeat`, :data:`~generator.run_layout.REPEAT_NVTX_DOMAIN`). ``backend`` (push a range by
    name, pop) replaces NVTX in tests, in both domains."""

    def __init__(self, backend: Backend | None = None) -> None:
        self._push, self._pop = backend or _domain()
        self.repeat: Backend = backend or _repeat_domain()

    @contextmanager
    def operators(self, *, first: bool, record: Callable[[str], Record] | None = None) -> Iterator[Operators]:
        """Mark each call of the iteration run inside; ``record(iteration name)`` hears them."""
        name = FIRST_OP_RANGE if first else OP_RANGE
        with Operators(lambda _: self._push(name), lambda _: self._pop(), record(name) if record else None) as mode:
            yield mode

    @contextmanager
    def measured(self) -> Iterator[None]:
        self._push(MEASURED_RANGE)
        try:
            yield
        finally:
            self._pop()
