"""Where the package's non-code files live: page, finding and site templates, translations, tables."""
from __future__ import annotations

from pathlib import Path

#: generator/templates/: pages/, findings/, site/, i18n/<lang>.yaml, mkdocs.yml.j2, kernel_families.yaml
TEMPLATES = Path(__file__).resolve().parent / "templates"
#: generator/fonts/: the fonts the chart renderer lays text out with (generator/render/fonts.py)
FONTS = Path(__file__).resolve().parent / "fonts"
