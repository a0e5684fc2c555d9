"""Rebuild generator/fonts/: the CJK font the chart renderer measures text with (a subset).

vl-convert lays out chart text with the fonts it finds; the build shows it only
generator/fonts/ (generator/render/fonts.py), so the SVGs do not depend on the machine. The
font is WenQuanYi Micro Hei (Apache-2.0, Debian package fonts-wqy-microhei) cut down to ASCII,
Latin-1, CJK/full-width punctuation, the 3,755 common Chinese characters and every character the
templates use. Run it after a template gains a character outside those (tests/test_fonts.py
says when):

    apt-get download fonts-wqy-microhei && dpkg -x fonts-wqy-microhei_*.deb wqy
    pip install fonttools
    python tools/subset_font.py wqy/usr/share/fonts/truetype/wqy/wqy-microhei.ttc
"""
from __future__ import annotations

import sys
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTCollection

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from generator.render.fonts import FONT, FONT_CHARS, wanted_characters  # noqa: E402


def main(source: str) -> None:
    face = TTCollection(source).fonts[0]  # WenQuanYi Micro Hei (the other face is its mono variant)
    options = subset.Options()
    options.layout_features = ["*"]
    options.name_IDs = ["*"]
    options.hinting = False  # outlines only: the renderer measures advances, browsers draw the text
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=[ord(c) for c in wanted_characters()])
    subsetter.subset(face)
    face.save(FONT)
    covered = {chr(code) for table in face["cmap"].tables for code in table.cmap if code > 0x7E}
    lacking = {c for c in wanted_characters() if ord(c) > 0x7E} - covered
    FONT_CHARS.write_text("".join(sorted(covered)) + "\n" + "".join(sorted(lacking)) + "\n", encoding="utf-8")
    print(f"{FONT}: {FONT.stat().st_size} bytes, {len(covered)} characters")


if __name__ == "__main__":
    main(sys.argv[1])
