"""CUDA graphs, on the committed H200 capture of ``llm-decode --cuda-graph`` (node-level nsys trace)
and on a whole-graph trace of the same workload (nsys' default ``--cuda-graph-trace=graph``).

Every figure is checked against plain SQL over the export's own rows: graph-node kernels belong to
the stage whose ``cudaGraphLaunch`` call launched them, and their capture-time module is the module
range open when the node was created.
"""
from __future__ import annotations

import json
import lzma
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from capture.workloads.generate import GraphedDecoder, prefill_and_decode
from generator.model import whole_graph_name, whole_graphs
from generator.pipeline.build import build_site
from generator.readers import read
from generator.readers.nsys_sqlite import graph_node_modules, graph_summary, kernel_summary, read_stages
from generator.run_layout import MODULE_NVTX_DOMAIN

ROOT = Path(__file__).parent.parent
GRAPH = ROOT / "examples" / "runs" / "llm-decode-graph"
EAGER = ROOT / "examples" / "runs" / "llm-decode-eager"
WHOLE = ROOT / "tests" / "data" / "cuda-graphs" / "whole-graph-trace.sqlite.xz"


@pytest.fixture(scope="module")
def graph_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    plain = tmp_path_factory.mktemp("graph") / "report.sqlite"
    with lzma.open(GRAPH / "nsys" / "report.sqlite.xz") as src:
        plain.write_bytes(src.read())
    return plain


#: The stage ranges (default domain; the name inline or registered).
STAGES_SQL = """
SELECT coalesce(e.text, s.value) AS name, e.start, e.end, e.globalTid FROM NVTX_EVENTS e
LEFT JOIN StringIds s ON s.id = e.textId WHERE e.domainId = 0 AND coalesce(e.text, s.value) IN ('prefill', 'decode')
"""
#: Kernels per stage by plain SQL: a kernel is in the stage when the runtime call with its
#: correlation id (cudaGraphLaunch for graph nodes) starts inside the stage's NVTX range.
PER_STAGE_SQL = f"""
SELECT n.name, count(*), sum(k.end - k.start), sum(k.graphNodeId IS NOT NULL),
       count(DISTINCT CASE WHEN k.graphNodeId IS NOT NULL THEN k.correlationId END)
FROM CUPTI_ACTIVITY_KIND_KERNEL k
JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
JOIN ({STAGES_SQL}) n ON r.start BETWEEN n.start AND n.end AND r.globalTid = n.globalTid
GROUP BY n.name
"""
REPLAYS_SQL = f"""
SELECT n.name, count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId
JOIN ({STAGES_SQL}) n ON r.start BETWEEN n.start AND n.end AND r.globalTid = n.globalTid
WHERE s.value LIKE 'cudaGraphLaunch%' GROUP BY n.name
"""


def test_graph_kernels_belong_to_the_stage_that_launched_the_graph(graph_db: Path) -> None:
    db = sqlite3.connect(graph_db)
    sql = {stage: (n, ns, nodes, replays) for stage, n, ns, nodes, replays in db.execute(PER_STAGE_SQL)}
    assert sql["decode"] == (26080, 69122884, 26080, 32)  # every decode kernel ran inside one of 32 replays
    assert sql["prefill"][2] == 0  # prefill runs eagerly
    summary = kernel_summary(graph_db, ["prefill", "decode"])
    for stage, (n, ns, _, _) in sql.items():
        rows = summary[summary["stage"] == stage]
        assert (int(rows["count"].sum()), int(rows["total_ns"].sum())) == (n, ns)
    graphs = graph_summary(graph_db, ["prefill", "decode"]).set_index("stage")
    assert dict(db.execute(REPLAYS_SQL)) == {"decode": 32}
    assert graphs.loc["decode"].to_dict() == {
        "graph_launches": 32, "graph_kernel_launches": 26080, "graph_kernel_ns": 69122884,
        "kernel_launches": 26080, "kernel_ns": 69122884, "whole_graph_launches": 0, "whole_graph_ns": 0}
    assert graphs.loc["prefill", "graph_launches"] == 0 and graphs.loc["prefill", "kernel_launches"] == sql["prefill"][0]


def test_manifest_states_the_graph_figures_the_export_holds(graph_db: Path) -> None:
    man = json.loads((GRAPH / "manifest.json").read_text())
    assert man["params"]["cuda_graph"] is True
    assert man["cuda_graphs"] == graph_summary(graph_db, man["stages"]).to_dict(orient="records")
    eager = json.loads((EAGER / "manifest.json").read_text())
    assert eager["params"]["cuda_graph"] is False
    assert all(s["graph_launches"] == 0 for s in eager["cuda_graphs"])
    # the top decode kernels of the graphed run are graph nodes profiled by ncu in the decode stage
    decode = {k["name"] for k in man["top_n"]["stages"]["decode"]}
    profiled = {(t["stage"], t["kernel"]) for t in man["ncu_targets"]}
    assert {("decode", name) for name in decode} <= profiled
    assert all(t["graph_node"] is not None for t in man["ncu_targets"] if t["stage"] == "decode")


NODE_MODULE_SQL = """
SELECT c.graphNodeId, (SELECT coalesce(m.text, s.value) FROM NVTX_EVENTS m LEFT JOIN StringIds s ON s.id = m.textId
                       WHERE m.domainId = (SELECT domainId FROM NVTX_EVENTS WHERE eventType = 75 AND text = :domain)
                         AND m.eventType = 59 AND m.globalTid = c.globalTid AND m.start <= c.start AND m.end >= c.start
                       ORDER BY m.start DESC LIMIT 1)
FROM CUDA_GRAPH_NODE_EVENTS c WHERE c.originalGraphNodeId IS NULL
"""


def test_graph_nodes_join_the_module_that_captured_them(graph_db: Path) -> None:
    """Each replayed kernel's node was cloned from a captured node; the module range open when that
    node was created is the module that launched the kernel during capture."""
    modules = graph_node_modules(graph_db, MODULE_NVTX_DOMAIN)
    db = sqlite3.connect(graph_db)
    by_original = dict(db.execute(NODE_MODULE_SQL, {"domain": MODULE_NVTX_DOMAIN}))
    assert len(modules) == 815  # kernel nodes of the decode-step graph
    assert [m if isinstance(m, str) else None for m in modules["module"]] == [by_original[o] for o in modules["original"]]
    assert int(modules["module"].isna().sum()) == 2  # argmax and position update run outside the model
    assert (modules["module"] == "model.lm_head [Linear]").sum() == 1
    assert (modules["module"] == "model.model.layers.15.mlp.down_proj [Linear]").sum() >= 1


@pytest.fixture(scope="module")
def whole_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    plain = tmp_path_factory.mktemp("whole") / "report.sqlite"
    plain.write_bytes(lzma.decompress(WHOLE.read_bytes()))
    return plain


#: Whole-graph replays per stage and graph by plain SQL: a replay (GRAPH_TRACE row) is in the stage
#: when its cudaGraphLaunch call starts inside the stage's NVTX range.
WHOLE_SQL = f"""
SELECT n.name, g.graphId, count(*), sum(g.end - g.start) FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE g
JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = g.correlationId
JOIN ({STAGES_SQL}) n ON r.start BETWEEN n.start AND n.end AND r.globalTid = n.globalTid
GROUP BY n.name, g.graphId
"""


def test_whole_graph_trace_reads_each_graph_as_a_row_of_its_stage(whole_db: Path) -> None:
    """nsys' default graph trace: each graph is one kernel-summary row of the stage that launched it
    (its replays and their GPU time), the eager kernels of the stages read as usual."""
    db = sqlite3.connect(whole_db)
    graphs = {(stage, whole_graph_name(graph)): (n, ns) for stage, graph, n, ns in db.execute(WHOLE_SQL)}
    assert graphs == {("decode", "CUDA graph 1 (whole graph, kernels unknown)"): (4, 1978420)}
    kernels = {stage: (n, ns) for stage, n, ns, _, _ in db.execute(PER_STAGE_SQL)}
    assert kernels == {"prefill": (113, 492669)}  # decode ran no kernel outside its graph
    reading = read_stages(whole_db, ["prefill", "decode"])
    summary = reading.summary
    rows = summary[whole_graphs(summary["name"])]
    assert {(s, n): (c, ns) for s, n, c, ns in rows[["stage", "name", "count", "total_ns"]].itertuples(index=False)} \
        == graphs
    assert rows["short_name"].isna().all()
    eager = summary[~whole_graphs(summary["name"])].groupby("stage")[["count", "total_ns"]].sum()
    assert {s: (int(r["count"]), int(r["total_ns"])) for s, r in eager.iterrows()} == kernels
    decode = summary[summary["stage"] == "decode"]
    assert decode["time_pct"].tolist() == [100.0]
    # the stage's GPU timeline holds the replays: 4 intervals, the first start to the last end
    first, last = db.execute(f"SELECT min(g.start), max(g.end) FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE g "
                             f"JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = g.correlationId "
                             f"JOIN ({STAGES_SQL}) n ON n.name = 'decode' AND r.start BETWEEN n.start AND n.end").fetchone()
    timeline = reading.timeline.set_index("stage")
    assert timeline.loc["decode", ["launches", "kernel_ns", "span_ns"]].tolist() == [4, 1978420, last - first]
    assert reading.graphs.set_index("stage").loc["decode", ["graph_launches", "whole_graph_launches", "whole_graph_ns",
                                                            "kernel_launches"]].tolist() == [4, 4, 1978420, 0]
    # the whole capture: every replay (the warm-up's too) of the one graph
    everything = read(WHOLE).kernel_summary.set_index("name")
    assert everything.loc[whole_graph_name(1), ["count", "total_ns"]].tolist() == list(db.execute(
        "SELECT count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE").fetchone()) == [8, 3942057]


def test_whole_graph_trace_builds_a_report_that_says_how_to_see_the_kernels(tmp_path: Path, whole_db: Path) -> None:
    report = tmp_path / "report.yaml"
    report.write_text(f"""id: whole
title: {{en: Whole graphs, zh: 整图}}
versions:
  - id: v1
    title: {{en: V1, zh: 一}}
    date: 2026-11-29
    inputs:
      nsys: [{{path: {WHOLE}, stage: prefill}}, {{path: {whole_db}, stage: decode}}]
""", encoding="utf-8")
    build_site([report], tmp_path / "site", tmp_path / "src")
    docs = tmp_path / "src" / "whole" / "v1" / "docs"
    (n, ns), = [(n, ns) for stage, _, n, ns in sqlite3.connect(whole_db).execute(WHOLE_SQL) if stage == "decode"]
    top = pd.read_csv(docs / "data" / "top_kernels.csv").set_index(["stage", "name"])
    row = top.loc[("decode", whole_graph_name(1))]
    assert (row["count"], row["total_ns"], row["time_pct"]) == (n, ns, 100.0)
    # opaque: its own name, no kernel family, never profiled
    assert (row["friendly_name"], row["library"], row["category"]) == (whole_graph_name(1), "CUDA graph", "other")
    assert pd.isna(row["profiled"])
    top_page = (docs / "top-kernels.md").read_text(encoding="utf-8")
    [line] = [line for line in top_page.splitlines() if line.startswith("| 1 |") and "CUDA graph 1" in line
              and "| 100.00 |" in line]
    assert line.endswith("| not profiled in this stage |")
    stage_time = pd.read_csv(docs / "data" / "stage_time.csv").set_index("stage")
    assert stage_time.loc["decode", ["launches", "kernel_ns", "top_n", "whole_graph_launches", "whole_graph_ns"]].tolist() \
        == [0, ns, 0, n, ns]
    assert stage_time.loc["prefill", ["launches", "kernel_ns"]].tolist() == [113, 492669]
    assert stage_time.loc["all", "kernel_ns"] == ns + 492669
    index = (docs / "index.md").read_text(encoding="utf-8")
    assert (f"decode: {n} CUDA graph replays were traced as whole graphs (1.98 ms GPU time, counted above; the kernel "
            'tables show each graph as one row "CUDA graph N (whole graph, kernels unknown)")') in index
    assert "Re-capture with nsys profile --cuda-graph-trace=node to see them." in index
    zh = (docs / "index.zh.md").read_text(encoding="utf-8")
    assert f"decode：{n} 次 CUDA 图重放以整图方式记录（GPU 时间 1.98 ms，已计入上表；内核表中每个图显示为一行" in zh
    assert "请用 nsys profile --cuda-graph-trace=node 重新采集以查看这些内核" in zh
    # no finding counts it as a kernel, and the top chart's note names a kernel, not the graph
    findings = (docs / "findings.md").read_text(encoding="utf-8")
    assert "CUDA graph 1" not in findings
    assert "decode: 1.98 ms (80.1 %), top-20 kernels cover 0.0 %" in findings
    assert "The largest kernel, CUDA graph" not in top_page


def test_static_cache_decode_gives_the_dynamic_cache_tokens() -> None:
    """The graphed decoder's step (static KV cache, in-place position) computes what the eager loop
    computes; on the GPU the same step is captured once and replayed (tokens equal, checked on the
    H200 in float32 and bfloat16)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    for impl in ("sdpa", "eager"):
        config = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                             num_key_value_heads=2, vocab_size=100)
        config._attn_implementation = impl
        model = LlamaForCausalLM(config).eval()
        embeds = model.get_input_embeddings()(torch.randint(0, 100, (2, 5)))
        expected = prefill_and_decode(model, embeds, 6)
        decoder = GraphedDecoder(model, embeds, 6, graph=False)
        assert torch.equal(decoder(), expected)
        assert torch.equal(decoder(), expected)  # the cache is reset between runs
    with pytest.raises(ValueError, match="--cuda-graph needs a CUDA device"):
        GraphedDecoder(model, embeds, 6)
