"""The one interface every reader implements, and the registry that picks a reader for a file."""
from __future__ import annotations

import contextvars
import dataclasses
import hashlib
import importlib
import importlib.util
import pkgutil
import re
import tempfile
from collections.abc import Iterator
from contextlib import closing, contextmanager
from functools import cache
from pathlib import Path
from typing import Protocol

from generator.errors import InputError
from generator.model import Dataset
from generator.readers.inflate import chunks, decompress
from generator.readers.validate import checked
from generator.run_layout import COMPRESSED
from generator.temp_dirs import TempDir


class Reader(Protocol):
    """A reader for one input format.

    ``format`` is a short id ("nsys-sqlite", "ncu-csv", ...). ``sniff`` looks at the path and the
    first bytes of the file and says whether this reader claims it (cheap, never raises).
    ``read`` returns a :class:`Dataset` or raises :class:`InputError` naming the file and problem.
    ``stage`` (optional) restricts kernel tables to launches inside that NVTX range, where the
    format can tell.
    """

    format: str
    description: str

    def sniff(self, path: Path, head: bytes) -> bool: ...

    def read(self, path: Path, *, stage: str | None = None) -> Dataset: ...


@cache
def readers() -> tuple[Reader, ...]:
    """Every module in generator/readers/ that defines READER, in module-name order."""
    import generator.readers as package

    found: list[Reader] = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        name = f"generator.readers.{info.name}"
        if not _may_define_reader(name):
            continue
        reader = getattr(importlib.import_module(name), "READER", None)
        if reader is not None:
            found.append(reader)
    return tuple(found)


_READER_LINE = re.compile(rb"^READER\b", re.MULTILINE)


def _may_define_reader(name: str) -> bool:
    """Whether module ``name``'s source assigns READER at its top level (True where its source
    cannot be read): the helper modules beside the readers are not imported to find out (their
    pydantic models alone cost 0.1 s of CPU)."""
    spec = importlib.util.find_spec(name)
    origin = spec.origin if spec is not None else None
    if not origin or not origin.endswith(".py"):
        return True
    try:
        return _READER_LINE.search(Path(origin).read_bytes()) is not None
    except OSError:
        return True


#: How much of a file's start a reader's ``sniff`` sees.
HEAD_BYTES = 4096


def head_bytes(path: Path, n: int = HEAD_BYTES) -> bytes:
    """The first ``n`` bytes of ``path``; InputError naming it if it cannot be read."""
    try:
        with open(path, "rb") as fh:
            return fh.read(n)
    except OSError as exc:  # /proc/self/mem: EIO, naming no file
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from None


def detect(path: str | Path) -> Reader:
    """The reader that claims ``path``; InputError if none or the file is missing."""
    path = Path(path)
    if path.is_dir():
        raise InputError(path, "is a directory, not a file")
    if not path.is_file():
        raise InputError(path, "not a regular file (a device, pipe or socket)" if path.exists() else "no such file")
    head = head_bytes(path)
    if not head:
        raise InputError(path, "file is empty")
    for reader in readers():
        if reader.sniff(path, head):
            return reader
    raise InputError(path, "unrecognized format (not an nsys/ncu/PyTorch profiler output we know)")


def sniffed(path: Path) -> Reader | None:
    """The reader that claims ``path`` (a compressed one by its decompressed start), or None; never raises."""
    head, name = b"", path
    try:
        if path.suffix in COMPRESSED:
            name = path.with_suffix("")
            with closing(chunks(path)) as parts:
                for part in parts:
                    head += part
                    if len(head) >= HEAD_BYTES:
                        break
            head = head[:HEAD_BYTES]
        elif path.is_file():
            head = head_bytes(path)
    except (InputError, OSError):
        return None
    return next((reader for reader in readers() if head and reader.sniff(name, head)), None)


def read(path: str | Path, *, stage: str | None = None) -> Dataset:
    """Read any supported file into the normalized model.

    ``name.ext.xz`` and ``name.ext.zst`` are decompressed into a temporary directory first (the original is never
    touched); the Dataset's provenance still names the file the user gave.
    """
    path = Path(path)
    if path.suffix not in COMPRESSED:
        return checked(detect(path).read(path, stage=stage))
    with plain_file(path) as plain:
        dataset = checked(detect(plain).read(plain, stage=stage))
    return read_from(dataset, path)


def read_from(dataset: Dataset, path: Path) -> Dataset:
    """``dataset`` (read from a decompressed copy) with provenance naming the file ``path``."""
    dataset.provenance = dataclasses.replace(dataset.provenance, path=str(path), sha256=provenance_sha256(path))
    return dataset


@contextmanager
def naming(path: Path) -> Iterator[None]:
    """InputErrors raised inside name ``path`` (the file the user gave, not a decompressed copy)."""
    try:
        yield
    except InputError as exc:
        raise InputError(path, exc.problem) from None


@contextmanager
def plain_file(path: Path) -> Iterator[Path]:
    """``path`` itself, or for a compressed one (``*.xz``, ``*.zst``) a temporary decompressed copy that lives for the block."""
    if path.suffix not in COMPRESSED:
        yield path
        return
    if not path.is_file():
        raise InputError(path, "no such file")
    try:
        folder = TempDir("kernel-report-")
    except OSError as exc:
        raise InputError(path, no_room(tempfile.gettempdir(), exc)) from None
    with folder as tmp:
        plain = decompressed_copy(path, Path(tmp) / path.stem)
        with naming(path):
            yield plain


def no_room(folder: str | Path, exc: OSError) -> str:
    """The problem of an input that could not be decompressed into ``folder``."""
    return f"cannot decompress into {folder} ({exc.strerror or exc}); free space there or point TMPDIR elsewhere"


#: sha256 of the files digested in this process, by (path, size, mtime, inode)
_DIGESTS: dict[tuple[str, int, int, int], str] = {}
#: decompressed copies (by path, size, mtime, inode) → the file each was decompressed from
_COPIES: dict[tuple[str, int, int, int], Path] = {}


def _stat_key(path: Path) -> tuple[str, int, int, int]:
    stat = path.stat()
    return str(path.resolve()), stat.st_size, stat.st_mtime_ns, stat.st_ino


def decompressed_copy(path: Path, plain: Path) -> Path:
    """``plain``, written with the content of ``path`` (.xz or .zst); its digest (:func:`sha256_of`) is the
    one of ``path``, the file its provenance names (:func:`read_from`), not one of its own. InputError
    naming ``path`` when ``plain`` cannot be written (a full $TMPDIR)."""
    try:
        decompress(path, plain)
    except OSError as exc:
        raise InputError(path, no_room(plain.parent, exc)) from None
    _COPIES[_stat_key(plain)] = path
    return plain


#: Whether reads digest their file for Provenance.sha256 (:func:`undigested`).
_DIGESTING: contextvars.ContextVar[bool] = contextvars.ContextVar("digesting", default=True)


@contextmanager
def undigested() -> Iterator[None]:
    """Reads inside leave Provenance.sha256 None: for a caller that shows no digest (`inspect`;
    hashing a 10 M-launch export costs about 0.9 s of CPU)."""
    token = _DIGESTING.set(False)
    try:
        yield
    finally:
        _DIGESTING.reset(token)


def provenance_sha256(path: Path) -> str | None:
    """:func:`sha256_of` ``path`` for a Provenance, None inside :func:`undigested`."""
    return sha256_of(path) if _DIGESTING.get() else None


def sha256_of(path: Path) -> str:
    """sha256 of the file's bytes (remembered in this process while its size, mtime and inode
    stay); for a :func:`decompressed_copy`, the digest of the compressed file it came from."""
    key = _stat_key(path)
    if key in _COPIES:
        return sha256_of(_COPIES[key])
    if key not in _DIGESTS:
        if not path.is_file():  # a pipe or device would be read forever
            raise InputError(path, "not a regular file (a device, pipe or socket)")
        digest = hashlib.sha256()
        try:
            with open(path, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
        except OSError as exc:  # /proc/self/mem: EIO, naming no file
            raise InputError(path, f"cannot read: {exc.strerror or exc}") from None
        _DIGESTS[key] = digest.hexdigest()
    return _DIGESTS[key]
