"""Nsight Systems reports (``.nsys-rep``, ``.qdrep``): binary, so ``nsys export`` turns them into
SQLite in a temporary directory and :mod:`.nsys_sqlite` reads that. ``nsys`` comes from ``$NSYS``
or PATH; without it the user is told the one command that makes the file readable.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from pathlib import Path

from generator.errors import InputError
from generator.model import Dataset
from generator.readers import nsys_sqlite
from generator.readers.base import provenance_sha256
from generator.temp_dirs import TempDir

MAGIC = b"NVIDIA Tegra Profiler Report"
SUFFIXES = (".nsys-rep", ".qdrep")
EXPORT_TIMEOUT_S = 3600


def find_nsys() -> str | None:
    """The nsys executable from $NSYS or PATH, or None."""
    candidate = os.environ.get("NSYS") or "nsys"
    return shutil.which(candidate)


class NsysRepReader:
    format = "nsys-rep"
    description = "Nsight Systems report (.nsys-rep / .qdrep; needs nsys to export it to SQLite)"

    def sniff(self, path: Path, head: bytes) -> bool:
        return head.startswith(MAGIC) or path.name.endswith(SUFFIXES)

    def read(self, path: Path, *, stage: str | None = None) -> Dataset:
        path = Path(path)
        nsys = find_nsys()
        if nsys is None:
            raise InputError(path, f"needs nsys to convert; run `nsys export --type sqlite {path.name}`")
        with TempDir("kernel-report-nsys-") as tmp:
            out = Path(tmp) / f"{path.stem}.sqlite"
            argv = [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "--output", str(out), str(path)]
            try:
                done = subprocess.run(argv, capture_output=True, text=True, timeout=EXPORT_TIMEOUT_S)
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise InputError(path, f"nsys export did not run ({exc})") from None
            if done.returncode != 0 or not out.is_file():
                lines = [ln.strip() for ln in (done.stderr or done.stdout).splitlines() if ln.strip()]
                raise InputError(path, f"nsys export failed: {lines[-1] if lines else f'exit {done.returncode}'}")
            try:
                dataset = nsys_sqlite.READER.read(out, stage=stage)
            except InputError as exc:
                raise InputError(path, exc.problem) from None
        dataset.provenance = dataclasses.replace(
            dataset.provenance, path=str(path), format=self.format, sha256=provenance_sha256(path),
            notes=(*dataset.provenance.notes, f"exported to SQLite with {nsys}"))
        return dataset


READER = NsysRepReader()
