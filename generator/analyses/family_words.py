"""The words of kernel names: generator/templates/kernel_families.yaml, loaded once."""
from __future__ import annotations

from functools import cache
from typing import Any

import yaml

from generator.resources import TEMPLATES

FAMILIES_PATH = TEMPLATES / "kernel_families.yaml"


@cache
def families() -> dict[str, Any]:
    """generator/templates/kernel_families.yaml, loaded once."""
    with open(FAMILIES_PATH, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def fragment(key: str, **values: Any) -> str:
    """A friendly-name detail (``fragments.<key>`` of kernel_families.yaml) with ``values`` filled in."""
    return str(families()["fragments"][key]).format(**values)
