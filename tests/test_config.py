"""report.yaml validation: real fixture paths resolve, every problem is reported with its key path."""
from __future__ import annotations

import datetime
import os
from pathlib import Path

import pytest
from conftest import DATA, ROOT

from generator.cli import main
from generator.errors import InputError
from generator.pipeline.config import key_path, load_report, report_meta

H200 = DATA / "h200-small"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "report.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def good_yaml(data: Path) -> str:
    return f"""
id: small-vlm-h200
title: {{en: "Small VLM kernel profile (H200)", zh: "小型视觉语言模型内核分析（H200）"}}
gpu: {{peak_dram_gbps: 4800, peak_tflops: {{bf16_tensor: 989, fp32: 67}}}}
classification: {{rule: sm_dram_margin, margin: 7.5}}
top_n: 15
versions:
  - id: v1
    title: {{en: "V1", zh: "第一版"}}
    date: 2025-11-07
    notes: {{en: "first", zh: "第一"}}
    inputs:
      nsys: [{{path: {data}/h200-small/small_vlm.nsys.sqlite.xz, stage: decode}}, {data}/h200-small/small_vlm.nsys.sqlite.xz]
      ncu: ["{data}/h200-small/*.ncu-rep.xz", "{data}/h200-small/small_vlm_decode_ncu_raw.csv.xz"]
      torch: [{data}/h200-small/small_vlm_torch_trace.json.gz]
"""


def test_valid_report_resolves_paths_and_globs(tmp_path: Path) -> None:
    config = load_report(write(tmp_path, good_yaml(Path(os.path.relpath(DATA, tmp_path)))))
    assert config.id == "small-vlm-h200" and config.top_n == 15
    assert config.classification.rule == "sm_dram_margin" and config.classification.margin == 7.5
    assert config.gpu.as_settings() == {"peak_dram_gbps": 4800.0, "peak_tflops": {"bf16_tensor": 989.0, "fp32": 67.0}}
    (version,) = config.versions
    assert version.date == datetime.date(2025, 11, 7)
    nsys = version.inputs.nsys
    assert [n.stage for n in nsys] == ["decode", None]
    assert nsys[0].path.paths == ((H200 / "small_vlm.nsys.sqlite.xz").resolve(),)
    globbed = [p.name for entry in version.inputs.ncu for p in entry.paths]
    assert globbed == ["small_vlm_prefill.ncu-rep.xz", "small_vlm_decode_ncu_raw.csv.xz"]
    meta = report_meta(config, "https://x.github.io/r/", ["en", "zh"])
    assert meta.latest.id == "v1" and meta.version("v1").notes == {"en": "first", "zh": "第一"}
    assert meta.title["zh"] == "小型视觉语言模型内核分析（H200）" and meta.langs == ("en", "zh")


def test_glob_expands_sorted(tmp_path: Path) -> None:
    for name in ("b.csv", "a.csv", "c.csv"):
        (tmp_path / "ncu").mkdir(exist_ok=True)
        (tmp_path / "ncu" / name).write_bytes((DATA / "ESMM-Research" / "metrics.csv").read_bytes())
    path = write(tmp_path, """
id: r
title: {en: R, zh: R}
versions: [{id: v1, title: {en: V1, zh: 一}, date: 2025-01-01, inputs: {ncu: ["ncu/*.csv"]}}]
""")
    (entry,) = load_report(path).versions[0].inputs.ncu
    assert [p.name for p in entry.paths] == ["a.csv", "b.csv", "c.csv"]


BAD = """
id: "bad id!"
title: {en: X}
gpu: {peak_dram_gbps: -1}
classification: {rule: guess}
top_n: 0
versions:
  - id: v1
    title: {en: V1, zh: 一}
    date: 2025-11-07
    inputs:
      nsys: [{path: missing.sqlite, stage: decode}]
      ncu: ["nothing/*.csv"]
  - id: v2
    title: {en: V2, zh: 二}
    date: yesterday
    runs: [../no-such-run]
    inputs:
      torch: [trace.json.gz]
      ncu: [existing.csv]
  - id: v3
    title: {en: V3, zh: 三}
    date: 2025-11-09
"""


def test_every_problem_has_its_key_path(tmp_path: Path) -> None:
    (tmp_path / "existing.csv").write_text("x")
    with pytest.raises(InputError) as caught:
        load_report(write(tmp_path, BAD))
    lines = [line.split(": ", 1)[1] for line in str(caught.value).splitlines()]
    keys = [line.split(":", 1)[0] for line in lines]
    assert keys == [
        "id",
        "gpu.peak_dram_gbps",
        "classification.rule",
        "top_n",
        "versions[0].inputs.nsys[0].path",
        "versions[0].inputs.ncu[0]",
        "versions[1].date",
        "versions[1].runs[0]",
        "versions[1].inputs.torch[0]",
        "versions[2]",
    ]
    assert "file not found: missing.sqlite" in lines[4]
    assert "no file matches 'nothing/*.csv'" in lines[5]
    assert "run directory not found" in lines[7]
    assert "needs runs, inputs or sweep" in lines[9]


def test_cli_bad_report_exits_2_listing_key_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, BAD)
    assert main(["build", str(path), "--out", str(tmp_path / "site")]) == 2
    err = capsys.readouterr().err
    assert "versions[0].inputs.ncu[0]: no file matches" in err and "versions[1].runs[0]" in err
    assert "Traceback" not in err and not (tmp_path / "site").exists()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("id: [unclosed", "not valid YAML"),
        ("- just a list", "expected a mapping"),
        ("id: r\ntitle: {en: R, zh: R}\nversions: []", "versions: give a list of versions"),
        (
            "id: r\ntitle: {en: R, zh: R}\nversions:\n"
            + "\n".join(f"  - {{id: v1, title: {{en: A, zh: A}}, date: 2025-01-0{i}, sweep: [{{label: a}}]}}" for i in (1, 2)),
            "duplicate version ids: v1",
        ),
    ],
)
def test_malformed_reports(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(InputError, match=problem.replace("[", r"\[")):
        load_report(write(tmp_path, text))


def test_missing_file() -> None:
    with pytest.raises(InputError, match="no such file"):
        load_report(ROOT / "no-such-report.yaml")


def test_key_path_format() -> None:
    assert key_path(("versions", 1, "inputs", "ncu", 0)) == "versions[1].inputs.ncu[0]"
    assert key_path(()) == "(top level)"
