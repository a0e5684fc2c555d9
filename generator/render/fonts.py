"""The fonts the chart renderer lays text out with: the shipped ones, never the machine's.

vl-convert measures every label with fontdb, which loads the machine's fonts once per process,
at the first text it lays out: the directories of the fontconfig file named by ``FONTCONFIG_FILE``
(else the user's and ``/etc/fonts/fonts.conf``), then its own Liberation Sans. Vega's
``sans-serif`` becomes Arial or Helvetica when installed, else Liberation Sans, and a character
that font lacks (every Chinese one) takes the first font in load order that has it; so the
label positions in the SVGs would depend on the fonts installed. :func:`pin_fonts` names a
fontconfig file listing only ``generator/fonts/`` for that first layout: the renderer then knows
Liberation Sans and the CJK subset shipped there (``tools/subset_font.py`` makes it) and nothing
else, whatever the machine has.
"""
from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from xml.sax.saxutils import escape

import vl_convert

from generator.resources import FONTS, TEMPLATES
from generator.temp_dirs import TempDir

FONT = FONTS / "wqy-microhei-subset.ttf"
#: written by tools/subset_font.py: the characters above ASCII that FONT has (first line), and
#: those it was asked for that its source font lacks (second line)
FONT_CHARS = FONTS / "wqy-microhei-subset.chars.txt"
#: one text mark: laying it out loads the font database
_PROBE = {"data": {"values": [{}]}, "mark": "text", "encoding": {"text": {"value": "\u5b57 x"}}}


def template_characters() -> set[str]:
    """Every printable character above ASCII in the templates (the words charts are labelled with)."""
    found: set[str] = set()
    for path in sorted(TEMPLATES.rglob("*")):
        if path.is_file():
            found |= {c for c in path.read_text(encoding="utf-8") if c.isprintable() and ord(c) > 0x7E}
    return found


def common_hanzi() -> set[str]:
    """The 3,755 most common Chinese characters (GB 2312 level 1): most new words and report
    titles then need no new subset."""
    found: set[str] = set()
    for high in range(0xB0, 0xD8):
        for low in range(0xA1, 0xFF):
            try:
                found.add(bytes([high, low]).decode("gb2312"))
            except UnicodeDecodeError:  # the unused places at the end of the level
                pass
    return found


def wanted_characters() -> set[str]:
    """What the subset is cut to: ASCII, Latin-1, CJK and full-width punctuation, the common
    Chinese characters and the templates' characters."""
    ranges = [(0x20, 0x7E), (0xA1, 0xFF), (0x3000, 0x303F), (0xFF01, 0xFF5E)]
    return ({chr(code) for low, high in ranges for code in range(low, high + 1)} | common_hanzi()
            | template_characters())


@cache
def pin_fonts() -> None:
    """Load the renderer's font database from ``generator/fonts/`` only (once per process; it must
    come before any other vl-convert conversion of the process that lays out text)."""
    with TempDir("kr-fonts-") as tmp:  # marked: a killed run's is removed by the next one
        conf = Path(tmp) / "fonts.conf"
        conf.write_text(f'<?xml version="1.0"?>\n<fontconfig><dir>{escape(str(FONTS))}</dir></fontconfig>\n',
                        encoding="utf-8")
        saved = os.environ.get("FONTCONFIG_FILE")
        os.environ["FONTCONFIG_FILE"] = str(conf)
        try:
            vl_convert.vegalite_to_svg(_PROBE)
        finally:
            if saved is None:
                os.environ.pop("FONTCONFIG_FILE", None)
            else:
                os.environ["FONTCONFIG_FILE"] = saved
