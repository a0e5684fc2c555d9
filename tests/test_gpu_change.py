"""Two captures on different GPUs: ocr-vlm-sdpa (H200) and ocr-vlm-sdpa-v2 (same workload and code,
captured on an H100 80GB HBM3). The comparison page says both GPUs in one sentence and qualifies every
verdict; each version's roofs are its own GPU's (read from its own ncu report); ``generator compare``
writes both GPUs and ``gpu_changed`` and says so on stderr. Two H200 captures (ocr-vlm-eager →
ocr-vlm-sdpa) get no such sentence."""
from __future__ import annotations

import json
import lzma
import shutil
from pathlib import Path

import ncu_report
import pytest

from generator.analyses.gpu_change import gpu_change
from generator.analyses.result import VersionResult
from generator.analyses.version import AnalysisSettings, analyze_version
from generator.cli import main
from generator.pipeline.config import load_report, report_meta
from generator.pipeline.inputs import InputCache, version_inputs
from generator.render.data_files import write_version_data
from generator.render.pages import render_page

RUNS = Path(__file__).parent.parent / "examples" / "runs"
H200_RUN, H100_RUN = RUNS / "ocr-vlm-sdpa", RUNS / "ocr-vlm-sdpa-v2"
H200_NAME, H100_NAME = "NVIDIA H200", "NVIDIA H100 80GB HBM3"
GPU_EN = (f"The previous version ran on {H200_NAME}, this one on {H100_NAME} (memory clock 3,201 → 2,619 MHz): "
          "the differences mix hardware and code")
GPU_ZH = (f"上一版本运行于 {H200_NAME}，本版本运行于 {H100_NAME}（显存时钟 3,201 → 2,619 MHz）："
          "差异同时来自硬件和代码")
REPORT = f"""id: gpu-change
title: {{en: GPU change, zh: GPU 变化}}
versions:
  - {{id: v1, title: {{en: eager H200, zh: eager H200}}, date: 2026-01-01, runs: [{RUNS / 'ocr-vlm-eager'}]}}
  - {{id: v2, title: {{en: SDPA H200, zh: SDPA H200}}, date: 2026-01-02, runs: [{H200_RUN}]}}
  - {{id: v3, title: {{en: SDPA H100, zh: SDPA H100}}, date: 2026-01-03, runs: [{H100_RUN}]}}
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, VersionResult], object]:
    """The three versions of REPORT analyzed as the build does it, each against the one before."""
    report = tmp_path_factory.mktemp("gpu-change") / "report.yaml"
    report.write_text(REPORT, encoding="utf-8")
    config = load_report(report)
    settings = AnalysisSettings(top_n=config.top_n, rule=config.classification.rule,
                                margin=config.classification.margin, peaks=config.gpu.as_settings())
    results: dict[str, VersionResult] = {}
    previous = None
    with InputCache() as cache:
        for index, version in enumerate(config.versions):
            inputs = version_inputs(version, cache, report, index)
            previous = results[version.id] = analyze_version(version.id, inputs, settings, previous)
    return results, report_meta(config, None, ["en", "zh"])


def _page(built, version: str, page: str, lang: str) -> str:
    results, meta = built
    return render_page(page, results[version], meta, lang, {})


def _ncu_device(run: Path, tmp: Path) -> dict[str, float | str]:
    """Name, DRAM bytes per cycle and memory clock (Hz) of the run's first profiled launch, read by ncu_report."""
    plain = tmp / f"{run.name}.ncu-rep"
    with lzma.open(run / "ncu" / "report.ncu-rep.xz") as src, open(plain, "wb") as dst:
        shutil.copyfileobj(src, dst)
    action = ncu_report.load_report(str(plain)).range_by_idx(0).action_by_idx(0)
    return {"name": action.metric_by_name("device__attribute_display_name").as_string(),
            "dram_bytes_per_cycle": action.metric_by_name("dram__bytes.sum.peak_sustained").as_double(),
            "memory_clock_hz": action.metric_by_name("device__attribute_memory_clock_rate").as_double() * 1e3}


def test_gpu_change_needs_a_fact_both_sides_state() -> None:
    h200 = {"name": H200_NAME, "compute_capability": "9.0", "sm_count": 132, "memory_clock_hz": 3.201e9}
    assert gpu_change(h200, dict(h200, memory_clock_hz=3.2012e9))["changed"] is False  # within 1 MHz
    assert gpu_change(h200, {"name": None, "sm_count": 114})["differs"] == ["sm_count"]
    assert gpu_change(h200, {"name": None}) is None and gpu_change(None, h200) is None


def test_each_version_has_its_own_gpu_and_the_change_is_stated(built) -> None:
    results, _ = built
    assert [results[v].gpu.name for v in ("v1", "v2", "v3")] == [H200_NAME, H200_NAME, H100_NAME]
    assert results["v1"].gpu_change is None  # the first version compares with nothing
    assert results["v2"].gpu_change["changed"] is False and results["v2"].gpu_change["differs"] == []
    change = results["v3"].gpu_change
    assert change["changed"] is True and change["differs"] == ["name", "memory_clock_hz"]
    assert (change["previous"]["memory_clock_hz"], change["current"]["memory_clock_hz"]) == (3.201e9, 2.619e9)
    assert set(results["v3"].stage_speed["gpu_changed"]) == {True}
    assert set(results["v2"].stage_speed["gpu_changed"]) == {False}


def test_h100_roofs_are_the_h100s_own_peaks(built, tmp_path: Path) -> None:
    """DRAM roof = ncu's bytes per DRAM cycle × the device's memory clock, each from the version's own
    report: 1,280 B × 2,619 MHz = 3.35 TB/s on the H100, 1,504 B × 3,201 MHz = 4.81 TB/s on the H200."""
    results, _ = built
    for version, run, name, per_cycle, clock in (("v3", H100_RUN, H100_NAME, 1280.0, 2.619e9),
                                                 ("v2", H200_RUN, H200_NAME, 1504.0, 3.201e9)):
        device = _ncu_device(run, tmp_path)
        assert device == {"name": name, "dram_bytes_per_cycle": per_cycle, "memory_clock_hz": clock}
        roofs = results[version].roofline["roofs"]
        assert roofs["peak_dram_bytes_per_s"] == per_cycle * clock and roofs["source"]["dram"] == "ncu"
        for datapath, ceiling in roofs["ceilings"].items():
            assert roofs["ridges"][datapath] == pytest.approx(ceiling / (per_cycle * clock))
    h100, h200 = results["v3"].roofline["roofs"], results["v2"].roofline["roofs"]
    assert h100["peak_dram_bytes_per_s"] == 3.35232e12 and h200["peak_dram_bytes_per_s"] == 4.814304e12
    # same SM count and boost clock: one tensor roof, so the H100's ridge lies further right
    assert h100["ceilings"]["tensor"] == h200["ceilings"]["tensor"] == 1.07053056e15
    assert (round(h100["ridges"]["tensor"], 2), round(h200["ridges"]["tensor"], 2)) == (319.34, 222.36)
    page = _page(built, "v3", "roofline", "en")
    assert "| DRAM bandwidth | 3.35 TB/s |" in page and "4.81 TB/s" not in page


def test_comparison_page_states_the_gpu_change_and_qualifies_verdicts(built) -> None:
    results, _ = built
    en, zh = _page(built, "v3", "comparison", "en"), _page(built, "v3", "comparison", "zh")
    assert GPU_EN in en and GPU_ZH in zh
    assert en.index(GPU_EN) < en.index("## Did it get faster?")
    speed = results["v3"].stage_speed.set_index("stage")
    verdicts = set(speed["kernel_verdict"]) | set(speed["span_verdict"])
    assert "slower" in verdicts  # decode kernel time, as measured: the numbers stay
    decode = next(ln for ln in en.splitlines() if ln.startswith("| decode |"))
    rel = speed.at["decode", "kernel_rel_pct"]
    assert f"| {rel:+.2f} |" in decode and f"| {speed.at['decode', 'kernel_verdict']}, on another GPU |" in decode
    for word in ("faster", "slower"):  # no bare verdict cell: each one names the other GPU
        assert f"| {word} |" not in en
    assert "| 变慢，GPU 不同 |" in next(ln for ln in zh.splitlines() if ln.startswith("| decode |"))
    modules = _page(built, "v3", "modules", "en")
    assert GPU_EN in modules and modules.index(GPU_EN) > modules.index("## Change per module")


def test_same_gpu_has_no_sentence(built) -> None:
    for lang in ("en", "zh"):
        page = _page(built, "v2", "comparison", lang)
        assert "The previous version ran on" not in page and "上一版本运行于" not in page
        assert "another GPU" not in page and "GPU 不同" not in page
    assert "| faster |" in _page(built, "v2", "comparison", "en") or "| slower |" in _page(
        built, "v2", "comparison", "en")


def _compare(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: Path) -> tuple[int, dict, str]:
    out = tmp_path / "cmp.json"
    code = main(["compare", *map(str, args), "--json", str(out)])
    return code, json.loads(out.read_text(encoding="utf-8")), capsys.readouterr().err


def test_compare_runs_on_two_gpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The H100 run is slower than the H200 one: still a failing gate (exit 1, README), with both
    GPUs, ``gpu_changed`` and one stderr line; the GPU is listed among the differences."""
    code, report, err = _compare(tmp_path, capsys, H200_RUN, H100_RUN)
    assert code == 1 and report["failed"] is True
    assert report["gpu_changed"] is True
    assert {"kind": "gpu", "key": "gpu", "previous": H200_NAME, "current": H100_NAME} in \
        report["like_with_like"]["differences"]
    assert report["baseline_gpu"] == {"name": H200_NAME, "compute_capability": "9.0", "sm_count": 132,
                                      "memory_clock_hz": 3.201e9}
    assert report["current_gpu"] == {"name": H100_NAME, "compute_capability": "9.0", "sm_count": 132,
                                     "memory_clock_hz": 2.619e9}
    assert err.splitlines() == [f"compare: the baseline ran on {H200_NAME}, the current profile on {H100_NAME}, "
                                "memory clock 3,201 → 2,619 MHz: differences mix hardware and code"]


def test_compare_same_gpu_files_and_version_data(built, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """ncu reports of two H200 runs: ``gpu_changed`` false, stderr silent. The versions' data
    directories carry their GPU in summary.json, so v2 → v3 is a GPU change there too."""
    eager, sdpa = (RUNS / run / "ncu" / "report.ncu-rep.xz" for run in ("ocr-vlm-eager", "ocr-vlm-sdpa"))
    code, report, err = _compare(tmp_path, capsys, eager, sdpa)
    assert report["gpu_changed"] is False and report["baseline_gpu"]["name"] == report["current_gpu"]["name"] == H200_NAME
    assert err == "" and code == 0  # ncu files: context only
    results, _ = built
    for version in ("v2", "v3"):
        write_version_data(results[version], tmp_path / version)
    summary = json.loads((tmp_path / "v3" / "data" / "summary.json").read_text(encoding="utf-8"))
    assert summary["gpu"] == {"name": H100_NAME, "compute_capability": "9.0", "sm_count": 132,
                              "memory_clock_hz": 2.619e9}
    code, report, err = _compare(tmp_path, capsys, tmp_path / "v2", tmp_path / "v3")
    assert report["gpu_changed"] is True and report["current_gpu"]["name"] == H100_NAME
    assert err.startswith(f"compare: the baseline ran on {H200_NAME}, the current profile on {H100_NAME}")
    assert code == 0
    code, report, _ = _compare(tmp_path, capsys, tmp_path / "v2" / "data" / "summary.json",
                               tmp_path / "v3" / "data" / "summary.json")
    assert report["gpu_changed"] is True


def test_a_bad_gpu_in_summary_json_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"overall_means": {"duration_us": 1.0}, "gpu": {"sm_count": "many"}}))
    assert main(["compare", str(summary), str(summary)]) == 2
    err = capsys.readouterr().err
    assert "gpu.sm_count is not a whole number" in err and len(err.strip().splitlines()) == 1
