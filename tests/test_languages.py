"""Languages are declared once: a third language is one translation file."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from conftest import DATA, ROOT

from generator.languages import LANGS
from generator.resources import TEMPLATES

# Adds French the way a contributor would (a translation file, nothing else), then builds.
ADD_LANGUAGE = """
import sys
from pathlib import Path
import generator.resources
generator.resources.TEMPLATES = Path(sys.argv[1])  # the copy holding i18n/fr.yaml
from generator.pipeline.build import build_site
build_site([Path(sys.argv[2])], Path(sys.argv[3]), Path(sys.argv[4]))
"""


def _keys(node: Any, prefix: str = "") -> set[str]:
    if not isinstance(node, dict):
        return {prefix}
    return {key for name, value in node.items() for key in _keys(value, f"{prefix}{name}.")}


def _words(lang: str) -> dict[str, Any]:
    return yaml.safe_load((TEMPLATES / "i18n" / f"{lang}.yaml").read_text(encoding="utf-8"))


def test_every_language_has_a_complete_translation_file() -> None:
    """Each declared language's file has exactly the default language's keys (its name included)."""
    default = _keys(_words(LANGS[0]))
    assert "language_name." in default
    for lang in LANGS[1:]:
        keys = _keys(_words(lang))
        assert keys == default, f"{lang}.yaml: missing {sorted(default - keys)[:5]}, extra {sorted(keys - default)[:5]}"


def test_a_third_language_is_one_translation_file(tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    shutil.copytree(TEMPLATES, templates)
    french = _words("en") | {"language_name": "Français", "unknown": "inconnu"}
    french["pages"] = {**french["pages"], "top-kernels": "Noyaux les plus coûteux"}
    (templates / "i18n" / "fr.yaml").write_text(yaml.safe_dump(french, allow_unicode=True), encoding="utf-8")
    report = tmp_path / "report.yaml"
    report.write_text(f"""
id: tiny
title: {{en: Tiny, zh: 小, fr: Minuscule}}
versions:
  - id: v1
    title: {{en: First, zh: 第一版, fr: Première}}
    date: 2025-11-07
    inputs:
      nsys: [{{path: {DATA}/h200-small/small_vlm.nsys.sqlite.xz, stage: decode}}]
      ncu: [{DATA}/h200-small/small_vlm_decode_ncu_raw.csv.xz]
""", encoding="utf-8")
    out, src = tmp_path / "site", tmp_path / "src"
    done = subprocess.run([sys.executable, "-c", ADD_LANGUAGE, str(templates), str(report), str(out), str(src)],
                          cwd=ROOT, capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert done.returncode == 0, done.stderr[-2000:]

    docs = src / "tiny" / "v1" / "docs"
    top = (docs / "top-kernels.fr.md").read_text(encoding="utf-8")
    assert top.split("---\n", 2)[2].startswith("# Noyaux les plus coûteux\n")  # after the front matter
    assert "Première" in (docs / "index.fr.md").read_text(encoding="utf-8")
    # words not yet translated (kernel descriptions, finding texts) read the default language's
    tops = pd.read_csv(docs / "data" / "top_kernels.csv")
    assert len(tops) and (tops["description_fr"] == tops["description_en"]).all()
    mkdocs = yaml.load((src / "tiny" / "v1" / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)
    i18n = next(p["i18n"] for p in mkdocs["plugins"] if isinstance(p, dict) and "i18n" in p)
    assert [(lang["locale"], lang["name"]) for lang in i18n["languages"]] == [
        ("en", "English"), ("fr", "Français"), ("zh", "简体中文")]
    page = (out / "v1" / "fr" / "top-kernels.html").read_text(encoding="utf-8")
    assert "Noyaux les plus coûteux" in page and 'lang="fr"' in page
    assert json.loads((out / "versions.json").read_text(encoding="utf-8"))[0]["title"] == "First"
