"""Shared test helpers: where the real fixtures live."""
from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).parent.parent


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA
