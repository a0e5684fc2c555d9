"""Several ranks: the real 2 × H200 tensor-parallel export (../shared/fixtures/h200x2-tp), read as one
export and split into one export per rank by SQL; every figure of collectives.csv and ranks.csv
equals plain SQL over the export."""
from __future__ import annotations

import dataclasses
import lzma
import shutil
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from generator.analyses import collectives as coll
from generator.analyses.launch_floors import LAUNCH_FLOOR_COLUMNS, waiting_floors
from generator.analyses.projection import communication_note
from generator.cli import main
from generator.commands.inspect import rank_facts
from generator.model import ALL_STAGES, VersionInputs
from generator.pipeline.chips import load_chip
from generator.pipeline.inputs import InputCache, version_ranks
from generator.readers import nsys_ranks

ROOT = Path(__file__).parent.parent
#: CI's read-only copy of shared/ sits beside the checkout; a worktree's is one level further up.
SHARED = next((p for p in (ROOT.parent / "shared", ROOT.parent.parent / "shared") if p.is_dir()), ROOT / "shared")
FIXTURE = SHARED / "fixtures" / "h200x2-tp" / "tp2_llama_tpplan.nsys.sqlite.xz"
STAGES = [ALL_STAGES, "measured"]

pytestmark = pytest.mark.skipif(not FIXTURE.is_file(), reason=f"{FIXTURE} not present")


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> Path:
    """The fixture decompressed (read-only use)."""
    plain = tmp_path_factory.mktemp("tp2") / "tp2.sqlite"
    with lzma.open(FIXTURE) as src, open(plain, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return plain


@pytest.fixture(scope="module")
def split(export: Path, tmp_path_factory) -> list[Path]:
    """One export per rank: copies of the export, each without the other process's rows."""
    conn = sqlite3.connect(export)
    pids = [r[0] for r in conn.execute("SELECT DISTINCT globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY 1")]
    conn.close()
    folder = tmp_path_factory.mktemp("split")
    paths = []
    for keep in pids:
        path = folder / f"rank_{pids.index(keep)}.sqlite"
        shutil.copy(export, path)
        with sqlite3.connect(path) as db:
            tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            for table in tables:
                columns = {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
                for column in ("globalPid", "globalTid"):
                    if column in columns:
                        db.execute(f"DELETE FROM {table} WHERE {column} >> 24 IN "
                                   f"({','.join(str(p >> 24) for p in pids if p != keep)})")
        paths.append(path)
    return paths


def _inputs(exports: list[Path]) -> VersionInputs:
    with InputCache() as cache:
        reading = version_ranks(exports, cache, STAGES)
    summary = pd.DataFrame({"stage": STAGES, "name": ["-", "-"]})
    return VersionInputs(kernel_summary=summary, kernel_metrics=pd.DataFrame(), gpus=[], provenance=[],
                         ranks=reading.ranks, rank_order=reading.order)


@pytest.fixture(scope="module")
def analysed(export: Path) -> dict:
    inputs = _inputs([export])
    instances = coll.collective_instances(inputs)
    return {"inputs": inputs, "instances": instances, "collectives": coll.collectives(inputs, instances),
            "ranks": coll.ranks(inputs, instances), "causes": coll.late_rank_causes(inputs, instances)}


def _sql(export: Path, query: str) -> list[tuple]:
    with sqlite3.connect(f"{export.as_uri()}?mode=ro", uri=True) as conn:
        return conn.execute(query).fetchall()


def test_ranks_are_the_processes_with_their_gpus(export: Path, analysed: dict) -> None:
    processes = nsys_ranks.rank_processes(export)
    assert processes[["pid", "gpu", "launches"]].values.tolist() == [[850, 0, 15717], [851, 1, 15717]]
    inputs = analysed["inputs"]
    assert inputs.rank_order == "process start order"  # the export records no RANK= per process
    assert [(t.pid, t.gpu) for t in inputs.ranks] == [(850, 0), (851, 1)]


def test_whole_capture_rows_equal_sql(export: Path, analysed: dict) -> None:
    per_device = _sql(export, "SELECT deviceId, COUNT(*), SUM(end - start), MAX(end) - MIN(start) "
                              "FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY deviceId ORDER BY deviceId")
    assert per_device == [(0, 15717, 226785103, 5534182267), (1, 15717, 370305791, 4521339913)]
    ranks = analysed["ranks"]
    whole = ranks[ranks["stage"] == ALL_STAGES]
    assert whole[["gpu", "launches", "kernel_ns", "span_ns"]].values.tolist() == [list(r) for r in per_device]
    assert (whole["idle_ns"] == whole["span_ns"] - whole["busy_ns"]).all()


#: Collective kernels by kind, numbered per process in start order: one instance = one number.
_INSTANCES = """
WITH c AS (
  SELECT k.globalPid AS p, k.deviceId AS d, k.start AS s, k.end AS e,
         CASE WHEN n.value LIKE '%AllReduce%' THEN 'AllReduce' ELSE 'AllGather' END AS kind
  FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN StringIds AS n ON n.id = k.shortName WHERE n.value LIKE 'nccl%'),
numbered AS (SELECT *, ROW_NUMBER() OVER (PARTITION BY p, kind ORDER BY s, e) AS i FROM c),
inst AS (SELECT kind, i, MIN(e - s) AS transfer, MAX(s) - MIN(s) AS skew FROM numbered GROUP BY kind, i)
SELECT numbered.d, numbered.kind, COUNT(*), SUM(e - s), SUM(inst.transfer), SUM(e - s - inst.transfer), SUM(inst.skew)
FROM numbered JOIN inst USING (kind, i) GROUP BY numbered.d, numbered.kind ORDER BY numbered.d, numbered.kind"""


def test_collectives_equal_sql(export: Path, analysed: dict) -> None:
    expected = _sql(export, _INSTANCES)
    assert sum(r[2] for r in expected) == 1364  # the README's NCCL kernels
    table = analysed["collectives"]
    whole = table[table["stage"] == ALL_STAGES]
    assert whole[["rank", "collective", "count", "time_ns", "transfer_ns", "wait_ns", "skew_ns"]].values.tolist() \
        == [list(r) for r in expected]
    # the export holds NCCL's payload schemas, not their values: no bytes, so no bandwidth
    assert whole[["bytes", "algbw_gbps", "busbw_gbps"]].isna().all().all()
    assert (whole["matched"] == whole["count"]).all()
    # transfer = the per-instance minimum, so one rank of every instance waits nothing
    instances = analysed["instances"]
    assert (instances.groupby("instance")["wait_ns"].min() == 0).all()


#: Kernels whose launching call lies in the `measured` range on the same thread, per device.
_MEASURED = """
SELECT k.deviceId, COUNT(*), SUM(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS r ON r.correlationId = k.correlationId AND r.globalTid >> 24 = k.globalPid >> 24
JOIN NVTX_EVENTS AS n ON n.globalTid = r.globalTid AND r.start BETWEEN n.start AND n.end
LEFT JOIN StringIds AS t ON t.id = n.textId
WHERE COALESCE(n.text, t.value) = 'measured' AND n.eventType = 59 {extra} GROUP BY k.deviceId ORDER BY 1"""


def test_measured_stage_per_rank_equals_sql(export: Path, analysed: dict) -> None:
    kernels = _sql(export, _MEASURED.format(extra=""))
    nccl = _sql(export, _MEASURED.format(extra="AND k.shortName IN (SELECT id FROM StringIds WHERE value LIKE 'nccl%')"))
    ranks = analysed["ranks"].set_index("stage").loc["measured"]
    assert ranks[["gpu", "launches", "kernel_ns"]].values.tolist() == [list(r) for r in kernels]
    assert ranks["comm_ns"].tolist() == [r[2] for r in nccl]
    table = analysed["collectives"]
    measured = table[table["stage"] == "measured"].groupby("rank")[["count", "time_ns"]].sum()
    assert measured.values.tolist() == [[r[1], r[2]] for r in nccl]
    # each rank: wait + transfer = its collective time (every instance matched)
    assert (ranks["wait_ns"] + ranks["transfer_ns"] == ranks["comm_ns"]).all()


def test_late_rank_cause_accounts_for_its_window(analysed: dict) -> None:
    causes = analysed["causes"]
    assert len(causes["instance"].unique()) == coll.CAUSE_INSTANCES
    per = causes.groupby("instance").agg(window=("host_window_ns", "first"), inside=("call_ns", "sum"))
    assert (per["inside"] == per["window"]).all()  # calls (clipped to the window) + time in no call
    assert set(causes["stage"]) == {"measured"}  # the named stage's instances (where its late rank ran them)
    instances = analysed["instances"]
    late = instances[(instances["rank"] == instances["late_rank"]) & (instances["stage"] == "measured")]
    worst = instances[instances["instance"].isin(late["instance"])].groupby("instance")["wait_ns"].max().nlargest(1)
    assert causes["instance"].iloc[0] == worst.index[0] and causes["wait_ns"].iloc[0] == worst.iloc[0]


def test_one_export_per_rank_reads_the_same(split: list[Path], analysed: dict) -> None:
    inputs = _inputs(split)
    assert [(t.pid, t.gpu, t.launches) for t in inputs.ranks] == [(850, 0, 15717), (851, 1, 15717)]
    instances = coll.collective_instances(inputs)
    pd.testing.assert_frame_equal(coll.collectives(inputs, instances), analysed["collectives"])
    pd.testing.assert_frame_equal(coll.ranks(inputs, instances), analysed["ranks"])


def test_split_exports_build_with_their_ranks(split: list[Path], analysed: dict, tmp_path: Path, capsys) -> None:
    src = tmp_path / "src"
    assert main(["build", *map(str, split), "--stages", "measured", "--out", str(tmp_path / "site"),
                 "--src", str(src), "--lang", "en"]) == 0
    data = next(src.rglob("data/ranks.csv")).parent
    ranks = pd.read_csv(data / "ranks.csv")
    pd.testing.assert_frame_equal(ranks, analysed["ranks"], check_dtype=False)
    table = pd.read_csv(data / "collectives.csv")
    pd.testing.assert_frame_equal(table, analysed["collectives"], check_dtype=False)
    # compare: rank matched to rank; a different world size refused with one line
    single = tmp_path / "single"
    single.mkdir()
    shutil.copy(data / "ncu_metrics.csv", single / "ncu_metrics.csv")
    capsys.readouterr()
    assert main(["compare", str(data), str(data)]) == 0
    out = capsys.readouterr().out
    assert "measured, rank 1: span 2,391.752 → 2,391.752 ms" in out and "wait 180.065 → 180.065 ms" in out
    assert main(["compare", str(single), str(data)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "2 rank(s) against the baseline's 1" in err[0]
    pages = (data.parent / "index.md").read_text(encoding="utf-8")
    assert "1 GPU" not in pages and "rank 1 waits most: 180.07 ms of its 186.47 ms" in pages
    assert "1 GPU" not in (data.parent / "findings.md").read_text(encoding="utf-8")



def test_rank_from_each_exports_environment(export: Path, split: list[Path], tmp_path: Path) -> None:
    """Exports made per rank record that rank's RANK= (nsys ran in its environment): it orders them,
    here against process start order."""
    swapped = []
    for path, rank in zip(split, (1, 0), strict=True):
        copy = tmp_path / path.name
        shutil.copy(path, copy)
        with sqlite3.connect(copy) as db:
            db.execute("UPDATE TARGET_INFO_SYSTEM_ENV SET value = value || ? WHERE name = 'DeviceEnvironment'",
                       (f";RANK={rank}",))
        swapped.append(copy)
    processes = pd.concat([nsys_ranks.rank_processes(p) for p in swapped], ignore_index=True)
    ordered, source = nsys_ranks.order_ranks(processes)
    assert source == "environment"
    assert ordered[["rank", "pid", "gpu", "env_rank"]].values.tolist() == [[0, 851, 1, 0], [1, 850, 0, 1]]
    # one export of both processes: the CLI's environment (even with a RANK=) is no rank's own
    both = tmp_path / "both.sqlite"
    shutil.copy(export, both)
    with sqlite3.connect(both) as db:
        db.execute("UPDATE TARGET_INFO_SYSTEM_ENV SET value = value || ';RANK=1' WHERE name = 'DeviceEnvironment'")
    assert nsys_ranks.order_ranks(nsys_ranks.rank_processes(both))[1] == "process start order"


def test_rank_counts_equal_sql_grouping(export: Path, split: list[Path], tmp_path: Path) -> None:
    """rank_processes (the first row's pair counted in one scan, only the other pairs grouped) and
    several_ranks agree with SQL's GROUP BY: both processes, each alone, and the later process's
    kernels stored first (the first row's pair is then not the smallest)."""
    reordered = tmp_path / "reordered.sqlite"
    shutil.copy(export, reordered)
    with sqlite3.connect(reordered) as db:
        db.execute("CREATE TABLE k AS SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY globalPid DESC, start")
        db.execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL")
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT * FROM k")
        db.execute("DROP TABLE k")
    for path in [export, reordered, *split]:
        grouped = _sql(path, "SELECT globalPid, deviceId, COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL "
                             "GROUP BY globalPid, deviceId")
        found = nsys_ranks.rank_processes(path)
        assert sorted(found[["global_pid", "gpu", "launches"]].values.tolist()) == [list(row) for row in grouped]
        if len(grouped) == 1:  # one rank: ordered by its first kernel
            assert found["first_call_ns"].tolist() == [_sql(path, "SELECT MIN(start) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0][0]]
        assert nsys_ranks.several_ranks(path) is (len(grouped) > 1)
    assert len(grouped) == 1 and rank_facts(split[0]) == {}
    assert rank_facts(reordered) == rank_facts(FIXTURE)  # a plain export's ranks, as a compressed one's


def test_inspect_lists_ranks() -> None:
    facts = rank_facts(FIXTURE)
    assert facts["rank_order"] == "process start order"
    assert facts["ranks"] == [{"rank": 0, "pid": 850, "gpu": 0, "launches": 15717},
                              {"rank": 1, "pid": 851, "gpu": 1, "launches": 15717}]


def test_projection_says_communication_is_not_projected() -> None:
    h200 = load_chip("h200")
    assert "NVIDIA H200 SXM states a 900 GB/s link" in communication_note(2, h200)
    unlinked = dataclasses.replace(h200, figures={k: v for k, v in h200.figures.items() if k != "link_gbps"})
    assert "states no link figure" in communication_note(2, unlinked)
    assert "communication is not projected" in communication_note(2, unlinked)


def test_bus_bandwidth_factors_are_nccl_tests() -> None:
    """nccl-tests' doc/PERFORMANCE.md: all-reduce 2(n-1)/n, all-gather and reduce-scatter (n-1)/n,
    broadcast and reduce 1."""
    assert [coll.busbw_factor("AllReduce", n) for n in (2, 4, 8)] == [1.0, 1.5, 1.75]
    assert [coll.busbw_factor(k, 8) for k in ("AllGather", "ReduceScatter", "Broadcast")] == [0.875, 0.875, 1.0]
    assert coll.busbw_factor("SendRecv", 2) is None


def test_collective_kernels_by_family() -> None:
    """Recognized by name family across libraries, not by this file: NCCL and serving engines' custom
    all-reduce kernels; a compute kernel is none."""
    names = {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL": "AllReduce",
             "ncclKernel_AllGather_RING_LL_Sum_int8_t": "AllGather",
             "ncclDevKernel_ReduceScatter_Sum_f32_RING_SIMPLE": "ReduceScatter",
             "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 2>": "AllReduce",
             "void tensorrt_llm::kernels::oneShotAllReduceKernel<half, 8>": "AllReduce",
             "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_tn": None}
    assert {n: coll.kernel_collective(n) for n in names} == names


#: Per device, the union of kernel intervals: span minus the gaps after the running latest end.
_UNION = """
WITH k AS (SELECT k.deviceId AS d, k.start AS s, k.end AS e FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
           JOIN StringIds AS n ON n.id = k.shortName WHERE {where}),
r AS (SELECT d, s, e, MAX(e) OVER (PARTITION BY d ORDER BY s, e ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
      AS reach FROM k)
SELECT d, MAX(e) - MIN(s) - SUM(CASE WHEN s > reach THEN s - reach ELSE 0 END) FROM r GROUP BY d ORDER BY d"""


def test_busy_compute_and_exposed_time_equal_sql(export: Path, analysed: dict) -> None:
    busy = _sql(export, _UNION.format(where="1"))
    compute = _sql(export, _UNION.format(where="n.value NOT LIKE 'nccl%'"))
    whole = analysed["ranks"][analysed["ranks"]["stage"] == ALL_STAGES]
    assert whole["busy_ns"].tolist() == [r[1] for r in busy]
    assert whole["compute_ns"].tolist() == [r[1] for r in compute]
    assert (whole["idle_ns"] == whole["span_ns"] - whole["busy_ns"]).all()
    # the collectives never overlap each other here, so what compute does not cover is busy − compute
    assert (whole["exposed_ns"] == whole["busy_ns"] - whole["compute_ns"]).all()


def test_stage_span_over_ranks_equals_sql(export: Path) -> None:
    """The whole capture's span over both GPUs is the union of each rank's span, its busy time the
    union of every kernel of both (analyses.collectives.BusyUnion, folded one rank at a time)."""
    with InputCache() as cache:
        spans = version_ranks([export], cache, STAGES, STAGES).spans.set_index("stage")
    (first, last), = _sql(export, "SELECT MIN(start), MAX(end) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    ranks = _sql(export, "SELECT MIN(start), MAX(end) FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY deviceId")
    assert max(s for s, _ in ranks) < min(e for _, e in ranks)  # the two ranks' spans overlap
    busy = _sql(export, _UNION.format(where="1").replace("PARTITION BY d ", "").replace(" GROUP BY d ORDER BY d", ""))
    assert spans.loc[ALL_STAGES, ["span_ns", "busy_ns"]].tolist() == [last - first, busy[0][1]]
    assert spans.loc[ALL_STAGES, "idle_ns"] == last - first - busy[0][1]


def test_kernel_bounds_never_count_waiting(export: Path, analysed: dict) -> None:
    """The findings' kernel bounds give a collective no floor below its waiting (launch_floors.waiting_floors):
    over the whole capture, what making the NCCL kernels faster can save is at most their transfer, which
    SQL gives as the per-instance minimum over the ranks; the waiting is the collective_wait finding's."""
    expected = _sql(export, _INSTANCES)
    kinds = _sql(export, "SELECT n.value, SUM(k.end - k.start), COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
                         "JOIN StringIds AS n ON n.id = k.shortName WHERE n.value LIKE 'nccl%' GROUP BY n.value")
    shortest = _sql(export, "SELECT MIN(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0][0]
    groups = pd.DataFrame([(ALL_STAGES, name, "", "unknown", n, total, shortest * n, total, "unknown")
                           for name, total, n in kinds], columns=LAUNCH_FLOOR_COLUMNS)
    floored = waiting_floors(groups, analysed["instances"].assign(stage=ALL_STAGES))  # every instance, one stage
    upper = (floored["measured_ns"] - floored["floor_ns"]).sum()
    assert upper == pytest.approx(sum(r[4] for r in expected), rel=1e-9)  # transfer: 15.67 ms of 529.54 ms
    assert (groups["measured_ns"] - groups["floor_ns"]).sum() > 25 * upper  # the shortest kernel (608 ns) alone: 528.7 ms
    assert (floored["floor_hi_ns"] >= floored["floor_ns"]).all()
