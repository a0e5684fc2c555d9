"""Where the package's non-code files live: page, finding and site templates, translations, tables."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

#: generator/templates/: pages/, findings/, site/, i18n/<lang>.yaml, mkdocs.yml.j2, kernel_families.yaml
TEMPLATES = Path(__file__).resolve().parent / "templates"
#: generator/fonts/: the fonts the chart renderer lays text out with (generator/render/fonts.py)
FONTS = Path(__file__).resolve().parent / "fonts"
#: generator/chips/: the chip files the package ships (generator/pipeline/chips.py reads them)
CHIPS_DIR = Path(__file__).resolve().parent / "chips"

#: libyaml's safe loader where PyYAML was built with it (the same data in about a tenth of the time)
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_yaml(path: Path) -> Any:
    """One of the package's YAML files (translations, glossary, kernel families), parsed safely."""
    return yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER)


#: a shipped chip's probe file: generator/chips/<key>-measured.yaml
MEASURED_SUFFIX = "-measured"


def shipped() -> list[str]:
    """The keys of the datasheet chips the package ships, sorted."""
    return sorted(p.stem for p in CHIPS_DIR.glob("*.yaml") if not p.stem.endswith(MEASURED_SUFFIX))


def shipped_measured() -> list[str]:
    """The keys of the shipped probe files (``h100-sxm-measured``), sorted."""
    return sorted(p.stem for p in CHIPS_DIR.glob(f"*{MEASURED_SUFFIX}.yaml"))
