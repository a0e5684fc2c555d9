"""Nsight Compute reports read once per test session.

``ncu_report`` keeps about 1 GB per load of an OCR-VLM report for the life of the process (it is
not freed when the context is dropped); the product's reader loads in a child process, and so does
the tests' own reading of a report's per-launch names and verdict titles here.
"""
from __future__ import annotations

import multiprocessing
import tempfile
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from functools import cache
from pathlib import Path
from typing import TypeVar

from helpers_runs import content

from generator.model import Dataset
from generator.readers import read

_FORMS = ("DEMANGLED", "FUNCTION", "MANGLED")
T = TypeVar("T")


def _in_child(function: Callable[[Path], T], path: Path) -> T:
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        return pool.submit(function, path).result()


@cache
def read_once(path: Path) -> Dataset:
    """``generator.readers.read(path)``, once per session (treat the result as read-only)."""
    return read(path)


@cache
def report_launches(path: Path) -> tuple[tuple[str, str, str, str | None], ...]:
    """Per launch, in report order: demangled, function and mangled name and the title of ncu's
    SOLBottleneck rule result (None without one), read with ncu_report itself."""
    return _in_child(_launches, path)


def _launches(path: Path) -> tuple[tuple[str, str, str, str | None], ...]:
    import ncu_report

    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "report.ncu-rep"
        plain.write_bytes(content(path))
        context = ncu_report.load_report(str(plain))
        launches = []
        for r in range(context.num_ranges()):
            rng = context.range_by_idx(r)
            for a in range(rng.num_actions()):
                action = rng.action_by_idx(a)
                names = [action.name(getattr(ncu_report.IAction, f"NameBase_{form}")) for form in _FORMS]
                title = next((result["rule_message"]["title"] for result in action.rule_results_as_dicts()
                              if result["rule_identifier"] == "SOLBottleneck"), None)
                launches.append((*names, title))
    return tuple(launches)
