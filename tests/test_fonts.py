"""The site, chart SVGs included, does not depend on the fonts installed (generator/render/fonts.py).

Two builds of a real one-version report run in subprocesses whose font environments differ the
way a fresh machine and a developer's do: one sees no font at all, the other the machine's fonts
and a CJK font (fontconfig reads its directories from ``FONTCONFIG_FILE``). A plain vl-convert
conversion of a Chinese label differs between them; the built sites must not.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from generator.render.fonts import FONT, FONT_CHARS, template_characters

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "h200-small"
REPORT = f"""\
id: fonts
title: {{en: "Fonts", zh: "字体测试"}}
versions:
  - id: v1
    title: {{en: "V1", zh: "第一版"}}
    date: 2026-11-20
    inputs:
      nsys: [{{path: {DATA}/small_vlm.nsys.sqlite.xz}}]
      ncu: [{DATA}/small_vlm_prefill.ncu-rep.xz]
"""
#: prints the SVG of a bar chart labelled in Chinese, rendered by vl-convert as it comes
PLAIN_CONVERSION = """\
import vl_convert
print(vl_convert.vegalite_to_svg({"data": {"values": [{"k": "访存受限", "v": 3}, {"k": "计算受限", "v": 5}]},
      "mark": "bar", "encoding": {"y": {"field": "k", "type": "nominal", "title": "类别"},
      "x": {"field": "v", "type": "quantitative", "title": "时间 (µs)"}}}))
"""


def _font_environment(folder: Path, fonts: list[Path], system: bool) -> dict[str, str]:
    """The environment of a process whose fontconfig lists ``folder`` (holding copies of ``fonts``)
    and, when ``system``, the machine's font folders."""
    folder.mkdir(parents=True)
    for font in fonts:
        shutil.copy(font, folder)
    dirs = [folder, Path("/usr/share/fonts"), Path("/usr/local/share/fonts")] if system else [folder]
    conf = folder.parent / f"{folder.name}.conf"
    conf.write_text('<?xml version="1.0"?>\n<fontconfig>' + "".join(f"<dir>{d}</dir>" for d in dirs)
                    + "</fontconfig>\n", encoding="utf-8")
    return {**os.environ, "FONTCONFIG_FILE": str(conf), "PYTHONPATH": str(ROOT)}


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_site_is_byte_identical_whatever_fonts_are_installed(tmp_path: Path) -> None:
    report = tmp_path / "report.yaml"
    report.write_text(REPORT, encoding="utf-8")
    environments = {"bare": _font_environment(tmp_path / "bare", [], system=False),
                    "rich": _font_environment(tmp_path / "rich", [FONT], system=True)}
    plain = {name: subprocess.run([sys.executable, "-c", PLAIN_CONVERSION], env=env, capture_output=True,
                                  text=True, check=True).stdout for name, env in environments.items()}
    assert plain["bare"] != plain["rich"], "the two font environments lay out Chinese text alike"
    sites = {}
    for name, env in environments.items():
        out = tmp_path / f"site-{name}"
        subprocess.run([sys.executable, "-m", "generator", "build", str(report), "--out", str(out),
                        "--src", str(tmp_path / f"src-{name}"), "--no-cache"],
                       env=env, cwd=tmp_path, capture_output=True, check=True)
        sites[name] = _tree(out)
    zh_svgs = [p for p in sites["bare"] if p.endswith("-zh.svg")]
    assert len(zh_svgs) >= 15
    assert sites["bare"].keys() == sites["rich"].keys()
    assert [p for p in sites["bare"] if sites["bare"][p] != sites["rich"][p]] == []


def test_shipped_font_has_every_character_of_the_templates() -> None:
    covered, lacking = FONT_CHARS.read_text(encoding="utf-8").split("\n")[:2]
    assert set("计算受限访存") <= set(covered)
    missing = template_characters() - set(covered) - set(lacking)
    assert missing == set(), f"run tools/subset_font.py: the chart font lacks {''.join(sorted(missing))!r}"
    assert FONT.stat().st_size < 1_000_000
