"""The tool's folders in ``$TMPDIR``: marked and locked, so the next run removes those a killed one left.

Each folder (``kr-fonts-*``, ``kernel-report-*``) carries :data:`MARKER`, written once this process
holds an ``flock`` on the folder; a ``kill -9`` leaves it behind. The first folder a process makes
first removes every such folder of the same user that carries the marker and that no live process
holds locked (a folder of the same name without the marker is never touched).
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import weakref
from pathlib import Path

MARKER = ".kernel-report-temp"
#: the prefixes of every temporary folder the tool makes
PREFIXES = ("kr-fonts-", "kernel-report-")
_swept = False


class TempDir:
    """A marked, locked temporary folder (``name``), removed by :meth:`cleanup` or on leaving a ``with``;
    a drop-in for ``tempfile.TemporaryDirectory``."""

    def __init__(self, prefix: str) -> None:
        if not prefix.startswith(PREFIXES):
            raise ValueError(f"temporary folder prefix {prefix!r} is not one of {PREFIXES}")
        remove_stale()
        self.name = tempfile.mkdtemp(prefix=prefix)
        lock = os.open(self.name, os.O_RDONLY)
        fcntl.flock(lock, fcntl.LOCK_EX)
        Path(self.name, MARKER).write_bytes(b"")
        self._finalizer = weakref.finalize(self, _remove, self.name, lock, os.getpid())

    def cleanup(self) -> None:
        self._finalizer()

    def __enter__(self) -> str:
        return self.name

    def __exit__(self, *exc: object) -> None:
        self.cleanup()


def _remove(name: str, lock: int, pid: int) -> None:
    """Remove the folder and drop its lock, in the process that made it (a forked child inherits the
    object, and must not remove the folder its parent still uses)."""
    if os.getpid() != pid:
        return
    shutil.rmtree(name, ignore_errors=True)
    with contextlib.suppress(OSError):
        os.close(lock)


def remove_stale(root: Path | None = None, *, again: bool = False) -> list[Path]:
    """Remove the tool's temporary folders under ``root`` (default ``$TMPDIR``) that killed runs left:
    owned by this user, carrying :data:`MARKER`, locked by no live process. Once per process
    unless ``again``; the folders removed."""
    global _swept
    if _swept and not again:
        return []
    _swept = True
    removed = []
    folder = Path(root or tempfile.gettempdir())
    try:
        entries = sorted((e for e in os.scandir(folder) if e.name.startswith(PREFIXES)), key=lambda e: e.name)
    except OSError:
        return []
    for entry in entries:
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_uid != os.getuid():
                continue
            if not os.path.isfile(os.path.join(entry.path, MARKER)):
                continue
            fd = os.open(entry.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # a live run's
        try:
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(Path(entry.path))
        finally:
            os.close(fd)
    return removed
