"""What the module ranges cost the measured stages, stated two ways.

*Direct*: the module calls each stage makes (counted in one untimed iteration) × the in-process
cost of one wrapped call with its range (a no-op module timed wrapped and bare, best of five).
Were the ranges' own CPU work on the launching thread all they added, this would bound what they
add to a stage's wall time; the timed figure checks that (on an H100 it once read 15–25 % where this
read under 3 %). *Timed*: ``runs`` iterations with and without the ranges, alternating in ABBA
order; the median of the paired relative differences, beside the run-to-run spread of the
iterations without ranges (a timed difference smaller than that spread is noise).
"""
from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Callable

import torch

from capture.workloads import modules, stages

#: NVTX range (default domain) around the overhead iterations, outside every stage.
OVERHEAD_RANGE = "module_overhead"
#: Wrapped no-op calls timed per repeat to price one module range.
PROBE_CALLS = 2000


class _CallCounter:
    """Observer counting module calls per stage."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def module_enter(self, name: str) -> None:
        if stages.current is not None:
            self.calls[stages.current] += 1

    def module_exit(self, name: str) -> None:
        pass


def seconds_per_call(backend: modules.Backend | None = None, calls: int = PROBE_CALLS) -> float:
    """In-process cost of one module call's range: a no-op module called ``calls`` times wrapped
    and bare, best of five each."""
    probe = torch.nn.Identity()
    arg = torch.empty(0)

    def best() -> float:
        times = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(calls):
                probe(arg)
            times.append(time.perf_counter() - start)
        return min(times)

    bare = best()
    ranges = modules.install(lambda: probe(arg), 1, backend=backend)
    try:
        wrapped = best()
    finally:
        ranges.remove()
    return max(wrapped - bare, 0.0) / calls


def _pct(part: float, whole: float) -> float | None:
    return 100.0 * part / whole if whole else None


def measure(iteration: Callable[[], object], synchronize: Callable[[], None], runs: int, depth: int,
            backend: modules.Backend | None = None) -> dict:
    """The module-range overhead of ``iteration`` per stage and in total (see the module doc)."""
    counter = _CallCounter()
    timed: dict[bool, list[dict[str, float]]] = {False: [], True: []}
    with stages.quiet(), stages.range_(OVERHEAD_RANGE):
        ranges = modules.install(iteration, depth, backend=backend, observer=counter)
        iteration()
        synchronize()
        ranges.remove()
        for i in range(runs):
            for hooked in ((False, True) if i % 2 == 0 else (True, False)):
                ranges = modules.install(iteration, depth if hooked else 0, backend=backend)
                with stages.timed({}, synchronize) as seconds:
                    iteration()
                ranges.remove()
                timed[hooked].append(seconds)
        per_call = seconds_per_call(backend)

    def figures(without: list[float], with_: list[float], calls: int) -> dict:
        base = statistics.median(without)
        return {
            "calls": calls,
            "without_s": base,
            "with_s": statistics.median(with_),
            "direct_pct": _pct(calls * per_call, base),
            "timed_pct": statistics.median(100.0 * (w / o - 1) for o, w in zip(without, with_) if o) if base else None,
            "spread_pct": statistics.median(_pct(abs(o - base), base) for o in without) if base else None,
        }

    names = list(dict.fromkeys(s for run in timed[False] for s in run))
    per_stage = {s: figures([r.get(s, 0.0) for r in timed[False]], [r.get(s, 0.0) for r in timed[True]],
                            counter.calls[s]) for s in names}
    total = figures([sum(r.values()) for r in timed[False]], [sum(r.values()) for r in timed[True]],
                    sum(counter.calls[s] for s in names))
    return {"runs": runs, "seconds_per_call": per_call, "stages": per_stage, "total": total}
