"""The fidelity comparison (kernels per stage, measured iteration vs an iteration without the
capture's instrumentation) on committed H200 exports, each figure checked by plain SQL."""
from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

from helpers_runs import committed

from capture.run import FIDELITY_NOTE, keeps_windows
from generator.readers.base import plain_file
from generator.readers.fidelity import DIFFERENT, SAME, compare, stage_kernels

RUNS = Path(__file__).parent.parent / "examples" / "runs"

#: The ranges of one name in one domain (none of them nested in another: one stage range, or the
#: operator calls of one marked iteration), then launches per kernel whose launch call ran inside one.
RANGES_SQL = """
CREATE TEMP TABLE rng AS SELECT n.globalTid AS tid, n.start, n.end FROM NVTX_EVENTS AS n
LEFT JOIN StringIds AS s ON s.id = n.textId
WHERE n.eventType = 59 AND coalesce(n.text, s.value) = :name
  AND n.domainId = coalesce((SELECT domainId FROM NVTX_EVENTS WHERE eventType = 75 AND text = :domain), 0)"""
LAUNCHES_SQL = """
SELECT ks.value, count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r
JOIN CUPTI_ACTIVITY_KIND_KERNEL AS k ON k.correlationId = r.correlationId AND k.globalPid >> 24 = r.globalTid >> 24
JOIN StringIds AS ks ON ks.id = k.demangledName
WHERE r.globalTid IN (SELECT tid FROM temp.rng)
  AND r.start BETWEEN (SELECT min(start) FROM temp.rng) AND (SELECT max(end) FROM temp.rng)
  AND (SELECT g.end FROM temp.rng AS g WHERE g.start <= r.start ORDER BY g.start DESC LIMIT 1) >= r.start
GROUP BY 1"""


def plain_sql(db: Path, name: str, domain: str = "") -> Counter[str]:
    """Kernels by name x launches in the ranges ``name`` of ``domain`` ("": the default one)."""
    with sqlite3.connect(db) as conn:
        conn.execute(RANGES_SQL, {"name": name, "domain": domain})
        conn.execute("CREATE INDEX temp.rng_start ON rng (start)")
        counts = Counter({n: int(c) for n, c in conn.execute(LAUNCHES_SQL)})
    assert counts, f"no launches in {domain}:{name}"
    return counts


def test_last_warmup_launched_as_the_measured_iteration() -> None:
    """llm-decode-eager-ops (H200, 2 warm-ups, the last marked): the marked warm-up's launches made
    inside its operator calls are the measured iteration's, kernel for kernel: 22,407 launches."""
    with plain_file(committed(RUNS / "llm-decode-eager-ops", "nsys/report.sqlite")) as db:
        measured = stage_kernels(db, {"iteration": "kr.ops:measured"})
        marked = stage_kernels(db, {"iteration": "kr.ops:op"})
        assert Counter(measured["iteration"]) == plain_sql(db, "measured", "kr.ops")
        assert Counter(marked["iteration"]) == plain_sql(db, "op", "kr.ops")
    record = compare(measured, marked, ["iteration"], FIDELITY_NOTE)
    assert record == {"verdict": SAME, "note": FIDELITY_NOTE, "stages": {"iteration": {
        "measured_launches": 22407, "plain_launches": 22407, "only_measured": {}, "only_plain": {}}}}
    assert keeps_windows(record) and keeps_windows(None)


def test_graph_capturing_warmup_differs_from_the_measured_iteration() -> None:
    """llm-decode-graph (H200, --cuda-graph, 1 warm-up): the warm-up also ran two eager decode steps
    to capture the graph: 1,715 launches the measured iteration (prefill + 32 replays) did not make,
    and none the other way. Such a difference moves ncu off the program-changing windows."""
    with plain_file(committed(RUNS / "llm-decode-graph", "nsys/report.sqlite")) as db:
        staged = stage_kernels(db, {"prefill": "prefill", "decode": "decode"})
        warmup = stage_kernels(db, {"iteration": "warmup"})
        assert Counter(staged["prefill"]) == plain_sql(db, "prefill")
        assert Counter(staged["decode"]) == plain_sql(db, "decode")
        assert Counter(warmup["iteration"]) == plain_sql(db, "warmup")
    measured = {"iteration": dict(Counter(staged["prefill"]) + Counter(staged["decode"]))}
    record = compare(measured, warmup, ["iteration"], "first iteration")
    figures = record["stages"]["iteration"]
    assert record["verdict"] == DIFFERENT
    assert (figures["measured_launches"], figures["plain_launches"]) == (26809, 28524)
    assert figures["only_measured"] == {} and sum(figures["only_plain"].values()) == 28524 - 26809
    flash = [n for n in figures["only_plain"] if n.startswith("cudnn_generated_fort_native_sdpa")]
    assert [figures["only_plain"][n] for n in flash] == [32]  # 16 layers x 2 eager steps
    assert not keeps_windows(record)
    # per stage, a stage one side lacks counts whole
    split = compare(staged, {"prefill": staged["prefill"]}, ["prefill", "decode"], "")
    assert split["stages"]["prefill"]["only_measured"] == {} and split["verdict"] == DIFFERENT
    assert split["stages"]["decode"]["only_measured"] == staged["decode"]
    assert split["stages"]["decode"]["plain_launches"] == 0

