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

import pytest

from capture.workloads.generate import GraphedDecoder, prefill_and_decode
from generator.errors import InputError
from generator.readers import read
from generator.readers.base import plain_file
from generator.readers.nsys_sqlite import graph_node_modules, graph_summary, kernel_summary
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


def test_whole_graph_trace_says_what_is_missing() -> None:
    with pytest.raises(InputError) as err:
        read(WHOLE, stage="decode")
    assert str(err.value) == (
        f"{WHOLE}: NVTX range 'decode' ran 4 CUDA graph launches traced as whole graphs (494.6 us GPU time "
        "per graph, kernels unknown): re-capture with nsys profile --cuda-graph-trace=node")
    with plain_file(WHOLE) as plain:
        graphs = graph_summary(plain, ["prefill", "decode"]).set_index("stage")
    assert graphs.loc["decode", ["graph_launches", "whole_graph_launches", "whole_graph_ns", "kernel_launches"]].tolist() \
        == [4, 4, 1978420, 0]


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
