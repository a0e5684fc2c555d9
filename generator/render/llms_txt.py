"""``llms.txt``: a Markdown index of a built report for language models (llmstxt.org).

What the site is, one line per version linking its Overview, Findings and data files in every
language, then what each data file's columns mean (``templates/data_columns.yaml``; ncu_metrics'
canonical metrics from metric_table). Written from the built folders, so every link it holds
resolves; same site → same bytes.
"""
from __future__ import annotations

import csv
import functools
from pathlib import Path

from generator.metric_table import CANONICAL_METRICS
from generator.model import ReportMeta
from generator.render.data_files import DATA_FILES
from generator.render.markdown import escape_text
from generator.render.translations import translator
from generator.resources import TEMPLATES, read_yaml

LLMS_TXT = "llms.txt"
#: the pages each version line links, in this order (Overview first)
PAGES = ("index", "findings", "downloads")
SUMMARY = (
    "A kernel-report site: GPU profiles of transformer inference (Nsight Systems kernel times, Nsight Compute "
    "metrics, operator shapes) published as a versioned report in {languages}. Each version's pages state "
    "findings with their evidence and bounds; its `data/` folder holds the numbers behind every page.")
NOTES = (
    "Reading the numbers: times are nsys kernel time in ns. Useful work (what the model asked for, from operator "
    "shapes) and executed work (what the GPU ran, from ncu) are separate columns, never inferred from each other. "
    "A saving bound is measured time minus a physical floor (useful FLOP / peak, bytes / bandwidth, the shortest "
    "kernel). Faster/slower verdicts come only from `stage_speed.csv` and `kernel_speed.csv` (intervals outside "
    "measured noise). Host gaps of an eager loop are the harness's, not the GPU's.",
    "Agents: `python -m generator mcp SITE_DIR` serves this site over MCP (tools versions, overview, kernels, "
    "findings, compare, project, sql); see docs/agents.md of kernel-report.")


@functools.cache
def _column_words() -> dict[str, dict[str, str]]:
    words = read_yaml(TEMPLATES / "data_columns.yaml")
    words["ncu_metrics"] = {**{m.name: f"mean over the kernel's profiled launches of ncu's `{m.ncu_metrics[0]}` "
                                       f"({m.unit})" if m.ncu_metrics else f"mean over the kernel's profiled "
                                       f"launches ({m.unit}, derived from ncu metrics)" for m in CANONICAL_METRICS},
                            **words.get("ncu_metrics", {})}
    return words


def column_meaning(table: str, column: str) -> str | None:
    """What ``column`` of ``data/<table>.csv`` means, None where no words are written for it."""
    words = _column_words()
    return (words.get(table) or {}).get(column) or words["common"].get(column)


def _page(version: str, page: str, lang: str, default: str) -> str:
    return f"{version}/{page}.html" if lang == default else f"{version}/{lang}/{page}.html"


def report_llms_txt(meta: ReportMeta, out: Path) -> str:
    """The llms.txt of the report built into ``out`` (its version folders written)."""
    langs, default = list(meta.langs), meta.langs[0]
    t = {lang: translator(lang) for lang in langs}
    names = ", ".join(f"{t[lang]('language_name', default=lang)} (`{lang}`)" for lang in langs)
    lines = [f"# {escape_text(meta.title[default])}", "", f"> {SUMMARY.format(languages=names)}", ""]
    lines += [f"Titles: {' / '.join(escape_text(meta.title[lang]) for lang in langs)}.", ""]
    lines += [*(note + "\n" for note in NOTES)]
    lines += ["## Versions", "", "Oldest first; each compares with the one before it. Pages: "
              + "; ".join(f"`{lang}` at `{_page('VERSION', 'PAGE', lang, default)}`" for lang in langs) + ".", ""]
    keys = {Path(path).name: key for path, key in DATA_FILES}
    described: dict[str, Path] = {}
    for version in meta.versions:
        folder = out / version.id
        links = [f"[{t[lang](f'pages.{page}', default=page)} ({lang})]({_page(version.id, page, lang, default)})"
                 for page in PAGES for lang in langs if (out / _page(version.id, page, lang, default)).is_file()]
        data = sorted(p for p in (folder / "data").iterdir() if p.is_file()) if (folder / "data").is_dir() else []
        files = [f"[{p.name}]({version.id}/data/{p.name})" for p in data]
        latest = ", latest" if version is meta.latest else ""
        lines.append(f"- **{version.id}** (`{meta.id}/{version.id}`, {version.date.isoformat()}{latest}): "
                     f"{escape_text(version.title[default])}. Pages: {' · '.join(links)}. "
                     f"Data: {', '.join(files) or 'none'}.")
        for p in data:
            described[p.name] = p
    lines += ["", "## Data files", "", "Every version's `data/` folder; CSV columns with what they mean."]
    for name, path in sorted(described.items()):
        key = keys.get(name, Path(name).stem)
        lines += ["", f"### {name}", "", t[default](f"downloads.{key}", default=key)]
        if path.suffix == ".csv":
            with path.open(encoding="utf-8", newline="") as handle:
                header = next(csv.reader(handle), [])
            lines += [""] + [f"- `{c}`: {column_meaning(path.stem, c) or '(not described)'}" for c in header]
    return "\n".join(lines) + "\n"


def reports_llms_txt(reports: list[tuple[str, dict[str, str]]], lang: str) -> str:
    """The llms.txt of a site of several reports: each report's own llms.txt and Overview."""
    lines = ["# kernel-report sites", "", f"> {SUMMARY.format(languages='several languages')}", "", "## Reports", ""]
    lines += [f"- [{escape_text(title[lang])}]({prefix}{LLMS_TXT}): its versions, pages and data files; "
              f"[Overview]({prefix}index.html)" for prefix, title in reports]
    return "\n".join(lines) + "\n"
