"""`python -m generator compare`: the regression gate on real H200 profiles (exit 0 / 1 / 2, JSON)."""
from __future__ import annotations

import csv
import json
import lzma
import shutil
import statistics
from pathlib import Path

import ncu_report
import pandas as pd
import pytest

from generator.analyses.kernel_identity import identity
from generator.analyses.kernel_match import match_kernels
from generator.analyses.regression import IMPROVEMENT, REGRESSION, UNCHANGED
from generator.analyses.version import AnalysisSettings, analyze_version
from generator.cli import main
from generator.readers import read
from generator.render.data_files import write_version_data
from tests.test_version import h200_inputs

H200 = Path(__file__).parent / "data" / "h200-small"
DECODE_CSV = H200 / "small_vlm_decode_ncu_raw.csv.xz"
PREFILL_REP = H200 / "small_vlm_prefill.ncu-rep.xz"
#: the BF16 elementwise multiply, as ncu's raw CSV (function names) and report (demangled) spell it
MUL_CSV = ("void at::elementwise_kernel<128, 4, void at::gpu_kernel_impl_nocast<at::BinaryFunctor<c10::BFloat16, "
           "c10::BFloat16, c10::BFloat16, binary_internal::MulFunctor<float>>>(at::TensorIteratorBase &, const T1 &)"
           "::[lambda(int) (instance 1)]>(int, T3)")
MUL_BASE = "elementwise_kernel"


def _csv_durations_us() -> dict[str, list[float]]:
    """Per kernel name of the decode raw CSV: every launch's gpu__time_duration.sum (the CSV says µs)."""
    with lzma.open(DECODE_CSV, "rt", newline="") as fh:
        rows = list(csv.reader(fh))
    header, units = rows[0], rows[1]
    col = header.index("gpu__time_duration.sum")
    assert units[col] == "us"
    out: dict[str, list[float]] = {}
    for row in rows[2:]:
        out.setdefault(row[header.index("Kernel Name")], []).append(float(row[col]))
    return out


def _rep_durations_us(tmp_path: Path) -> dict[str, list[float]]:
    return _run_durations_us(PREFILL_REP, tmp_path)


def _run_durations_us(rep: Path, tmp_path: Path) -> dict[str, list[float]]:
    """Per demangled name of an ncu report: every launch's duration (µs), read by ncu_report itself."""
    plain = tmp_path / "plain.ncu-rep"
    with lzma.open(rep) as src, open(plain, "wb") as dst:
        shutil.copyfileobj(src, dst)
    report = ncu_report.load_report(str(plain))
    out: dict[str, list[float]] = {}
    for r in range(report.num_ranges()):
        rng = report.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            metric = action.metric_by_name("gpu__time_duration.sum")
            scale = {"ns": 1e-3, "us": 1.0, "usecond": 1.0, "nsecond": 1e-3}[metric.unit()]
            out.setdefault(action.name(ncu_report.IAction.NameBase_DEMANGLED), []).append(metric.as_double() * scale)
    return out


def _run(tmp_path: Path, *args: str | Path) -> tuple[int, dict]:
    out = tmp_path / "cmp.json"
    out.unlink(missing_ok=True)
    code = main(["compare", *map(str, args), "--json", str(out)])
    return code, json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}


def test_a_profile_compared_with_itself_passes(tmp_path, capsys):
    code, report = _run(tmp_path, DECODE_CSV, DECODE_CSV)
    assert code == 0
    assert report["failed"] is False and report["matched_kernels"] == 25 == len(_csv_durations_us())
    # duration decides (25 verdicts); SM/memory throughput and occupancy are context (3 × 25 rows)
    assert report["counts"] == {"regression": 0, "improvement": 0, "unchanged": 25, "unknown": 0, "context": 75}
    assert report["only_baseline"] == report["only_current"] == []
    assert {r["matched_by"] for r in report["rows"]} == {"name"}
    assert "no kernel got slower" in capsys.readouterr().out


def test_decode_vs_prefill_launches_regress(tmp_path, capsys):
    """Same ATen kernels, spelled differently by ncu's CSV and report: the prefill launches ran longer."""
    code, report = _run(tmp_path, DECODE_CSV, PREFILL_REP, "--metrics", "duration_us")
    assert code == 1 and report["failed"] is True
    csv_us, rep_us = _csv_durations_us(), _rep_durations_us(tmp_path)
    rows = {r["baseline_kernel"]: r for r in report["rows"]}
    mul = rows[MUL_CSV]
    assert mul["matched_by"] == "identity" and MUL_BASE in mul["kernel"] and "at::native::" in mul["kernel"]
    assert mul["baseline"] == pytest.approx(statistics.mean(csv_us[MUL_CSV]))  # 3.272 µs over 4 launches
    assert mul["current"] == pytest.approx(statistics.mean(rep_us[mul["kernel"]]))  # 5.056 µs
    assert mul["rel_pct"] == pytest.approx((mul["current"] / mul["baseline"] - 1) * 100)
    assert mul["status"] == REGRESSION and mul["rel_pct"] > 50
    # every row's verdict follows from the two independent means and the 5 % threshold
    for row in report["rows"]:
        before, after = statistics.mean(csv_us[row["baseline_kernel"]]), statistics.mean(rep_us[row["kernel"]])
        change = (after / before - 1) * 100
        assert row["rel_pct"] == pytest.approx(change)
        assert row["status"] == (REGRESSION if change > 5 else IMPROVEMENT if change < -5 else UNCHANGED)
    assert report["counts"]["regression"] == sum(1 for r in report["rows"] if r["status"] == REGRESSION) >= 10
    assert len(report["only_baseline"]) + report["matched_kernels"] == len(csv_us)
    assert len(report["only_current"]) + report["matched_kernels"] == len(rep_us)
    out = capsys.readouterr().out
    assert "FAIL" in out and "Elementwise Multiply (BF16)" in out


def test_threshold_and_direction(tmp_path):
    """The prefill multiply is 54.5 % slower: a regression at 50 %, not at 60 %; the reverse is a
    35.3 % improvement."""
    assert _run(tmp_path, DECODE_CSV, PREFILL_REP, "--metrics", "duration_us", "--threshold", "150%")[0] == 0
    code, report = _run(tmp_path, DECODE_CSV, PREFILL_REP, "--metrics", "duration_us", "--threshold", "50")
    assert code == 1 and {r["baseline_kernel"] for r in report["rows"] if r["status"] == REGRESSION} >= {MUL_CSV}
    code, report = _run(tmp_path, DECODE_CSV, PREFILL_REP, "--metrics", "duration_us", "--threshold", "60%")
    assert MUL_CSV not in {r["baseline_kernel"] for r in report["rows"] if r["status"] == REGRESSION}
    code, report = _run(tmp_path, PREFILL_REP, DECODE_CSV, "--metrics", "duration_us", "--threshold", "30%")
    mul = next(r for r in report["rows"] if r["kernel"] == MUL_CSV)
    assert mul["status"] == IMPROVEMENT and mul["rel_pct"] == pytest.approx(-35.3, abs=0.05)  # 5.056 → 3.272 µs
    assert code == (1 if report["counts"]["regression"] else 0)


def test_throughput_is_context_not_a_verdict(tmp_path):
    """Throughput and occupancy alone never fail the gate; with duration watched, a kernel that got
    faster is an improvement whatever its throughput % did (its drops are listed as context)."""
    code, report = _run(tmp_path, PREFILL_REP, DECODE_CSV, "--metrics", "sm_throughput_pct,achieved_occupancy_pct")
    assert code == 0 and {r["status"] for r in report["rows"]} == {"context"}
    assert any(r["current"] < r["baseline"] for r in report["rows"])  # drops exist, and decide nothing
    code, report = _run(tmp_path, PREFILL_REP, DECODE_CSV)
    rows = pd.DataFrame(report["rows"])
    duration = rows[rows["metric"] == "duration_us"].set_index("kernel")
    sm = rows[rows["metric"] == "sm_throughput_pct"].set_index("kernel")
    faster_but_lower = [k for k in duration.index
                        if duration.at[k, "rel_pct"] < -5 and sm.at[k, "current"] < sm.at[k, "baseline"]]
    assert faster_but_lower and all(duration.at[k, "status"] == IMPROVEMENT for k in faster_but_lower)
    assert code == (1 if (duration["status"] == REGRESSION).any() else 0)


def test_json_is_deterministic(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["compare", str(DECODE_CSV), str(PREFILL_REP), "--json", str(a)]) == 1
    assert main(["compare", str(DECODE_CSV), str(PREFILL_REP), "--json", str(b)]) == 1
    assert a.read_bytes() == b.read_bytes()
    assert json.loads(a.read_text())["metrics"] == {
        "duration_us": "lower is better", "sm_throughput_pct": "higher is better",
        "memory_throughput_pct": "higher is better", "achieved_occupancy_pct": "higher is better"}


@pytest.fixture(scope="module")
def version_dir(tmp_path_factory) -> Path:
    """The H200 decode version's data files as the site writes them."""
    out = tmp_path_factory.mktemp("version")
    write_version_data(analyze_version("v1", h200_inputs("small_vlm_decode_ncu_raw.csv.xz"), AnalysisSettings()), out)
    return out


def test_version_data_dirs_and_summaries(version_dir, tmp_path):
    code, report = _run(tmp_path, version_dir, version_dir)
    assert code == 0 and report["matched_kernels"] == 25
    summary = version_dir / "data" / "summary.json"
    code, report = _run(tmp_path, summary, summary)
    assert code == 0 and report["matched_kernels"] == 1
    means = json.loads(summary.read_text())["overall_means"]
    assert {r["metric"]: r["current"] for r in report["rows"]} == pytest.approx(
        {m: means[m] for m in ("duration_us", "sm_throughput_pct", "memory_throughput_pct", "achieved_occupancy_pct")})


def test_version_dir_with_one_slower_kernel(version_dir, tmp_path):
    """Scale one kernel's duration in a copy of the real data: 4 % passes the 5 % gate, 6 % fails it."""
    table = pd.read_csv(version_dir / "data" / "ncu_metrics.csv")
    slow = table["duration_ns"].idxmax()
    for factor, expected in ((1.04, 0), (1.06, 1)):
        current = tmp_path / f"x{factor}"
        (current / "data").mkdir(parents=True)
        table.assign(duration_ns=[d * factor if i == slow else d for i, d in enumerate(table["duration_ns"])]).to_csv(
            current / "data" / "ncu_metrics.csv", index=False)
        code, report = _run(tmp_path, version_dir, current)
        assert code == expected
        regressed = [r["kernel"] for r in report["rows"] if r["status"] == REGRESSION]
        assert regressed == ([table.at[slow, "name"]] if expected else [])


@pytest.mark.parametrize(("text", "problem"), [
    ("name,duration_ns\nk,n/a\n", "non-numeric"),
    ("name,duration_ns\nk,1,2\n", "not a readable CSV"),
    ("kernel,duration_ns\nk,1\n", "missing column name"),
])
def test_bad_data_dirs_exit_2(version_dir, tmp_path, capsys, text, problem):
    bad = tmp_path / "bad" / "data"
    bad.mkdir(parents=True)
    (bad / "ncu_metrics.csv").write_text(text)
    code, report = _run(tmp_path, version_dir, bad.parent)
    assert code == 2 and report == {}  # no JSON written
    err = capsys.readouterr().err
    assert problem in err and "Traceback" not in err


def test_other_bad_input_exits_2(tmp_path, capsys):
    truncated = tmp_path / "cut.ncu-rep"
    with lzma.open(PREFILL_REP) as src:
        truncated.write_bytes(src.read()[:5000])
    not_summary = tmp_path / "summary.json"
    not_summary.write_text('{"version": "v1"}')
    for args in ([DECODE_CSV, tmp_path / "missing"], [DECODE_CSV, truncated], [DECODE_CSV, not_summary],
                 [tmp_path, DECODE_CSV], [DECODE_CSV, DECODE_CSV, "--metrics", "flops"],
                 [not_summary.with_name("none.json"), DECODE_CSV]):
        assert _run(tmp_path, *args)[0] == 2, args
    assert "Traceback" not in capsys.readouterr().err


def test_base_names_match_only_when_unique():
    """ncu's CSV and report spell ATen kernels differently; 10 decode kernels share the base name
    vectorized_elementwise_kernel, so those match on their template arguments or not at all."""
    csv_names = list(_csv_durations_us())
    rep_names = list(dict.fromkeys(read(PREFILL_REP).kernel_metrics["name"]))
    pairs = match_kernels(csv_names, rep_names)
    assert len({p[0] for p in pairs}) == len({p[1] for p in pairs}) == len(pairs)  # one to one
    shared = [n for n in csv_names if identity(n).function == "vectorized_elementwise_kernel"]
    assert len(shared) == 10
    assert all(how == "identity" for a, _, how in pairs if a in shared)
    assert {how for _, _, how in pairs} <= {"name", "identity", "agreeing identity"}


VIT_RUNS = Path(__file__).parent.parent / "examples" / "runs" / "vit-sweep"
FLASH = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0"


def test_a_run_compared_with_itself_passes(tmp_path):
    run = VIT_RUNS / "image-size224_batch1"
    code, report = _run(tmp_path, run, run)
    assert code == 0 and report["counts"]["regression"] == report["counts"]["improvement"] == 0
    assert report["matched_kernels"] == 10  # the profiled kernels of the run


def test_bigger_images_and_batches_regress(tmp_path):
    """vit at 448 px, batch 4 against 224 px, batch 1: the kernels both profiled take longer."""
    base, cur = VIT_RUNS / "image-size224_batch1", VIT_RUNS / "image-size448_batch4"
    code, report = _run(tmp_path, base, cur, "--metrics", "duration_us")
    assert code == 1
    durations = [_run_durations_us(run / "ncu" / "report.ncu-rep.xz", tmp_path) for run in (base, cur)]
    flash = next(r for r in report["rows"] if r["kernel"] == FLASH)
    assert flash["baseline"] == pytest.approx(statistics.mean(durations[0][FLASH]))  # 7.072 µs
    assert flash["current"] == pytest.approx(statistics.mean(durations[1][FLASH]))  # 33.344 µs
    assert flash["status"] == REGRESSION and flash["rel_pct"] == pytest.approx(371.5, abs=0.05)
    # every kernel both runs profiled got slower but the classifier head's GEMV (7.520 → 7.488 µs)
    head = "nvjet_sm90_tst_8x64_64x16_2x1_v_bz_bias_TNN"
    assert {r["kernel"]: r["status"] for r in report["rows"] if r["status"] != REGRESSION} == {head: UNCHANGED}
    assert report["matched_kernels"] == 6 and report["counts"]["regression"] == 5
    gemv = next(r for r in report["rows"] if r["kernel"] == head)
    assert (gemv["baseline"], gemv["current"]) == pytest.approx((statistics.mean(durations[0][head]),
                                                                 statistics.mean(durations[1][head])))
