"""Words live in templates: no Python file of the project holds CJK text (Chinese goes in
generator/templates/, beside the English). Tests and bench/ are not scanned: they compare pages
against Chinese words or write sample report.yaml data."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: CJK ideographs, CJK punctuation and full-width forms
CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")


def test_no_cjk_text_in_code() -> None:
    files = [p for top in ("generator", "capture") for p in (ROOT / top).rglob("*.py")]
    assert len(files) > 50
    found = [f"{p.relative_to(ROOT)}:{n}" for p in files
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if CJK.search(line)]
    assert found == [], f"CJK text in code (move it to generator/templates/): {found}"
