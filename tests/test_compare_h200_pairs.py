"""`compare` and the comparison page on the back-to-back H200 captures of 2026-11-29 (examples/runs,
one H200, the same capture code, ``--overhead-runs 0``):

- llm-decode-h200-a → llm-decode-h200-b and ocr-vlm-sdpa-h200-a → ocr-vlm-sdpa-h200-b: one preset
  captured twice in a row, nothing changed: exit 0, every stage and kernel "unchanged" or "not enough
  launches", on the page too;
- llm-decode-h200-a → llm-decode-eager-attn-h200: ``--attn-impl eager`` instead of sdpa, a real
  change: exit 1, the kernels that changed named, with intervals where both captures ran them;
- llm-decode-h200-a → ocr-vlm-sdpa-h200-a: different workloads, one line, no verdict.

Each pair is one session (minutes apart): the stage bands are the captures' own, no session floor.

The stage kernel times are checked against plain SQL over the nsys exports.
"""
from __future__ import annotations

import io
import json
import sqlite3
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from helpers_runs import committed, content

from generator.cli import main

RUNS = Path(__file__).parent.parent / "examples" / "runs"
PAIRS = {"llm": ("llm-decode-h200-a", "llm-decode-h200-b"), "ocr": ("ocr-vlm-sdpa-h200-a", "ocr-vlm-sdpa-h200-b"),
         "eager": ("llm-decode-h200-a", "llm-decode-eager-attn-h200"),
         "workloads": ("llm-decode-h200-a", "ocr-vlm-sdpa-h200-a")}
QUIET = {"unchanged", "not enough launches"}
#: Per stage: launches and summed kernel durations of the kernels whose launch call started inside
#: the stage's NVTX range within the "measured" range (the captures repeat the stages after it, a
#: plain run for the energy reading, which the comparison leaves out).
SQL = """
WITH named AS (SELECT coalesce(e.text, s.value) AS name, e.start, e.end, e.globalTid AS tid FROM NVTX_EVENTS e
               LEFT JOIN StringIds s ON s.id = e.textId WHERE e.eventType = 59),
measured AS (SELECT start, end, tid FROM named WHERE name = 'measured'),
stages AS (SELECT n.* FROM named n JOIN measured m ON n.tid = m.tid AND n.start >= m.start AND n.end <= m.end
           WHERE n.name IN ({names}))
SELECT n.name, count(*), sum(k.end - k.start), count(DISTINCT n.start)
FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
  ON r.correlationId = k.correlationId AND r.globalTid >> 24 = k.globalPid >> 24
JOIN stages n ON r.globalTid = n.tid AND r.start BETWEEN n.start AND n.end GROUP BY n.name
"""


def _compare(baseline: str, current: str, out: Path) -> tuple[int, dict[str, Any], str]:
    printed = io.StringIO()
    with redirect_stdout(printed):
        code = main(["compare", str(RUNS / baseline), str(RUNS / current), "--json", str(out)])
    return code, json.loads(out.read_text(encoding="utf-8")), printed.getvalue()


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, dict[str, Any], str]]:
    """Each pair of PAIRS compared once: exit code, --json, console output."""
    tmp = tmp_path_factory.mktemp("compare")
    return {key: _compare(*pair, tmp / f"{key}.json") for key, pair in PAIRS.items()}


def _stages(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["stage"]: row for row in report["stages"]}


def _sql(run: str, tmp: Path) -> dict[str, tuple[int, int]]:
    """SQL's (launches, kernel ns) per stage of ``run``'s nsys export."""
    stages = json.loads((RUNS / run / "manifest.json").read_text(encoding="utf-8"))["stages"]
    plain = tmp / f"{run}.sqlite"
    plain.write_bytes(content(committed(RUNS / run, "nsys/report.sqlite")))
    db = sqlite3.connect(plain)
    try:
        rows = db.execute(SQL.format(names=", ".join(f"'{s}'" for s in stages))).fetchall()
    finally:
        db.close()
    assert {instances for *_, instances in rows} == {1}
    return {stage: (count, kernel_ns) for stage, count, kernel_ns, _ in rows}


@pytest.mark.parametrize("key", ["llm", "ocr", "eager"])
def test_stage_kernel_time_is_what_sql_sums(compared, key: str, tmp_path: Path) -> None:
    _, report, _ = compared[key]
    stages = _stages(report)
    for side, run in zip(("prev_", ""), PAIRS[key]):
        sql = _sql(run, tmp_path)
        assert set(sql) == set(stages) - {"all"}
        for stage, (launches, kernel_ns) in sql.items():
            assert stages[stage][f"{side}launches"] == launches
            assert stages[stage][f"kernel_{side}ns"] == kernel_ns
        assert stages["all"][f"kernel_{side}ns"] == sum(ns for _, ns in sql.values())


def test_llm_decode_captured_twice_is_unchanged(compared) -> None:
    code, report, out = compared["llm"]
    assert code == 0 and report["failed"] is False and report["like_with_like"]["differences"] == []
    stages = _stages(report)
    assert {s: r["kernel_verdict"] for s, r in stages.items()} == {
        "prefill": "unchanged", "decode": "unchanged", "all": "unchanged"}
    # kernel ns as SQL sums them (test_stage_kernel_time_is_what_sql_sums); intervals a few tenths wide
    assert (stages["prefill"]["kernel_prev_ns"], stages["prefill"]["kernel_ns"]) == (2_375_475, 2_377_845)
    assert (stages["decode"]["kernel_prev_ns"], stages["decode"]["kernel_ns"]) == (60_182_633, 60_201_307)
    assert round(stages["prefill"]["kernel_rel_pct"], 2) == 0.10
    for row in stages.values():
        assert -0.3 < row["kernel_low_pct"] <= row["kernel_rel_pct"] <= row["kernel_high_pct"] < 0.5
        assert row["kernel_high_pct"] < row["kernel_noise_pct"]
    verdicts = [k["verdict"] for k in report["kernels"]]
    assert set(verdicts) <= QUIET and (verdicts.count("unchanged"), len(verdicts)) == (50, 59)
    assert "59 kernels paired by identity within stages: 0 slower, 0 faster, 50 unchanged, 9 not enough " \
           "launches." in out and "OK: no stage's kernel time got slower" in out


def test_ocr_vlm_captured_twice_is_unchanged_with_narrow_intervals(compared) -> None:
    """sam's kernel time 10.821 → 10.824 ms: one elementwise kernel name covers 23 µs and 697 µs
    launches, so resampling launches (even within each kernel) gave [-32.8 %, +51.8 %]; launches
    resampled as pairs give what the launches vary, a tenth of a percent."""
    code, report, out = compared["ocr"]
    assert code == 0 and report["failed"] is False and report["like_with_like"]["differences"] == []
    stages = _stages(report)
    assert {s: r["kernel_verdict"] for s, r in stages.items()} == {
        "sam": "unchanged", "clip": "unchanged", "projector": "not enough launches", "prefill": "unchanged",
        "decode": "unchanged", "all": "unchanged"}
    assert (stages["sam"]["kernel_prev_ns"], stages["sam"]["kernel_ns"]) == (10_820_672, 10_823_621)
    for stage in ("sam", "clip", "prefill", "decode", "all"):
        row = stages[stage]
        assert -0.5 < row["kernel_low_pct"] <= row["kernel_rel_pct"] <= row["kernel_high_pct"] < 0.5, stage
    assert stages["sam"]["kernel_high_pct"] - stages["sam"]["kernel_low_pct"] < 0.3
    verdicts = [k["verdict"] for k in report["kernels"]]
    assert set(verdicts) <= QUIET and (verdicts.count("unchanged"), len(verdicts)) == (124, 144)
    assert "kernels that ran in one capture only" not in out  # one program: every kernel on both sides


def _comparison_page(tmp_path: Path, baseline: str, current: str) -> str:
    """The comparison page (Markdown, English) of a two-version report of ``baseline`` and ``current``."""
    from generator.analyses.version import AnalysisSettings, analyze_version
    from generator.pipeline.config import load_report, report_meta
    from generator.pipeline.inputs import InputCache, version_inputs
    from generator.render.pages import render_page

    report = tmp_path / "report.yaml"
    report.write_text(f"""id: pair
title: {{en: "Pair", zh: "Pair"}}
versions:
  - {{id: a, title: {{en: A, zh: A}}, date: 2026-11-29, runs: [{RUNS / baseline}]}}
  - {{id: b, title: {{en: B, zh: B}}, date: 2026-11-29, runs: [{RUNS / current}]}}
""", encoding="utf-8")
    config = load_report(report)
    settings = AnalysisSettings(top_n=config.top_n, rule=config.classification.rule,
                                margin=config.classification.margin, peaks=config.gpu.as_settings())
    with InputCache() as cache:
        first = analyze_version("a", version_inputs(config.versions[0], cache, report, 0), settings)
        second = analyze_version("b", version_inputs(config.versions[1], cache, report, 1), settings, previous=first)
    return render_page("comparison", second, report_meta(config, None, ["en", "zh"]), "en", {})


@pytest.mark.parametrize("key", ["llm", "ocr"])
def test_the_comparison_page_says_unchanged(compared, key: str, tmp_path: Path) -> None:
    _, report, _ = compared[key]
    page = _comparison_page(tmp_path, *PAIRS[key])
    words = {"unchanged": "unchanged (within noise)", "not enough launches": "not enough launches"}
    for row in report["stages"]:
        label = "all stages" if row["stage"] == "all" else row["stage"]
        cells = [c.strip() for c in next(ln for ln in page.splitlines() if ln.startswith(f"| {label} |")).split("|")]
        assert float(cells[2]) == pytest.approx(row["kernel_prev_ns"] / 1e6, abs=0.005)  # ms, 2 decimals
        assert float(cells[4]) == pytest.approx(row["kernel_rel_pct"], rel=0.05)  # 2 significant digits below 1
        assert cells[5] == ("" if row["kernel_low_pct"] is None else
                            f"[{row['kernel_low_pct']:+.1f}%, {row['kernel_high_pct']:+.1f}%]")
        assert cells[6] == f"±{row['kernel_noise_pct']:.1f}%" and cells[7] == words[row["kernel_verdict"]]
    verdicts = [k["verdict"] for k in report["kernels"]]
    assert (f"{verdicts.count('unchanged')} unchanged, {verdicts.count('not enough launches')} with too few "
            "launches") in page and ": 0 slower, 0 faster," in page
    assert "| slower |" not in page and "| faster |" not in page
    assert "Differences between the two captures" not in page


def test_eager_attention_names_the_kernels_that_changed(compared) -> None:
    code, report, out = compared["eager"]
    assert code == 1 and report["failed"] is True
    assert [(d["kind"], d["key"], d["previous"], d["current"]) for d in report["like_with_like"]["differences"]] \
        == [("parameter", "params.attn_impl", "sdpa", "eager")]
    stages = _stages(report)
    assert {s: r["kernel_verdict"] for s, r in stages.items()} == {"prefill": "slower", "decode": "slower",
                                                                   "all": "slower"}
    assert (stages["decode"]["kernel_prev_ns"], stages["decode"]["kernel_ns"]) == (60_182_633, 67_755_863)
    for row in stages.values():  # +12.5 % and +12.6 %, intervals half a percent wide, far above the band
        assert 12.0 <= row["kernel_low_pct"] < row["kernel_rel_pct"] < row["kernel_high_pct"] <= 13.1
        assert row["kernel_low_pct"] > row["kernel_noise_pct"]
    # the kernels eager attention added or dropped: no interval (one side has no launches)
    one_side = {(k["status"], k["friendly_name"]): k for k in report["kernels_added_removed"]}
    assert len(one_side) == 14 and {k["status"] for k in one_side.values()} == {"added", "removed"}
    copy = one_side[("added", "Direct Copy (BF16)")]
    assert (copy["prev_count"], copy["count"], copy["total_ns"]) == (0, 1072, 2_590_744)
    flash = one_side[("removed", "cuDNN Flash Attention Forward (sm80, 64x64x64)")]
    assert (flash["prev_count"], flash["count"], flash["prev_total_ns"]) == (512, 0, 1_800_696)
    assert all("low_pct" not in k for k in one_side.values())
    # the paired kernels keep their intervals; none moved beyond its noise
    assert all(k["low_pct"] is not None for k in report["kernels"] if k["verdict"] == "unchanged")
    assert {k["verdict"] for k in report["kernels"]} == QUIET
    assert "decode slower; most of it: Direct Copy (BF16) (added) +2.476 ms; cuDNN Flash Attention Forward " \
           "(sm80, 64x64x64) (removed) -1.801 ms; GEMV-1 (BF16) (added) +1.106 ms" in " ".join(out.split())
    assert "no interval, their whole time is the change" in " ".join(out.split())
    assert "… and 4 more (--json lists all)." in out
    assert "FAIL: kernel time got slower in prefill, decode, all." in out


def test_different_workloads_one_line_no_verdict(compared) -> None:
    code, report, out = compared["workloads"]
    assert code == 0 and report["failed"] is False and report["like_with_like"]["comparable"] is False
    assert {r["kernel_verdict"] for r in report["stages"]} == {"not compared"}
    assert {k["verdict"] for k in report["kernels"]} <= {"not compared"}
    assert out.splitlines() == ["different workloads (workload: llm-decode → ocr-vlm): no faster/slower verdict."]


def test_back_to_back_captures_are_one_session(compared) -> None:
    for key in ("llm", "ocr", "eager"):
        like = compared[key][1]["like_with_like"]
        assert like["same_session"] is True and like["hours_apart"] < 0.1, key
        assert _stages(compared[key][1])["decode"]["kernel_noise_pct"] < 0.5, key  # no session floor
        assert "not one session" not in compared[key][2]
