"""Useful vs executed work and savings bounded by physical floors, on real captures.

- tests/data/h200-small (examples/small-vlm-h200): a torch trace recorded with shapes beside ncu's
  decode launches: every profiled matrix product's useful FLOP is 2·M·N·K of the model's known shapes
  (Llama 1024 hidden, GQA 16/4 heads of 64, 2816 MLP; 64 prompt tokens + 785 ViT tokens at 448 px /
  16), and padding = useful / ncu's executed tensor FLOP.
- every committed report and capture (examples/runs/*: each run directory with a manifest, the ViT
  sweep's points one by one, the whole-graph export): no saving exceeds Σ (measured − floor) recomputed here from the
  nsys summary, the useful work and ncu's bytes; the exclusive savings of a stage add up to at most its time; no duplicates; on
  captures without shapes no finding states a row count or a shape class.
- the launch-call median of a stage is the one plain SQL finds in that stage's NVTX ranges.
"""
from __future__ import annotations

import json
import math
import re
import sqlite3
import statistics
import tempfile
from pathlib import Path

import pandas as pd
import pytest

from generator.analyses.floors import FROM_SHAPES, launch_floor
from generator.analyses.useful_work import launch_work, product_work, shape_class
from generator.analyses.version import AnalysisSettings, analyze_version
from generator.pipeline.config import files_report, load_report
from generator.pipeline.inputs import InputCache, version_inputs
from generator.readers.nsys_sqlite import stage_timeline
from generator.render.findings import render_finding
from generator.workload_params import generated_tokens
from tests.helpers_runs import committed, content

ROOT = Path(__file__).parent.parent
REPORTS = [ROOT / "examples" / "ocr-vlm" / "report.yaml", ROOT / "examples" / "llm-decode" / "report.yaml",
           ROOT / "examples" / "small-vlm-h200" / "report.yaml",
           ROOT / "tests" / "data" / "ocr-vlm-eager-vs-sdpa" / "report.yaml"]
#: every committed capture: the run directories, and the nsys export of whole-graph replays (no manifest)
CAPTURES = [*sorted(p.parent for p in (ROOT / "examples" / "runs").glob("*/manifest.json")),
            *sorted(p.parent for p in (ROOT / "examples" / "runs" / "vit-sweep").glob("*/manifest.json")),
            ROOT / "examples" / "runs" / "llm-decode-graph-whole-h200" / "report.sqlite.xz"]
HIDDEN, KV, MLP, VOCAB = 1024, 4 * 64, 2816, 32000
#: (N, K) of the Llama decoder's products: q/o, k/v, gate/up, down, lm_head
LLAMA_PRODUCTS = {(HIDDEN, HIDDEN), (KV, HIDDEN), (MLP, HIDDEN), (HIDDEN, MLP), (VOCAB, HIDDEN)}
PREFILL_ROWS = 64 + (448 // 16) ** 2 + 1  # prompt tokens + ViT patches + CLS


def _analyzed(report: Path) -> list[tuple]:
    """(inputs, result) per version of a report.yaml, or of the one-version report of a capture."""
    config = load_report(report) if report.suffix == ".yaml" else files_report([report])
    base = report if report.suffix == ".yaml" else report.parent
    out, previous = [], None
    with InputCache() as cache:
        for i, version in enumerate(config.versions):
            inputs = version_inputs(version, cache, base, i)
            previous = analyze_version(version.id, inputs, AnalysisSettings(rule="sol"), previous)
            out.append((inputs, previous))
    return out


@pytest.fixture(scope="module", params=[*REPORTS, *CAPTURES],
                ids=[p.parent.name if p.suffix == ".yaml" else p.name for p in REPORTS] + [
                    str(p.relative_to(ROOT / "examples" / "runs")) for p in CAPTURES])
def report(request):
    return _analyzed(request.param)


@pytest.fixture(scope="module")
def small():
    return _analyzed(ROOT / "examples" / "small-vlm-h200" / "report.yaml")[0]


def test_decode_products_useful_flop_is_2mnk_and_padding_useful_over_executed(small):
    inputs, result = small
    launches = launch_work(result.values["metrics"], inputs.kernel_ops)
    decode = launches[launches["stage"] == "decode"]
    assert len(decode) == 40  # every profiled decode launch found its operator call
    metrics = result.values["metrics"].set_index("launch_id")
    products = decode[decode["op"] == "aten::mm"]
    assert len(products) == 4  # q, k, v and o projections of the first layer among the first 40 launches
    for _, row in products.iterrows():
        assert (row["m"], row["batch"]) == (1, 1) and (row["n"], row["k"]) in LLAMA_PRODUCTS
        assert row["flop"] == 2 * 1 * row["n"] * row["k"]
        executed = metrics.loc[row["launch_id"], "flop_tensor"]
        assert executed == 64 * row["flop"]  # ncu: the 8x64 tile runs 64 rows for the 1 useful one
    useful = result.values["useful_work"]
    rows = useful[(useful["stage"] == "decode") & (useful["op"] == "aten::mm")]
    assert set(rows["shape_class"]) == {"gemv"}
    assert (rows["padding"] == rows["useful_flop"] / rows["executed_flop"]).all()
    assert list(rows["padding"]) == [1 / 64, 1 / 64]
    prefill = useful[(useful["stage"] == "prefill") & (useful["op"] == "aten::mm")]
    assert set(prefill["m"]) == {PREFILL_ROWS} and set(prefill["shape_class"]) == {"gemm"}
    assert prefill["padding"].isna().all()  # the prefill ncu pass collected no tensor FLOP: unknown


def test_decode_findings_say_gemv_with_its_padding(small):
    _, result = small
    (f,) = [f for f in result.findings if f.id == "matmul_shapes" and f.stage == "decode"]
    assert f.evidence["verdict"] == "gemv" and (f.evidence["min_rows"], f.evidence["max_rows"]) == (1, 1)
    assert (f.evidence["min_useful_pct"], f.evidence["max_useful_pct"]) == (1.6, 1.6)  # 100 / 64
    (units,) = [f for f in result.findings if f.id == "hw_decode_units"]
    assert units.evidence["useful_pct"] < 2.0 and units.evidence["useful_tflops"] < units.evidence["executed_tflops"]


def test_product_work_formulas():
    bf16 = ["c10::BFloat16"] * 3
    assert product_work("aten::addmm", [[768], [785, 768], [768, 768], [], []], [*bf16, "Scalar", "Scalar"]) == {
        "m": 785, "n": 768, "k": 768, "batch": 1, "rows": 785, "flop": 2.0 * 785 * 768 * 768,
        "ideal_bytes": 2 * (768 + 785 * 768 + 768 * 768 + 785 * 768)}
    assert product_work("aten::bmm", [[16, 64, 64], [16, 64, 849]], bf16[:2])["flop"] == 2.0 * 16 * 64 * 849 * 64
    assert product_work("aten::add", [[1, 2], [1, 2]], bf16[:2]) is None
    assert [shape_class(m) for m in (1, 8, 128, 129, math.nan)] == ["gemv", "skinny", "skinny", "gemm", "unknown"]


def _floor_saving(inputs, result, finding) -> float:
    """Σ(measured − floor) over the launches of the finding's kernels, recomputed here launch by launch:
    the launches a recorded matrix-product call made (ops/calls.csv mapped launch by launch), where the
    finding holds all of them, at least 2·batch·M·N·K / tensor peak per execution of the call; every
    other launch at least the shortest kernel (an ncu record or a call describes no other launch)."""
    summary = inputs.kernel_summary
    shortest = float(pd.to_numeric(summary["min_ns"], errors="coerce").min())
    peak = result.values["peaks"].flop_per_s.get("tensor")
    names = {k for k, _ in finding.bound.parts}
    if inputs.launch_calls is None:
        rows = summary[(summary["stage"] == finding.stage) & summary["name"].isin(names)]
        return float((rows["total_ns"] - rows["count"] * shortest).clip(lower=0).sum())
    every = inputs.launch_calls[inputs.launch_calls["stage"] == finding.stage]
    called = every["call"].notna()
    loose = every[~called & every["name"].isin(names)]  # no call made them: the shortest kernel
    total = float((loose["duration_ns"] - shortest).clip(lower=0).sum())
    every = every[called]
    key = every["iteration"].astype(str) + ":" + every["call"].astype(str)
    for _, launches in every.groupby(key):
        mine = launches[launches["name"].isin(names)]
        if not len(mine):
            continue
        measured = float(mine["duration_ns"].sum())
        floor = shortest * len(mine)
        product = launches[["m", "n", "k"]].notna().all(axis=None)
        if product and peak and len(mine) == len(launches):
            nodes = launches["node"].dropna()
            executions = int(nodes.value_counts().max()) if len(nodes) else 1
            b = launches["batch"].iloc[0]
            flop = 2.0 * (1.0 if math.isnan(b) else b) * launches["m"].iloc[0] * launches["n"].iloc[0] * launches["k"].iloc[0]
            floor = max(floor, 1e9 * flop / peak * executions)
        total += max(measured - floor, 0.0)
    return total


def test_no_saving_exceeds_the_sum_of_measured_minus_floor(report):
    for inputs, result in report:
        for finding in [g for f in result.findings for g in (f, *f.merged)]:
            bound = finding.bound
            if bound is None or finding.abstained:
                continue
            if bound.floor_basis:
                independent = _floor_saving(inputs, result, finding)
                assert bound.saving_ns <= independent * 1.01 + 1.0, (result.version_id, finding.id, independent)
                listed = sum(k["measured_ns"] - k["floor_ns"] for k in bound.kernels)  # findings.json alone
                assert bound.saving_ns <= listed * 1.01 + len(bound.kernels), (result.version_id, finding.id, listed)
                assert all(k["floor_lo_ns"] <= k["floor_ns"] <= k["measured_ns"] for k in bound.kernels)
                assert {k["name"] for k in bound.kernels} == {n for n, _ in bound.parts}
            assert bound.saving_ns <= bound.affected_ns + 1.0
            assert 0.0 <= bound.shared_ns <= bound.saving_ns


def test_exclusive_savings_of_a_stage_add_up_and_no_duplicates(report):
    for inputs, result in report:
        findings = [f for f in result.findings if f.kind == "finding" and f.bound is not None]
        for stage in {f.stage for f in findings}:
            kernel_time = [f for f in findings if f.stage == stage and f.bound.basis == "gpu_time"]
            stage_ns = float(inputs.kernel_summary.loc[inputs.kernel_summary["stage"] == stage, "total_ns"].sum())
            assert sum(f.bound.exclusive_saving_ns for f in kernel_time) <= stage_ns + 1.0, (result.version_id, stage)
            keys = [(tuple(sorted(k for k, _ in f.bound.parts)), round(f.bound.saving_ns)) for f in kernel_time
                    if f.bound.parts]
            assert len(keys) == len(set(keys)), (result.version_id, stage)
            for f in kernel_time:  # high confidence is earned: a floor from shapes within 2x of the time
                if f.confidence == "high" and f.bound.saving_ns:
                    assert f.bound.floor_basis in FROM_SHAPES and f.bound.headroom <= 2.0, (result.version_id, f.id)


#: words that state a row count or a shape class (saying that rows are unknown is allowed)
ROW_WORDS = re.compile(r"\d\s*rows?\b|rows per|skinny|GEMV|matrix-vector|M = 1|\d\s*行|窄|矩阵-向量")


def test_without_shapes_no_row_count_or_shape_class(report):
    for inputs, result in report:
        if inputs.kernel_ops is not None or inputs.op_calls is not None:
            continue
        assert set(result.values["useful_work"]["shape_class"]) <= {"unknown"}
        for finding in result.findings:
            assert not {"verdict", "min_rows", "max_rows", "useful_pct"} & set(finding.evidence), finding.id
            for lang in ("en", "zh"):
                text = render_finding(finding, lang)
                for name in finding.kernels:
                    text = text.replace(name, "")
                assert not ROW_WORDS.search(text), (finding.id, lang, text)


def test_stage_launch_call_median_is_the_stage_s_own():
    """Plain SQL over the bundled v2 export: the cudaLaunchKernel calls starting inside an NVTX range
    of the stage on their thread; their median is the finding's, and the stages' medians differ."""
    run = ROOT / "examples" / "runs" / "ocr-vlm-sdpa-h200"
    stages = json.loads((run / "manifest.json").read_text())["stages"]
    path = Path(tempfile.mkdtemp()) / "report.sqlite"
    path.write_bytes(content(committed(run, "nsys/report.sqlite")))
    timeline = stage_timeline(path, stages).groupby("stage")["launch_call_med_ns"].first()
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    calls = con.execute("""
        SELECT r.globalTid, r.start, r.end - r.start FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r
        JOIN StringIds AS s ON s.id = r.nameId
        WHERE s.value = 'cudaLaunchKernel' OR s.value LIKE 'cudaLaunchKernel\\_v%' ESCAPE '\\'""").fetchall()
    medians = {}
    for stage in stages:
        ranges = con.execute("""
            SELECT n.globalTid, n.start, n.end FROM NVTX_EVENTS AS n LEFT JOIN StringIds AS t ON t.id = n.textId
            WHERE coalesce(n.text, t.value) = ?""", (stage,)).fetchall()
        medians[stage] = statistics.median(d for tid, t, d in calls
                                           if any(tid == g and s <= t <= e for g, s, e in ranges))
    con.close()
    path.unlink()
    assert {s: float(timeline[s]) for s in stages} == {s: float(m) for s, m in medians.items()}
    assert len(set(medians.values())) > 1


def test_tokens_only_from_workloads_that_generate_them():
    manifests = {p.parent.name: json.loads(p.read_text()) for p in (ROOT / "examples" / "runs").glob("*/manifest.json")}
    ocr = manifests["ocr-vlm-sdpa-h200"]
    assert generated_tokens(ocr) == ocr["params"]["batch"] * ocr["params"]["new_tokens"] == 32
    vit = json.loads(next((ROOT / "examples" / "runs" / "vit-sweep").glob("*/manifest.json")).read_text())
    assert vit["workload"] == "vit" and generated_tokens(vit) is None  # new_tokens is a default it never reads
    assert generated_tokens({**ocr, "tokens": {"generated": 7}}) == 7


def test_floor_function():
    dram = {"dram_bytes_per_s": 4.8e12}
    assert launch_floor(500.0, dram_bytes=4.8e6, **dram) == (1000.0, "dram_bytes")
    # shapes known: the measured bytes no longer count, useful FLOP sets the floor
    assert launch_floor(500.0, useful_flop=1e9, flop_per_s=1e15, ideal_bytes=2.4e6, dram_bytes=4.8e9, **dram) == \
        (1000.0, "useful_flop")
    assert launch_floor(2000.0, useful_flop=1e9, flop_per_s=1e15, ideal_bytes=2.4e6, **dram) == \
        (2000.0, "shortest_kernel")


def test_op_calls_file_present_or_absent_or_wrong():
    """A run has ops/calls.csv exactly where its capture recorded shapes (an ops/ folder); a CSV that is
    not one (here an ncu raw export) is refused in one line naming the file and the missing column."""
    from generator.errors import InputError
    from generator.readers.op_calls import calls_file, read_op_calls

    runs = [run for run in (ROOT / "examples" / "runs").iterdir() if run.is_dir()]
    assert {run.name for run in runs if calls_file(run) is not None} == {run.name for run in runs
                                                                         if (run / "ops").is_dir()}
    assert calls_file(ROOT / "examples" / "runs" / "ocr-vlm-sdpa-h200") is None
    assert calls_file(ROOT / "examples" / "runs" / "ocr-vlm-sdpa-h200-a").name == "calls.csv.xz"
    wrong = ROOT / "tests" / "data" / "h200-small" / "small_vlm_decode_ncu_raw.csv.xz"
    with pytest.raises(InputError, match=r"small_vlm_decode_ncu_raw\.csv\.xz.*missing column 'iteration'"):
        read_op_calls(wrong)
