"""A newcomer's first contact: build from profiler files with no report.yaml, English-only titles,
config mistakes answered in plain words, and `inspect` on a capture run directory."""
from __future__ import annotations

import csv
import json
import lzma
import sqlite3
from pathlib import Path

import pytest
from conftest import DATA, ROOT
from helpers_ncu import report_launches

from generator.cli import main
from generator.errors import InputError
from generator.pipeline.config import load_report

SMALL = DATA / "h200-small"
SQLITE = SMALL / "small_vlm.nsys.sqlite.xz"
NCU_REP = SMALL / "small_vlm_prefill.ncu-rep.xz"
NCU_CSV = SMALL / "small_vlm_decode_ncu_raw.csv.xz"
RUN = ROOT / "examples" / "runs" / "llm-decode-small"
RUN_V2 = ROOT / "examples" / "runs" / "ocr-vlm-eager-v2"


def _build(tmp_path: Path, *args: str) -> Path:
    out = tmp_path / "site"
    assert main(["build", *args, "--out", str(out)]) == 0
    return out


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_build_nsys_export_and_ncu_report_without_yaml(tmp_path: Path) -> None:
    out = _build(tmp_path, str(SQLITE), str(NCU_REP), "--lang", "en")
    versions = json.loads((out / "versions.json").read_text(encoding="utf-8"))
    assert [(v["version"], v["title"]) for v in versions] == [("v1", "small_vlm + small_vlm_prefill")]
    # the stages are the workload's NVTX ranges; their kernel time, against plain SQL over the nsys
    # export (kernels launched inside the ranges: 11 of the capture's 7,568 launch outside them)
    plain = tmp_path / "plain.sqlite"
    plain.write_bytes(lzma.decompress(SQLITE.read_bytes()))
    with sqlite3.connect(plain) as db:
        launches, kernel_ns = db.execute(
            'SELECT count(*), sum(k."end" - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL AS k '
            "JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS r ON r.correlationId = k.correlationId "
            "JOIN NVTX_EVENTS AS n ON n.globalTid = r.globalTid AND r.start BETWEEN n.start AND n.end "
            "WHERE n.eventType = 59").fetchone()
        everything = db.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    rows = _rows(out / "v1" / "data" / "stage_time.csv")
    assert [row["stage"] for row in rows] == ["all", "vision", "projector", "prefill", "decode"]
    assert (int(rows[0]["launches"]), int(rows[0]["kernel_ns"])) == (launches, kernel_ns) == (7557, 18263450)
    assert everything == 7568


def test_build_ncu_report_alone_titles_from_its_name(tmp_path: Path) -> None:
    out = _build(tmp_path, str(NCU_REP), "--lang", "en", "--title", "My prefill", "--date", "2026-01-31")
    (version,) = json.loads((out / "versions.json").read_text(encoding="utf-8"))
    assert version["title"] == "My prefill"
    assert "2026-01-31" in (out / "v1" / "index.html").read_text(encoding="utf-8")
    profiled = {row["name"] for row in _rows(out / "v1" / "data" / "ncu_metrics.csv")}
    assert profiled == {launch[0] for launch in report_launches(NCU_REP)}  # ncu_report's own names
    assert len(profiled) == 20


def test_build_run_directory_dated_by_its_manifest(tmp_path: Path) -> None:
    out = _build(tmp_path, str(RUN), "--lang", "en")
    (version,) = json.loads((out / "versions.json").read_text(encoding="utf-8"))
    assert version["title"] == "llm-decode-small"
    assert "2026-11-22" in (out / "v1" / "index.html").read_text(encoding="utf-8")  # manifest "created"


def _english_yaml(tmp_path: Path) -> Path:
    path = tmp_path / "report.yaml"
    path.write_text(f"id: small\ntitle: Small VLM decode\nversions:\n  - id: v1\n    title: {{en: First}}\n"
                    f"    date: 2026-01-31\n    inputs: {{ncu: [{NCU_CSV}]}}\n", encoding="utf-8")
    return path


def test_english_only_yaml_builds_in_english(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _build(tmp_path, str(_english_yaml(tmp_path)), "--lang", "en")
    assert "note:" not in capsys.readouterr().err
    assert json.loads((out / "versions.json").read_text(encoding="utf-8"))[0]["title"] == "First"
    assert not (out / "v1" / "zh").exists()


def test_chinese_pages_fall_back_to_english_titles_and_say_so_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _build(tmp_path, str(_english_yaml(tmp_path)))
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    assert notes == ["note: report.yaml gives no zh text for title, versions[0].title; the zh pages show the en text"]
    assert "<title>概览：First - Small VLM decode</title>" in (out / "v1" / "zh" / "index.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("path", [NCU_REP, SQLITE, NCU_CSV, SMALL / "small_vlm_torch_trace.json.gz", RUN])
def test_a_profiler_file_given_as_report_yaml_says_what_it_is(path: Path) -> None:
    with pytest.raises(InputError) as caught:
        load_report(path)
    expected = {"ncu-rep": "this is an Nsight Compute report (.ncu-rep), not a report.yaml",
                "sqlite": "this is an Nsight Systems SQLite export", "csv": "this is an Nsight Compute CSV export",
                "json": "this is a PyTorch profiler", "llm-decode-small": "this is a capture run directory"}
    assert next(v for k, v in expected.items() if k in path.name) in str(caught.value)
    assert "YAML" not in str(caught.value).replace("report.yaml", "") and "\n" not in str(caught.value)


def test_report_yaml_and_profiler_files_together_are_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", str(_english_yaml(tmp_path)), str(NCU_REP), "--out", str(tmp_path / "site")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not both" in err and not (tmp_path / "site").exists()


VALID = "id: r\ntitle: R\nversions:\n  - {id: v1, title: V, date: 2026-01-31, inputs: {ncu: [NCU]}}\n"
#: Ten mistakes a newcomer makes in report.yaml → the key path and the plain words of the one line.
MISTAKES = [
    ("title: 5", VALID.replace("title: R", "title: 5"), "title: give a text or {en: …, zh: …} (got 5)"),
    ("no id", VALID.replace("id: r\n", ""), "id: missing; give an id of letters, digits"),
    ("id with a space", VALID.replace("id: r", "id: my report"),
     "id: give an id of letters, digits, '.', '_' or '-' (it names a folder of the site), e.g. my-report "
     "(got 'my report')"),
    ("misspelt key", VALID.replace("title: R", "tittle: R"), "tittle: unknown key; did you mean title?"),
    ("date in words", VALID.replace("2026-01-31", "yesterday"),
     "versions[0].date: give the version's date as YYYY-MM-DD, e.g. 2026-01-31 (got 'yesterday')"),
    ("files outside inputs", VALID.replace("inputs: {ncu: [NCU]}", "ncu: [NCU]"),
     "versions[0].ncu: unknown key; versions[0] takes id, title, date, notes, runs, inputs, sweep "
     "(files go under inputs:, e.g. inputs: {ncu: [FILE]})"),
    ("missing file", VALID.replace("[NCU]", "[nope.ncu-rep]"), "versions[0].inputs.ncu[0]: file not found: nope.ncu-rep"),
    ("top_n zero", VALID + "top_n: 0\n", "top_n: give a whole number, 1 or more (how many kernels the top list keeps) "
     "(got 0)"),
    ("unknown rule", VALID + "classification: {rule: speed}\n",
     "classification.rule: give one of sol, roofline, sm_dram_margin (got 'speed')"),
    ("inputs as one file", VALID.replace("{ncu: [NCU]}", "NCU"), "versions[0].inputs: give the version's files by "
     "profiler: {nsys: [FILE.sqlite], ncu: [FILE.ncu-rep], torch: [FILE.json]} (got '"),
]


@pytest.mark.parametrize(("text", "expected"), [m[1:] for m in MISTAKES], ids=[m[0] for m in MISTAKES])
def test_ten_mistakes_each_get_one_line_in_plain_words(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str) -> None:
    path = tmp_path / "report.yaml"
    path.write_text(text.replace("NCU", str(NCU_CSV)), encoding="utf-8")
    assert main(["build", str(path), "--out", str(tmp_path / "site"), "--lang", "en"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: {path}: {expected}")
    for pydantic_words in ("Input should", "Field required", "Extra inputs", "valid dictionary", "instance of"):
        assert pydantic_words not in line


def test_inspect_run_directory_summarizes_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(RUN_V2), "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)
    manifest = json.loads((RUN_V2 / "manifest.json").read_text(encoding="utf-8"))
    assert (run["format"], run["workload"], run["gpus"]) == ("capture-run", "ocr-vlm", ["NVIDIA H200"])
    assert run["stages"] == ["sam", "clip", "projector", "prefill", "decode"] == manifest["stages"]
    assert [f["path"] for f in run["files"]] == ["nsys/report.sqlite.zst", "ncu/report.ncu-rep.zst",
                                                 "ncu/report-retry.ncu-rep.zst"]
    assert [f["bytes"] for f in run["files"]] == [(RUN_V2 / f["path"]).stat().st_size for f in run["files"]]
    assert len(run["logs"]) == len(list((RUN_V2 / "logs").iterdir())) == 28
    assert main(["inspect", str(RUN_V2)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "20/20 top-N kernels profiled, 85/85 (kernel, stage) pairs, 146 launches" in text
    assert "ncu_profile 126.7 s" in text and "transformers 5.17.0" in text


def test_inspect_a_folder_that_is_not_a_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(RUN.parent)]) == 2
    assert "is a directory but not a capture run (no manifest.json)" in capsys.readouterr().err


@pytest.mark.parametrize("page", ["README.md", "docs/report-yaml.md"])
def test_the_documented_report_yaml_is_valid(page: str, tmp_path: Path) -> None:
    """The report.yaml a newcomer copies from the README (and the complete one in the docs) loads,
    once the files it names exist: real profiler files and a real run under those names."""
    text = (ROOT / page).read_text(encoding="utf-8").split("```yaml\n", 1)[1].split("```", 1)[0]
    for name in ("base.sqlite", "sdpa.sqlite", "profile.sqlite"):
        (tmp_path / name).symlink_to(SQLITE)
    for name in ("base.ncu-rep", "sdpa.ncu-rep", "profile.ncu-rep"):
        (tmp_path / name).symlink_to(NCU_REP)
    (tmp_path / "ncu").mkdir()
    (tmp_path / "ncu" / "decode.csv").symlink_to(NCU_CSV)
    (tmp_path / "trace.json.gz").symlink_to(SMALL / "small_vlm_torch_trace.json.gz")
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "baseline").symlink_to(RUN)
    (tmp_path / "report.yaml").write_text(text, encoding="utf-8")
    config = load_report(tmp_path / "report.yaml")
    assert [v.id for v in config.versions] == ["v1", "v2"]
