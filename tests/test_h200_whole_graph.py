"""The H200 nsys export of ``llm-decode --cuda-graph`` traced as whole graphs (nsys' default
``--cuda-graph-trace=graph``; examples/runs/llm-decode-graph-whole-h200, no manifest) builds as a
profiler file: each graph a row of the stage that launched it with its GPU time, eager stages read
as usual, and the page and ``inspect`` say how to re-capture for kernels. Figures by plain SQL."""
from __future__ import annotations

import json
import lzma
import shutil
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from generator.cli import main
from generator.model import whole_graph_name

RUNS = Path(__file__).parent.parent / "examples" / "runs"
EXPORT = RUNS / "llm-decode-graph-whole-h200" / "report.sqlite.xz"
RECAPTURE = "Re-capture with nsys profile --cuda-graph-trace=node to see them."

#: The stage ranges (default NVTX domain) and, per stage, whole-graph replays (GRAPH_TRACE rows)
#: and kernels (KERNEL rows) whose launch call started inside the range on its thread.
STAGE_SQL = """
WITH st AS (SELECT coalesce(e.text, s.value) AS name, e.start, e.end, e.globalTid AS tid FROM NVTX_EVENTS e
  LEFT JOIN StringIds s ON s.id = e.textId
  WHERE e.eventType = 59 AND e.domainId = 0 AND coalesce(e.text, s.value) IN ('prefill', 'decode'))
SELECT 'graph', st.name, g.graphId, count(*), sum(g.end - g.start) FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE g
JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = g.correlationId
JOIN st ON r.globalTid = st.tid AND r.start BETWEEN st.start AND st.end GROUP BY 2, 3
UNION ALL
SELECT 'kernel', st.name, NULL, count(*), sum(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k
JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
JOIN st ON r.globalTid = st.tid AND r.start BETWEEN st.start AND st.end GROUP BY 2"""


@pytest.fixture(scope="module")
def sql(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str, object], tuple[int, int]]:
    """(kind, stage, graph id) → (count, GPU ns), and ("all", "", None): every graph replay."""
    plain = tmp_path_factory.mktemp("whole-h200") / "report.sqlite"
    with lzma.open(EXPORT) as src, plain.open("wb") as out:
        shutil.copyfileobj(src, out)
    with sqlite3.connect(plain) as db:
        rows = {(kind, stage, graph): (n, ns) for kind, stage, graph, n, ns in db.execute(STAGE_SQL)}
        rows[("all", "", None)] = db.execute(
            "SELECT count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE").fetchone()
    return rows


def test_sql_figures(sql: dict) -> None:
    """The capture: prefill eager (729 kernels), decode 32 replays of one graph, no eager kernel;
    96 replays in the whole file (warm-up, measured iteration, plain repeat)."""
    assert sql == {("graph", "decode", 1): (32, 76895983), ("kernel", "prefill", None): (729, 2442549),
                   ("all", "", None): (96, 230733167)}


def test_builds_by_stage_with_graph_rows(sql: dict, tmp_path: Path) -> None:
    assert main(["build", str(EXPORT), "--stages", "prefill,decode", "--out", str(tmp_path / "site")]) == 0
    [docs] = (tmp_path / "site_src").glob("*/v1/docs")
    graph_n, graph_ns = sql[("graph", "decode", 1)]
    eager_n, eager_ns = sql[("kernel", "prefill", None)]
    top = pd.read_csv(docs / "data" / "top_kernels.csv").set_index(["stage", "name"])
    assert top.loc[("decode", whole_graph_name(1)), ["count", "total_ns", "time_pct"]].tolist() == [graph_n, graph_ns, 100.0]
    assert top.loc[("all", whole_graph_name(1)), ["count", "total_ns"]].tolist() == [graph_n, graph_ns]
    assert ("prefill", whole_graph_name(1)) not in top.index
    stage_time = pd.read_csv(docs / "data" / "stage_time.csv").set_index("stage")
    assert stage_time.loc["prefill", ["launches", "kernel_ns", "whole_graph_launches"]].tolist() == [eager_n, eager_ns, 0]
    assert stage_time.loc["decode", ["launches", "kernel_ns", "whole_graph_launches", "whole_graph_ns"]].tolist() \
        == [0, graph_ns, graph_n, graph_ns]
    index = (docs / "index.md").read_text(encoding="utf-8")
    [line] = [x for x in index.splitlines() if RECAPTURE in x]
    assert line.startswith(f"decode: {graph_n} CUDA graph replays were traced as whole graphs (76.90 ms GPU time")
    assert "decode：32 次 CUDA 图重放以整图方式记录（GPU 时间 76.90 ms" in (docs / "index.zh.md").read_text(encoding="utf-8")
    # the host gaps: decode ran as graph replays (its kernel time all in graphs), not "eagerly"
    assert "decode ran as CUDA graph replays (100.0 % of its kernel time in graphs)" in index
    assert "this capture ran the model eagerly" not in index
    # the top kernels' note states the graphs' share apart: 96.9 % of the stages together
    assert round(100 * graph_ns / (graph_ns + eager_ns), 1) == 96.9
    tops = (docs / "top-kernels.md").read_text(encoding="utf-8")
    assert "**In short:** CUDA graphs traced as whole graphs take 96.9% of all stages (their kernels unknown)" in tops
    assert "**In short:** CUDA graphs traced as whole graphs take 100.0% of decode; their kernels are unknown." in tops


def test_inspect_says_how_to_see_the_kernels(sql: dict, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["inspect", "--json", str(EXPORT)]) == 0
    [summary] = json.loads(capsys.readouterr().out)
    [kernels] = summary["kernel_summary"]
    n, ns = sql[("all", "", None)]
    assert kernels["whole_graphs"] == {"graphs": 1, "launches": n, "total_ns": ns}
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["inspect", "--stage", "decode", str(EXPORT)]) == 0
    assert ("1 CUDA graph(s), 32 launches traced as whole graphs, 76.896 ms GPU time; kernels unknown: re-capture "
            "with nsys profile --cuda-graph-trace=node to see them") in capsys.readouterr().out


def test_stages_option_needs_an_nsys_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """--stages names ranges of nsys files: with only a run directory it is refused in one line."""
    assert main(["build", str(RUNS / "compiled-block-h200"), "--stages", "block", "--out", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--stages" in err and "nsys" in err
    assert not (tmp_path / "s").exists()
