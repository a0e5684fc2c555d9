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


def test_a_profile_compared_with_itself_has_no_verdict(tmp_path, capsys):
    """ncu files carry one profiled launch per kernel, no nsys launches: context only, exit 0."""
    code, report = _run(tmp_path, DECODE_CSV, DECODE_CSV)
    assert code == 0 and report["failed"] is False
    assert report["stages"] == report["kernels"] == [] and report["like_with_like"] is None
    context = report["ncu_context"]
    assert context["matched_kernels"] == 25 == len(_csv_durations_us())
    assert len(context["rows"]) == 4 * 25 and all("status" not in r for r in context["rows"])  # no verdict
    assert context["only_baseline"] == context["only_current"] == []
    assert {r["matched_by"] for r in context["rows"]} == {"name"}
    assert "no verdict" in capsys.readouterr().out


def test_ncu_durations_are_context_never_a_verdict(tmp_path, capsys, monkeypatch):
    """Same ATen kernels, spelled differently by ncu's CSV and report; the prefill launches ran
    longer (the multiply +54.5 %), yet ncu (one launch, clocks as ncu left them) decides nothing."""
    monkeypatch.setenv("COLUMNS", "150")  # piped, tables are $COLUMNS wide: the names below stay on one line
    code, report = _run(tmp_path, DECODE_CSV, PREFILL_REP, "--metrics", "duration_us")
    assert code == 0 and report["failed"] is False
    csv_us, rep_us = _csv_durations_us(), _rep_durations_us(tmp_path)
    rows = {r["baseline_kernel"]: r for r in report["ncu_context"]["rows"]}
    mul = rows[MUL_CSV]
    assert mul["matched_by"] == "identity" and MUL_BASE in mul["kernel"] and "at::native::" in mul["kernel"]
    assert mul["baseline"] == pytest.approx(statistics.mean(csv_us[MUL_CSV]))  # 3.272 µs over 4 launches
    assert mul["current"] == pytest.approx(statistics.mean(rep_us[mul["kernel"]]))  # 5.056 µs
    assert mul["rel_pct"] == pytest.approx(54.5, abs=0.05)
    for row in report["ncu_context"]["rows"]:  # every figure follows from the two independent means
        before, after = statistics.mean(csv_us[row["baseline_kernel"]]), statistics.mean(rep_us[row["kernel"]])
        assert row["rel_pct"] == pytest.approx((after / before - 1) * 100)
    context = report["ncu_context"]
    assert len(context["only_baseline"]) + context["matched_kernels"] == len(csv_us)
    assert len(context["only_current"]) + context["matched_kernels"] == len(rep_us)
    out = capsys.readouterr().out
    assert "no verdict" in out and "Elementwise Multiply (BF16)" in out and "FAIL" not in out


def test_json_is_deterministic(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["compare", str(DECODE_CSV), str(PREFILL_REP), "--json", str(a)]) == 0
    assert main(["compare", str(DECODE_CSV), str(PREFILL_REP), "--json", str(b)]) == 0
    assert a.read_bytes() == b.read_bytes()
    assert json.loads(a.read_text())["ncu_context"]["metrics"] == {
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
    assert code == 0 and report["ncu_context"]["matched_kernels"] == 25
    summary = version_dir / "data" / "summary.json"
    code, report = _run(tmp_path, summary, summary)
    assert code == 0 and report["ncu_context"]["matched_kernels"] == 1
    means = json.loads(summary.read_text())["overall_means"]
    assert {r["metric"]: r["current"] for r in report["ncu_context"]["rows"]} == pytest.approx(
        {m: means[m] for m in ("duration_us", "sm_throughput_pct", "memory_throughput_pct", "achieved_occupancy_pct")})


def test_a_slower_ncu_kernel_alone_does_not_fail(version_dir, tmp_path):
    """One kernel's ncu duration scaled by 1.5 in a copy of the real data: shown (+50 %), exit 0."""
    table = pd.read_csv(version_dir / "data" / "ncu_metrics.csv")
    slow = table["duration_ns"].idxmax()
    current = tmp_path / "slower"
    (current / "data").mkdir(parents=True)
    table.assign(duration_ns=[d * 1.5 if i == slow else d for i, d in enumerate(table["duration_ns"])]).to_csv(
        current / "data" / "ncu_metrics.csv", index=False)
    code, report = _run(tmp_path, version_dir, current)
    assert code == 0
    row = next(r for r in report["ncu_context"]["rows"]
               if r["kernel"] == table.at[slow, "name"] and r["metric"] == "duration_us")
    assert row["rel_pct"] == pytest.approx(50.0)


def test_deeply_nested_json_is_one_line(tmp_path, capsys):
    """issue 35 item 3: a summary.json nested 100,000 deep is bad input, not a RecursionError."""
    deep = tmp_path / "summary.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    code, report = _run(tmp_path, deep, deep)
    err = capsys.readouterr().err
    assert code == 2 and report == {}
    assert len(err.strip().splitlines()) == 1 and "nested too deeply" in err and "Recursion" not in err


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
    with pytest.raises(SystemExit) as exited:  # ncu thresholds are gone: ncu never decides
        main(["compare", str(DECODE_CSV), str(DECODE_CSV), "--threshold", "5%"])
    assert exited.value.code == 2
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
RUNS = Path(__file__).parent.parent / "examples" / "runs"
FLASH = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0"


def _stages(report: dict) -> dict[str, dict]:
    return {row["stage"]: row for row in report["stages"]}


def test_a_run_compared_with_itself_passes(tmp_path):
    run = VIT_RUNS / "image-size224_batch1"
    code, report = _run(tmp_path, run, run)
    assert code == 0 and report["like_with_like"] == {"comparable": True, "same_session": True, "hours_apart": 0.0, "differences": []}
    stages = _stages(report)
    assert {s: r["kernel_verdict"] for s, r in stages.items()} == {"vit": "unchanged", "all": "unchanged"}
    assert stages["vit"]["kernel_rel_pct"] == 0 and stages["vit"]["kernel_low_pct"] <= 0 <= stages["vit"]["kernel_high_pct"]
    assert {k["verdict"] for k in report["kernels"]} <= {"unchanged", "not enough launches"}


def test_bigger_images_and_batches_are_slower(tmp_path, capsys):
    """vit at 448 px, batch 4 against 224 px, batch 1 (same workload, two parameters differ, both
    listed): kernel time +195.5 %, flash attention's median launch +469.5 % (nsys), with intervals."""
    base, cur = VIT_RUNS / "image-size224_batch1", VIT_RUNS / "image-size448_batch4"
    code, report = _run(tmp_path, base, cur)
    assert code == 1 and report["failed"] is True
    assert [(d["kind"], d["key"]) for d in report["like_with_like"]["differences"]] == [
        ("parameter", "params.batch"), ("parameter", "params.image_size")]
    vit = _stages(report)["vit"]
    assert vit["kernel_verdict"] == "slower" and vit["kernel_rel_pct"] == pytest.approx(195.5, abs=0.05)
    assert vit["kernel_low_pct"] > vit["kernel_noise_pct"]
    flash = next(k for k in report["kernels"] if k["name"] == FLASH)
    assert flash["verdict"] == "slower" and flash["rel_pct"] == pytest.approx(469.5, abs=0.05)
    assert flash["low_pct"] < flash["rel_pct"] < flash["high_pct"]
    # ncu's single launches say +371.5 % for it: context beside the verdict, in the JSON too
    durations = [_run_durations_us(run / "ncu" / "report.ncu-rep.xz", tmp_path) for run in (base, cur)]
    ncu = next(r for r in report["ncu_context"]["rows"] if r["kernel"] == FLASH and r["metric"] == "duration_us")
    assert (ncu["baseline"], ncu["current"]) == pytest.approx((statistics.mean(durations[0][FLASH]),
                                                               statistics.mean(durations[1][FLASH])))
    out = capsys.readouterr().out
    assert "FAIL: kernel time got slower in vit" in out and "params.image_size: 224 → 448" in out
