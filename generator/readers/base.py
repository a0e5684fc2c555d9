"""The one interface every reader implements, and the registry that picks a reader for a file."""
from __future__ import annotations

import dataclasses
import hashlib
import importlib
import pkgutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Protocol

from generator.errors import InputError
from generator.model import Dataset
from generator.readers.inflate import decompress_xz
from generator.readers.validate import checked


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
        module = importlib.import_module(f"generator.readers.{info.name}")
        reader = getattr(module, "READER", None)
        if reader is not None:
            found.append(reader)
    return tuple(found)


def head_bytes(path: Path, n: int = 4096) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(n)


def detect(path: str | Path) -> Reader:
    """The reader that claims ``path``; InputError if none or the file is missing."""
    path = Path(path)
    if path.is_dir():
        raise InputError(path, "is a directory, not a file")
    if not path.is_file():
        raise InputError(path, "no such file")
    head = head_bytes(path)
    if not head:
        raise InputError(path, "file is empty")
    for reader in readers():
        if reader.sniff(path, head):
            return reader
    raise InputError(path, "unrecognized format (not an nsys/ncu/PyTorch profiler output we know)")


def read(path: str | Path, *, stage: str | None = None) -> Dataset:
    """Read any supported file into the normalized model.

    ``name.ext.xz`` is decompressed into a temporary directory first (the original is never
    touched); the Dataset's provenance still names the file the user gave.
    """
    path = Path(path)
    if path.suffix != ".xz":
        return checked(detect(path).read(path, stage=stage))
    with plain_file(path) as plain:
        dataset = checked(detect(plain).read(plain, stage=stage))
    return read_from(dataset, path)


def read_from(dataset: Dataset, path: Path) -> Dataset:
    """``dataset`` (read from a decompressed copy) with provenance naming the file ``path``."""
    dataset.provenance = dataclasses.replace(dataset.provenance, path=str(path), sha256=sha256_of(path))
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
    """``path`` itself, or for ``*.xz`` a temporary decompressed copy that lives for the block."""
    if path.suffix != ".xz":
        yield path
        return
    if not path.is_file():
        raise InputError(path, "no such file")
    with tempfile.TemporaryDirectory(prefix="kernel-report-") as tmp:
        plain = Path(tmp) / path.stem
        decompress_xz(path, plain)
        with naming(path):
            yield plain


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
