"""One source for each setup fact: GPU, driver, CUDA, library and profiler versions, DRAM bandwidth read the
same on every page of a version (EN and ZH) and equal the input files' own records; the overview lists only
the workload parameters the workload reads; version notes render their code spans."""
from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from conftest import ROOT, BuiltSite
from helpers_runs import committed, content

from generator.render.translations import translator
from generator.workload_params import WORKER_PARAMS, WORKLOAD_PARAMS

#: parameters the test setup shows in rows of their own (model, attention, execution, module ranges)
OWN_ROWS = {"model", "attn_impl", "cuda_graph", "module_depth", "device"}
RUNS = {v: ROOT / "examples" / "runs" / name for v, name in
        (("v1", "ocr-vlm-eager-v2"), ("v2", "ocr-vlm-sdpa-h200"), ("v3", "ocr-vlm-sdpa-h200-a"))}


def _export_version(run: Path, tmp_path: Path) -> str:
    """EXPORT_PRODUCT_VERSION of the run's nsys SQLite export, by plain SQL."""
    db = tmp_path / f"{run.name}.sqlite"
    db.write_bytes(content(committed(run, "nsys/report.sqlite")))
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        return con.execute("SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_PRODUCT_VERSION'").fetchone()[0]


def _cells(text: str, label: str) -> list[str]:
    """The value cells of every table row whose first cell is ``label``."""
    return re.findall(rf"^\| {re.escape(label)} \| ([^|]*?) \|", text, re.M)


@pytest.mark.parametrize("version", ["v1", "v2", "v3"])
def test_each_setup_fact_reads_the_same_on_every_page(example_site: BuiltSite, version: str,
                                                      tmp_path: Path) -> None:
    docs = example_site.src / "ocr-vlm-h200" / version / "docs"
    manifest = json.loads((RUNS[version] / "manifest.json").read_text(encoding="utf-8"))
    nsys = _export_version(RUNS[version], tmp_path)
    assert nsys == "2025.3.2.0"  # the capture's `nsys --version` line said 2025.3.1.0: the file wins
    for lang, page_suffix in (("en", ".md"), ("zh", ".zh.md")):
        pages = {p.name: p.read_text(encoding="utf-8") for p in docs.glob(f"*{page_suffix}")
                 if lang == "zh" or not p.name.endswith(".zh.md")}
        index, roofline = pages[f"index{page_suffix}"], pages[f"roofline{page_suffix}"]
        driver, bandwidth = ("Driver", "Memory bandwidth") if lang == "en" else ("驱动", "显存带宽")
        assert _cells(index, driver) == [manifest["environment"]["driver"]]  # 580.159.04
        assert _cells(index, "Nsight Systems") == [nsys]
        assert _cells(index, "Nsight Compute") == ["2025.3.1"]
        # the provenance and appendix tables quote the same tool versions as the setup table
        for name in (f"index{page_suffix}", f"appendix{page_suffix}"):
            assert re.search(rf"\| nsys {re.escape(nsys)} / export schema", pages[name]), name
            assert "| ncu 2025.3.1 |" in pages[name], name
        shown = _cells(index, bandwidth)
        dram = _cells(roofline, "DRAM bandwidth" if lang == "en" else "DRAM 带宽")
        # the chip file's datasheet figure (generator/chips/h200.yaml: 4,800 GB/s), the one peak the roofline,
        # the floors and the what-if use; no longer the 4.81 TB/s derived from the memory clock
        assert shown == ["4.80 TB/s"] and dram[0] == shown[0]
        # no page states another version of a tool or driver
        for name, text in pages.items():
            assert "2025.3.1.0" not in text.replace("nsight-compute/2025.3.1/", ""), name
            assert not re.search(r"\| (?:Driver|驱动) \| (?!580\.159\.04)", text), name
        # parameters: only the ones ocr-vlm reads (no GEMM m/n/k), the rest as captured; the model,
        # attention, execution mode and module depth have rows of their own
        t = translator(lang)
        labels = {key: t(f"setup.param.{key}") for key in manifest["params"] if key not in OWN_ROWS}
        params = {key for key, label in labels.items() if _cells(index, label)}
        captured = set(manifest["params"]) - OWN_ROWS
        assert params == (set(WORKLOAD_PARAMS["ocr-vlm"]) | set(WORKER_PARAMS)) & captured
        assert not {"m", "n", "k"} & params
        if "energy" in manifest:  # v3: the L2 size and the one stage NVML resolved, as the manifest records them
            l2 = manifest["environment"]["gpus"][0]["l2_cache_bytes"]
            assert _cells(index, t("setup.l2_cache")) == [f"{l2 / 1e6:.2f} MB"] == ["62.91 MB"]
            decode = manifest["energy"]["stages"]["decode"]
            assert f"{decode['joules']:.2f} J" in _cells(index, t("setup.energy"))[0]  # 100.14 J
        # notes: Markdown code spans render as code, no literal backticks
        assert "<code>--attn-impl " in index and "\\`" not in index


def test_the_workload_parameter_table_matches_the_capture_sources() -> None:
    """Every ``params.<field>`` a preset's module (and the worker) reads, found in the capture sources."""
    sources = {"ocr-vlm": "ocr_vlm", "llm-decode": "llm_decode", "vit": "vit", "gemm": "gemm"}
    fields = r"params\.(?!torch_dtype)(\w+)"
    worker = set(re.findall(fields, (ROOT / "capture" / "worker.py").read_text(encoding="utf-8")))
    assert worker - {"add_arguments", "from_namespace", "Params"} == set(WORKER_PARAMS)
    for workload, module in sources.items():
        text = (ROOT / "capture" / "workloads" / f"{module}.py").read_text(encoding="utf-8")
        read = set(re.findall(fields, text)) | ({"dtype"} if "params.torch_dtype()" in text else set())
        if workload in ("ocr-vlm", "llm-decode"):  # decode loops live in generate.py, called with params
            read |= set(re.findall(fields, (ROOT / "capture" / "workloads" / "generate.py").read_text("utf-8")))
        assert read - {"device"} == set(WORKLOAD_PARAMS[workload]), workload
