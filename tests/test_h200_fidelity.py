"""The fidelity records of the H200 captures of 2026-11-29 (examples/runs/*-h200*), recomputed by
plain SQL over each run's nsys export: per stage, the kernels (demangled name x launches) whose
launch call ran inside the measured iteration's stage range (default NVTX domain) against those in
the plain repeat's range of the same name (domain kr.repeat)."""
from __future__ import annotations

import json
import lzma
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from generator.readers.fidelity import SAME, stage_kernels
from generator.run_layout import REPEAT_NVTX_DOMAIN

RUNS = Path(__file__).parent.parent / "examples" / "runs"

#: The ranges of the default NVTX domain and of kr.repeat; then launches per (domain, range name,
#: kernel): a kernel belongs to the range open on the thread whose runtime call (same correlation id
#: and process) launched it.
RANGES_SQL = """
CREATE TEMP TABLE rng AS SELECT n.globalTid AS tid, n.start, n.end,
  CASE n.domainId WHEN 0 THEN '' ELSE :repeat END AS dom, coalesce(n.text, s.value) AS stage
FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId
WHERE n.eventType = 59 AND (n.domainId = 0 OR n.domainId IN
  (SELECT domainId FROM NVTX_EVENTS WHERE eventType = 75 AND text = :repeat))"""
PER_RANGE_SQL = """
SELECT rng.dom, rng.stage, ks.value, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k
JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId AND r.globalTid >> 24 = k.globalPid >> 24
JOIN StringIds ks ON ks.id = k.demangledName
JOIN temp.rng ON rng.tid = r.globalTid AND r.start BETWEEN rng.start AND rng.end
GROUP BY 1, 2, 3"""


def export(run: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's nsys export, decompressed into a temporary folder."""
    plain = tmp_path_factory.mktemp(run) / "report.sqlite"
    with lzma.open(RUNS / run / "nsys" / "report.sqlite.xz") as src, plain.open("wb") as out:
        shutil.copyfileobj(src, out)
    return plain


def per_range(db: Path) -> dict[tuple[str, str], Counter[str]]:
    """(domain, range name) → kernels x launches, by :data:`PER_RANGE_SQL` ("": the default domain)."""
    out: dict[tuple[str, str], Counter[str]] = {}
    with sqlite3.connect(db) as conn:
        conn.execute(RANGES_SQL, {"repeat": REPEAT_NVTX_DOMAIN})
        for dom, stage, name, n in conn.execute(PER_RANGE_SQL):
            out.setdefault((dom, stage), Counter())[name] = n
    return out


def manifest(run: str) -> dict:
    return json.loads((RUNS / run / "manifest.json").read_text(encoding="utf-8"))


def test_compiled_block_measures_its_triton_kernels(tmp_path_factory: pytest.TempPathFactory) -> None:
    """torch.compile'd LayerNorm → Linear → GELU → Linear: the measured stage ``block`` ran Inductor's
    two Triton kernels and the two cuBLAS GEMMs, exactly as its plain repeat did ("same kernels")."""
    db = export("compiled-block-h200", tmp_path_factory)
    ranges = per_range(db)
    gemm = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT"
    expected = Counter({"triton_red_fused_native_layer_norm_0": 1, "triton_poi_fused_gelu_1": 1, gemm: 2})
    assert ranges[("", "block")] == ranges[(REPEAT_NVTX_DOMAIN, "block")] == expected
    assert ranges[("", "warmup")] == expected + expected  # both marked warm-ups compiled too
    # the generator's reading of the same ranges
    assert stage_kernels(db, {"block": "block", "plain": f"{REPEAT_NVTX_DOMAIN}:block"}) == {
        "block": dict(expected), "plain": dict(expected)}
    record = manifest("compiled-block-h200")["fidelity"]
    assert record["verdict"] == SAME
    assert record["stages"] == {"block": {"measured_launches": 4, "plain_launches": 4, "only_measured": {},
                                          "only_plain": {}}}


@pytest.mark.parametrize(("run", "launches"), [
    ("llm-decode-h200-a", {"prefill": 678, "decode": 21728}),
    ("llm-decode-graph-h200", {"prefill": 729, "decode": 26080}),
    ("ocr-vlm-sdpa-h200-a", {"sam": 349, "clip": 345, "projector": 2, "prefill": 979, "decode": 31008}),
])
def test_fidelity_record_is_what_sql_counts(run: str, launches: dict[str, int],
                                            tmp_path_factory: pytest.TempPathFactory) -> None:
    """Each stage's launches in the manifest's fidelity record are SQL's for the measured range and
    for the kr.repeat range, kernel for kernel the same multiset: "same kernels"."""
    ranges = per_range(export(run, tmp_path_factory))
    record = manifest(run)["fidelity"]
    assert record["verdict"] == SAME and list(record["stages"]) == list(launches)
    for stage, n in launches.items():
        measured, plain = ranges[("", stage)], ranges[(REPEAT_NVTX_DOMAIN, stage)]
        assert measured == plain, stage
        assert record["stages"][stage] == {"measured_launches": sum(measured.values()),
                                           "plain_launches": sum(plain.values()), "only_measured": {},
                                           "only_plain": {}}
        assert sum(measured.values()) == n
