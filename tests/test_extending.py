"""Extension points are one place each: a reader is one module, a finding one rule plus its words.

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

import pytest
from conftest import DATA, ROOT

import generator.readers
from generator.model import ALL_STAGES
from generator.pipeline.inputs import InputCache
from generator.readers import base, detect, read
from generator.resources import TEMPLATES

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
