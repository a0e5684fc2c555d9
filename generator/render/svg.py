"""The static SVG copies of the charts, rendered by vl-convert in a worker process.

vl-convert holds the GIL while it renders, and one process has one JS runtime drawing one chart at
a time: in this process the SVGs would cost their whole time after the pages. The worker process
(:func:`serve`, importing nothing but vl-convert and the fonts) draws them on another CPU while
the pages render; it is started once per process and serves every version of a build. It reads
one ``[path, spec]`` JSON line per chart; after a ``null`` line it answers with one JSON line
listing the charts since the last answer that it could not render.
"""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import vl_convert

from generator.errors import InputError
from generator.render.fonts import pin_fonts

#: the folder holding the ``generator`` package: the worker imports this copy of it, whatever
#: its working directory holds
_ROOT = Path(__file__).resolve().parents[2]
_WORKER = f"import sys; sys.path.insert(0, {str(_ROOT)!r}); from {__name__} import serve; serve()"
_FLUSH = b"null\n"


def _start() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", _WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE)


class _Worker:
    """The worker process and the thread feeding it (a full pipe blocks that thread, not the pages)."""

    def __init__(self, ahead: tuple[subprocess.Popen, int] | None = None) -> None:
        """A new worker, or one :func:`prestart` started: (its process, the pid that started it)."""
        self.process, starter = ahead or (_start(), os.getpid())
        self.owner = os.getpid()  # a forked copy of this process starts its own worker
        #: started by the process that forked this one: only that one, its parent, can wait for it
        self.adopted = starter != self.owner
        self.lines: queue.SimpleQueue[bytes] = queue.SimpleQueue()
        threading.Thread(target=self._feed, daemon=True).start()

    def _feed(self) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        try:
            while True:
                line = self.lines.get()
                stdin.write(line)
                if line == _FLUSH:
                    stdin.flush()
        except (BrokenPipeError, ValueError):  # the worker died (or was ended): its answer says so
            pass

    def answer(self) -> list[list[str]]:
        """``[path, problem]`` of each chart since the last answer that the worker could not render
        (it has written the others); a worker that died: how it ended, for every chart."""
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if line:
            return json.loads(line)
        if self.adopted:  # its exit status goes to the process that started it
            return [["", "worker ended without answering"]]
        return [["", f"worker exited with status {self.process.wait()}"]]

    def alive(self) -> bool:
        """Whether the worker process runs (an adopted one cannot be waited for: whether it exists)."""
        if self.adopted:
            try:
                os.kill(self.process.pid, 0)
            except OSError:
                return False
            return True
        return self.process.poll() is None

    def end(self) -> None:
        _end(self.process)


def _end(process: subprocess.Popen) -> None:
    """Kill a worker and close its pipes (lines still buffered for it are dropped)."""
    process.kill()
    process.wait()
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            try:
                pipe.close()
            except OSError:  # a broken pipe: what was buffered for the killed worker
                pass


_worker: _Worker | None = None
#: workers started ahead (:func:`prestart`) by what they were started for: (process, starting pid)
_ahead: dict[object, tuple[subprocess.Popen, int]] = {}


def prestart(keys: list[object]) -> None:
    """Start a worker for each of ``keys`` now, so that its runtime and fonts load while other work
    goes on: ``svg_batch(ahead=key)`` here, or in a child forked after this call, takes it."""
    for key in keys:
        if key not in _ahead:
            _ahead[key] = (_start(), os.getpid())


def release(key: object) -> None:
    """End the worker started ahead for ``key`` (in the process that started it; a child that took
    it is done with it), if there is one."""
    started = _ahead.pop(key, None)
    if started is not None:
        _end(started[0])


class SvgBatch:
    """The charts handed to the worker by one :func:`svg_batch` block."""

    def __init__(self, worker: _Worker) -> None:
        self._worker = worker
        self.paths: list[Path] = []
        self._finished = False

    def submit(self, spec: dict[str, Any], path: Path) -> None:
        """Render ``spec`` (free of XML-invalid characters: they abort the renderer) into ``path``.
        An empty file stands there until :meth:`finish` (so a site build started meanwhile lists it)."""
        self.paths.append(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()  # before the worker can write it
        self._worker.lines.put(json.dumps([str(path), spec]).encode("utf-8") + b"\n")

    def finish(self) -> None:
        """Wait until every SVG submitted is written, else raise InputError naming the first chart
        that failed; once (later calls return at once)."""
        if self._finished:
            return
        self._finished = True
        self._worker.lines.put(_FLUSH)
        failed = self._worker.answer()
        if failed:
            path, problem = failed[0]
            raise InputError(path or (self.paths or [_ROOT])[0], f"chart renderer failed ({problem})")


@contextmanager
def svg_batch(ahead: object = None) -> Iterator[SvgBatch]:
    """``with svg_batch() as svgs: svgs.submit(spec, path)``: every SVG written by the end of the
    block (or by ``svgs.finish()`` inside it), else InputError naming the first chart that
    failed. One block at a time. The worker is this process's, else the one :func:`prestart`
    started for ``ahead``, else a new one."""
    global _worker
    if _worker is None or _worker.owner != os.getpid() or not _worker.alive():
        _worker = _Worker(_ahead.pop(ahead, None) if ahead is not None else None)
    worker = _worker
    batch = SvgBatch(worker)
    try:
        yield batch
    except BaseException:
        if not batch._finished:
            _worker = None  # its answer would be out of step: the next block starts another
            worker.end()
        raise
    batch.finish()


def serve() -> None:
    """The worker: render each ``[path, spec]`` line of stdin; answer each ``null`` line."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the build's to handle: it ends this worker
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # whatever else prints cannot garble the answers
    pin_fonts()  # the shipped fonts only: the same SVG on every machine
    failed: list[list[str]] = []
    for line in sys.stdin.buffer:
        request = json.loads(line)
        if request is None:
            answers.write(json.dumps(failed) + "\n")
            answers.flush()
            failed = []
            continue
        path, spec = request
        try:
            svg = vl_convert.vegalite_to_svg(spec)
        except BaseException as exc:  # a Rust panic arrives as pyo3's PanicException (a BaseException)
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            failed.append([path, " ".join(str(exc).split())[:200]])
            continue
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(svg, encoding="utf-8")
