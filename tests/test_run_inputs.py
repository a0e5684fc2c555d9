"""A capture run directory read as generator/run_layout.py lists it: every ncu pass (the retry included)
and one description per GPU (the driver from the nsys export beside ncu's device attributes)."""
from __future__ import annotations

import csv
import io
import lzma
import shutil
from pathlib import Path

import pytest
from conftest import ROOT
from helpers_runs import committed

from generator.pipeline.config import load_report
from generator.pipeline.inputs import InputCache, version_inputs
from generator.readers import read
from generator.run_layout import RunLayout

RUN = ROOT / "examples" / "runs" / "llm-decode-small"
FIRST_PASS = 14  # launches the first pass keeps; the retry pass holds the other 10 of the 24


def _write_csv(path: Path, rows: list[list[str]]) -> None:
    buffer = io.StringIO()
    csv.writer(buffer, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    path.write_text(buffer.getvalue(), encoding="utf-8")


def _run_with_retry(tmp_path: Path, *, retry: bool) -> Path:
    """llm-decode-small's real files laid out as a run whose ncu pass missed kernels: the first pass's
    raw CSV holds its first 14 launches, ``ncu/raw-retry.csv`` the other 10 under the ids a second ncu
    process gives them (0…9)."""
    run = RunLayout(tmp_path / "run")
    (run.root / "nsys").mkdir(parents=True)
    (run.root / "ncu").mkdir()
    shutil.copy(RUN / "manifest.json", run.manifest)
    shutil.copy(RUN / "nsys" / "report.sqlite.xz", run.sqlite.with_name("report.sqlite.xz"))
    rows = list(csv.reader(io.StringIO(lzma.decompress((RUN / "ncu" / "raw.csv.xz").read_bytes()).decode())))
    header, units, launches = rows[0], rows[1], rows[2:]
    assert len(launches) == 24
    _write_csv(run.raw_csv(), [header, units, *launches[:FIRST_PASS]])
    if retry:
        second = [[str(i), *row[1:]] for i, row in enumerate(launches[FIRST_PASS:])]
        _write_csv(run.raw_csv("-retry"), [header, units, *second])
    report = tmp_path / "report.yaml"
    report.write_text("""
id: retry
title: {en: Retry, zh: 重试}
versions:
  - id: v1
    title: {en: V1, zh: 第一版}
    date: 2026-11-22
    runs: [run]
""", encoding="utf-8")
    return report


def _inputs(report: Path):
    with InputCache() as cache:
        return version_inputs(load_report(report).versions[0], cache, report, 0)


def test_retry_pass_launches_join_the_first_pass(tmp_path: Path) -> None:
    whole = read(RUN / "ncu" / "raw.csv.xz").kernel_metrics
    inputs = _inputs(_run_with_retry(tmp_path, retry=True))
    metrics = inputs.kernel_metrics
    assert len(metrics) == 24 and metrics["launch_id"].is_unique
    assert list(metrics["launch_id"]) == list(range(24))  # the retry's 0…9 follow the first pass's 0…13
    assert metrics["duration_ns"].tolist() == whole["duration_ns"].tolist()
    assert metrics["name"].tolist() == whole["name"].tolist()
    assert metrics["stage"].value_counts().to_dict() == whole["stage"].value_counts().to_dict()
    assert [Path(p.path).name for p in inputs.provenance] == ["report.sqlite.xz", "raw.csv", "raw-retry.csv"]


def test_run_without_retry_reads_the_first_pass_only(tmp_path: Path) -> None:
    metrics = _inputs(_run_with_retry(tmp_path, retry=False)).kernel_metrics
    assert list(metrics["launch_id"]) == list(range(FIRST_PASS))


@pytest.mark.parametrize("run", ["ocr-vlm-eager", "llm-decode-small"])
def test_one_driver_for_the_gpu(run: str) -> None:
    """ncu reports carry no driver version, the nsys export does: the version's GPU has it."""
    report = ROOT / "examples" / "runs" / run
    ncu = read(report / "ncu" / "report.ncu-rep.xz").gpus[0]
    nsys = read(report / "nsys" / "report.sqlite.xz").gpus[0]
    assert ncu.driver is None and nsys.driver == "580.159.04"


def test_version_gpu_has_the_driver(tmp_path: Path) -> None:
    inputs = _inputs(_run_with_retry(tmp_path, retry=False))
    (gpu,) = inputs.gpus
    assert gpu.name == "NVIDIA H200" and gpu.driver == "580.159.04"
    assert gpu.driver == inputs.manifest["environment"]["driver"]


@pytest.mark.parametrize("run", ["llm-decode-eager", "llm-decode-graph", "ocr-vlm-eager-v2", "ocr-vlm-sdpa-v2"])
def test_committed_run_with_a_retry_pass(tmp_path: Path, run: str) -> None:
    """Real H200 runs whose first ncu pass missed stage pairs: both passes' launches are read, as many
    as the manifest says were profiled, under unique ids."""
    import json

    root = ROOT / "examples" / "runs" / run
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    first = read(committed(root, "ncu/report.ncu-rep")).kernel_metrics
    retry = read(committed(root, "ncu/report-retry.ncu-rep")).kernel_metrics
    report = tmp_path / "report.yaml"
    report.write_text(f"""
id: retry
title: {{en: Retry, zh: 重试}}
versions:
  - id: v1
    title: {{en: V1, zh: 第一版}}
    date: 2026-11-22
    runs: ["{root}"]
""", encoding="utf-8")
    metrics = _inputs(report).kernel_metrics
    assert len(metrics) == len(first) + len(retry) == manifest["coverage"]["profiled_launches"]
    assert metrics["launch_id"].is_unique
    assert metrics["duration_ns"].tolist() == first["duration_ns"].tolist() + retry["duration_ns"].tolist()
