"""Versions with only part of the data: staged nsys inputs without a whole-capture summary ("all
stages" is their union and coverage counts against it), nsys data only, ncu data only. Each builds
every page its data supports and says on the others, in each language's words, what was not given."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import DATA

from generator.cli import main
from generator.model import ALL_STAGES
from generator.pipeline.config import load_report
from generator.pipeline.inputs import InputCache, measured_union, version_inputs
from generator.readers import read
from generator.render.translations import translator

pytestmark = pytest.mark.slow

H200 = DATA / "h200-small"
SQLITE = H200 / "small_vlm.nsys.sqlite.xz"
NCU_PAGES = ("classification", "durations", "histograms", "roofline")
REPORT = f"""
id: partial
title: {{en: Partial inputs, zh: 部分输入}}
top_n: 20
versions:
  - id: staged
    title: {{en: Staged nsys and ncu, zh: 分阶段 nsys 与 ncu}}
    date: 2026-11-20
    inputs:
      nsys: [{{path: "{SQLITE}", stage: prefill}}, {{path: "{SQLITE}", stage: decode}}]
      ncu: ["{H200}/small_vlm_prefill.ncu-rep.xz", "{H200}/small_vlm_decode_ncu_raw.csv.xz"]
  - id: nsys-only
    title: {{en: nsys only, zh: 仅 nsys}}
    date: 2026-11-21
    inputs:
      nsys: [{{path: "{SQLITE}", stage: prefill}}, {{path: "{SQLITE}", stage: decode}}]
  - id: ncu-only
    title: {{en: ncu only, zh: 仅 ncu}}
    date: 2026-11-22
    inputs: {{ncu: ["{H200}/small_vlm_prefill.ncu-rep.xz"]}}
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("partial")
    report = root / "report.yaml"
    report.write_text(REPORT, encoding="utf-8")
    assert main(["build", str(report), "--out", str(root / "site"), "--src", str(root / "src")]) == 0
    return report, root / "src" / "partial"


def _page(src: Path, version: str, page: str, lang: str) -> str:
    return (src / version / "docs" / f"{page}{'' if lang == 'en' else '.' + lang}.md").read_text(encoding="utf-8")


def test_all_stages_is_the_union_of_the_stages_given(built: tuple[Path, Path]) -> None:
    report, _ = built
    with InputCache() as cache:
        inputs = version_inputs(load_report(report).versions[0], cache, report, 0)
    summary = inputs.kernel_summary
    prefill = read(SQLITE, stage="prefill").kernel_summary
    decode = read(SQLITE, stage="decode").kernel_summary
    union = summary[summary["stage"] == ALL_STAGES]
    assert list(dict.fromkeys(summary["stage"])) == [ALL_STAGES, "prefill", "decode"]
    assert set(union["name"]) == set(prefill["name"]) | set(decode["name"])
    assert union["total_ns"].sum() == prefill["total_ns"].sum() + decode["total_ns"].sum()
    assert union["count"].sum() == prefill["count"].sum() + decode["count"].sum()
    assert union.reset_index(drop=True).equals(measured_union(summary[summary["stage"] != ALL_STAGES]))
    assert union["time_pct"].sum() == pytest.approx(100.0)


def test_coverage_counts_against_the_union(built: tuple[Path, Path]) -> None:
    _, src = built
    index = _page(src, "staged", "index", "en")
    assert "of the top 0" not in index
    summary = next(line for line in index.splitlines() if "distinct kernels were profiled" in line)
    assert "of the top 20 kernels by total time have metrics" in summary
    top = _page(src, "staged", "top-kernels", "en")
    assert "## Stage: all stages" in top and "| 20 |" in top.split("## Stage: prefill")[0]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_nsys_only_version(built: tuple[Path, Path], lang: str) -> None:
    _, src = built
    no_ncu = translator(lang)("no_data.ncu")
    docs = src / "nsys-only" / "docs"
    assert {p.stem.split(".")[0] for p in docs.glob("*.md")} >= {"index", "top-kernels", "comparison", *NCU_PAGES}
    for page in NCU_PAGES:
        assert no_ncu in _page(src, "nsys-only", page, lang), page
    assert no_ncu in _page(src, "nsys-only", "index", lang)
    top = _page(src, "nsys-only", "top-kernels", lang)
    assert no_ncu not in top and top.count("| 1 |") == 3  # all stages, prefill, decode
    assert translator(lang)("no_data.nsys") not in top


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_ncu_only_version(built: tuple[Path, Path], lang: str) -> None:
    _, src = built
    t = translator(lang)
    assert t("no_data.nsys") in _page(src, "ncu-only", "top-kernels", lang)
    index = _page(src, "ncu-only", "index", lang)
    assert t("no_data.nsys") in index and t("index.summary_profiled", profiled="20") in index
    durations = _page(src, "ncu-only", "durations", lang)
    assert t("no_data.ncu") not in durations and durations.count("\n| ") == 1 + 10  # header + top 10
    for page in NCU_PAGES:
        assert t("no_data.ncu") not in _page(src, "ncu-only", page, lang), page

