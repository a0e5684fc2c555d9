"""Calls run side by side in child processes forked from this thread: one child per call.

A child is a copy of this process: it starts in milliseconds with everything imported and sees every
value computed here before it was forked (nothing is pickled on the way in; only its value comes
back, pickled, errors as they were raised). Children are forked by :class:`Forks` from the thread
that calls it, never from a helper thread (a pool's helper threads fork with their locks held: a
replacement worker hung that way). A child ignores Ctrl-C (the parent handles it and ends its
children), dies of SIGTERM, and on Linux dies with the process that forked it.
"""
from __future__ import annotations

import ctypes
import gc
import multiprocessing
import os
import signal
import traceback
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

#: Thread names (Linux ``comm``) of runtimes a forked copy of this process cannot use: V8 and tokio
#: are vl-convert's (a copy keeps their handles but not their threads, and hangs at its first
#: conversion).
UNFORKABLE_THREADS = ("V8 ", "tokio-")
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def fork_safe() -> bool:
    """Whether a forked copy of this process can do everything this one can: ``fork`` exists and
    no thread of :data:`UNFORKABLE_THREADS` runs here (unknown without ``/proc``: not safe)."""
    if not can_fork():
        return False
    try:
        tasks = os.listdir("/proc/self/task")
        names = [Path(f"/proc/self/task/{t}/comm").read_text(encoding="utf-8", errors="replace") for t in tasks]
    except OSError:
        return False
    return not any(name.startswith(UNFORKABLE_THREADS) for name in names)


class ChildCrashed(RuntimeError):
    """A child ended without answering (killed, or a crash in native code)."""

    def __init__(self, exitcode: int | None) -> None:
        super().__init__(f"a forked worker ended without answering (exit status {exitcode})")
        self.exitcode = exitcode


class Forks:
    """Calls submitted by key, each run in its own forked child, at most ``limit`` at a time, in
    submission order; :meth:`next` gives the key and outcome of a finished one. With ``here`` the
    calls run in this process instead, one per :meth:`next`. Use as a context manager: leaving it
    kills the children still running."""

    def __init__(self, limit: int, *, here: bool = False, niceness: int = 0) -> None:
        self.limit = max(limit, 1)
        self.here = here
        self.niceness = niceness  # how much lower the children's CPU priority is (``nice``)
        self._waiting: deque[tuple[Hashable, Callable[[], Any]]] = deque()
        self._running: dict[Connection, tuple[Hashable, multiprocessing.process.BaseProcess]] = {}
        self._done: dict[Hashable, tuple[bool, Any]] = {}

    def __enter__(self) -> Forks:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Kill the children still running."""
        for reader, (_, child) in self._running.items():
            child.kill()
            child.join()
            reader.close()
        self._running.clear()

    def submit(self, key: Hashable, call: Callable[[], Any]) -> None:
        self._waiting.append((key, call))
        self._start()

    def pending(self) -> bool:
        return bool(self._waiting or self._running or self._done)

    def next(self) -> tuple[Hashable, bool, Any]:
        """(key, True, value) or (key, False, the error) of a finished call (one that :meth:`result`
        set aside first, else the earliest submitted of those that finished together)."""
        if self._done:
            key = next(iter(self._done))
            return (key, *self._done.pop(key))
        return self._finish()

    def result(self, key: Hashable) -> Any:
        """The value of the call submitted as ``key`` (waiting for it), or its error raised; other
        calls finishing meanwhile are kept for :meth:`next`."""
        while key not in self._done:
            got, ok, value = self._finish()
            self._done[got] = (ok, value)
        ok, value = self._done.pop(key)
        if not ok:
            raise value
        return value

    def _finish(self) -> tuple[Hashable, bool, Any]:
        """Run the next call here, or wait for a child to finish; its key and outcome."""
        if self.here:
            key, call = self._waiting.popleft()
            try:
                return key, True, call()
            except Exception as exc:  # noqa: BLE001 - the caller decides which error wins
                return key, False, exc
        ready = wait(list(self._running))
        reader = min(ready, key=list(self._running).index)
        key, child = self._running.pop(reader)
        try:
            ok, value = reader.recv()
        except (EOFError, OSError):
            child.join()
            ok, value = False, ChildCrashed(child.exitcode)
        reader.close()
        child.join()
        self._start()
        return key, ok, value

    def _start(self) -> None:
        if self.here:
            return
        fork = multiprocessing.get_context("fork")
        while self._waiting and len(self._running) < self.limit:
            key, call = self._waiting.popleft()
            reader, writer = fork.Pipe(duplex=False)
            # not daemonic: it may fork too
            child = fork.Process(target=_answer, args=(writer, call, os.getpid(), self.niceness))
            gc.freeze()  # the child's collector never walks (so never copies) the objects it inherits
            try:
                child.start()
            finally:
                gc.unfreeze()
            writer.close()
            self._running[reader] = (key, child)


def side_by_side(calls: Sequence[Callable[[], T]], limit: int, *, here: bool = False,
                 meanwhile: Callable[[], object] = lambda: None,
                 done: Callable[[int], None] = lambda i: None) -> list[T]:
    """Each call's value, in call order, each computed in a forked child (``here``: in this
    process), at most ``limit`` at a time; ``done(i)`` here as call ``i`` finishes, ``meanwhile()``
    here once the first children run. After a failure no further call starts; the failure raised
    is the first in call order (calls start in order), so it does not depend on timing."""
    values: list[Any] = [None] * len(calls)
    errors: dict[int, BaseException] = {}
    with Forks(limit, here=here) as forks:
        for index, call in enumerate(calls[:forks.limit]):
            forks.submit(index, call)
        queued = list(enumerate(calls))[forks.limit:]
        meanwhile()
        while forks.pending():
            index, ok, value = forks.next()
            if ok:
                values[index] = value
                done(index)
            else:
                errors[index] = value
            if queued and not errors:
                forks.submit(*queued.pop(0))
    if errors:
        raise errors[min(errors)]
    return values


def with_origin(exc: BaseException) -> BaseException:
    """``exc`` carrying the frames it was raised in as a note (notes survive pickling, tracebacks do
    not), so ``--debug`` shows where an error raised in a child, or kept to be raised later, came from."""
    if exc.__traceback__ is not None and hasattr(exc, "add_note"):
        frames = "".join(traceback.format_tb(exc.__traceback__))
        exc.add_note(f"raised at (most recent call last):\n{frames.rstrip()}")
    return exc


def _die_with(parent: int) -> None:
    """Linux: have the kernel kill this child when ``parent`` (the process that forked it) ends, so
    that a build killed mid-way leaves none of its children's children running."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # no libc prctl: not Linux
        return
    if prctl(_PR_SET_PDEATHSIG, signal.SIGKILL) == 0 and os.getppid() != parent:
        os._exit(1)  # it ended before the request took effect


def _answer(writer: Connection, call: Callable[[], Any], parent: int, niceness: int) -> None:
    """In a child: ``call()``, at ``niceness`` lower priority, sent back as (True, value), or (False,
    the error)."""
    _die_with(parent)
    if niceness:
        os.nice(niceness)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a forked CLI would raise KeyboardInterrupt here
    try:
        writer.send((True, call()))
    except BaseException as exc:  # every failure goes back to the parent
        try:
            writer.send((False, with_origin(exc)))
        except Exception:  # an error that does not pickle: its text
            plain = RuntimeError(f"{type(exc).__name__}: {exc}")
            plain.__notes__ = getattr(exc, "__notes__", [])
            writer.send((False, plain))
    finally:
        writer.close()
