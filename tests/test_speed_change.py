"""Stage and kernel verdicts on committed H200 captures, their launches checked by plain SQL.

Pairs (examples/runs, all H200, nsys 2025.3.1): ocr-vlm-eager → ocr-vlm-eager-v2 is one workload
with the same parameters captured hours apart (v2 adds module ranges): no stage may be called slower
or faster. ocr-vlm-sdpa-h200 → ocr-vlm-eager-v2 is a real change (SDPA → eager attention): the
vision stages' kernel time grows by half or more.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from helpers_runs import committed, content

from generator.analyses import launch_stats as ls
from generator.analyses import speed_change as sc
from generator.model import ALL_STAGES
from generator.pipeline.inputs import InputCache

RUNS = Path(__file__).parent.parent / "examples" / "runs"
#: Per stage: launches and kernel time of the kernels whose launch call started inside the stage's
#: NVTX range (one instance per stage in these runs).
SQL = """
WITH stages AS (SELECT coalesce(e.text, s.value) AS name, e.start, e.end, e.globalTid FROM NVTX_EVENTS e
                LEFT JOIN StringIds s ON s.id = e.textId WHERE e.domainId = 0 AND coalesce(e.text, s.value) IN ({names}))
SELECT n.name, count(*), sum(k.end - k.start), count(DISTINCT n.start)
FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
JOIN stages n ON r.start BETWEEN n.start AND n.end AND r.globalTid = n.globalTid GROUP BY n.name
"""


def _stages(run: str) -> list[str]:
    manifest = json.loads((RUNS / run / "manifest.json").read_text())
    return [s if isinstance(s, str) else s["name"] for s in manifest["stages"]]


@pytest.fixture(scope="module")
def launches() -> dict[str, pd.DataFrame]:
    with InputCache() as cache:
        return {run: cache.stages(committed(RUNS / run, "nsys/report.sqlite"), tuple(_stages(run))).launches
                for run in ("ocr-vlm-eager", "ocr-vlm-eager-v2", "ocr-vlm-sdpa-h200")}


def _sql(run: str, tmp: Path) -> dict[str, tuple[int, int]]:
    plain = tmp / f"{run}.sqlite"
    plain.write_bytes(content(committed(RUNS / run, "nsys/report.sqlite")))
    db = sqlite3.connect(plain)
    try:
        rows = db.execute(SQL.format(names=", ".join(f"'{s}'" for s in _stages(run)))).fetchall()
    finally:
        db.close()
    assert {instances for *_, instances in rows} == {1}
    return {stage: (count, kernel_ns) for stage, count, kernel_ns, _ in rows}


def test_every_launch_is_read(launches, tmp_path: Path) -> None:
    for run in ("ocr-vlm-eager", "ocr-vlm-eager-v2"):
        expected = _sql(run, tmp_path)
        frame = launches[run]
        got = {s: (int(len(g)), int(g["duration_ns"].sum())) for s, g in frame.groupby("stage")}
        assert got == expected
        assert (frame["duration_ns"] > 0).all() and list(frame.columns) == [
            "stage", "instance", "name", "start_ns", "duration_ns"]
    assert launches["ocr-vlm-eager-v2"].groupby("stage").size().to_dict() == {
        "sam": 425, "clip": 489, "projector": 2, "prefill": 1060, "decode": 33600}
    # the GPU timer of these captures steps by 32 ns
    assert sc.tick_of(launches["ocr-vlm-eager"], launches["ocr-vlm-eager-v2"]) == 32.0


def test_one_workload_captured_twice_is_unchanged(launches) -> None:
    speed = sc.stage_speed(launches["ocr-vlm-eager"], launches["ocr-vlm-eager-v2"]).set_index("stage")
    assert speed["kernel_verdict"].to_dict() == {
        "sam": ls.UNCHANGED, "clip": ls.UNCHANGED, "projector": ls.TOO_FEW, "prefill": ls.UNCHANGED,
        "decode": ls.UNCHANGED, ALL_STAGES: ls.UNCHANGED}
    # the projector: 2 launches of 2 kernels, 9,312 → 9,408 ns, shown without a verdict
    assert (speed.at["projector", "kernel_prev_ns"], speed.at["projector", "kernel_ns"]) == (9312, 9408)
    # one instance per stage: a span has no distribution, so no verdict (decode's moved +33 %)
    assert set(speed["span_verdict"]) == {sc.TOO_FEW_INSTANCES}
    assert speed.at["decode", "span_rel_pct"] == pytest.approx(33.27, abs=0.01)
    assert speed.loc[speed.index != ALL_STAGES, "host_dominated"].all()  # eager loops, no CUDA graph
    for stage in ("sam", "clip", "prefill", "decode"):
        row = speed.loc[stage]
        assert row["kernel_low_pct"] <= row["kernel_noise_pct"] and row["kernel_high_pct"] >= -row["kernel_noise_pct"]


def test_attention_eager_instead_of_sdpa_is_slower(launches, tmp_path: Path) -> None:
    speed = sc.stage_speed(launches["ocr-vlm-sdpa-h200"], launches["ocr-vlm-eager-v2"]).set_index("stage")
    before, after = _sql("ocr-vlm-sdpa-h200", tmp_path), _sql("ocr-vlm-eager-v2", tmp_path)
    for stage in ("sam", "clip", "decode"):
        row = speed.loc[stage]
        assert row["kernel_verdict"] == ls.SLOWER
        assert row["kernel_rel_pct"] == pytest.approx((after[stage][1] / before[stage][1] - 1) * 100)
        assert row["kernel_low_pct"] > row["kernel_noise_pct"]  # the whole interval above the band
    assert speed.at["sam", "kernel_rel_pct"] == pytest.approx(75.2, abs=0.05)  # 10.874 → 19.056 ms
    assert speed.at["clip", "kernel_rel_pct"] == pytest.approx(48.0, abs=0.05)  # 1.556 → 2.303 ms
    # sam's eager attention: the softmax and the copies around it were added
    movers = sc.stage_movers(launches["ocr-vlm-sdpa-h200"], launches["ocr-vlm-eager-v2"], "sam")
    assert movers["prev_name"].isna().all() and movers["abs_ns"].sum() > 6e6
    assert any("softmax" in name.lower() for name in movers["name"])


def test_different_workloads_get_no_verdict(launches) -> None:
    speed = sc.stage_speed(launches["ocr-vlm-sdpa-h200"], launches["ocr-vlm-eager-v2"], comparable=False)
    assert set(speed["kernel_verdict"]) == set(speed["span_verdict"]) == {sc.NOT_COMPARED}
    assert speed["kernel_rel_pct"].notna().all()  # both sides still shown


def test_a_whole_capture_input_is_the_all_row(tmp_path: Path) -> None:
    """small-vlm-h200 gives the export whole (stage ALL_STAGES) and per stage: the "all" row is the
    whole capture once (plain SQL: 7,568 launches, their summed durations), never the stages added on."""
    import lzma

    from generator.pipeline.config import load_report
    from generator.pipeline.inputs import version_inputs

    example = RUNS.parent / "small-vlm-h200" / "report.yaml"
    with InputCache() as cache:
        inputs = version_inputs(load_report(example).versions[0], cache, example, 0)
    plain = tmp_path / "small.sqlite"
    plain.write_bytes(lzma.decompress((RUNS.parent.parent / "tests" / "data" / "h200-small" /
                                       "small_vlm.nsys.sqlite.xz").read_bytes()))
    db = sqlite3.connect(plain)
    count, total = db.execute("SELECT count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    db.close()
    speed = sc.stage_speed(inputs.launches, inputs.launches)
    assert list(speed["stage"]) == ["vision", "projector", "prefill", "decode", ALL_STAGES]
    whole = speed.set_index("stage").loc[ALL_STAGES]
    assert (whole["launches"], whole["kernel_ns"]) == (count, total) == (7568, 18317145)
    assert set(speed["kernel_verdict"]) == {ls.UNCHANGED}  # a capture against itself
