"""The committed runs' files in whichever compression they are committed (examples/runs keeps the
bundled example's two runs zstd-compressed, the others xz-compressed)."""
from __future__ import annotations

from pathlib import Path

from generator.pipeline.inputs import first_existing
from generator.readers.inflate import chunks
from generator.run_layout import COMPRESSED, with_compressed


def committed(run: Path, name: str) -> Path:
    """The file ``name`` of ``run`` (e.g. ``nsys/report.sqlite``): plain, ``.xz`` or ``.zst``."""
    return first_existing(run, with_compressed(name), name)


def content(path: Path) -> bytes:
    """The bytes of a committed file, decompressed."""
    return b"".join(chunks(path)) if path.suffix in COMPRESSED else path.read_bytes()
