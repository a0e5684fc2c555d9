"""Run directories are never reused; the manifest records every phase, its time and its error."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from capture import cli
from capture.commands import RunLayout
from capture.manifest import Manifest, PhaseFailed, create_run_dir
from capture.run import stats_beside
from capture.tools import CaptureError, run_logged


def test_existing_run_dir_is_refused(tmp_path: Path) -> None:
    run = create_run_dir(tmp_path / "a" / "run1")
    (run / "keep.txt").write_text("old")
    with pytest.raises(CaptureError, match="already exists"):
        create_run_dir(run)
    assert (run / "keep.txt").read_text() == "old"


def test_cli_never_overwrites(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    for tool in ("nsys", "ncu"):
        (fake / tool).write_text("#!/bin/sh\necho 'version 2025.3.1'\n")
        (fake / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:/usr/bin:/bin")
    (tmp_path / "runs" / "r").mkdir(parents=True)
    code = cli.main(["run", "--workload", "gemm", "--device", "cpu", "--out", str(tmp_path / "runs"), "--name", "r"])
    assert code == 2
    assert "already exists" in capsys.readouterr().err
    assert list((tmp_path / "runs" / "r").iterdir()) == []


def test_phases_record_status_time_and_error(tmp_path: Path) -> None:
    man = Manifest(tmp_path / "manifest.json", workload="gemm")
    with man.phase("one", [["tool", "--x"]]) as entry:
        entry["extra"] = 1
    with pytest.raises(PhaseFailed, match="tool exited 3"), man.phase("two"):
        raise PhaseFailed("tool exited 3: bad thing")
    with pytest.raises(PhaseFailed, match=r"three: KeyError: 'k' \(logs/three.traceback\)"), man.phase("three"):
        {}["k"]
    man.skip("four", "--skip-ncu")
    data = json.loads((tmp_path / "manifest.json").read_text())
    phases = {p["name"]: p for p in data["phases"]}
    assert phases["one"]["status"] == "ok" and phases["one"]["commands"] == [["tool", "--x"]]
    assert phases["one"]["extra"] == 1 and phases["one"]["seconds"] >= 0
    assert phases["one"]["start"] <= phases["one"]["end"]
    assert phases["two"] | {"status": "failed", "error": "tool exited 3: bad thing"} == phases["two"]
    assert phases["three"]["error"] == "KeyError: 'k'"
    assert "KeyError" in (tmp_path / "logs" / "three.traceback").read_text()
    assert phases["four"]["status"] == "skipped"
    assert data["workload"] == "gemm" and data["schema"] == "kernel-report/capture-run/1"


def test_tool_output_goes_to_logs(tmp_path: Path) -> None:
    result = run_logged(["sh", "-c", "echo out; echo err >&2; exit 4"], tmp_path / "logs", "t")
    assert result.returncode == 4
    assert (tmp_path / "logs" / "t.stdout").read_text() == "out\n"
    assert result.last_error_line() == "err"
    missing = run_logged(["/nonexistent/tool"], tmp_path / "logs", "m")
    assert missing.returncode == 127 and "nonexistent" in missing.last_error_line()


def test_failed_step_is_recorded_and_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "nsys"
    broken.write_text("#!/bin/sh\n[ \"$1\" = --version ] && { echo 'version 2025.3.1'; exit 0; }\n"
                      "echo 'starting'; echo 'ERROR: CUPTI could not be initialized' >&2; exit 1\n")
    broken.chmod(0o755)
    code = cli.main(["run", "--workload", "gemm", "--device", "cpu", "--skip-ncu", "--nsys", str(broken),
                     "--out", str(tmp_path / "runs"), "--name", "r"])
    assert code == 1
    run = tmp_path / "runs" / "r"
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "capture: nsys_profile exited 1: ERROR: CUPTI could not be initialized (logs/nsys_profile.stderr)")
    man = json.loads((run / "manifest.json").read_text())
    assert man["status"] == "failed" and man["failed_phases"] == ["nsys_profile"]
    (phase,) = man["phases"]
    assert phase["commands"][0][:2] == [str(broken), "profile"] and phase["seconds"] >= 0
    assert (run / "logs" / "nsys_profile.stdout").read_text() == "starting\n"
    assert man["tools"]["nsys"] == {"path": str(broken), "version": "version 2025.3.1"}


def test_nsys_stats_run_side_by_side_beside_the_selection(tmp_path: Path) -> None:
    """The nsys stats calls (the whole capture, then each stage) all run at once while the block
    (top-N and the targets) runs: each has started before any has ended. Their phase starts when
    they were started, ends when the last is done, and their CSVs get the run layout's names. A
    failing call is recorded, not raised."""
    nsys = tmp_path / "nsys"
    nsys.write_text('#!/bin/sh\nout=""; while [ $# -gt 1 ]; do [ "$1" = --output ] && out=$2; shift; done\n'
                    f'echo start >> {tmp_path}/calls; sleep 2; echo end >> {tmp_path}/calls\n'
                    'for r in cuda_gpu_kern_sum nvtx_sum cuda_api_sum; do : > "${out}_$r.csv"; done\n')
    nsys.chmod(0o755)
    lay = RunLayout(tmp_path / "run")
    lay.logs.mkdir(parents=True)
    man = Manifest(tmp_path / "manifest.json")
    with stats_beside(str(nsys), lay, ["prefill", "decode"], man), man.phase("top_n"):
        time.sleep(0.1)
    assert (tmp_path / "calls").read_text().split() == ["start"] * 3 + ["end"] * 3
    top_n, stats = man.data["phases"]
    assert (top_n["name"], stats["name"], stats["status"]) == ("top_n", "nsys_stats", "ok")
    # the manifest's times are to the millisecond: top-N can start in the millisecond the stats did
    assert stats["start"] <= top_n["start"] and stats["end"] >= top_n["end"] and stats["seconds"] >= 2
    assert [c[c.index("--output") + 1] for c in stats["commands"]] == [str(lay.stats / p) for p in ("all", "prefill", "decode")]
    assert {p.name for p in lay.stats.iterdir()} >= {"all_cuda_gpu_kern_sum.csv", "prefill_cuda_gpu_kern_sum.csv",
                                                     "decode_cuda_gpu_kern_sum.csv", "nvtx_sum.csv", "cuda_api_sum.csv"}
    nsys.write_text("#!/bin/sh\necho 'ERROR: no such range' >&2; exit 3\n")
    with stats_beside(str(nsys), RunLayout(tmp_path / "run2"), ["decode"], man):
        pass
    failed = man.data["phases"][-1]
    assert failed["status"] == "failed" and failed["error"].startswith("nsys_stats_all exited 3: ERROR: no such range")
