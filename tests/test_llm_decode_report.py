"""The second example, ``examples/llm-decode/report.yaml`` (eager decode → CUDA-graph decode, real H200
captures), built through the CLI: GPU time per stage, the part inside CUDA graphs and the replays, on
the page and in data/stage_time.csv, against plain SQL over the node-level kernel rows. And a
whole-graph-only trace (nsys' default ``--cuda-graph-trace=graph``) as a whole-capture input: the page
says how many replays ran and their time, kernels unknown; as a stage, one line and exit 2."""
from __future__ import annotations

import csv
import lzma
import re
import sqlite3
from pathlib import Path

import pytest

from generator.cli import main

ROOT = Path(__file__).parent.parent
REPORT = ROOT / "examples" / "llm-decode" / "report.yaml"
RUNS = {"v1": ROOT / "examples" / "runs" / "llm-decode-eager", "v2": ROOT / "examples" / "runs" / "llm-decode-graph"}
WHOLE = ROOT / "tests" / "data" / "cuda-graphs" / "whole-graph-trace.sqlite.xz"

#: Kernels per stage, plain SQL: a kernel belongs to the stage in whose NVTX range (default domain)
#: the runtime call with its correlation id started (cudaGraphLaunch for graph nodes); node kernels
#: have graphNodeId set; replays are the cudaGraphLaunch calls in the range.
PER_STAGE_SQL = """
WITH stages AS (SELECT coalesce(e.text, s.value) AS name, e.start, e.end, e.globalTid FROM NVTX_EVENTS e
                LEFT JOIN StringIds s ON s.id = e.textId
                WHERE e.domainId = 0 AND coalesce(e.text, s.value) IN ('prefill', 'decode'))
SELECT n.name, count(*), sum(k.end - k.start),
       sum(CASE WHEN k.graphNodeId IS NOT NULL THEN k.end - k.start ELSE 0 END),
       (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r2 JOIN StringIds s2 ON s2.id = r2.nameId
        WHERE s2.value LIKE 'cudaGraphLaunch%' AND r2.start BETWEEN n.start AND n.end AND r2.globalTid = n.globalTid)
FROM CUPTI_ACTIVITY_KIND_KERNEL k
JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
JOIN stages n ON r.start BETWEEN n.start AND n.end AND r.globalTid = n.globalTid
GROUP BY n.name
"""


def _sql(run: Path, tmp: Path) -> dict[str, tuple[int, int, int, int]]:
    plain = tmp / f"{run.name}.sqlite"
    with lzma.open(run / "nsys" / "report.sqlite.xz") as src:
        plain.write_bytes(src.read())
    db = sqlite3.connect(plain)
    try:
        return {stage: tuple(values) for stage, *values in db.execute(PER_STAGE_SQL)}
    finally:
        db.close()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("llm-decode")
    assert main(["build", str(REPORT), "--out", str(tmp / "site"), "--src", str(tmp / "src")]) == 0
    return tmp


def _stage_rows(docs: Path) -> dict[str, dict[str, str]]:
    with (docs / "data" / "stage_time.csv").open(encoding="utf-8") as fh:
        return {row["stage"]: row for row in csv.DictReader(fh)}


def _page_rows(page: Path, first_cell: str) -> list[str]:
    """The cells of the GPU-time-per-stage table row whose first cell is ``first_cell``."""
    text = page.read_text(encoding="utf-8")
    section = text.split("## GPU time per stage" if page.name == "index.md" else "## 各阶段 GPU 时间")[1]
    line = next(ln for ln in section.splitlines() if ln.startswith(f"| {first_cell} |"))
    return [c.strip() for c in line.strip("|").split("|")]


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_stage_time_and_graphs_equal_plain_sql(built: Path, version: str, tmp_path: Path) -> None:
    sql = _sql(RUNS[version], tmp_path)
    docs = built / "src" / "llm-decode-h200" / version / "docs"
    data = _stage_rows(docs)
    total_ns = sum(ns for _, ns, _, _ in sql.values())
    for stage, (n, ns, graph_ns, replays) in sql.items():
        row = data[stage]
        assert (int(row["launches"]), int(row["kernel_ns"]), int(row["graph_kernel_ns"]),
                int(row["graph_launches"])) == (n, ns, graph_ns, replays)
        assert float(row["share_pct"]) == pytest.approx(ns * 100 / total_ns)
        for page in (docs / "index.md", docs / "index.zh.md"):
            cells = _page_rows(page, stage)
            # ms and % in the headers; two decimals in the cells
            assert cells[1:4] == [f"{n:,d}", f"{ns / 1e6:,.2f}", f"{ns * 100 / total_ns:.2f}"]
            assert cells[6:] == [f"{graph_ns / 1e6:,.2f}", f"{graph_ns * 100 / ns:.2f}", f"{replays:,d}"]
    assert int(data["all"]["kernel_ns"]) == total_ns
    if version == "v2":  # every decode kernel ran inside one of 32 replays; prefill runs eagerly
        assert sql["decode"] == (26080, 69122884, 69122884, 32)
        assert sql["prefill"][2:] == (0, 0)
        assert _page_rows(docs / "index.md", "decode")[6:] == ["69.12", "100.00", "32"]
    else:
        assert all(graph_ns == 0 and replays == 0 for _, _, graph_ns, replays in sql.values())


def test_top_n_share_per_stage_is_the_top_kernels_table(built: Path) -> None:
    """Top 20 (ms) of each stage = the sum of the stage's 20 rows of data/top_kernels.csv."""
    docs = built / "src" / "llm-decode-h200" / "v2" / "docs"
    with (docs / "data" / "top_kernels.csv").open(encoding="utf-8") as fh:
        tops: dict[str, float] = {}
        for row in csv.DictReader(fh):
            tops[row["stage"]] = tops.get(row["stage"], 0.0) + float(row["total_ns"])
    for stage, row in _stage_rows(docs).items():
        assert float(row["top_n_ns"]) == pytest.approx(tops[stage])
        assert float(row["top_n_pct"]) == pytest.approx(tops[stage] * 100 / float(row["kernel_ns"]))
    # the chart's libraries add up to each stage's time
    with (docs / "data" / "stage_libraries.csv").open(encoding="utf-8") as fh:
        libraries: dict[str, float] = {}
        for row in csv.DictReader(fh):
            libraries[row["stage"]] = libraries.get(row["stage"], 0.0) + float(row["kernel_ns"])
    assert libraries == {s: pytest.approx(float(r["kernel_ns"])) for s, r in _stage_rows(docs).items()}


WHOLE_REPORT = """id: whole-graphs
title: {{en: "Whole graphs", zh: "整图"}}
versions:
  - id: v1
    title: {{en: "V1", zh: "第一版"}}
    date: 2026-11-22
    inputs:
      nsys:
        - {{path: {path}{stage}}}
"""


def test_whole_graph_trace_as_a_whole_capture_input_says_kernels_are_unknown(tmp_path: Path) -> None:
    plain = tmp_path / "whole.sqlite"
    with lzma.open(WHOLE) as src:
        plain.write_bytes(src.read())
    db = sqlite3.connect(plain)
    replays, ns = db.execute("SELECT count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE").fetchone()
    kernels, kernel_ns = db.execute("SELECT count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    db.close()
    assert (replays, ns) == (8, 3942057)
    report = tmp_path / "report.yaml"
    report.write_text(WHOLE_REPORT.format(path=WHOLE, stage=""), encoding="utf-8")
    assert main(["build", str(report), "--out", str(tmp_path / "site"), "--src", str(tmp_path / "src")]) == 0
    docs = tmp_path / "src" / "whole-graphs" / "v1" / "docs"
    page = (docs / "index.md").read_text(encoding="utf-8")
    assert (f"all stages: {replays} CUDA graph replays were traced as whole graphs ({ns / 1e6:.2f} ms GPU time, "
            "not counted above); their kernels are unknown") in re.sub(r"\s+", " ", page)
    assert "：8 次 CUDA 图重放以整图方式记录（GPU 时间 3.94 ms" in (docs / "index.zh.md").read_text(encoding="utf-8")
    row = _stage_rows(docs)["all"]
    assert (int(row["launches"]), int(row["kernel_ns"]), int(row["graph_launches"]), int(row["whole_graph_launches"]),
            int(row["whole_graph_ns"])) == (kernels, kernel_ns, replays, replays, ns)


def test_whole_graph_trace_as_a_stage_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    report = tmp_path / "report.yaml"
    report.write_text(WHOLE_REPORT.format(path=WHOLE, stage=", stage: decode"), encoding="utf-8")
    assert main(["build", str(report), "--out", str(tmp_path / "site"), "--src", str(tmp_path / "src")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"error: {WHOLE}: NVTX range 'decode' ran 4 CUDA graph launches traced as whole graphs "
                   "(494.6 us GPU time per graph, kernels unknown): re-capture with nsys profile "
                   "--cuda-graph-trace=node"]
    assert not (tmp_path / "site").exists()


#: Per stage, the span by plain SQL: first start to last end of the stage's kernels (each stage is
#: one NVTX range instance in these runs).
SPAN_SQL = PER_STAGE_SQL.replace(
    "SELECT n.name, count(*), sum(k.end - k.start),", "SELECT n.name, count(DISTINCT n.start), max(k.end) - min(k.start),")


def _spans(run: Path, tmp: Path) -> dict[str, int]:
    db = sqlite3.connect(tmp / f"{run.name}.sqlite")
    try:
        found = {stage: (instances, span) for stage, instances, span, _, _ in db.execute(SPAN_SQL)}
    finally:
        db.close()
    assert {instances for instances, _ in found.values()} == {1}
    return {stage: span for stage, (_, span) in found.items()}


def test_did_it_get_faster_kernel_time_and_span_apart(built: Path, tmp_path: Path) -> None:
    """CUDA-graph decode: +15.0 % kernel time, slower (interval [+14.9, +15.1] % against a 0.3 % band
    of the captures' own noise), while its span fell 89.4 %: shown, but one range instance per stage
    is no distribution, so the span gets no verdict."""
    sql = {v: _sql(run, tmp_path) for v, run in RUNS.items()}
    spans = {v: _spans(run, tmp_path) for v, run in RUNS.items()}
    docs = built / "src" / "llm-decode-h200" / "v2" / "docs"
    with (docs / "data" / "stage_speed.csv").open(encoding="utf-8") as fh:
        rows = {row["stage"]: row for row in csv.DictReader(fh)}
    page = (docs / "comparison.md").read_text(encoding="utf-8")
    for stage in ("prefill", "decode"):
        row = rows[stage]
        before, after = sql["v1"][stage][1], sql["v2"][stage][1]
        span_before, span_after = spans["v1"][stage], spans["v2"][stage]
        assert (float(row["kernel_prev_ns"]), float(row["kernel_ns"])) == (before, after)
        assert (float(row["span_prev_ns"]), float(row["span_ns"])) == (span_before, span_after)
        rel, span_rel = (after - before) * 100 / before, (span_after - span_before) * 100 / span_before
        low, high, noise = (float(row[f"kernel_{k}_pct"]) for k in ("low", "high", "noise"))
        assert low < rel < high
        assert row["kernel_verdict"] == ("slower" if low > noise else "faster" if high < -noise else "unchanged")
        assert row["span_verdict"] == "not enough instances"
        line = next(ln for ln in page.splitlines() if ln.startswith(f"| {stage} |"))
        assert f"| {before / 1e6:,.2f} | {after / 1e6:,.2f} | {rel:+.2f} | [{low:+.1f}%, {high:+.1f}%] |" in line
        assert f"| {span_before / 1e6:,.2f} | {span_after / 1e6:,.2f} | {span_rel:+.2f} |" in line
    decode = rows["decode"]
    assert (round(float(decode["kernel_rel_pct"]), 1), round(float(decode["span_rel_pct"]), 1)) == (15.0, -89.4)
    assert (decode["kernel_verdict"], decode["host_dominated"]) == ("slower", "False")  # it ran CUDA graphs
    assert rows["prefill"]["host_dominated"] == "True"


def test_kernels_added_removed_and_movers_add_up(built: Path, tmp_path: Path) -> None:
    """Added + paired = this version's kernel time, removed + paired = the previous one's (plain SQL);
    an added kernel's name never ran before, a removed one's never runs now."""
    totals = {v: sum(ns for _, ns, _, _ in _sql(run, tmp_path).values()) for v, run in RUNS.items()}
    names = {}
    for version, run in RUNS.items():
        db = sqlite3.connect(tmp_path / f"{run.name}.sqlite")
        names[version] = {n for (n,) in db.execute(
            "SELECT DISTINCT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName")}
        db.close()
    docs = built / "src" / "llm-decode-h200" / "v2" / "docs"
    with (docs / "data" / "kernel_changes.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    by = {s: [r for r in rows if r["status"] == s] for s in ("added", "removed", "paired")}
    assert sum(float(r["total_ns"]) for r in by["added"] + by["paired"]) == totals["v2"]
    assert sum(float(r["prev_total_ns"]) for r in by["removed"] + by["paired"]) == totals["v1"]
    assert all(r["name"] not in names["v1"] for r in by["added"])
    assert all(r["prev_name"] not in names["v2"] for r in by["removed"])
    moved = [abs(float(r["abs_ns"])) for r in by["paired"]]
    assert moved == sorted(moved, reverse=True)
    page = (docs / "comparison.md").read_text(encoding="utf-8")
    added_ms = sum(float(r["total_ns"]) for r in by["added"]) / 1e6
    assert f"Kernels that ran only in this version: {len(by['added'])}, {added_ms:,.3f} ms GPU time" in page
