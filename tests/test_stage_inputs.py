"""Stage inputs as users have them: per-stage nsys stats files labelled with ``stage:``, SQLite
``NAME`` (every instance) and ``NAME/INDEX[/COUNT]`` (like nsys), and what the pages say about it."""
from __future__ import annotations

import csv
import lzma
import shutil
from pathlib import Path

import pytest
import yaml

from generator.cli import main
from generator.errors import InputError
from generator.model import STAT_COLUMNS
from generator.readers import read
from generator.readers.nsys_sqlite import kernel_summary, stage_instances

DATA = Path(__file__).parent / "data"
STATS = DATA / "nsys-stats-2025"
H200 = DATA / "h200-small"


@pytest.fixture(scope="module")
def small_vlm(tmp_path_factory) -> Path:
    plain = tmp_path_factory.mktemp("stages") / "small_vlm.sqlite"
    with lzma.open(H200 / "small_vlm.nsys.sqlite.xz") as src, open(plain, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return plain


def _csv(path: Path) -> list[dict[str, str]]:
    with (lzma.open(path, "rt") if path.suffix == ".xz" else open(path)) as fh:
        return list(csv.DictReader(fh))


def test_a_per_stage_stats_csv_is_that_stages_summary():
    """`nsys stats --filter-nvtx prefill` output, labelled `stage: prefill`: every row and all seven
    duration statistics as nsys printed them."""
    path = STATS / "small_vlm_prefill_cuda_gpu_kern_sum.csv"
    summary = read(path, stage="prefill").kernel_summary
    rows = _csv(path)
    assert set(summary["stage"]) == {"prefill"} and len(summary) == len(rows)
    first = summary.iloc[0]
    assert [first[c] for c in STAT_COLUMNS] == pytest.approx(
        [float(rows[0][k].replace(",", "")) for k in ("Instances", "Total Time (ns)", "Avg (ns)", "Med (ns)",
                                                      "Min (ns)", "Max (ns)", "StdDev (ns)")])


def test_a_whole_capture_summary_cannot_be_one_stage():
    """--stats=true console text covers the whole capture: its nvtx_sum lists Profile_Loop and Warmup."""
    console = DATA / "nsight-systems-deep-dive" / "vector_add_profile_v3.stats_console.txt"
    for stage, others in (("decode", "Profile_Loop, Warmup"), ("Profile_Loop", "Warmup")):
        with pytest.raises(InputError, match=rf"stage '{stage}': the file summarizes NVTX ranges {others} too"):
            read(console, stage=stage)


def test_sqlite_name_takes_every_instance_and_index_like_nsys(small_vlm):
    """decode has 3 instances: NAME counts all 3, NAME/1 only the first — which is exactly what nsys'
    own `--filter-nvtx decode` printed (it takes the first instance)."""
    assert stage_instances(small_vlm, ["decode", "decode/1", "decode/2/2"]) == {
        "decode": {"range": "decode", "total": 3, "first": 1, "counted": 3},
        "decode/1": {"range": "decode", "total": 3, "first": 1, "counted": 1},
        "decode/2/2": {"range": "decode", "total": 3, "first": 2, "counted": 2},
    }
    table = kernel_summary(small_vlm, ["decode", "decode/1", "decode/2/2"])
    every, first, rest = (table[table["stage"] == s].set_index("name") for s in ("decode", "decode/1", "decode/2/2"))
    nsys = {r["Name"]: r for r in _csv(STATS / "small_vlm_decode_cuda_gpu_kern_sum.csv.xz")}
    assert set(first.index) == set(nsys)
    for name, row in nsys.items():
        assert first.at[name, "count"] == int(row["Instances"])
        assert first.at[name, "total_ns"] == float(row["Total Time (ns)"])
    shared = first.index.intersection(rest.index)
    assert len(shared) > 0
    for name in shared:  # the instances partition the launches
        assert every.at[name, "count"] == first.at[name, "count"] + rest.at[name, "count"]
    assert every["count"].sum() > first["count"].sum()


def test_bad_stage_names_are_one_line_errors(small_vlm):
    with pytest.raises(InputError, match=r"NVTX range 'nosuch' not found"):
        kernel_summary(small_vlm, ["nosuch"])
    with pytest.raises(InputError, match=r"'decode' has 3 instance\(s\), so there is no instance 4"):
        stage_instances(small_vlm, ["decode/4"])


def test_pages_state_the_counted_instances_and_files(tmp_path, capsys):
    """A report of SQLite stages (all and first instance) and a labelled per-stage stats CSV."""
    report = tmp_path / "report.yaml"
    report.write_text(yaml.safe_dump({
        "id": "stages", "title": {"en": "Stages", "zh": "阶段"},
        "versions": [{"id": "v1", "title": {"en": "v1", "zh": "v1"}, "date": "2026-11-22", "inputs": {
            "nsys": [{"path": str(H200 / "small_vlm.nsys.sqlite.xz"), "stage": "decode"},
                     {"path": str(H200 / "small_vlm.nsys.sqlite.xz"), "stage": "decode/1"},
                     {"path": str(STATS / "small_vlm_prefill_cuda_gpu_kern_sum.csv"), "stage": "prefill"}],
            "ncu": [str(H200 / "small_vlm_decode_ncu_raw.csv.xz")]}}]}), encoding="utf-8")
    src = tmp_path / "src"
    assert main(["build", str(report), "--out", str(tmp_path / "site"), "--src", str(src)]) == 0
    page = next(src.rglob("top-kernels.md")).read_text(encoding="utf-8")
    assert "Counted: every instance of NVTX range decode (3 of 3;" in page
    assert "Counted: instances 1–1 of NVTX range decode (1 of 3, in start order, as nsys --filter-nvtx decode/1/1)." in page
    assert "Counted: the nsys stats file small\\_vlm\\_prefill\\_cuda\\_gpu\\_kern\\_sum.csv, labelled" in page
    top = _csv(next(src.rglob("data/top_kernels.csv")))
    assert {"count", "total_ns", "avg_ns", "med_ns", "min_ns", "max_ns", "stddev_ns"} <= set(top[0])
    bad = tmp_path / "bad.yaml"
    bad.write_text(report.read_text().replace("stage: decode/1", "stage: decode/9"), encoding="utf-8")
    assert main(["build", str(bad), "--out", str(tmp_path / "site2"), "--src", str(tmp_path / "src2")]) == 2
    err = capsys.readouterr().err
    problems = [line for line in err.splitlines() if "small_vlm.nsys.sqlite.xz" in line]
    assert "Traceback" not in err and len(problems) == 1 and problems[0].endswith("so there is no instance 9")


RUN_V2 = Path(__file__).parent.parent / "examples" / "runs" / "ocr-vlm-eager-v2"


def test_stage_true_metrics_on_the_recaptured_ocr_run():
    """The re-captured OCR-VLM run profiles a launch per (kernel, stage): the CUTLASS grouped GEMM's
    decode row is its decode launch (≈22.6 µs), its prefill row the prefill one (≈104.7 µs); no
    stage's top-20 kernel borrows another stage's numbers, and none is left unprofiled."""
    from generator.analyses.kernel_identity import identity
    from generator.analyses.version import AnalysisSettings, analyze_version
    from generator.pipeline.config import Inputs, VersionConfig
    from generator.pipeline.inputs import InputCache, version_inputs

    with InputCache() as cache:
        inputs = version_inputs(VersionConfig.model_construct(runs=[RUN_V2], inputs=Inputs()), cache,
                                RUN_V2 / "manifest.json", 0)
    result = analyze_version("v2", inputs, AnalysisSettings())
    launches = inputs.kernel_metrics
    grouped = result.ncu_metrics[result.ncu_metrics["name"].str.contains("GroupProblemShape")].set_index("stage")
    assert set(grouped.index) == {"prefill", "decode"}
    for stage in ("prefill", "decode"):
        own = launches[(launches["stage"] == stage) & launches["name"].map(
            lambda n: identity(n).function == "device_kernel" and "GroupProblemShape" in n)]
        assert grouped.at[stage, "launches"] == len(own) >= 1
        assert grouped.at[stage, "duration_ns"] == pytest.approx(own["duration_ns"].mean())
    assert grouped.at["decode", "duration_ns"] < 0.3 * grouped.at["prefill", "duration_ns"]
    for stage in result.stages:
        for found in result.top_kernels[stage]["profiled"]:
            assert found, stage  # every top kernel has metrics measured in this stage
            assert stage == "all" or {p["stage"] for p in found} == {stage}
    assert result.ncu_agreement["agree"] == result.ncu_agreement["compared"] == len(launches)
    assert result.roofline["roofs"]["ceilings"]["tensor"] == pytest.approx(540672 * 1.98e9)
