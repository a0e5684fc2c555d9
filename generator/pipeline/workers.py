"""Independent build work side by side in forked processes: one per CPU, at most one per task.

Tasks are closures the workers inherit through ``fork`` (nothing is pickled on the way in: a
version's analysis or config goes as it is); only their values come back, pickled. A worker
starts in milliseconds because it is a copy of this process with everything imported — the
reason an earlier try with spawned workers (re-importing pandas, Altair, MkDocs, jieba) lost on
two CPUs. Where ``fork`` is missing, or one task or one CPU leaves nothing to share, tasks run
here in order; so they do where a native runtime thread lives in this process (vl-convert's
JavaScript runtime, once anything here converted a chart: a forked copy keeps its handle but not its
threads, and hangs at its first conversion). Errors come back as they were raised (InputError crosses intact); the first
failing task in task order is the one raised, so the message does not depend on timing.
"""
from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import TypeVar

from generator.machine import cpus

T = TypeVar("T")

#: Thread names (Linux ``comm``) of runtimes a forked copy of this process cannot use: V8 and tokio
#: are vl-convert's.
UNFORKABLE_THREADS = ("V8 ", "tokio-")
#: The tasks of the pool being run: set before its workers are forked, read by them.
_TASKS: Sequence[Callable[[], object]] = ()


def fork_safe() -> bool:
    """Whether a forked copy of this process can do everything this one can: ``fork`` exists and
    no thread of :data:`UNFORKABLE_THREADS` runs here (unknown without ``/proc``: not safe)."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return False
    try:
        tasks = os.listdir("/proc/self/task")
        names = [Path(f"/proc/self/task/{t}/comm").read_text(encoding="utf-8", errors="replace") for t in tasks]
    except OSError:
        return False
    return not any(name.startswith(UNFORKABLE_THREADS) for name in names)


def _run(index: int) -> object:
    return _TASKS[index]()


def run_side_by_side(tasks: Sequence[Callable[[], T]], done: Callable[[int], None] = lambda i: None,
                     *, meanwhile: Callable[[], object] = lambda: None) -> list[T]:
    """Each task's value, in task order; ``done(i)`` when task ``i`` has finished (in this process).
    ``meanwhile()`` runs here once the workers are forked (else before the tasks): what this
    process prepares while it waits, for the next workers to inherit."""
    global _TASKS
    workers = min(cpus(), len(tasks))
    if workers < 2 or not fork_safe():
        meanwhile()
        values = []
        for i, task in enumerate(tasks):
            values.append(task())
            done(i)
        return values
    _TASKS = tasks
    try:
        # a fork-context pool starts all its workers at the first submit, here, before its own thread
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            futures = {pool.submit(_run, i): i for i in range(len(tasks))}
            meanwhile()
            for future in as_completed(futures):
                if future.exception() is None:
                    done(futures[future])
            ordered = sorted(futures, key=futures.__getitem__)
            return [future.result() for future in ordered]  # raises the first failure in task order
    finally:
        _TASKS = ()
