"""Shared test helpers: where the real fixtures live."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).parent.parent


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
