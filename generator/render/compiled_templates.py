"""Compiled Jinja templates: kept in memory for every environment of the process (the pages', the
findings' and each MkDocs theme environment, which MkDocs and i18n make anew per build and
language) and, once :func:`keep_in` names a folder (the build cache's), on disk across builds.

Jinja checks each stored entry's bytecode magic (the Python version) and the template source's
checksum before using it: an edited template, or another Python, compiles anew and rewrites it. A
file that cannot be read back is compiled again, with one line saying so.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import jinja2
import jinja2.bccache


class CompiledTemplates(jinja2.BytecodeCache):
    def __init__(self) -> None:
        self._code: dict[str, bytes] = {}
        self.folder: Path | None = None

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        code = self._code.get(bucket.key)
        if code is None and self.folder is not None:
            try:
                code = (self.folder / bucket.key).read_bytes()
            except OSError:  # not stored yet
                return
        if code is None:
            return
        try:
            bucket.bytecode_from_string(code)
        except Exception:  # noqa: BLE001 - damaged: compiled again and rewritten
            print(f"build cache: compiled template {self.folder / bucket.key if self.folder else bucket.key} "
                  "is unreadable; compiled again", file=sys.stderr)
            bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        code = bucket.bytecode_to_string()
        self._code[bucket.key] = code
        if self.folder is None:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".", dir=self.folder)
            with os.fdopen(fd, "wb") as fh:
                fh.write(code)
            os.replace(tmp, self.folder / bucket.key)
        except OSError:  # a full disk or a read-only cache: kept in memory only
            pass


#: the one cache every template environment of the process uses
COMPILED = CompiledTemplates()


def keep_in(folder: Path | None) -> None:
    """Store compiled templates in ``folder`` too (None: in memory only)."""
    COMPILED.folder = folder
