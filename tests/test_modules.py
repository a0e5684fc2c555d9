"""Kernel → module attribution on the committed H200 captures with module ranges (eager and CUDA-graph
llm-decode, ocr-vlm eager v2), checked against plain SQL written another way: a correlated lookup of
the innermost ``kr.modules`` range holding each launch point (the reader sweeps window functions),
stages by their NVTX ranges' extents (the reader uses its merged stage calls).
"""
from __future__ import annotations

import json
import lzma
import re
import shutil
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from helpers_runs import committed, content

from generator.analyses.modules import OUTSIDE, compare_modules, module_tree
from generator.errors import InputError
from generator.readers.nsys_sqlite import kernel_summary, module_kernels

ROOT = Path(__file__).parent.parent
RUNS = ROOT / "examples" / "runs"
ATTRIBUTED_RUNS = ("llm-decode-eager", "llm-decode-graph", "ocr-vlm-eager-v2", "ocr-vlm-sdpa-v2")


def _stages(run: str) -> list[str]:
    stages = json.loads((RUNS / run / "manifest.json").read_text())["stages"]
    return [s if isinstance(s, str) else s["name"] for s in stages]


@pytest.fixture(scope="module")
def dbs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("modules")
    out = {}
    for run in ATTRIBUTED_RUNS:
        out[run] = root / f"{run}.sqlite"
        out[run].write_bytes(content(committed(RUNS / run, "nsys/report.sqlite")))
    return out


#: Launch points: a kernel's runtime call, or for a graph node's kernel the earliest creation event of
#: the node it was cloned from; its stage: the stage range (default domain) holding its runtime call.
PLAIN_SQL = """
WITH stage AS (
    SELECT coalesce(e.text, s.value) AS name, e.start, e.end, e.globalTid AS tid FROM NVTX_EVENTS e
    LEFT JOIN StringIds s ON s.id = e.textId
    WHERE e.domainId = 0 AND e.eventType = 59 AND coalesce(e.text, s.value) IN ({stages})
), k AS (
    SELECT st.name AS stage, k.end - k.start AS d, k.graphNodeId AS node, r.globalTid AS tid, r.start AS t
    FROM CUPTI_ACTIVITY_KIND_KERNEL k
    JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
    JOIN stage st ON st.tid = r.globalTid AND r.start BETWEEN st.start AND st.end
), pt AS ({points}
)
SELECT stage, (SELECT m.name FROM temp.m m WHERE m.tid = pt.tid AND m.start <= pt.t AND m.end >= pt.t
               ORDER BY m.start DESC, m.end ASC LIMIT 1) AS module, count(*), sum(d)
FROM pt GROUP BY 1, 2
"""
#: Per graph node that ran a kernel: the thread and time of the earliest creation event of the node
#: it was cloned from (itself when not a clone).
CREATED_SQL = [
    "CREATE TEMP TABLE ran AS SELECT DISTINCT graphNodeId AS node FROM CUPTI_ACTIVITY_KIND_KERNEL "
    "WHERE graphNodeId IS NOT NULL",
    "CREATE TEMP TABLE ev AS SELECT graphNodeId AS node, originalGraphNodeId AS original, globalTid AS tid, start "
    "FROM CUDA_GRAPH_NODE_EVENTS",
    "CREATE INDEX temp.ev_node ON ev (node)",
    """CREATE TEMP TABLE created AS
    WITH n AS (SELECT node, coalesce((SELECT max(o.original) FROM temp.ev o WHERE o.node = ran.node), node) AS origin
               FROM temp.ran)
    SELECT n.node, (SELECT c.tid FROM temp.ev c WHERE c.node = n.origin ORDER BY c.start LIMIT 1) AS tid,
           (SELECT min(c.start) FROM temp.ev c WHERE c.node = n.origin) AS t
    FROM n""",
    "CREATE UNIQUE INDEX temp.created_node ON created (node)",
]
GRAPH_POINTS = """
    SELECT k.stage, k.d, coalesce(c.tid, k.tid) AS tid, coalesce(c.t, k.t) AS t
    FROM k LEFT JOIN temp.created c ON c.node = k.node"""
MODULE_RANGES_SQL = """
CREATE TEMP TABLE m AS SELECT e.globalTid AS tid, e.start, e.end, coalesce(e.text, s.value) AS name
FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId
WHERE e.domainId = (SELECT domainId FROM NVTX_EVENTS WHERE eventType = 75 AND text = 'kr.modules')
  AND e.eventType = 59 AND e.end IS NOT NULL
"""


def _plain(db: Path, stages: list[str], graph: bool) -> dict[tuple[str, str | None], tuple[int, int]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        conn.execute(MODULE_RANGES_SQL)
        conn.execute("CREATE INDEX temp.m_at ON m (tid, start)")
        if graph:
            for statement in CREATED_SQL:
                conn.execute(statement)
        sql = PLAIN_SQL.format(stages=", ".join(f"'{s}'" for s in stages),
                               points=GRAPH_POINTS if graph else "SELECT stage, d, tid, t FROM k")
        return {(s, m): (n, d) for s, m, n, d in conn.execute(sql)}
    finally:
        conn.close()


@pytest.mark.parametrize("run", ATTRIBUTED_RUNS)
def test_module_totals_equal_plain_sql_and_sum_to_the_stages(dbs: dict[str, Path], run: str) -> None:
    stages = _stages(run)
    found = module_kernels(dbs[run], stages)
    assert found.form == "kr.modules"
    frame = found.kernels
    mine: dict[tuple[str, str | None], list[int]] = {}
    for r in frame.itertuples(index=False):
        key = (r.stage, None if pd.isna(r.path) else f"{r.path} [{r.cls}]")
        mine.setdefault(key, [0, 0])
        mine[key][0] += r.launches
        mine[key][1] += r.gpu_ns
    plain = _plain(dbs[run], stages, graph=run.endswith("graph"))
    assert {k: tuple(v) for k, v in mine.items()} == plain
    # every launch attributed or explicitly outside: depth-0 rows sum to the stage totals
    summary = kernel_summary(dbs[run], stages)
    tree = module_tree(found.form, frame, found.classes, ["all", *stages])
    top = tree.modules[tree.modules["depth"] == 0].groupby("stage")[["launches", "gpu_ns"]].sum()
    for stage in stages:
        rows = summary[summary["stage"] == stage]
        assert (top.at[stage, "launches"], top.at[stage, "gpu_ns"]) == (rows["count"].sum(), rows["total_ns"].sum())
    assert top.at["all", "gpu_ns"] == sum(top.at[s, "gpu_ns"] for s in stages)


def test_figures_of_the_committed_captures(dbs: dict[str, Path]) -> None:
    found = module_kernels(dbs["llm-decode-graph"], ["prefill", "decode"])
    frame = found.kernels
    outside = frame[frame["path"].isna()].groupby("stage")[["launches", "gpu_ns"]].sum()
    assert outside.loc["decode"].tolist() == [64, 1188122]
    tree = module_tree(found.form, frame, found.classes, ["all", "prefill", "decode"]).tree
    head = tree[(tree["stage"] == "decode") & (tree["key"] == "model.model.layers.*")].iloc[0]
    assert (head["cls"], head["instances"]) == ("LlamaDecoderLayer", 16)
    # graph replays attribute each node's kernels to the module open when the node was captured
    lm = tree[(tree["stage"] == "decode") & (tree["key"] == "model.lm_head")].iloc[0]
    assert (lm["cls"], lm["gpu_ns"]) == ("Linear", 4005606)

    ocr = module_kernels(dbs["ocr-vlm-eager-v2"], _stages("ocr-vlm-eager-v2"))
    sam = module_tree(ocr.form, ocr.kernels, ocr.classes, ["sam"]).tree
    blocks = sam[sam["key"] == "sam.vit.vision_encoder.layers.*"].iloc[0]
    assert (blocks["cls"], blocks["instances"], blocks["inst_median_ns"]) == ("SamVisionLayer", 12, 596045.5)
    # SAM's global-attention blocks (2, 5, 8, 11) against the windowed ones
    assert [(label, round(ratio, 2)) for label, ratio in blocks["outliers"]] == [
        ("8", 5.83), ("5", 5.83), ("11", 5.83), ("2", 5.82)]
    assert blocks["inst_max_ns"] == 3475594.0


def test_versions_compared_per_module(dbs: dict[str, Path]) -> None:
    """llm-decode eager → CUDA graph, per folded module: each change equals the plain-SQL sums of the
    module's instances and submodules in both captures; only measured stages; a parent whose change
    one submodule carries is left out (self_attn's +8.2 ms is not repeated by layers.*, model, …)."""
    runs = ("llm-decode-eager", "llm-decode-graph")
    trees = {}
    plain = {}
    for run in runs:
        found = module_kernels(dbs[run], ["prefill", "decode"])
        trees[run] = module_tree(found.form, found.kernels, found.classes, ["all", "prefill", "decode"])
        plain[run] = _plain(dbs[run], ["prefill", "decode"], graph=run.endswith("graph"))
    changes = compare_modules(trees[runs[0]], trees[runs[1]]).set_index(["stage", "key"])
    assert set(changes.index.get_level_values(0)) == {"prefill", "decode"}

    def sql_ns(run: str, prefix: str) -> int:
        pattern = re.compile(re.escape(prefix).replace(r"\*", r"\d+") + r"(\.| \[)")
        return sum(d for (stage, m), (_, d) in plain[run].items() if stage == "decode" and m and pattern.match(m))

    attn = changes.loc[("decode", "model.model.layers.*.self_attn")]
    before, after = (sql_ns(r, "model.model.layers.*.self_attn") for r in runs)
    assert (attn["previous_ns"], attn["current_ns"]) == (before, after)
    assert round(attn["delta_ns"] / 1e6, 3) == 8.177 and changes.index[0] == ("decode", "model.model.layers.*.self_attn")
    for carried in ("model", "model.model", "model.model.layers", "model.model.layers.*"):
        assert ("decode", carried) not in changes.index
    assert ("decode", "model.model.layers.*.mlp.down_proj") in changes.index


def _rewrite(db: Path, out: Path, sql: list[str]) -> Path:
    shutil.copyfile(db, out)
    conn = sqlite3.connect(out)
    for statement in sql:
        conn.execute(statement)
    conn.commit()
    conn.close()
    return out


#: The kr.modules ranges of a real capture rewritten into SGLang's layer-wise form (PytHooks: the dict
#: repr in the default domain, module names under "top").
SGLANG_SQL = [
    "UPDATE NVTX_EVENTS SET text = '{''Module'': ''top.' || substr(coalesce(text, "
    "(SELECT value FROM StringIds WHERE id = textId)), 1, instr(coalesce(text, (SELECT value FROM StringIds "
    "WHERE id = textId)), ' [') - 1) || ''', ''Inputs'': [[1, 8]]}', textId = NULL, domainId = 0 "
    "WHERE domainId = 1 AND eventType = 59",
    "DELETE FROM NVTX_EVENTS WHERE eventType IN (75, 76) AND domainId = 1",
]


def test_sglang_layerwise_markers(dbs: dict[str, Path], tmp_path: Path) -> None:
    db = _rewrite(dbs["llm-decode-eager"], tmp_path / "sglang.sqlite", SGLANG_SQL)
    ours = module_kernels(dbs["llm-decode-eager"], ["prefill", "decode"]).kernels
    found = module_kernels(db, ["prefill", "decode"])
    assert found.form == "sglang-layerwise"
    theirs = found.kernels
    assert set(theirs["cls"].dropna()) == {""}
    assert (theirs["path"].dropna().map(lambda p: p[len("top."):]).tolist()
            == ours["path"].dropna().tolist())
    assert theirs["gpu_ns"].tolist() == ours["gpu_ns"].tolist()
    tree = module_tree(found.form, theirs, found.classes, ["decode"]).tree.set_index("key")
    assert tree.at["top.model.model.layers.*", "instances"] == 16
    assert tree.at["top.model.model.layers.*", "gpu_ns"] == ours[
        (ours["stage"] == "decode") & ours["path"].str.startswith("model.model.layers.", na=False)]["gpu_ns"].sum()


def test_no_module_ranges_every_launch_outside(dbs: dict[str, Path], tmp_path: Path) -> None:
    db = _rewrite(dbs["llm-decode-eager"], tmp_path / "bare.sqlite", ["DELETE FROM NVTX_EVENTS WHERE domainId = 1"])
    found = module_kernels(db, ["decode"])
    assert found.form is None and found.classes == {}
    assert found.kernels["path"].isna().all()
    assert found.kernels["gpu_ns"].sum() == 60100117
    result = module_tree(found.form, found.kernels, found.classes, ["all", "decode"])
    assert not result.attributed
    assert result.modules[result.modules["stage"] == "decode"]["path"].tolist() == [OUTSIDE]


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "report.sqlite"
    bad.write_bytes(b"not a database")
    with pytest.raises(InputError) as err:
        module_kernels(bad, ["decode"])
    assert "\n" not in str(err.value) and "not an SQLite file" in str(err.value)


HOSTILE = pd.DataFrame([
    ("decode", "m<x>.blocks.0.a|b", "Lin<ear|T>", "k<1>", 3, 300),
    ("decode", "m<x>.blocks.1.a|b", "Lin<ear|T>", "k<1>", 3, 100),
    ("decode", "m<x>.blocks.2.a|b", "Lin<ear|T>", "k<1>", 3, 110),
    ("decode", None, None, "k*2_", 1, 90),
], columns=["stage", "path", "cls", "name", "launches", "gpu_ns"])
HOSTILE_CLASSES = {"m<x>": "Top", "m<x>.blocks.0": "B<0>", "m<x>.blocks.1": "B<0>", "m<x>.blocks.2": "B<0>",
                   "m<x>.blocks.0.a|b": "Lin<ear|T>", "m<x>.blocks.1.a|b": "Lin<ear|T>",
                   "m<x>.blocks.2.a|b": "Lin<ear|T>"}


def test_hostile_names_render_literally() -> None:
    from generator.render.markdown import Numbers
    from generator.render.module_tree import icicle_chart, icicle_rows, tree_html
    from generator.render.translations import translator

    result = module_tree("kr.modules", HOSTILE, HOSTILE_CLASSES, ["decode"])
    tree = result.tree.set_index("key")
    assert tree.at["m<x>.blocks.*", "instances"] == 3
    assert tree.at["m<x>.blocks.*", "outliers"] == [("0", 300 / 110)]
    assert result.modules.groupby("depth")["gpu_ns"].sum()[0] == 600  # 510 in modules + 90 outside
    t = translator("en")
    page = tree_html(result, "decode", t, Numbers("unknown"), {}, {})
    assert "<code>m&lt;x&gt;.blocks.*.a|b</code>" in page and "<em>Lin&lt;ear|T&gt;</em>" in page
    assert "<x>" not in page and "<ear" not in page
    assert 'title="k*2_">k*2_</span>' in page and "(outside any module)" in page
    assert "outliers: blocks.0 (2.73× median)" in page  # 300 / 110: the instance named with its block
    spec = icicle_chart("m", icicle_rows(result, "decode"), t).spec
    keys = {r["key"] for r in spec["data"]["values"]}
    assert {"m<x>", "m<x>.blocks.*.a|b", "(outside any module)"} <= keys


def test_modules_page_without_module_ranges_says_so_in_one_line() -> None:
    from generator.render.pages import render_page
    from tests.helpers_pages import example_result

    result, meta = example_result()
    assert not result.module_tree.attributed
    for lang in ("en", "zh"):
        text = render_page("modules", result, meta, lang, {})
        body = [line for line in text.splitlines() if line.strip() and not line.startswith(("#", "---", "title:"))]
        assert len(body) == 1 and "--module-depth" in body[0], body


#: The kr.modules ranges of a real capture rewritten into nsys --pytorch=autograd-nvtx names in the
#: default domain: "aten::<class>, seq = <n>, op_id = <n>, sizes = [...]" (the op name is the class).
AUTOGRAD_SQL = [
    "UPDATE NVTX_EVENTS SET text = coalesce(text, (SELECT value FROM StringIds WHERE id = textId)), textId = NULL "
    "WHERE domainId = 1 AND eventType = 59",
    "UPDATE NVTX_EVENTS SET text = 'aten::' || substr(text, instr(text, ' [') + 2, length(text) - instr(text, ' [') - 2)"
    " || ', seq = ' || rowid || ', op_id = ' || (rowid % 97) || ', sizes = [[1, 8], []]', domainId = 0 "
    "WHERE domainId = 1 AND eventType = 59",
    "DELETE FROM NVTX_EVENTS WHERE eventType IN (75, 76) AND domainId = 1",
]


def test_autograd_nvtx_ops_each_launch_to_its_innermost_op(dbs: dict[str, Path], tmp_path: Path) -> None:
    db = _rewrite(dbs["llm-decode-eager"], tmp_path / "autograd.sqlite", AUTOGRAD_SQL)
    ours = module_kernels(dbs["llm-decode-eager"], ["decode"]).kernels
    found = module_kernels(db, ["decode"])
    assert found.form == "autograd-nvtx"
    ops = found.kernels.groupby("path", dropna=False)["gpu_ns"].sum()
    by_class = ours.assign(op="aten::" + ours["cls"]).groupby("op", dropna=False)["gpu_ns"].sum()
    assert ops.get("aten::Linear") == by_class["aten::Linear"]
    assert ops.sum() == 60100117
    tree = module_tree(found.form, found.kernels, found.classes, ["decode"])
    assert set(tree.modules["depth"]) == {0}  # ops are a flat list
    assert tree.modules.set_index("path").at["aten::Linear", "gpu_ns"] == by_class["aten::Linear"]


AUTOGRAD = Path(__file__).parent / "data" / "autograd-nvtx"
#: PyTorch's op ranges in a real `nsys --pytorch=autograd-nvtx` export: default domain, `aten::linear,
#: op_id = 468` (torch 2.11 adds `seq = N` only on some ops); the op is the text before the first comma.
AUTOGRAD_OPS_SQL = """
CREATE TEMP TABLE m AS SELECT e.globalTid AS tid, e.start, e.end,
       substr(coalesce(e.text, s.value), 1, instr(coalesce(e.text, s.value), ',') - 1) AS name
FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId
WHERE e.domainId = 0 AND e.eventType = 59 AND e.end IS NOT NULL
  AND coalesce(e.text, s.value) LIKE '%, op_id = %'
"""


def test_autograd_nvtx_capture_each_launch_to_its_innermost_op(tmp_path: Path) -> None:
    """A real autograd-nvtx export (H100, 2-layer llm-decode): every launch of a stage is under one
    op range, each to its innermost op as a correlated plain-SQL lookup finds it, the ops sum to the
    stage's kernel time (nsys' own kernel summary), and the tree is a flat list of aten ops."""
    db = tmp_path / "autograd.sqlite"
    with lzma.open(AUTOGRAD / "report.sqlite.xz") as src, open(db, "wb") as dst:
        shutil.copyfileobj(src, dst)
    stages = json.loads((AUTOGRAD / "stages.json").read_text())["stages"]
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        conn.execute(AUTOGRAD_OPS_SQL)
        conn.execute("CREATE INDEX temp.m_at ON m (tid, start)")
        sql = PLAIN_SQL.format(stages=", ".join(f"'{s}'" for s in stages), points="SELECT stage, d, tid, t FROM k")
        plain = {(s, m): (n, d) for s, m, n, d in conn.execute(sql)}
    finally:
        conn.close()
    found = module_kernels(db, stages)
    assert found.form == "autograd-nvtx"
    ours = found.kernels.groupby(["stage", "path"])[["launches", "gpu_ns"]].sum()
    assert {k: tuple(v) for k, v in ours.iterrows()} == plain
    assert not any(m is None for _, m in plain)  # no launch outside an op range
    totals = ours.groupby(level="stage")["gpu_ns"].sum()
    for stage in stages:
        assert totals[stage] == kernel_summary(db, [stage])["total_ns"].sum()
    assert totals.to_dict() == {"prefill": 568808, "decode": 2001466}
    assert ours.loc[("decode", "aten::mm")].tolist() == [68, 1265747]
    tree = module_tree(found.form, found.kernels, found.classes, stages)
    assert set(tree.modules["depth"]) == {0}
