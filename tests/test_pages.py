"""Pages of the real H200 example: every number on them is the result's, in EN and ZH."""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import markdown
import pytest
import yaml
from helpers_pages import example_result

from generator.model import GpuInfo, VersionMeta
from generator.render.chart_table import build_charts
from generator.render.markdown import Numbers, escape_text, is_missing, name_cell
from generator.render.module_tree import kernel_anchor
from generator.render.pages import PAGES, page_file, page_names, render_page, render_version
from generator.render.translations import translator

#: The Markdown extensions of the site's mkdocs.yml that change structure (ids, tables, admonitions).
EXTENSIONS = ["tables", "attr_list", "md_in_html", "admonition", "pymdownx.superfences",
              "toc"]
EXTENSION_CONFIGS = {"toc": {"slugify": __import__("pymdownx.slugs", fromlist=["slugify"]).slugify(case="lower")}}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory):
    result, meta = example_result()
    docs = tmp_path_factory.mktemp("docs")
    render_version(result, meta, docs, ["en", "zh"])
    return result, meta, docs


def _page(docs: Path, page: str, lang: str) -> str:
    return (docs / page_file(page, lang, "en")).read_text(encoding="utf-8")


def _name(friendly: str, raw: str, unknown: str = "unknown") -> str:
    """A kernel's table label: its friendly name, the raw name on hover, a link to its appendix entry."""
    return name_cell(friendly, unknown, title=raw, href=f"appendix.html#{kernel_anchor(raw)}")


def _row(text: str, *cells: str) -> str:
    """The one table row that starts with ``cells[0]`` and holds the other cells (in order)."""
    pattern = ".*".join(re.escape(c) for c in cells)
    hits = [line for line in text.splitlines() if re.match(pattern, line)]
    assert len(hits) == 1, (cells, hits)
    return hits[0]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_page_exists_with_its_heading(rendered, lang: str) -> None:
    result, _, docs = rendered
    # one version: no comparison; no chips in its report.yaml: no what-if (tests/test_projection.py)
    assert page_names(result) == [p for p in PAGES if p not in ("comparison", "what-if")]
    t = translator(lang)
    for page in page_names(result):
        text = _page(docs, page, lang)
        if text.startswith("---\n"):  # front matter (the index page's HTML-escaped title) comes first
            text = text.split("---\n", 2)[2].lstrip("\n")
        first = text.splitlines()[0]
        assert first.startswith("# " + t(f"pages.{page}")), first
    suffixed = sorted(p.name for p in docs.glob("*.zh.md"))
    assert suffixed == sorted(f"{p}.zh.md" for p in page_names(result))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_top_kernels_rows_are_the_result(rendered, lang: str) -> None:
    result, _, docs = rendered
    text = _page(docs, "top-kernels", lang)
    appendix = _page(docs, "appendix", lang)
    n = Numbers(translator(lang)("unknown"))
    for top in result.top_kernels.values():
        for row in top.to_dict("records"):
            # numbers without units (the header has them): share %, total ms, launches, mean µs
            _row(text, f"| {row['rank']} | {_name(row['friendly_name'], row['name'], n.unknown)} | ",
                 f"| {n.cell(row['time_pct'])} | {n.cell(row['total_ns'] / 1e6)} | {n.int(row['count'])} | "
                 f"{n.cell(row['avg_ns'] / 1e3)} | ")
            # the description is the appendix's, on the kernel's own row
            _row(appendix, f'| <span id="{kernel_anchor(row["name"])}"></span>',
                 f"| {escape_text(row[f'description_{lang}'])} | ")
    # the decode stage section holds the decode table, the share matches the result row
    decode = text.split(translator(lang)("stage_heading", stage="decode"))[1]
    first = result.top_kernels["decode"].iloc[0]
    assert f"| 1 | {_name(first['friendly_name'], first['name'], n.unknown)} | " in decode.split("\n## ")[0]
    assert 0 < first["time_pct"] <= 100
    assert " µs |" not in text and " ms |" not in text


def test_table_numbers_have_two_decimals_or_two_significant_digits() -> None:
    n = Numbers("unknown")
    assert [n.cell(v) for v in (2097.4, 5.464, 1, 0.5, 0.0496, 0.0043, 0, -3.2)] == [
        "2,097.40", "5.46", "1.00", "0.50", "0.050", "0.0043", "0.00", "-3.20"]
    assert (n.cell_ms(5_464_000), n.cell_us(4_740), n.cell(1.5, signed=True), n.cell(None)) == (
        "5.46", "4.74", "+1.50", "unknown")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_classification_counts_and_means(rendered, lang: str) -> None:
    result, _, docs = rendered
    t, n = translator(lang), Numbers(translator(lang)("unknown"))
    text = _page(docs, "classification", lang)
    counts = result.classification["counts"]
    assert sum(counts.values()) == len(result.ncu_metrics) > 0
    for cls, count in counts.items():
        # pairs and their share, then their nsys time and its share of all profiled time
        time_ns = float(result.ncu_metrics.loc[result.ncu_metrics["class"] == cls, "total_ns"].sum())
        all_ns = float(result.ncu_metrics["total_ns"].sum())
        _row(text, f"| {t('classes.' + cls)} | {count} | {n.cell(result.classification['percent'][cls])} | "
                   f"{n.cell_ms(time_ns)} | {n.cell(100 * time_ns / all_ns)} |")
    # the means table weighs each kernel by its nsys time in its stage
    metrics = result.ncu_metrics
    for key, value in result.classification["overall_time_means"].items():
        line = _row(text, f"| {t('metrics.' + key)} |")
        assert line.endswith(f" {n.cell(value)} |")
    have = metrics["duration_ns"].notna()
    weighted_us = float((metrics.loc[have, "duration_ns"] * metrics.loc[have, "total_ns"]).sum()
                        / metrics.loc[have, "total_ns"].sum()) / 1e3
    assert result.classification["overall_time_means"]["duration_us"] == pytest.approx(weighted_us)
    for kernel in result.ncu_metrics.to_dict("records"):  # one row per kernel and stage
        stage = t("stages.all") if kernel["stage"] == "all" else escape_text(kernel["stage"])
        qualifier = kernel.get("qualifier")
        qualified = "" if is_missing(qualifier) else t("classification.qualified",
                                                        qualifier=t(f"qualifiers.{qualifier}"))
        _row(text, f"| {_name(kernel['friendly_name'], kernel['name'], n.unknown)} | {stage} | "
                   f"{t('classes.' + kernel['class'])}{qualified} |", f"| {n.cell(kernel['sm_throughput_pct'])} |",
             f"| {n.cell(kernel['duration_ns'] / 1e3)} | {n.int(kernel['launches'])} |")


def test_missing_numbers_say_unknown(rendered) -> None:
    """A GPU description with only the name (as some inputs give): every other row is unknown."""
    result, meta, _ = rendered
    bare = dataclasses.replace(result, gpu=GpuInfo(name=result.gpu.name))
    for lang, unknown, clock in (("en", "unknown", "Memory clock"), ("zh", "未知", "显存时钟")):
        text = render_page("index", bare, meta, lang, {})
        assert _row(text, f"| {clock} | {unknown} |")
        assert text.count(f"| {unknown} |") >= 7
        assert _row(text, "| " + translator(lang)("index.gpu_name") + f" | {escape_text(result.gpu.name)} |")


def test_overview_provenance_and_gpu(rendered) -> None:
    result, meta, docs = rendered
    text = _page(docs, "index", "en")
    assert meta.title["en"].replace("(", "").replace(")", "") in text.replace("\\", "").replace("(", "").replace(")", "")
    for prov in result.provenance:
        _row(text, f"| {escape_text(Path(prov.path).name)} | {escape_text(prov.format)} |", f"`{prov.sha256[:12]}`")
    assert _row(text, "| SMs |").endswith(f"| {result.gpu.sm_count} |")
    assert f"{result.coverage['profiled']} of the top {result.coverage['top_n']}" in text


def test_roofline_peaks_and_points(rendered) -> None:
    result, _, docs = rendered
    text = _page(docs, "roofline", "en")
    n = Numbers("unknown")
    roofs = result.roofline["roofs"]
    _row(text, "| DRAM bandwidth |", n.si(roofs["peak_dram_bytes_per_s"], "B/s"))
    _row(text, "| Tensor Core |", n.si(roofs["ceilings"]["tensor"], "FLOP/s"), n.num(roofs["ridges"]["tensor"]))
    for point in result.roofline["physical"].to_dict("records"):
        datapath = translator("en")(f"datapaths.{point['datapath']}")
        if point["work"] == "useful":  # useful work from operator shapes beside ncu's executed work
            datapath += ", useful (operator shapes)"
        _row(text, f"| {_name(point['friendly_name'], point['name'])} | {escape_text(point['stage'])} | ",
             f"| {datapath} | {n.cell(point['flop'] / 1e9)} | {n.cell(point['dram_bytes'] / 1e6)} | "
             f"{n.cell(point['arithmetic_intensity'])} | {n.cell(point['achieved_flop_per_s'] / 1e12)} |")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_findings_by_kind(rendered, lang: str) -> None:
    from generator.render.findings import render_finding

    result, _, docs = rendered
    t = translator(lang)
    text = _page(docs, "findings", lang)
    assert result.findings
    sections = {
        "finding": text.split("## " + t("findings.findings"))[1].split("\n## ")[0],
        "hardware": text.split("## " + t("findings.hardware"))[1],
    }
    for finding in result.findings:
        escaped = dataclasses.replace(finding, kernels=tuple(escape_text(k) for k in finding.kernels))
        assert render_finding(escaped, lang) in sections[finding.kind]


def test_appendix_names_and_yaml(rendered) -> None:
    result, _, docs = rendered
    text = _page(docs, "appendix", "en")
    for entry in result.kernel_names:
        assert escape_text(entry["raw_name"]) in text
    yaml_text = (docs / "data" / "kernels.yaml").read_text(encoding="utf-8")
    # collapsed: the fence indented under a details block
    indented = "\n".join(f"    {line}" if line else "" for line in yaml_text.rstrip().splitlines())
    assert '??? note "kernels.yaml"\n\n    ```yaml\n' + indented + "\n    ```" in text
    assert len(yaml.safe_load(yaml_text)) == len(result.kernel_names)


def test_downloads_link_the_data_files(rendered) -> None:
    result, _, docs = rendered
    text = _page(docs, "downloads", "zh")
    for name in ("top_kernels.csv", "kernels.yaml", "ncu_metrics.csv", "summary.json"):
        assert (docs / "data" / name).is_file()
        assert f"](data/{name})" in text
    summary = json.loads((docs / "data" / "summary.json").read_text(encoding="utf-8"))
    assert summary["kernels_profiled"] == len(result.ncu_metrics)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_headings_never_collide_with_chart_ids(rendered, lang: str) -> None:
    result, _, docs = rendered
    chart_ids: list[str] = []
    for page in page_names(result):
        html = markdown.markdown(_page(docs, page, lang), extensions=EXTENSIONS,
                                 extension_configs=EXTENSION_CONFIGS)
        headings = re.findall(r'<h[1-6] id="([^"]+)"', html)
        assert headings and not [h for h in headings if h.startswith("kr-")]
        ids = [(b, a) for a, b in re.findall(r'<div class="kr-chart" data-spec-ref="([^"]+)" id="([^"]+)"', html)]
        for chart_id, spec_id in ids:
            assert f'<script type="application/json" id="{spec_id}">' in html
            svg = re.search(rf'id="{chart_id}".*?<img alt="[^"]*" src="([^"]+)"', html, re.S)[1]
            assert svg.endswith(f"-{lang}.svg") and (docs / svg).is_file()
        chart_ids += [i for i, _ in ids]
        assert len(set(headings) & {i for i, _ in ids}) == 0
    assert len(chart_ids) == len(set(chart_ids)) > 20


def test_zh_pages_use_zh_words(rendered) -> None:
    _, _, docs = rendered
    zh = translator("zh")
    text = _page(docs, "classification", "zh")
    assert "## " + zh("classification.method") in text and "Mean metrics per class" not in text
    assert "classes." not in text and "metrics." not in text


def test_comparison_page_for_a_second_version(tmp_path: Path) -> None:
    result, meta = example_result()
    from generator.analyses.compare_versions import compare_versions

    second = dataclasses.replace(result, version_id="v2")
    second.comparison = compare_versions(result, second)
    v2 = VersionMeta("v2", {"en": "V2", "zh": "第二版"}, meta.latest.date)
    meta2 = dataclasses.replace(meta, versions=(*meta.versions, v2))
    render_version(second, meta2, tmp_path, ["en", "zh"])
    assert "comparison" in page_names(second)
    text = (tmp_path / "comparison.md").read_text(encoding="utf-8")
    profiled = len(result.ncu_metrics)
    label = "| Profiled kernels (one per stage) |"
    assert _row(text, label).startswith(f"{label} {profiled} | {profiled} | +0 | +0.00 |")
    assert "**V1** to **V2**" in text
    zh = (tmp_path / "comparison.zh.md").read_text(encoding="utf-8")
    assert zh.startswith("# 版本对比")


def test_rendering_is_deterministic(rendered, tmp_path: Path) -> None:
    result, meta, docs = rendered
    render_version(result, meta, tmp_path, ["en", "zh"])
    first = {p.relative_to(docs): p.read_bytes() for p in docs.rglob("*") if p.is_file()}
    second = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert first.keys() == second.keys()
    assert [k for k in first if first[k] != second[k]] == []


def test_workload_and_commands_from_a_capture_manifest(rendered, tmp_path: Path) -> None:
    """A manifest written by the capture's own Manifest class: workload rows and exact commands."""
    from capture.manifest import Manifest

    result, meta, _ = rendered
    manifest = Manifest(tmp_path / "manifest.json", workload="ocr-vlm", params={"new_tokens": 8},
                        tools={"ncu": {"path": "/usr/bin/ncu", "version": "2025.3.1"}},
                        mangled_names={"gemv": ["_Z4gemvPf"]})
    argv = ["ncu", "--nvtx-include", "prefill/", "--kernel-name", "regex:gemv|gemm", "-o", "ncu/report"]
    with manifest.phase("ncu_profile", [argv]):
        pass
    with_manifest = dataclasses.replace(result, manifest=manifest.data)
    text = render_page("index", with_manifest, meta, "en", {})
    _row(text, "| Model | preset configuration ", ">ocr-vlm<")
    _row(text, "| Weights | random ")
    _row(text, "| New tokens | 8 |")
    # tool versions are setup facts (one source: the profiler file's record, else the manifest)
    from generator.analyses.setup import tool_versions
    _row(text, "| Nsight Compute | " + tool_versions(with_manifest)["ncu"] + " |")
    assert "tools.ncu" not in text
    assert "_Z4gemvPf" not in text and "created" not in text
    # the commands once, collapsed (a details block), as the manifest records them
    assert "    ```shell\n    ncu --nvtx-include prefill/ --kernel-name 'regex:gemv|gemm' -o ncu/report\n    ```" in text
    assert text.count("--nvtx-include prefill/") == 1 and '??? note "Tool commands (1, ' in text


def test_only_the_charts_a_page_places_get_an_svg(rendered) -> None:
    result, _, docs = rendered
    placed = {link for page in docs.glob("*.md")
              for link in re.findall(r"\]\((assets/charts/[^)]+\.svg)\)", page.read_text(encoding="utf-8"))}
    assert {p.relative_to(docs).as_posix() for p in (docs / "assets" / "charts").glob("*.svg")} == placed
    assert len(placed) > 20
    # no module ranges in this version: its Modules page says so and places none of the icicles built
    assert not result.module_tree.attributed and build_charts(result, translator("en"))["modules-0"] is not None
    assert not [link for link in placed if "/modules-" in link]
