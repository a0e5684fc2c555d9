"""The words of kernel names: generator/templates/kernel_families.yaml, loaded once."""
from __future__ import annotations

from functools import cache
from typing import Any

from generator.resources import TEMPLATES, read_yaml

FAMILIES_PATH = TEMPLATES / "kernel_families.yaml"


@cache
def families() -> dict[str, Any]:
    """generator/templates/kernel_families.yaml, loaded once."""
    return read_yaml(FAMILIES_PATH)


def fragment(key: str, **values: Any) -> str:
    """A friendly-name detail (``fragments.<key>`` of kernel_families.yaml) with ``values`` filled in."""
    return str(families()["fragments"][key]).format(**values)
