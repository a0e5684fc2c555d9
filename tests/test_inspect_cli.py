"""`python -m generator inspect` on real files: the summary's numbers recomputed from the raw files."""
from __future__ import annotations

import csv
import gzip
import io
import json
import lzma
import sqlite3
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from generator.cli import main
from generator.readers import read

ROOT = Path(__file__).parent.parent
DATA = ROOT / "tests" / "data"
H200_TRACE = DATA / "h200-small/small_vlm_torch_trace.json.gz"
NS_RES = DATA / "hta/ns_resolution_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
ESMM_CSV = DATA / "ESMM-Research/metrics.csv"
DECODE_RAW = DATA / "h200-small/small_vlm_decode_ncu_raw.csv.xz"


def inspect_json(capsys, *args: str | Path) -> tuple[int, list[dict], str]:
    rc = main(["inspect", "--json", *map(str, args)])
    out, err = capsys.readouterr()
    return rc, json.loads(out), err


def test_torch_trace_summary_matches_plain_json(capsys):
    rc, [summary], err = inspect_json(capsys, H200_TRACE)
    assert (rc, err) == (0, "")
    with gzip.open(H200_TRACE, "rt") as fh:
        doc = json.load(fh)
    totals: dict[str, int] = defaultdict(int)
    counts: Counter[str] = Counter()
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel":
            totals[e["name"]] += round(e["dur"] * 1000)
            counts[e["name"]] += 1
    assert summary["format"] == "torch-trace"
    assert summary["format_version"].startswith("Kineto schema 1")
    assert [g["name"] for g in summary["gpus"]] == [p["name"] for p in doc["deviceProperties"]] == ["NVIDIA H200"]
    assert summary["stages"] == []
    [kernels] = summary["kernel_summary"]
    assert kernels["stage"] == "all"
    assert kernels["kernels"] == len(totals)
    assert kernels["launches"] == sum(counts.values()) == 4722
    assert kernels["total_ns"] == sum(totals.values())
    ranked = sorted(totals, key=lambda n: (-totals[n], n))[:5]
    assert [k["name"] for k in kernels["top"]] == ranked
    for row in kernels["top"]:
        assert row["total_ns"] == totals[row["name"]]
        assert row["count"] == counts[row["name"]]
        assert row["time_pct"] == pytest.approx(100 * totals[row["name"]] / sum(totals.values()))


def test_json_is_deterministic(capsys):
    first = main(["inspect", "--json", str(NS_RES), str(ESMM_CSV)]), capsys.readouterr()
    second = main(["inspect", "--json", str(NS_RES), str(ESMM_CSV)]), capsys.readouterr()
    assert first == second
    assert first[0] == 0


def test_stage_option_restricts_kernels(capsys):
    stage = "Optimizer.step#SGD.step"
    rc, [summary], _ = inspect_json(capsys, "--stage", stage, NS_RES)
    assert rc == 0
    [kernels] = summary["kernel_summary"]
    expected = read(NS_RES, stage=stage).kernel_summary
    assert kernels["stage"] == stage
    assert kernels["launches"] == expected["count"].sum() == 45
    assert kernels["total_ns"] == expected["total_ns"].sum()
    assert stage in summary["stages"]


def test_unknown_stage_fails_that_file(capsys):
    rc, [summary], err = inspect_json(capsys, "--stage", "no-such-range", NS_RES)
    assert rc == 2
    assert err.startswith(f"error: {NS_RES}: no range named 'no-such-range'")
    assert summary["path"] == str(NS_RES) and "no range named" in summary["error"]


def esmm_rows() -> list[dict[str, str]]:
    with open(ESMM_CSV, newline="") as fh:
        return list(csv.DictReader(fh))


def test_ncu_details_csv_summary_matches_csv_module(capsys):
    rc, [summary], _ = inspect_json(capsys, ESMM_CSV)
    assert rc == 0
    rows = esmm_rows()
    durations = {r["ID"]: float(r["Metric Value"].replace(",", "")) for r in rows
                 if r["Metric Name"] == "gpu__time_duration.sum"}
    assert {r["Metric Unit"] for r in rows if r["Metric Name"] == "gpu__time_duration.sum"} == {"nsecond"}
    metrics = summary["kernel_metrics"]
    assert metrics["launches"] == len({r["ID"] for r in rows}) == 9
    assert metrics["total_ns"] == pytest.approx(sum(durations.values()))
    assert metrics["top"][0]["total_ns"] == pytest.approx(max(durations.values()))
    assert "duration_ns" in metrics["metrics_present"]
    assert summary["gpus"][0]["compute_capability"] == "8.6"


def test_ncu_raw_csv_summary_matches_csv_module(capsys):
    rc, [summary], _ = inspect_json(capsys, DECODE_RAW)
    assert rc == 0
    header, units, *rows = list(csv.reader(io.StringIO(lzma.decompress(DECODE_RAW.read_bytes()).decode())))
    col = header.index("gpu__time_duration.sum")
    scale = {"ns": 1, "nsecond": 1, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6}[units[col]]
    metrics = summary["kernel_metrics"]
    assert metrics["launches"] == len(rows) == 40
    assert metrics["kernels"] == len({r[header.index("Kernel Name")] for r in rows})
    assert metrics["total_ns"] == pytest.approx(sum(float(r[col]) * scale for r in rows))
    assert "decode" in summary["stages"]
    assert "flop_tensor" in metrics["metrics_present"]


def test_text_output(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["inspect", str(H200_TRACE), str(ESMM_CSV)]) == 0
    out = capsys.readouterr().out
    for expected in (str(H200_TRACE), "torch-trace", "NVIDIA H200 (CC 9.0, 132 SMs", "50 distinct, 4,722 launches",
                     "nvjet GEMM (8x64x64, 2x1, TNN)", "12.74", "1.363 ms", str(ESMM_CSV),
                     "9 profiled", "duration_ns"):
        assert expected in out
    # Kernels by friendly name, shortened to fit; only the file path lines may run longer.
    assert max(len(line) for line in out.splitlines() if line not in (str(H200_TRACE), str(ESMM_CSV))) <= 80
    assert main(["inspect", "--full", str(H200_TRACE)]) == 0  # --full: the profiler's own names
    assert "nvjet_sm90_tst_8x64_64x16_2x1_v_bz_TNN" in capsys.readouterr().out


def test_good_and_bad_files_together(tmp_path):
    missing = tmp_path / "gone.sqlite"
    done = subprocess.run([sys.executable, "-m", "generator", "inspect", str(missing), str(H200_TRACE)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"error: {missing}: no such file"]
    assert "4,722 launches" in done.stdout


def test_nsys_sqlite_summary_matches_sql(capsys):
    path = DATA / "nvtx-examples/cudf-groupby.sqlite"
    rc, [summary], _ = inspect_json(capsys, path)
    assert rc == 0
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        launches, total, distinct = db.execute(
            "SELECT count(*), sum(k.end - k.start), count(DISTINCT s.value) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN StringIds s ON s.id = k.demangledName").fetchone()
        top_name, top_total = db.execute(
            "SELECT s.value, sum(k.end - k.start) AS t FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN StringIds s ON s.id = k.demangledName GROUP BY s.value ORDER BY t DESC LIMIT 1").fetchone()
    [kernels] = summary["kernel_summary"]
    assert summary["format"] == "nsys-sqlite"
    assert (kernels["launches"], kernels["total_ns"], kernels["kernels"]) == (launches, total, distinct)
    assert (kernels["top"][0]["name"], kernels["top"][0]["total_ns"]) == (top_name, top_total)
    assert {g["name"] for g in summary["gpus"]} == {"Quadro RTX 8000"}
    assert "libcudf:gather" in summary["stages"]


def test_whole_graph_trace_is_summarized_with_how_to_see_its_kernels(capsys, tmp_path, monkeypatch):
    """nsys' default graph trace: the graph replays apart from the kernels, the re-capture said."""
    whole = DATA / "cuda-graphs/whole-graph-trace.sqlite.xz"
    plain = tmp_path / "whole.sqlite"
    plain.write_bytes(lzma.decompress(whole.read_bytes()))
    with sqlite3.connect(plain) as db:
        graphs, replays, graph_ns = db.execute("SELECT count(DISTINCT graphId), count(*), sum(end - start) "
                                               "FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE").fetchone()
        launches, kernel_ns = db.execute("SELECT count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    rc, [summary], _ = inspect_json(capsys, whole)
    [kernels] = summary["kernel_summary"]
    assert rc == 0 and (kernels["launches"], kernels["total_ns"]) == (launches, kernel_ns + graph_ns)
    assert kernels["whole_graphs"] == {"graphs": graphs, "launches": replays, "total_ns": graph_ns} \
        == {"graphs": 1, "launches": 8, "total_ns": 3942057}
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["inspect", "--stage", "decode", str(whole)]) == 0
    out = capsys.readouterr().out
    assert ("1 CUDA graph(s), 4 launches traced as whole graphs, 1.978 ms GPU time; kernels unknown: re-capture "
            "with nsys profile --cuda-graph-trace=node to see them") in out


def test_reads_digest_their_file_except_undigested():
    """Provenance.sha256 is the file's own digest (hashlib over its bytes); `inspect`, which shows no
    digest, reads inside readers.base.undigested and leaves it None."""
    import hashlib

    from generator.readers.base import undigested

    assert read(DECODE_RAW).provenance.sha256 == hashlib.sha256(DECODE_RAW.read_bytes()).hexdigest()
    with undigested():
        assert read(DECODE_RAW).provenance.sha256 is None
    assert read(DECODE_RAW).provenance.sha256 is not None
