"""Extension points are one place each: a reader is one module, a finding one rule plus its words,
an analysis one module declaring ``ANALYSES`` (published to data/ and the downloads page), a chart one
ChartEntry (on its page in EN, ZH and the HTML) — the last two in a real (small) build.

(A language: test_languages.py; a metric and its histogram chart: test_metric_registry.py.)
"""
from __future__ import annotations

import json
import lzma
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import altair as alt
import pandas as pd
import pytest
from conftest import DATA, ROOT

import generator.analyses
import generator.readers
from generator.analyses import registry
from generator.model import ALL_STAGES
from generator.pipeline.build import build_site
from generator.pipeline.inputs import InputCache
from generator.readers import base, detect, read
from generator.render import chart_table
from generator.resources import TEMPLATES

NSYS = DATA / "h200-small" / "small_vlm.nsys.sqlite.xz"
NCU = DATA / "h200-small" / "small_vlm_decode_ncu_raw.csv.xz"

TOY_READER = '''
"""One kernel launch per line, ``name<TAB>duration_ns``, after a ``#toy-durations`` line."""
import pandas as pd

from generator.model import ALL_STAGES, KERNEL_SUMMARY_COLUMNS, Dataset, Provenance, duration_stats, ranked


class ToyReader:
    format = "toy-durations"
    description = "kernel launches as name and duration (ns) per line"

    def sniff(self, path, head):
        return head.startswith(b"#toy-durations\\n")

    def read(self, path, *, stage=None):
        frame = pd.read_csv(path, sep="\\t", comment="#", names=["name", "duration_ns"])
        stats = ranked(duration_stats(frame["duration_ns"], frame["name"]), "name")
        summary = stats.assign(stage=ALL_STAGES, short_name=None)[KERNEL_SUMMARY_COLUMNS]
        return Dataset(Provenance(str(path), self.format), kernel_summary=summary)


READER = ToyReader()
'''

TOY_FINDING = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
import generator.resources
generator.resources.TEMPLATES = Path(sys.argv[1])  # the copy holding the rule's words
import generator.analyses.findings as F
from generator.analyses.result import Finding

def longest_kernel(inputs):  # the rule
    top = inputs.kernels.sort_values("duration_ns", ascending=False, kind="stable").iloc[0]
    return [Finding("longest_kernel", "finding", {"us": round(top["duration_ns"] / 1e3, 1)}, (top["friendly_name"],))]

F.RULES = (*F.RULES, longest_kernel)  # its entry
from helpers_pages import example_result
from generator.render.pages import render_version
result, meta = example_result()
render_version(result, meta, Path(sys.argv[3]), list(meta.langs))
top = result.ncu_metrics.sort_values("duration_ns", ascending=False, kind="stable").iloc[0]
print(json.dumps({"us": round(top["duration_ns"] / 1e3, 1), "name": top["friendly_name"]}))
"""


@pytest.fixture
def toy_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The toy reader's module in a folder added to generator.readers (as if saved there)."""
    folder = tmp_path / "more_readers"
    folder.mkdir()
    (folder / "toy_durations.py").write_text(TOY_READER, encoding="utf-8")
    monkeypatch.setattr(generator.readers, "__path__", [*generator.readers.__path__, str(folder)])
    base.readers.cache_clear()
    yield
    sys.modules.pop("generator.readers.toy_durations", None)
    base.readers.cache_clear()


def test_a_new_reader_is_one_module(toy_reader, tmp_path: Path) -> None:
    """Launches exported from a real nsys SQLite in the toy format read back to nsys' own totals."""
    sqlite = tmp_path / "small_vlm.sqlite"
    sqlite.write_bytes(lzma.decompress((DATA / "h200-small" / "small_vlm.nsys.sqlite.xz").read_bytes()))
    with sqlite3.connect(sqlite) as db:
        rows = db.execute("SELECT s.value, k.end - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
                          "JOIN StringIds AS s ON s.id = k.demangledName ORDER BY k.start").fetchall()
    toy = tmp_path / "launches.toy"
    toy.write_text("#toy-durations\n" + "".join(f"{n}\t{d}\n" for n, d in rows), encoding="utf-8")

    assert detect(toy).format == "toy-durations"
    with InputCache() as cache:
        summary = cache.read(toy).kernel_summary.set_index("name")
    nsys = read(DATA / "h200-small" / "small_vlm.nsys.sqlite.xz").kernel_summary
    nsys = nsys[nsys["stage"] == ALL_STAGES].set_index("name")
    assert len(rows) > 1000 and sorted(summary.index) == sorted(nsys.index)
    assert (summary["count"] == nsys["count"]).all()
    assert (summary["total_ns"] == nsys["total_ns"]).all()


def test_a_new_finding_is_one_rule_and_its_words(tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    shutil.copytree(TEMPLATES, templates)
    words = {"en": "The longest kernel is {{ kernel_names[0] }} at {{ us }} µs per launch.",
             "zh": "最长的内核是 {{ kernel_names[0] }}，每次启动 {{ us }} µs。"}
    for lang, text in words.items():
        (templates / "findings" / f"longest_kernel.{lang}.md.j2").write_text(text, encoding="utf-8")
    docs = tmp_path / "docs"
    done = subprocess.run([sys.executable, "-c", TOY_FINDING, str(templates), str(ROOT / "tests"), str(docs)],
                          cwd=ROOT, capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert done.returncode == 0, done.stderr[-2000:]
    top = json.loads(done.stdout.splitlines()[-1])
    assert top["us"] > 0
    en = (docs / "findings.md").read_text(encoding="utf-8")
    zh = (docs / "findings.zh.md").read_text(encoding="utf-8")
    assert f"at {top['us']} µs per launch." in en and f"每次启动 {top['us']} µs。" in zh


#: A contributor's new analysis: this file dropped into generator/analyses/ is all it takes.
TOY_ANALYSIS = '''
import pandas as pd

from generator.analyses.registry import Analysis
from generator.model import VersionInputs


def toy_launches(inputs: VersionInputs) -> dict[str, int]:
    """Kernel launches of the whole capture."""
    summary = inputs.kernel_summary
    return {"launches": int(summary.loc[summary["stage"] == "all", "count"].sum())}


def toy_launch_share(toy_launches: dict[str, int], top_kernels: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Each top kernel's share of the capture's launches (reads another analysis and a built-in one)."""
    top = top_kernels["all"]
    return pd.DataFrame({"name": top["name"], "launch_pct": 100 * top["count"] / toy_launches["launches"]})


ANALYSES = [Analysis("toy_launches", toy_launches, publish=True),
            Analysis("toy_launch_share", toy_launch_share, publish=True)]
'''


def toy_chart(result, t) -> alt.Chart | None:
    """A contributor's new chart: launches per top kernel, from the toy analysis."""
    share = result.values.get("toy_launch_share")
    if share is None or not len(share):
        return None
    return alt.Chart(alt.Data(values=share.to_dict("records"))).mark_bar().encode(
        x=alt.X("launch_pct:Q", title=t("columns.time_pct")), y=alt.Y("name:N", title=None))


@pytest.fixture
def extended(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    folder = tmp_path / "contrib"
    folder.mkdir()
    (folder / "toy_count.py").write_text(TOY_ANALYSIS, encoding="utf-8")
    monkeypatch.setattr(generator.analyses, "__path__", [*generator.analyses.__path__, str(folder)])
    entry = chart_table.ChartEntry("toy-launches", "durations", "charts.alt_norm", toy_chart,
                                   title="pages.durations")
    monkeypatch.setattr(chart_table, "CHARTS", [*chart_table.CHARTS, entry])
    yield tmp_path
    sys.modules.pop("generator.analyses.toy_count", None)


def test_one_analysis_module_and_one_chart_entry_reach_the_site(extended: Path) -> None:
    found = {a.key: a for a in registry.discover()}
    assert found["toy_launch_share"].result_type is pd.DataFrame
    assert found["toy_launch_share"].inputs == ("toy_launches", "top_kernels")
    report = extended / "report.yaml"
    report.write_text(f"""id: tiny
title: {{en: Tiny, zh: Tiny}}
versions:
  - id: v1
    title: {{en: V1, zh: V1}}
    date: 2026-11-21
    inputs:
      nsys: [{NSYS}]
      ncu: [{NCU}]
""", encoding="utf-8")
    out, src = extended / "site", extended / "src"
    build_site([report], out, src)
    docs = src / "tiny" / "v1" / "docs"

    # the analysis: published, equal to an independent count over the input
    database = extended / "nsys.sqlite"
    database.write_bytes(lzma.decompress(NSYS.read_bytes()))
    with sqlite3.connect(database) as db:
        [(launches,)] = db.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchall()
    assert launches > 1000
    assert json.loads((docs / "data" / "toy_launches.json").read_text(encoding="utf-8")) == {"launches": launches}
    share = pd.read_csv(docs / "data" / "toy_launch_share.csv")
    top = pd.read_csv(docs / "data" / "top_kernels.csv").query("stage == 'all'")
    assert list(share["name"]) == list(top["name"])
    assert share["launch_pct"].tolist() == pytest.approx((100 * top["count"] / launches).tolist())
    downloads = (docs / "downloads.md").read_text(encoding="utf-8")
    assert "(data/toy_launches.json)" in downloads and "(data/toy_launch_share.csv)" in downloads

    # the chart: at the end of its page, in every language and in the HTML, with its SVGs
    for page, lang in (("durations.md", "en"), ("durations.zh.md", "zh")):
        text = (docs / page).read_text(encoding="utf-8")
        assert 'id="kr-chart-toy-launches"' in text.split("\n## ")[-1]
        assert (docs / "assets" / "charts" / f"toy-launches-{lang}.svg").is_file()
    for html in (out / "v1" / "durations.html", out / "v1" / "zh" / "durations.html"):
        assert 'id="kr-chart-toy-launches"' in html.read_text(encoding="utf-8")
