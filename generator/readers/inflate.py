"""Bounded, strict decompression of the .xz, .zst and .gz inputs users bring.

A compressed input may decompress to at most :func:`inflate_limit` bytes (real profiler files
compress well under 100×; a bomb is refused with one line instead of filling the disk or memory).
An .xz or .zst file must be whole streams (frames) of its format and nothing else: truncated files
and trailing garbage are refused (Python's ``lzma.open`` silently ignores the latter).
"""
from __future__ import annotations

import gzip
import lzma
import sys
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import BinaryIO, Protocol

from generator.errors import InputError

RATIO = 200
FLOOR = 128 << 20
CHUNK = 1 << 20


class _Decoder(Protocol):
    eof: bool
    needs_input: bool
    unused_data: bytes

    def decompress(self, data: bytes, max_length: int = -1) -> bytes: ...


@dataclass(frozen=True)
class _Format:
    """How one compressed format's streams start, are decoded and fail."""

    name: str
    starts: Callable[[bytes], bool]  # whether a block can be the start of a stream
    decoder: Callable[[], _Decoder]  # a decoder of one stream
    error: Callable[[], type[Exception]]  # the exception its decoder raises
    padded: bool = False  # whether zero bytes may stand between streams (xz's stream padding)


_XZ_MAGIC = b"\xfd7zXZ\x00"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def zstd() -> ModuleType:
    """Python's zstd module (``compression.zstd``; its backport before 3.14), imported at the first
    .zst file: the capture imports this module on GPU hosts that need not have the backport."""
    if sys.version_info >= (3, 14):
        from compression import zstd as module
    else:
        from backports import zstd as module
    return module


def _zstd_start(block: bytes) -> bool:
    """A zstd frame, or a skippable frame (magic 0x184D2A50-5F, little-endian)."""
    return _ZSTD_MAGIC.startswith(block[:4]) or (block[0] & 0xF0 == 0x50 and b"\x2a\x4d\x18".startswith(block[1:4]))


#: The compressed formats, by suffix (the suffix is removed from the decompressed copy's name): those a
#: run directory may hold (:data:`generator.run_layout.COMPRESSED`).
FORMATS: dict[str, _Format] = {
    ".xz": _Format("xz", lambda block: _XZ_MAGIC.startswith(block[:6]),
                   lambda: lzma.LZMADecompressor(format=lzma.FORMAT_XZ), lambda: lzma.LZMAError, padded=True),
    ".zst": _Format("zstd", _zstd_start, lambda: zstd().ZstdDecompressor(), lambda: zstd().ZstdError),
}


def inflate_limit(compressed_bytes: int) -> int:
    """The most bytes a compressed file of ``compressed_bytes`` may decompress to."""
    return max(FLOOR, RATIO * compressed_bytes)


def chunks(path: Path) -> Iterator[bytes]:
    """The decompressed content of ``path`` (.xz or .zst, by suffix) in chunks; InputError if
    corrupt, truncated, followed by garbage or larger than :func:`inflate_limit`."""
    form = FORMATS[path.suffix]
    corrupt = f"corrupt or truncated {form.name} file"
    limit, produced = inflate_limit(path.stat().st_size), 0
    with open(path, "rb") as fh:
        decoder, pending = None, b""
        while True:
            block = pending or fh.read(CHUNK)
            pending = b""
            if not block:
                break
            if decoder is None:
                if form.padded:
                    block = block.lstrip(b"\0")
                    if not block:
                        continue
                if not form.starts(block):
                    raise InputError(path, f"{corrupt} (not {form.name} data, or garbage after its last stream)")
                decoder = form.decoder()
            try:
                data = decoder.decompress(block, max_length=CHUNK)
                while data:
                    produced += len(data)
                    if produced > limit:
                        raise InputError(path, f"decompresses to more than {limit} bytes ({RATIO}× its size); "
                                               "decompress it yourself and give the plain file")
                    yield data
                    data = b"" if decoder.needs_input or decoder.eof else decoder.decompress(b"", max_length=CHUNK)
            except form.error() as exc:
                raise InputError(path, f"{corrupt} ({exc})") from None
            if decoder.eof:
                pending, decoder = decoder.unused_data, None
    if decoder is not None:
        raise InputError(path, f"{corrupt} (the stream does not end)")


def decompress(path: Path, dest: Path) -> None:
    """Write the content of ``path`` (.xz or .zst) to ``dest``, bounded and strict (:func:`chunks`)."""
    with open(dest, "wb") as out:
        for chunk in chunks(path):
            out.write(chunk)


def read_bounded(path: Path, stream: BinaryIO) -> bytes:
    """All of ``stream`` (a decompressing reader of ``path``), at most :func:`inflate_limit` bytes."""
    limit = inflate_limit(path.stat().st_size)
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise InputError(path, f"decompresses to more than {limit} bytes ({RATIO}× its size); "
                               "decompress it yourself and give the plain file")
    return data


def read_gz(path: Path) -> bytes:
    """The decompressed content of a .gz file, bounded; InputError if corrupt or truncated."""
    try:
        with gzip.open(path, "rb") as stream:
            return read_bounded(path, stream)
    except (gzip.BadGzipFile, EOFError, zlib.error, lzma.LZMAError):
        raise InputError(path, "corrupt or truncated gzip file") from None
