"""Bounded, strict decompression of the .xz and .gz inputs users bring.

A compressed input may decompress to at most :func:`inflate_limit` bytes (real profiler files
compress well under 100×; a bomb is refused with one line instead of filling the disk or memory).
An .xz file must be whole xz streams and nothing else: truncated files and trailing garbage are
refused (Python's ``lzma.open`` silently ignores the latter).
"""
from __future__ import annotations

import gzip
import lzma
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from generator.errors import InputError

RATIO = 200
FLOOR = 128 << 20
CHUNK = 1 << 20
XZ_MAGIC = b"\xfd7zXZ\x00"


def inflate_limit(compressed_bytes: int) -> int:
    """The most bytes a compressed file of ``compressed_bytes`` may decompress to."""
    return max(FLOOR, RATIO * compressed_bytes)


def xz_chunks(path: Path) -> Iterator[bytes]:
    """The decompressed content of ``path`` in chunks; InputError if corrupt, truncated, followed by
    garbage or larger than :func:`inflate_limit`."""
    limit, produced = inflate_limit(path.stat().st_size), 0
    with open(path, "rb") as fh:
        decoder, pending = None, b""
        while True:
            block = pending or fh.read(CHUNK)
            pending = b""
            if not block:
                break
            if decoder is None:
                block = block.lstrip(b"\0")  # stream padding between streams
                if not block:
                    continue
                if not block.startswith(XZ_MAGIC[: len(block)]):
                    raise InputError(path, "corrupt or truncated xz file (not xz data, or garbage after "
                                           "its last stream)")
                decoder = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
            try:
                data = decoder.decompress(block, max_length=CHUNK)
                while data:
                    produced += len(data)
                    if produced > limit:
                        raise InputError(path, f"decompresses to more than {limit} bytes ({RATIO}× its size); "
                                               "decompress it yourself and give the plain file")
                    yield data
                    data = b"" if decoder.needs_input or decoder.eof else decoder.decompress(b"", max_length=CHUNK)
            except lzma.LZMAError as exc:
                raise InputError(path, f"corrupt or truncated xz file ({exc})") from None
            if decoder.eof:
                pending, decoder = decoder.unused_data, None
    if decoder is not None:
        raise InputError(path, "corrupt or truncated xz file (the stream does not end)")


def decompress_xz(path: Path, dest: Path) -> None:
    """Write the content of ``path`` (.xz) to ``dest``, bounded and strict (:func:`xz_chunks`)."""
    with open(dest, "wb") as out:
        for chunk in xz_chunks(path):
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
