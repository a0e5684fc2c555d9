"""A version's report pages: Jinja2 templates (generator/templates/pages/) → EN ``page.md`` + ZH ``page.zh.md``.

All words come from generator/templates/pages/*.md.j2 and generator/templates/i18n/<lang>.yaml; every number from the
VersionResult. Data text (kernel, stage, file names) is escaped by generator.render.markdown.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

from generator.analyses import speed_change as sc
from generator.analyses.histograms import HISTOGRAMS
from generator.analyses.launch_stats import MIN_LAUNCHES, SESSION_KERNEL_MOVE, SESSION_NOISE
from generator.analyses.modules import OUTSIDE
from generator.analyses.projection import KEEP_PCT
from generator.analyses.result import Finding, VersionResult
from generator.analyses.setup import SOFTWARE, setup_facts, workload_setup
from generator.analyses.stage_decomposition import GAP_CAUSES, LIMITERS
from generator.metric_table import DISPLAY
from generator.model import ALL_STAGES, ReportMeta
from generator.render import charts as ch
from generator.render.assets import write_assets
from generator.render.capture_texts import capture_text
from generator.render.chart_table import build_charts, entries_on
from generator.render.commands import shown_argv, shown_commands
from generator.render.compiled_templates import COMPILED
from generator.render.data_files import (
    DATA_FILES,
    SWEEP_CSV,
    published_files,
    write_sweep_data,
    write_version_data,
    write_version_facts,
)
from generator.render.differences import difference_item, difference_value
from generator.render.findings import compile_finding_templates, render_finding, render_method
from generator.render.html_config import front_matter_title
from generator.render.markdown import (
    Numbers,
    code_cell,
    escape_attr,
    escape_text,
    expandable_code_cell,
    inline_markdown,
    is_missing,
    name_cell,
)
from generator.render.module_tree import kernel_anchor, tree_html
from generator.render.svg import SvgBatch, svg_batch
from generator.render.translations import load_words, translator
from generator.resources import TEMPLATES

#: Page file stems in navigation order; "comparison" only exists when there is a previous version,
#: "what-if" only when report.yaml lists chips to project onto (and the version has nsys and ncu data).
PAGES: tuple[str, ...] = ("index", "top-kernels", "modules", "classification", "durations", "histograms",
                          "roofline", "what-if", "findings", "comparison", "appendix", "downloads")
#: Follows "index" when the version declares a sweep (``result.sweep``).
SWEEP_PAGE = "sweep"
SHA_PREFIX = 12
MODULE_CHANGES_MAX = 15  # rows of the per-module comparison
#: findings the overview lists under "Largest savings" (those with a saving; the largest first)
SAVINGS_MAX = 5
KERNEL_LIST_MAX = 8
#: Kernels added / removed listed on the comparison page (all of them in data/kernel_changes.csv)
CHANGE_ROWS_MAX = 15
#: a Markdown table's delimiter row: the page has a table for kr-tables.js
TABLE_ROW = re.compile(r"^\|(?: *:?-+:? *\|)+ *$", re.MULTILINE)


def _ordered_pages(comparison: bool, sweep: bool, what_if: bool = False) -> list[str]:
    """Page stems in navigation order: the comparison, what-if and sweep pages where there are ones."""
    pages = [p for p in PAGES if (p != "comparison" or comparison) and (p != "what-if" or what_if)]
    return pages[:1] + [SWEEP_PAGE] + pages[1:] if sweep else pages


def page_names(result: VersionResult) -> list[str]:
    """The version's page stems in navigation order."""
    return _ordered_pages(bool(result.comparison), result.sweep is not None, bool(result.values.get("what_if")))


def latest_page_names(meta: ReportMeta) -> list[str]:
    """The page stems of the report's latest version, known before it is analyzed (it compares with
    the version before it when there is one)."""
    return _ordered_pages(len(meta.versions) > 1, meta.latest.sweep)


def page_file(page: str, lang: str, default_lang: str) -> str:
    """``top-kernels.md`` for the default language, ``top-kernels.zh.md`` otherwise (i18n suffix)."""
    return f"{page}.md" if lang == default_lang else f"{page}.{lang}.md"


@cache
def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES / "pages"),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # Markdown output: data text is escaped explicitly (esc/name/raw)
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        bytecode_cache=COMPILED,
    )


def compile_templates() -> None:
    """Compile every page and finding template and load the words now: a child forked afterwards
    inherits them (about a second of a version's rendering otherwise)."""
    load_words()
    for name in _env().list_templates(filter_func=lambda n: n.endswith(".j2")):
        _env().get_template(name)
    compile_finding_templates()


def rows(frame: pd.DataFrame | None) -> list[dict[str, Any]]:
    """Table rows as dicts (missing values stay NaN/None for the formatters)."""
    return [] if frame is None else frame.to_dict("records")


def _shapes_known(useful: pd.DataFrame | None) -> bool:
    """Whether any profiled kernel's useful FLOP came from operator shapes (analyses.useful_work)."""
    return useful is not None and "useful_flop" in useful and bool(useful["useful_flop"].notna().any())


def fence(text: str, info: str = "") -> str:
    """A fenced code block longer than any backtick run in ``text`` (the content stays literal)."""
    ticks = "`" * max(3, _longest_backticks(text) + 1)
    return f"{ticks}{info}\n{text.rstrip()}\n{ticks}"


def _longest_backticks(text: str) -> int:
    best = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        best = max(best, run)
    return best


def largest_savings(findings: list[Finding], limit: int = SAVINGS_MAX) -> list[Finding]:
    """The findings with the largest saving of GPU kernel time that no other finding claims
    (Bound.exclusive_saving_ns, the lower end of a range), largest first (ties in the findings'
    order), at most ``limit``: the GPU's savings only (:func:`host_savings` are the harness's)."""
    saving = [f for f in findings if f.bound is not None and not f.abstained and f.bound.exclusive_saving_ns > 0
              and f.bound.basis != "span"]
    return sorted(saving, key=lambda f: -f.bound.exclusive_saving_ns)[:limit]  # type: ignore[union-attr]


def host_savings(findings: list[Finding]) -> list[Finding]:
    """The findings bounding host gaps (span time no kernel runs in: the harness's, not the GPU's),
    largest first: listed on their own, never ranked with the GPU's savings."""
    gaps = [f for f in findings if f.bound is not None and not f.abstained and f.bound.exclusive_saving_ns > 0
            and f.bound.basis == "span"]
    return sorted(gaps, key=lambda f: -f.bound.exclusive_saving_ns)  # type: ignore[union-attr]


def finding_anchor(finding: Finding) -> str:
    """The id of a finding on the Findings page: its rule and stage."""
    return "finding-" + re.sub(r"[^a-z0-9]+", "-", f"{finding.id}-{finding.stage or ALL_STAGES}".lower()).strip("-")


#: what ends a sentence in the pages' languages: a space, a full stop, an ideographic full stop (U+3002)
SENTENCE_END = " .\u3002"


def headline(text: str) -> str:
    """A finding's headline: the bold text it opens with (the whole first sentence where it has none)."""
    bold = re.match(r"\*\*(.+?)\*\*", text, re.S)
    if bold:
        return bold[1].rstrip(SENTENCE_END)
    return re.split(rf"(?<=[{SENTENCE_END.strip()}])\s", text, maxsplit=1)[0].rstrip(SENTENCE_END)


def _kernel_list(kernels: tuple[str, ...], unknown: str, t: Callable[..., str]) -> str:
    """The first KERNEL_LIST_MAX names (hover: full name), then how many more."""
    shown = t("list_sep").join(name_cell(k, unknown) for k in kernels[:KERNEL_LIST_MAX])
    rest = len(kernels) - KERNEL_LIST_MAX
    return shown + (t("findings.more", count=rest) if rest > 0 else "")


def appendix_href(raw_name: Any, listed: dict[str, Any]) -> str | None:
    """The link to a kernel's entry in the appendix names table, None when it has none there."""
    return f"appendix.html#{kernel_anchor(raw_name)}" if isinstance(raw_name, str) and raw_name in listed else None


def whole_graph_rows(stage_time: pd.DataFrame) -> list[dict[str, Any]]:
    """Stages with replays traced only as whole graphs; the "all" row only when no stage names them
    (a whole-capture input: otherwise it is their sum)."""
    found = stage_time[stage_time["whole_graph_launches"].fillna(0) > 0]
    staged = found[found["stage"] != ALL_STAGES]
    return rows(staged if len(staged) else found)


def note_text(note: dict[str, Any] | None, t: Callable[..., str], numbers: Numbers,
              stage_name: Callable[[str], str], cls: Callable[[Any], str], unit: str = "") -> str:
    """A chart's note (analyses.chart_notes) in words: each value printed as its name says."""
    if note is None:
        return ""

    def show(key: str, value: Any) -> str:
        if key.endswith("_pct"):
            return numbers.pct(value, 1)
        if key.endswith("_ns"):
            return numbers.ms(value)
        if key == "n" or key.endswith("_count"):
            return numbers.int(value)
        if key.endswith("_name"):
            return numbers.text(value)
        if key in ("stage", "low_stage"):
            return stage_name(value)
        if key == "class":
            return cls(value)
        return f"{numbers.num(value)} {unit}".rstrip() if key.startswith("value") else numbers.text(value)

    words = t(f"notes.{note['id']}", **{k: show(k, v) for k, v in note["values"].items()})
    return f"**{t('notes.lead')}** {words}"


def gpu_change_text(change: dict[str, Any] | None, t: Callable[..., str], numbers: Numbers) -> str:
    """The comparison's GPU sentence (analyses.gpu_change): both GPUs and the other facts that
    differ; empty when the GPU did not change or is unknown."""
    if not change or not change["changed"]:
        return ""
    before, after = change["previous"], change["current"]

    def show(key: str, value: Any) -> str:
        if key.endswith("_hz"):
            return numbers.int(value / 1e6)
        return numbers.int(value) if key == "sm_count" else numbers.text(value)

    facts = [t(f"comparison.gpu_facts.{key}", previous=show(key, before[key]), current=show(key, after[key]))
             for key in change["differs"] if key != "name"]
    details = t("comparison.gpu_details", facts=t("list_sep").join(facts)) if facts else ""
    return t("comparison.gpu_changed", previous=numbers.text(before["name"]), current=numbers.text(after["name"]),
             details=details)


def _context(result: VersionResult, report: ReportMeta, lang: str, charts: dict[str, ch.Chart | None],
             shown: Callable[[ch.Chart], None] = lambda item: None) -> dict[str, Any]:
    """The names the page templates see (the same for every page of ``lang``); ``shown`` is told of
    each chart a page places."""
    t = translator(lang)
    unknown = t("unknown")
    numbers = Numbers(unknown)
    version = report.version(result.version_id)
    manifest = result.manifest
    friendly = {k["raw_name"]: k["friendly_name"] for k in result.kernel_names}
    metrics = result.ncu_metrics
    profiled: dict[Any, dict[str, Any]] = {}
    # (stage, name), and name: the stage holding most of its time (its metrics stand for the whole capture)
    by_time = metrics.sort_values("total_ns", ascending=False, kind="stable", na_position="last") if len(metrics) \
        else metrics
    for r in by_time.to_dict("records") if len(metrics) else []:
        profiled[(r["stage"], r["name"])] = r
        profiled.setdefault(r["name"], r)

    def chart(key: str, alt_key: str, **fields: Any) -> str:
        item = charts.get(key)
        if item is None:
            return ""
        shown(item)
        return ch.chart_block(item, lang, escape_text(t(alt_key, **fields)))

    def stage_name(stage: str) -> str:
        return t("stages.all") if stage == ALL_STAGES else escape_text(stage)

    def cls(value: Any) -> str:
        return unknown if is_missing(value) else t(f"classes.{value}", default=escape_text(str(value)))

    return {
        "result": result,
        "report": report,
        "version": version,
        "lang": lang,
        "t": t,
        "n": numbers,
        "esc": escape_text,
        "capture_text": lambda text: capture_text(text, lang),
        "difference_item": lambda key: difference_item(key, t),
        "difference_value": lambda key, value: difference_value(key, value, t, numbers, stage_name),
        "md": inline_markdown,
        "setup": setup_facts(result),
        "software": SOFTWARE,
        "page_title": front_matter_title,
        "name": lambda value, raw=None: name_cell(value, unknown, title=raw, href=appendix_href(raw, friendly)),
        "kernel": lambda raw_name: name_cell(friendly.get(raw_name, raw_name), unknown, title=raw_name,
                                             href=appendix_href(raw_name, friendly)),
        "raw": lambda value: code_cell(value, unknown),
        "raw_long": lambda value: expandable_code_cell(value, unknown),
        "rows": rows,
        "fence": fence,
        "chart": chart,
        "stage_name": stage_name,
        "stage_list": t("list_sep").join(stage_name(s) for s in result.stages),
        "kernel_list": lambda kernels: _kernel_list(kernels, unknown, t),
        "texts": lambda values, sep: sep.join(escape_text(str(v)) for v in values),
        "cls": cls,
        "finding_text": lambda finding: render_finding(finding, lang),  # names escaped there
        "method_text": render_method(result.classification["rule"], result.classification.get("params", {}),
                                     lang),
        "is_missing": is_missing,
        "module_tree": lambda stage: tree_html(result.module_tree, stage, t, numbers, friendly, profiled),
        "module_changes_max": MODULE_CHANGES_MAX,
        "outside": OUTSIDE,
        "anchor": kernel_anchor,
        "has_chart": lambda key: charts.get(key) is not None,
        "metric_units": {key: DISPLAY[key].unit for key in HISTOGRAMS},
        "note": lambda key, unit="": note_text(result.values.get("chart_notes", {}).get(key), t, numbers,
                                              stage_name, cls, unit),
        "whole_graph_rows": whole_graph_rows,
        "shapes_known": _shapes_known(result.values.get("useful_work")),
        "gpu_sentence": gpu_change_text(result.gpu_change, t, numbers),
        "speed": {"tick": result.values.get("timer_tick") or 0, "min_launches": MIN_LAUNCHES,
                  "session_noise": SESSION_NOISE, "session_kernel_move": SESSION_KERNEL_MOVE},
        "list_max": CHANGE_ROWS_MAX,
        "movers_max": sc.MOVERS,
        "histogram_keys": [k for k in HISTOGRAMS if k in result.histograms],
        "file_name": lambda path: escape_text(Path(str(path)).name),
        "sha": lambda value: unknown if is_missing(value) else str(value)[:SHA_PREFIX],
        "workload": workload_setup(manifest),
        "manifest_notes": [str(x) for x in manifest.get("notes") or []] if isinstance(manifest, dict) else [],
        "capture_argv": shown_argv(manifest),
        "commands": shown_commands(manifest, t("setup.regex_length")),
        "decomposition": rows(result.values.get("stage_decomposition")),
        "limiters": LIMITERS,
        "gap_causes": GAP_CAUSES,
        "largest_savings": largest_savings(result.findings),
        "host_savings": host_savings(result.findings),
        "finding_anchor": finding_anchor,
        "headline": lambda finding: headline(render_finding(finding, lang)),
        "kernels_yaml": result.kernels_yaml,
        "data_files": (DATA_FILES + (((SWEEP_CSV, "sweep"),) if result.sweep is not None else ())
                       + published_files(result)),
        "pages": page_names(result),
        "keep_pct": KEEP_PCT,
    }


def render_page(page: str, result: VersionResult, report: ReportMeta, lang: str,
                charts: dict[str, ch.Chart | None]) -> str:
    """One page's Markdown in ``lang``."""
    return _page_text(page, _context(result, report, lang, charts))


def _page_text(page: str, context: dict[str, Any]) -> str:
    text = _env().get_template(f"{page}.md.j2").render(**context)
    if TABLE_ROW.search(text):  # the words kr-tables.js puts on its sort headers and filter boxes
        t = context["t"]
        text = (f'{text.rstrip()}\n\n<div class="kr-table-words" hidden data-filter="{escape_attr(t("tables.filter"))}"'
                f' data-sort="{escape_attr(t("tables.sort"))}"></div>\n')
    for entry in entries_on(page):  # chart table entries: after the page's own content, with their note
        block = context["chart"](entry.key, entry.alt)
        if block:
            heading = f"## {context['t'](entry.title)}\n\n" if entry.title else ""
            note = context["note"](entry.key)
            text = f"{text.rstrip()}\n\n{heading}{block}" + (f"\n\n{note}\n" if note else "")
    return text


def render_version(result: VersionResult, report: ReportMeta, docs_dir: Path, langs: list[str],
                   svgs: SvgBatch | None = None) -> None:
    """Write every page of the version in every language, the SVGs of the charts they place, data
    files and JS.

    ``docs_dir`` receives ``<page>.md`` (default language = ``langs[0]``), ``<page>.<lang>.md``,
    ``assets/charts/*.svg``, ``assets/js/{vega-bundle,kr-charts}.js`` and ``data/*``. vl-convert
    renders the SVGs in a worker process (:mod:`generator.render.svg`) while the pages render; only
    the charts a page places get one. They are all written when this returns, unless ``svgs`` (a
    batch of the caller's) takes them: then when the caller finishes it.
    """
    docs_dir = Path(docs_dir)
    docs_dir.mkdir(parents=True, exist_ok=True)
    if svgs is None:
        with svg_batch() as own:
            _render_into(result, report, docs_dir, langs, own)
    else:
        _render_into(result, report, docs_dir, langs, svgs)


def _render_into(result: VersionResult, report: ReportMeta, docs_dir: Path, langs: list[str], svgs: SvgBatch) -> None:
    write_version_data(result, docs_dir)
    write_version_facts(result, report, docs_dir)
    if result.sweep is not None:
        write_sweep_data(result.sweep, docs_dir)
    write_assets(docs_dir)
    for lang in langs:
        placed: set[str] = set()

        def shown(item: ch.Chart, lang: str = lang, placed: set[str] = placed) -> None:
            if item.slug not in placed:
                placed.add(item.slug)
                ch.write_svg(item, lang, docs_dir, svgs)

        context = _context(result, report, lang, build_charts(result, translator(lang)), shown)
        for page in page_names(result):
            (docs_dir / page_file(page, lang, langs[0])).write_text(_page_text(page, context), encoding="utf-8")
