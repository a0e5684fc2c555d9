"""The run directory's ``manifest.json``: provenance, phases with timings and status, top-N, coverage.

A run directory is created once (never reused); the manifest is rewritten atomically after every
phase so that a crash leaves the last good state on disk.
"""
from __future__ import annotations

import json
import os
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from capture.tools import CaptureError

SCHEMA = "kernel-report/capture-run/1"


def create_run_dir(path: Path) -> Path:
    """Make ``path`` (and parents); CaptureError if it already exists."""
    try:
        path.mkdir(parents=True, exist_ok=False)
    except FileExistsError:
        raise CaptureError(f"run directory already exists (never overwritten): {path}") from None
    return path


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class PhaseFailed(Exception):
    """Raised inside a phase to mark it failed with a one-line message."""


class Manifest:
    """The manifest of one run directory, saved after each change."""

    def __init__(self, path: Path, **fields: object) -> None:
        self.path = path
        self.data: dict = {"schema": SCHEMA, "created": _now(), **fields, "phases": [], "notes": []}
        self.save()

    def save(self) -> None:
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.data, indent=1, ensure_ascii=False, default=str) + "\n")
        os.replace(tmp, self.path)

    def set(self, **fields: object) -> None:
        self.data.update(fields)
        self.save()

    def note(self, text: str) -> None:
        self.data["notes"].append(text)
        self.save()

    def skip(self, name: str, reason: str) -> None:
        self.data["phases"].append({"name": name, "status": "skipped", "error": reason})
        self.save()

    @staticmethod
    def now() -> tuple[str, float]:
        """A phase's start as :meth:`phase` takes it (``started``): wall clock and monotonic."""
        return _now(), time.monotonic()

    @contextmanager
    def phase(self, name: str, commands: list[list[str]] | None = None,
              started: tuple[str, float] | None = None) -> Iterator[dict]:
        """Record a phase: start/end time, seconds, status ok/failed and the error line.
        The yielded dict takes extra fields (e.g. commands run); PhaseFailed marks failure.
        ``started`` (:meth:`now`): the phase began then, in the background, and ends with the block."""
        begun, start = started or self.now()
        entry: dict = {"name": name, "status": "running", "start": begun, "commands": commands or []}
        self.data["phases"].append(entry)
        self.save()
        try:
            yield entry
        except PhaseFailed as exc:
            entry.update(status="failed", error=str(exc))
            raise
        except Exception as exc:  # noqa: BLE001 — one line for the user, the traceback to logs/
            entry.update(status="failed", error=f"{type(exc).__name__}: {exc}")
            logs = self.path.parent / "logs"
            logs.mkdir(exist_ok=True)
            (logs / f"{name}.traceback").write_text(traceback.format_exc())
            raise PhaseFailed(f"{name}: {entry['error']} (logs/{name}.traceback)") from exc
        else:
            entry["status"] = "ok"
        finally:
            entry.update(end=_now(), seconds=round(time.monotonic() - start, 3))
            self.save()
