"""Shared test helpers: where the real fixtures live; the fixtures stay untouched by the suite."""
from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).parent.parent
#: Inputs no test may modify, delete or add files to (a reader opening SQLite read-write would add -wal/-shm).
FIXTURES = (DATA, ROOT / "examples" / "runs")
#: Tests read their inputs afresh; tests/test_build_cache.py gives builds a cache of their own.
os.environ["KERNEL_REPORT_CACHE"] = "off"


def fixture_checksums() -> dict[str, str]:
    """sha256 of every file under FIXTURES, by path."""
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
            for root in FIXTURES for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="session", autouse=True)
def fixtures_untouched() -> Iterator[None]:
    """Checksums every fixture before the suite and compares after it: nothing modified, lost or added."""
    before = fixture_checksums()
    yield
    after = fixture_checksums()
    changed = sorted(p for p in before.keys() & after.keys() if before[p] != after[p])
    lost, added = sorted(before.keys() - after.keys()), sorted(after.keys() - before.keys())
    assert (changed, lost, added) == ([], [], []), f"fixtures modified {changed}, lost {lost}, added {added}"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA


@dataclass(frozen=True)
class BuiltSite:
    """The bundled example report built once per test session: site/ and its Markdown sources."""

    report: Path
    site: Path
    src: Path


@pytest.fixture(scope="session")
def example_site(tmp_path_factory: pytest.TempPathFactory) -> BuiltSite:
    from generator.cli import main
    from generator.commands.build import EXAMPLE

    root = tmp_path_factory.mktemp("example-build")
    site, src = root / "site", root / "site_src"
    assert main(["build", "--out", str(site), "--src", str(src)]) == 0  # includes mkdocs build --strict
    return BuiltSite(EXAMPLE, site, src)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--fuzz-long", action="store_true",
                     help="run the long fuzz campaign of tests/test_fuzz.py and print its counts")
