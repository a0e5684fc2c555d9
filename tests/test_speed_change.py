"""The thresholds of "did it get faster?" rest on measured run-to-run noise: two captures of one
workload (ocr-vlm-eager and ocr-vlm-eager-v2, same parameters, H200, hours apart), per stage by plain
SQL over their kernel rows."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from helpers_runs import committed, content

from generator.analyses import speed_change as sc

RUNS = Path(__file__).parent.parent / "examples" / "runs"
#: Per stage: kernel time and span (first start to last end) of the kernels whose launch call
#: started inside the stage's NVTX range (one instance per stage in these runs).
SQL = """
WITH stages AS (SELECT coalesce(e.text, s.value) AS name, e.start, e.end, e.globalTid FROM NVTX_EVENTS e
                LEFT JOIN StringIds s ON s.id = e.textId WHERE e.domainId = 0 AND coalesce(e.text, s.value) IN ({names}))
SELECT n.name, count(DISTINCT n.start), sum(k.end - k.start), max(k.end) - min(k.start)
FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
JOIN stages n ON r.start BETWEEN n.start AND n.end AND r.globalTid = n.globalTid GROUP BY n.name
"""


def _per_stage(run: str, tmp: Path) -> dict[str, tuple[int, int]]:
    manifest = json.loads((RUNS / run / "manifest.json").read_text())
    stages = [s if isinstance(s, str) else s["name"] for s in manifest["stages"]]
    plain = tmp / f"{run}.sqlite"
    plain.write_bytes(content(committed(RUNS / run, "nsys/report.sqlite")))
    db = sqlite3.connect(plain)
    try:
        rows = db.execute(SQL.format(names=", ".join(f"'{s}'" for s in stages))).fetchall()
    finally:
        db.close()
    assert {instances for _, instances, _, _ in rows} == {1}
    return {stage: (kernel_ns, span_ns) for stage, _, kernel_ns, span_ns in rows}


def test_thresholds_sit_above_the_measured_run_to_run_noise(tmp_path: Path) -> None:
    first, second = _per_stage("ocr-vlm-eager", tmp_path), _per_stage("ocr-vlm-eager-v2", tmp_path)
    assert set(first) == set(second) == {"sam", "clip", "projector", "prefill", "decode"}
    kernel = [abs(second[s][0] - first[s][0]) * 100 / first[s][0] for s in first]
    span = [abs(second[s][1] - first[s][1]) * 100 / first[s][1] for s in first if first[s][1] >= 1e6]
    assert round(max(kernel), 2) == sc.KERNEL_NOISE_PCT == 1.03  # the projector: 9,312 → 9,408 ns
    assert round(max(span), 2) == sc.SPAN_NOISE_PCT == 33.27  # decode: 711.7 → 948.5 ms
    assert sc.KERNEL_THRESHOLD_PCT > sc.KERNEL_NOISE_PCT and sc.SPAN_THRESHOLD_PCT > sc.SPAN_NOISE_PCT


def test_verdicts() -> None:
    assert [sc.verdict(v, 2.0) for v in (-2.0, -1.9, 1.9, 2.0, float("nan"))] == \
        ["faster", "unchanged", "unchanged", "slower", "unknown"]
