"""One glossary (generator/templates/glossary.yaml) for the report's terms: Chinese pages use its Chinese word
for every concept it lists, never the English one nor an avoided synonym; chart legends list only what is drawn."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import yaml
from conftest import BuiltSite
from english_runs import english_runs

from generator.render.translations import glossary, translator
from generator.resources import TEMPLATES

#: Markup whose text is data or code, not words of the report: front matter, fences, chart specs, name cells,
#: remaining tags, inline code, link targets.
_NOT_PROSE = (
    (re.compile(r"\A---\n.*?\n---\n", re.S), ""),
    (re.compile(r"^[ \t]*(`{3,}).*?^[ \t]*\1", re.S | re.M), ""),  # fences, also indented in a note block
    (re.compile(r"<script.*?</script>", re.S), ""),
    (re.compile(r'<span class="kr-(?:name|raw)"[^>]*>.*?</span>', re.S), ""),
    (re.compile(r"<[^>]+>"), ""),
    (re.compile(r"`[^`\n]*`"), ""),
    (re.compile(r"\]\([^)\s]*\)"), "]"),
)


def _prose(markdown: str, data_words: set[str]) -> str:
    """The page's own words: markup, code and data text (kernel and stage names, as escaped on the page) removed."""
    text = markdown
    for pattern, repl in _NOT_PROSE:
        text = pattern.sub(repl, text)
    for word in sorted(data_words, key=len, reverse=True):
        text = text.replace(word, "")
    return text


def _wrong_words(lang: str) -> dict[str, str]:
    """Word that must not appear on ``lang`` pages → the glossary key whose word replaces it: the English word of
    every entry translated differently, and every avoided synonym."""
    wrong: dict[str, str] = {}  # Latin words case-insensitively: one key per spelling
    for section, entries in glossary().items():
        for key, entry in entries.items():
            word = entry.get(lang, entry["en"])
            if entry["en"].lower() not in word.lower() and re.search("[A-Za-z]", entry["en"]):
                wrong.setdefault(entry["en"].lower(), f"{section}.{key}")
            for word in (entry.get("avoid") or {}).get(lang, []):
                wrong.setdefault(word.lower(), f"{section}.{key}")
    return wrong


def _findings(text: str, wrong: dict[str, str]) -> list[str]:
    hits = []
    for word, key in wrong.items():
        latin = re.search("[A-Za-z]", word)
        # a Latin word stands alone: not inside an identifier, a file name (stage\_time.csv, version.json)
        # or a hyphenated name (kernel-report, --module-depth)
        pattern = (r"(?<![A-Za-z0-9_\\.-])" + re.escape(word) + r"(?![A-Za-z0-9_\\-]|\.[a-z])") if latin else re.escape(word)
        for match in re.finditer(pattern, text, flags=re.IGNORECASE if latin else 0):
            line = text[: match.start()].count("\n")
            hits.append(f"{word!r} (use {key}): {text.splitlines()[line].strip()[:120]}")
    return hits


def _data_words(docs: Path) -> set[str]:
    """Kernel friendly names and stage names of the version, as the pages escape them."""
    from generator.render.markdown import escape_text

    kernels = yaml.safe_load((docs / "data" / "kernels.yaml").read_text(encoding="utf-8")) or []
    tops = pd.read_csv(docs / "data" / "top_kernels.csv")
    names = {str(k["friendly_name"]) for k in kernels} | {str(s) for s in tops["stage"].dropna()}
    return names | {escape_text(n) for n in names}


def test_glossary_entries_are_complete_and_one_word_per_concept() -> None:
    words = glossary()
    for section in ("classes", "qualifiers", "datapaths", "metrics", "stages", "units", "terms"):
        assert words[section], section
        for key, entry in words[section].items():
            assert set(entry) <= {"en", "zh", "avoid"} and entry.get("en") and entry.get("zh"), f"{section}.{key}"
            assert entry["zh"] not in (entry.get("avoid") or {}).get("zh", []), f"{section}.{key}"
    for section in ("classes", "datapaths", "metrics"):  # no two concepts share a word
        for lang in ("en", "zh"):
            values = [e[lang] for e in words[section].values()]
            assert len(values) == len(set(values)), (section, lang)
    # the translation files hold no glossary section: one place for each term
    for lang in ("en", "zh"):
        i18n = yaml.safe_load((TEMPLATES / "i18n" / f"{lang}.yaml").read_text(encoding="utf-8"))
        assert not set(i18n) & set(words), lang
    t = translator("zh")
    assert (t("classes.compute-bound"), t("datapaths.tensor"), t("terms.tensor_core")) == ("计算受限", "张量核", "张量核")


def test_the_check_finds_english_and_avoided_words() -> None:
    """The scan below can fail: it finds a planted English class, an avoided synonym and "Tensor Core" in prose,
    and ignores the same words inside a kernel-name cell, inline code or a data name."""
    wrong = _wrong_words("zh")
    page = ("分类：compute-bound与计算密集型；使用Tensor Core。\n"
            '<span class="kr-name" title="x">Memory-bound kernel</span> `balanced` Elementwise Add\n')
    hits = _findings(_prose(page, {"Elementwise Add"}), wrong)
    assert sorted(h.split(" (use ")[0] for h in hits) == ["'compute-bound'", "'tensor core'", "'计算密集'"], hits


def test_chinese_pages_use_the_glossary_words(example_site: BuiltSite) -> None:
    wrong = _wrong_words("zh")
    pages = sorted(example_site.src.rglob("*.zh.md"))
    assert len(pages) == 11 + 12 + 12  # v1 (no comparison), v2 and v3 of the example, every page
    hits = []
    for page in pages:
        text = _prose(page.read_text(encoding="utf-8"), _data_words(page.parent))
        hits += [f"{page.relative_to(example_site.src)}: {h}" for h in _findings(text, wrong)]
    assert not hits, "\n".join(hits[:40])


def _specs(page: Path) -> list[dict]:
    found = re.findall(r'<script type="application/json" id="[^"]+">(.*?)</script>', page.read_text(encoding="utf-8"))
    return [json.loads(s) for s in found]


def _color_legends(spec: dict) -> list[tuple[list[str], str, list[dict]]]:
    """(legend domain, field, data rows) of every layer with an explicit colour or shape domain."""
    out = []
    for layer in [spec, *spec.get("layer", [])]:
        rows = (layer.get("data") or spec.get("data") or {}).get("values", [])
        for channel in ("color", "shape"):
            enc = (layer.get("encoding") or {}).get(channel) or {}
            if isinstance(enc.get("scale"), dict) and "domain" in enc["scale"] and "field" in enc:
                out.append((enc["scale"]["domain"], enc["field"], rows))
    return out


def test_legends_list_only_what_is_drawn(example_site: BuiltSite) -> None:
    """Every class or datapath a legend names is drawn (a point, bar cell or roof line of the chart carries it);
    the EN and ZH example charts of both versions."""
    checked = 0
    for page in sorted(example_site.src.rglob("*.md")):
        for spec in _specs(page):
            legends = _color_legends(spec)
            drawn: dict[str, set[str]] = {}
            for _, field, rows in legends:
                drawn.setdefault(field, set()).update(str(r.get(field)) for r in rows)
            for domain, field, _ in legends:
                if domain and all(isinstance(d, str) for d in domain):
                    checked += 1
                    assert set(domain) <= drawn[field], (page.name, field, sorted(set(domain) - drawn[field]))
    assert checked >= 20


def test_the_english_check_finds_prose_and_keeps_names_and_quotes() -> None:
    """The scan below can fail: English prose in a raw span or a table cell is found; kernel names, code,
    commands, type lists and text marked ``lang="en"`` are not."""
    page = ("| ncu 启动选择 | <span class=\"kr-raw\">one launch per (kernel, stage): the configuration</span> |\n"
            "来源：estimate: taken from the datasheet\n"
            '<span class="kr-name" title="x">Copy to the BF16 buffer</span> `python -m capture run --out runs`\n'
            '<span class="kr-raw">void f&lt;float, float, float&gt;</span> <span class="kr-raw" lang="en">as it is in the file'
            "</span> cuDNN Flash Attention Forward\n")
    assert english_runs(page) == ["one launch per (kernel, stage): the configuration", "estimate: taken from the datasheet"]


def test_chinese_pages_hold_no_english_prose(example_site: BuiltSite) -> None:
    """Every Chinese page of the example, as written and as built (with its header, navigation, version
    picker and footer): no English sentence outside kernel names, code, data names and quotes marked as
    English (chip-file citations, capture texts no translation knows)."""
    hits = []
    sources = sorted(example_site.src.rglob("*.zh.md"))
    for page in sources:
        runs = english_runs(page.read_text(encoding="utf-8"), _data_words(page.parent))
        hits += [f"{page.relative_to(example_site.src)}: {run}" for run in runs]
    built = sorted(example_site.site.glob("*/zh/*.html"))
    assert {(p.parts[-3], p.stem) for p in built} >= {(p.parts[-3], p.name.removesuffix(".zh.md")) for p in sources}
    assert len(sources) >= 35 and len(built) >= len(sources)  # 3 versions' pages, and latest/'s
    for page in built:
        docs = next(example_site.src.glob(f"*/{page.parts[-3]}/docs"), None)
        runs = english_runs(page.read_text(encoding="utf-8"), _data_words(docs) if docs else set())
        hits += [f"{page.relative_to(example_site.site)}: {run}" for run in runs]
    assert not hits, "\n".join(hits[:40])


#: a path of the repository (a chip file, a docs page, a run directory): nothing a reader of the site can open
_REPO_PATH = re.compile(r"(?<![\w/.-])(?:generator|docs|examples|bench|tests|capture|tools|site_src)/[\w*./-]+")


def test_pages_cite_nothing_a_reader_cannot_open(example_site: BuiltSite) -> None:
    """No page's words point a reader at a file of the repository ("(generator/chips)" once named the peaks'
    source); commands and kernel names, code on the page, are not citations."""
    pages = sorted(example_site.src.rglob("*.md"))
    hits = [f"{page.relative_to(example_site.src)}: {m.group(0)}" for page in pages
            for m in _REPO_PATH.finditer(_prose(page.read_text(encoding="utf-8"), set()))]
    assert len(pages) >= 70 and hits == [], hits[:20]
