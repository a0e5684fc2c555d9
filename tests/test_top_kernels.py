"""Top kernels per stage on the real H200 capture, checked against an independent SQL query."""
from __future__ import annotations

import lzma
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from generator.analyses.naming import name_kernels
from generator.analyses.top_kernels import TOP_KERNEL_COLUMNS, top_kernels
from generator.readers.nsys_sqlite import kernel_summary

SQLITE_XZ = Path(__file__).parent / "data" / "h200-small" / "small_vlm.nsys.sqlite.xz"

# Kernels whose launching runtime call (same process, same correlation id) starts inside an NVTX
# range of the stage on the same thread; time % of the stage's kernel time.
STAGE_TOP_SQL = """
WITH ranges AS (SELECT start, end, globalTid FROM NVTX_EVENTS WHERE text = :stage),
launched AS (
    SELECT DISTINCT k.rowid AS kid, k.demangledName AS nid, k.end - k.start AS d
    FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
    JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS r
      ON r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24)
    JOIN ranges ON ranges.globalTid = r.globalTid AND r.start BETWEEN ranges.start AND ranges.end)
SELECT s.value, count(*), sum(d), 100.0 * sum(d) / (SELECT sum(d) FROM launched)
FROM launched JOIN StringIds AS s ON s.id = launched.nid
GROUP BY launched.nid ORDER BY sum(d) DESC, s.value LIMIT :n
"""


@pytest.fixture(scope="module")
def capture(tmp_path_factory) -> Path:
    plain = tmp_path_factory.mktemp("top") / "small_vlm.nsys.sqlite"
    plain.write_bytes(lzma.decompress(SQLITE_XZ.read_bytes()))
    return plain


@pytest.fixture(scope="module")
def summary(capture) -> pd.DataFrame:
    return kernel_summary(capture, ["all", "vision", "projector", "prefill", "decode"])


@pytest.fixture(scope="module")
def names(summary):
    overall = summary[summary["stage"] == "all"].sort_values("total_ns", ascending=False)
    return name_kernels(overall["name"])


def test_decode_top5_matches_independent_sql(capture, summary, names):
    table = top_kernels(summary, "decode", 5, names)
    assert list(table.columns) == TOP_KERNEL_COLUMNS
    with sqlite3.connect(f"file:{capture}?mode=ro", uri=True) as con:
        expected = con.execute(STAGE_TOP_SQL, {"stage": "decode", "n": 5}).fetchall()
    assert list(table["rank"]) == [1, 2, 3, 4, 5]
    assert list(table["name"]) == [row[0] for row in expected]
    assert list(table["count"]) == [row[1] for row in expected]
    assert list(table["total_ns"]) == [row[2] for row in expected]
    assert list(table["time_pct"]) == pytest.approx([row[3] for row in expected], rel=1e-12)
    assert list(table["avg_ns"]) == pytest.approx([row[2] / row[1] for row in expected])
    assert table["time_pct"].iloc[0] == pytest.approx(15.11898, abs=1e-4)
    assert list(table["friendly_name"]) == [
        "nvjet GEMM (8x64x64, 2x1, TNN)",
        "nvjet GEMM (64x8x64, 4x1, TNT)",
        "nvjet GEMM (8x64x64, 4x1, TNN)",
        "Elementwise Multiply (BF16)",
        "Direct Copy (FP32, unrolled)",
    ]
    assert list(table["library"]) == ["cuBLAS"] * 3 + ["PyTorch ATen"] * 2
    assert list(table["category"]) == ["gemm"] * 3 + ["elementwise", "copy"]
    assert table["description_en"].iloc[3].startswith("Element-wise multiply")
    assert table["description_zh"].iloc[3].startswith("逐元素乘法")


def test_every_stage_and_overall(capture, summary, names):
    with sqlite3.connect(f"file:{capture}?mode=ro", uri=True) as con:
        for stage in ["vision", "projector", "prefill"]:
            table = top_kernels(summary, stage, 3, names)
            expected = con.execute(STAGE_TOP_SQL, {"stage": stage, "n": 3}).fetchall()
            assert list(table["name"]) == [row[0] for row in expected], stage
            assert list(table["time_pct"]) == pytest.approx([row[3] for row in expected]), stage
        whole = con.execute("SELECT count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    overall = top_kernels(summary, "all", 100, names)
    assert len(overall) == 52
    assert overall["count"].sum() == whole[0] and overall["total_ns"].sum() == whole[1]
    assert overall["time_pct"].sum() == pytest.approx(100.0)
    assert overall["friendly_name"].is_unique
    assert len(top_kernels(summary, "projector", 10, names)) == 2


def test_kernels_missing_from_names_are_refused(summary, names):
    with pytest.raises(ValueError, match="not in names"):
        top_kernels(summary, "decode", 5, {})
