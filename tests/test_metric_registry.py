"""One metric registry (generator.metric_table) drives readers, analyses, charts and templates."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

from generator.analyses.classify import MEAN_METRICS
from generator.analyses.histograms import HISTOGRAMS
from generator.analyses.regression import WATCHABLE
from generator.languages import LANGS
from generator.metric_table import CANONICAL_METRIC_NAMES, DISPLAY, DISPLAY_METRICS, HIGHER, LOWER
from generator.render.charts import SPEC_ID_PREFIX
from generator.resources import TEMPLATES

# Adds one registry row the way a contributor would, then renders the example version's pages.
ADD_METRIC = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
import generator.resources
generator.resources.TEMPLATES = Path(sys.argv[1])  # the copy holding the new metric's labels
import generator.metric_table as M
M.DISPLAY_METRICS = (*M.DISPLAY_METRICS, M.DisplayMetric("registers_k", "registers_per_thread", "k", 1e-3))
M.DISPLAY = {m.key: m for m in M.DISPLAY_METRICS}
from helpers_pages import example_result
from generator.render.pages import render_version
result, meta = example_result()
render_version(result, meta, Path(sys.argv[3]), list(meta.langs))
print(json.dumps(sorted(result.ncu_metrics["registers_per_thread"].dropna() * 1e-3)))
"""


def _labels(lang: str) -> dict[str, str]:
    """The glossary's metric words in ``lang`` (a language without its own word reads the English)."""
    metrics = yaml.safe_load((TEMPLATES / "glossary.yaml").read_text(encoding="utf-8"))["metrics"]
    return {key: entry.get(lang, entry["en"]) for key, entry in metrics.items()}


def test_every_display_metric_shows_a_canonical_metric_with_words_in_every_language() -> None:
    assert len(DISPLAY) == len(DISPLAY_METRICS)
    assert all(m.source in CANONICAL_METRIC_NAMES for m in DISPLAY_METRICS)
    for lang in LANGS:
        assert set(_labels(lang)) == set(DISPLAY), lang  # no metric without words, no words without a metric


def test_pages_charts_and_gate_take_their_metrics_from_the_registry() -> None:
    assert set(MEAN_METRICS) <= set(HISTOGRAMS) == set(DISPLAY)
    assert WATCHABLE == {"sm_throughput_pct": HIGHER, "dram_throughput_pct": HIGHER, "memory_throughput_pct": HIGHER,
                         "l1_hit_rate_pct": HIGHER, "l2_hit_rate_pct": HIGHER, "achieved_occupancy_pct": HIGHER,
                         "duration_us": LOWER}
    assert (DISPLAY["duration_us"].source, DISPLAY["duration_us"].scale) == ("duration_ns", 1e-3)
    assert (DISPLAY["memory_throughput_gbps"].source, DISPLAY["memory_throughput_gbps"].scale) == (
        "memory_throughput_bytes_per_s", 1e-9)


def test_a_new_histogram_is_one_registry_row_and_its_words(tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    shutil.copytree(TEMPLATES, templates)
    path = templates / "glossary.yaml"
    words = yaml.safe_load(path.read_text(encoding="utf-8"))
    words["metrics"]["registers_k"] = {"en": "Registers per thread (thousands)", "zh": "每线程寄存器（千）"}
    path.write_text(yaml.safe_dump(words, allow_unicode=True), encoding="utf-8")
    docs = tmp_path / "docs"
    done = subprocess.run([sys.executable, "-c", ADD_METRIC, str(templates), str(ROOT / "tests"), str(docs)],
                          cwd=ROOT, capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert done.returncode == 0, done.stderr[-2000:]
    expected = json.loads(done.stdout.splitlines()[-1])
    assert expected  # the example's kernels report registers per thread
    for page, label in (("histograms.md", "Registers per thread (thousands)"),
                        ("histograms.zh.md", "每线程寄存器（千）")):
        text = (docs / page).read_text(encoding="utf-8")
        assert f"## {label}\n" in text
        payload = re.search(rf'id="{SPEC_ID_PREFIX}hist-registers-k">(.*?)</script>', text)[1]
        spec = json.loads(payload)
        assert spec["encoding"]["x"]["title"] == label
        assert sorted(row["value"] for row in spec["data"]["values"]) == pytest.approx(expected, rel=1e-12)
    assert len(list((docs / "assets" / "charts").glob("hist-registers-k-*.svg"))) == len(LANGS)
