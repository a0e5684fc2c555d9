"""Top-N selection on the real H200 nsys capture, checked against an independent SQL query."""
from __future__ import annotations

import lzma
import shutil
import sqlite3
from pathlib import Path

import pytest

from capture.topn import mangled_names, select, stage_summaries

FIXTURE = Path(__file__).parent / "data" / "h200-small" / "small_vlm.nsys.sqlite.xz"
STAGES = ["vision", "projector", "prefill", "decode"]

# Launches whose CUDA runtime call started inside a push/pop range of that name on the same thread.
STAGE_SQL = """
SELECT d.value AS name, COUNT(*) AS n, SUM(k."end" - k.start) AS total
FROM CUPTI_ACTIVITY_KIND_KERNEL k
JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
JOIN StringIds d ON d.id = k.demangledName
WHERE EXISTS (SELECT 1 FROM NVTX_EVENTS e
              WHERE e.text = :stage AND e.globalTid = r.globalTid
                AND r.start >= e.start AND r.start <= e."end")
GROUP BY d.value ORDER BY total DESC, name
"""


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> sqlite3.Connection:
    plain = tmp_path_factory.mktemp("nsys") / "small_vlm.sqlite"
    with lzma.open(FIXTURE) as src, open(plain, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return sqlite3.connect(plain)


@pytest.fixture(scope="module")
def summaries() -> dict:
    return stage_summaries(FIXTURE, STAGES)


def expected(db: sqlite3.Connection, stage: str) -> list[tuple[str, int, int]]:
    return db.execute(STAGE_SQL, {"stage": stage}).fetchall()


@pytest.mark.parametrize("stage", STAGES)
def test_per_stage_top_n_equals_sql(db: sqlite3.Connection, summaries: dict, stage: str) -> None:
    top = select(summaries, 5)
    rows = expected(db, stage)
    assert [(k.name, k.count, k.total_ns) for k in top.per_stage[stage]] == [(n, c, float(t)) for n, c, t in rows[:5]]
    total = sum(t for _, _, t in rows)
    assert top.per_stage[stage][0].time_pct == pytest.approx(100 * rows[0][2] / total)


def test_overall_top_n_sums_the_measured_stages_only(db: sqlite3.Connection, summaries: dict) -> None:
    merged: dict[str, list[int]] = {}
    for stage in STAGES:
        for name, count, total in expected(db, stage):
            merged.setdefault(name, [0, 0])
            merged[name][0] += count
            merged[name][1] += total
    ranked = sorted(merged.items(), key=lambda kv: (-kv[1][1], kv[0]))[:8]
    top = select(summaries, 8)
    assert [(k.name, k.count, k.total_ns) for k in top.overall] == [(n, c, float(t)) for n, (c, t) in ranked]
    # the fixture's top kernel: a cuBLAS nvjet GEMM, 288 launches in prefill+decode
    assert top.overall[0].short_name == "nvjet_sm90_tst_8x64_64x16_2x1_v_bz_TNN"
    assert top.overall[0].count == 288
    # warm-up launches outside every stage do not count: the whole-process count is larger
    whole = db.execute(
        "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds d ON d.id = k.demangledName "
        "WHERE d.value = ?", (top.overall[0].name,)).fetchone()[0]
    assert whole >= top.overall[0].count


def test_selected_is_the_union_in_overall_order(summaries: dict) -> None:
    top = select(summaries, 3)
    names = [k.name for k in top.selected()]
    assert names[:3] == [k.name for k in top.overall]
    assert len(names) == len(set(names))
    assert set(names) == {k.name for k in top.overall} | {k.name for ks in top.per_stage.values() for k in ks}


def test_nccl_kernels_are_skipped_unless_asked(summaries: dict) -> None:
    first = summaries["decode"].iloc[0]
    fake = summaries["decode"].copy()
    fake.loc[fake.index[0], "name"] = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm *, unsigned long, ncclWork *)"
    picked = select({"decode": fake}, 3)
    assert all(not k.name.startswith("nccl") for k in picked.per_stage["decode"])
    assert picked.per_stage["decode"][0].total_ns < first["total_ns"]
    assert select({"decode": fake}, 3, include_nccl=True).per_stage["decode"][0].name.startswith("nccl")


def test_mangled_names_match_the_kernel_table(db: sqlite3.Connection, summaries: dict) -> None:
    top = select(summaries, 5)
    found = mangled_names(FIXTURE, [k.name for k in top.selected()])
    for name, mangled in found.items():
        assert mangled, name
        for m in mangled:
            assert db.execute(
                "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds d ON d.id = k.demangledName "
                "JOIN StringIds m ON m.id = k.mangledName WHERE d.value = ? AND m.value = ?", (name, m)).fetchone()[0]
