"""Chinese pages in Chinese: the capture's own texts of every committed manifest, the comparison's
like-with-like differences, the chip files' sources and the classification rule are worded in each
language; what stays English is marked so (lang="en")."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from english_runs import english_runs

from generator.analyses.like_with_like import like_with_like
from generator.pipeline.chips import shipped_chips
from generator.render.capture_texts import capture_text
from generator.render.differences import difference_item, difference_value
from generator.render.markdown import Numbers
from generator.render.translations import translator

ROOT = Path(__file__).resolve().parent.parent
MANIFESTS = sorted((ROOT / "examples" / "runs").rglob("manifest.json"))
#: a raw settings key (snake_case) or a Python value where words belong
RAW = re.compile(r"\b(True|False|None|[a-z]+_[a-z_]+)\b")


def _texts(manifest: dict) -> list[str]:
    fidelity = manifest.get("fidelity") if isinstance(manifest.get("fidelity"), dict) else {}
    return [*(manifest.get("notes") or []), *([fidelity["note"]] if fidelity.get("note") else []),
            *([manifest["ncu_selection"]] if manifest.get("ncu_selection") else [])]


def test_every_committed_capture_text_is_translated():
    texts = {text for path in MANIFESTS for text in _texts(json.loads(path.read_text(encoding="utf-8")))}
    assert len(texts) >= 6
    for text in texts:
        zh = capture_text(text, "zh")
        assert "kr-raw" not in zh and not english_runs(zh), (text, zh)
        assert capture_text(text, "en").startswith('<span class="kr-raw" lang="en">')
    # a text no entry knows stays as it is, marked English, on every language's page
    assert capture_text("a newer capture's note", "zh") == '<span class="kr-raw" lang="en">a newer capture\'s note</span>'
    # fields are data: matched anywhere in the text, escaped
    assert capture_text("requested stages not entered by the workload: pre_fill", "zh") == "请求的阶段未被工作负载进入：pre\\_fill"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_comparison_differences_are_words(lang):
    """The differences of v2 → v3 of the bundled example (same program, recaptured): each key worded and
    each value a word, number or code, never a raw key or a Python value."""
    runs = ROOT / "examples" / "runs"
    before, after = (json.loads((runs / name / "manifest.json").read_text(encoding="utf-8"))
                     for name in ("ocr-vlm-sdpa-h200", "ocr-vlm-sdpa-h200-a"))
    found = like_with_like(before, after, ["vision", "decode"], ["vision", "prefill", "decode"], None)["differences"]
    keys = {d["key"] for d in found}
    assert "stages" in keys and any(isinstance(d["previous"], bool) or d["current"] is None for d in found), found
    t = translator(lang)
    numbers = Numbers(t("unknown", default="unknown"))
    for d in found:
        line = t("comparison.difference", item=difference_item(d["key"], t),
                 previous=difference_value(d["key"], d["previous"], t, numbers, str),
                 current=difference_value(d["key"], d["current"], t, numbers, str))
        assert not RAW.search(re.sub(r"`[^`]*`", "", line)), line
        if lang == "zh":
            assert not english_runs(line), line
    stages = next(d for d in found if d["key"] == "stages")
    assert difference_value("stages", stages["current"], t, numbers, str) == t("list_sep").join(
        ["vision", "prefill", "decode"])


def test_chip_sources_are_worded_or_cited():
    """A chip figure's source is the file's own words in every language, or a document's, cited."""
    for chip in shipped_chips():
        for key, figure in chip.figures.items():
            if figure.words:
                assert set(figure.words) == {"en", "zh"} and not english_runs(figure.words["zh"]), (chip.key, key)
            else:
                assert re.search(r"datasheet|whitepaper|specifications", figure.source), (chip.key, key, figure.source)
    assert sum(bool(f.words) for c in shipped_chips() for f in c.figures.values()) == 19


def test_rule_names_are_words():
    assert translator("zh")("index.classes_line", rule=translator("zh")("rules.sol")) == "分类（规则：光速（Speed-of-Light））："
    assert translator("en")("index.classes_line", rule=translator("en")("rules.sol")) == "Classes (Speed-of-Light rule):"


def test_pages_cite_nothing_a_reader_cannot_open():
    """Published pages are read without the repository: no words of theirs cite its docs/, bench/ or
    examples/runs/ paths (translation files, page and finding templates, chip files)."""
    from generator.resources import TEMPLATES

    files = [*(TEMPLATES / "i18n").glob("*.yaml"), *(TEMPLATES / "pages").glob("*.j2"),
             *(TEMPLATES / "findings").glob("*.j2"), *(ROOT / "generator" / "chips").glob("*.yaml")]
    assert len(files) > 40
    cited = [f"{path.name}: {m.group(0)}" for path in files
             for m in re.finditer(r"[^\s(（]*\b(?:docs|bench|examples/runs)/[\w./-]+", path.read_text(encoding="utf-8"))]
    assert not cited, cited
