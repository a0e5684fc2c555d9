"""Captures of several ranks, on the CPU: torchrun with the gloo backend runs the real worker as two
ranks of transformers' tensor-parallel plan, the ncu wrapper picks one rank, and the launcher's
commands and refusals are those a GPU capture would run (``--dry-run``)."""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from capture.run import RunConfig
from capture.workloads.distributed import bus_factor, link_rows
from capture.workloads.params import Params

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = Path(__file__).resolve().parent / "workloads"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(WORKLOADS)]), "OMP_NUM_THREADS": "1"}


def _capture(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "capture", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env=_env())


def test_bus_bandwidth_is_nccl_tests_definition() -> None:
    # nccl-tests' all_reduce: busbw = algbw * 2(n-1)/n
    assert bus_factor(2) == 1.0
    assert bus_factor(8) == 1.75
    rows = link_rows(8, {1 << 20: [0.004, 0.001, 0.002]})
    assert rows[0]["time_s"] == 0.002
    assert rows[0]["algbw_gbps"] == pytest.approx((1 << 20) / 0.002 / 1e9)
    assert rows[0]["busbw_gbps"] == pytest.approx(rows[0]["algbw_gbps"] * 1.75)


@pytest.fixture(scope="module")
def tp_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    """The nsys run's worker command of a 2-rank capture (as RunConfig builds it), run on the CPU without nsys."""
    run_dir = tmp_path_factory.mktemp("tp") / "run"
    for folder in ("ops", "logs"):
        (run_dir / folder).mkdir(parents=True)
    cfg = RunConfig(workload="tp_small:build", run_dir=run_dir, overhead_runs=0, nproc_per_node=2,
                    params=Params(device="cpu", dtype="float32", tp=2, prompt_len=8, new_tokens=3, warmup=1))
    argv = cfg.launch(cfg.worker(cfg.layout.stages_json))
    assert argv[1:8] == ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "--module",
                         "capture.worker"]
    out = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300, env=_env())
    assert out.returncode == 0, out.stderr[-3000:]
    return run_dir, out


def test_every_rank_recorded_by_rank_zero(tp_run: tuple[Path, subprocess.CompletedProcess]) -> None:
    run_dir, _ = tp_run
    record = json.loads((run_dir / "logs" / "stages.json").read_text())
    assert record["world_size"] == 2
    ranks = record["ranks"]
    assert [r["rank"] for r in ranks] == [0, 1]
    assert len({r["pid"] for r in ranks}) == 2
    assert all(r["device"] == "cpu" and r["gpu"] is None for r in ranks)
    assert all(r["stages"] == ["prefill", "decode"] for r in ranks)
    assert all(r["tokens"] == {"generated": 3} for r in ranks)
    assert record["stages"] == ["prefill", "decode"]


def test_link_measured_over_the_job(tp_run: tuple[Path, subprocess.CompletedProcess]) -> None:
    link = json.loads((tp_run[0] / "logs" / "stages.json").read_text())["link"]
    assert link["backend"] == "gloo" and link["world_size"] == 2
    assert [row["bytes"] for row in link["sizes"]] == [1 << 16, 1 << 20, 1 << 24, 1 << 27]
    for row in link["sizes"]:
        assert row["time_s"] > 0 and row["repeats"] == 5
        assert row["algbw_gbps"] == pytest.approx(row["bytes"] / row["time_s"] / 1e9)
        assert row["busbw_gbps"] == pytest.approx(row["algbw_gbps"])  # 2(n-1)/n = 1 for two ranks


def _linear_outputs(path: Path) -> set[int]:
    """The output widths of the aten linear calls one rank recorded."""
    with path.open() as fh:
        rows = list(csv.DictReader(fh))
    assert rows
    return {int(r["n"]) for r in rows if "linear" in r["op"] and r.get("n")}


def test_each_rank_records_its_shard(tp_run: tuple[Path, subprocess.CompletedProcess]) -> None:
    """transformers' plan splits q/k/v, gate/up and lm_head by columns: each rank's products are half as
    wide as the model's (q 256 → 128, k/v 64 → 32, gate/up 512 → 256, lm_head 1024 → 512); o/down by rows,
    their outputs whole (256)."""
    ops = tp_run[0] / "ops"
    rank0, rank1 = ops / "calls.csv", ops / "calls.rank1.csv"
    assert rank0.is_file() and rank1.is_file()
    widths0, widths1 = _linear_outputs(rank0), _linear_outputs(rank1)
    assert widths0 == widths1
    assert widths0 == {128, 32, 256, 512}


def test_ncu_wraps_one_rank_only(tmp_path: Path) -> None:
    """Under torchrun, capture.rank_exec runs the fake ncu in the chosen rank and the plain worker in the other."""
    fake = tmp_path / "ncu"
    fake.write_text('#!/bin/sh\necho "ncu rank=$RANK" >> "$LOG"\nexec "$@"\n')
    fake.chmod(0o755)
    worker = [sys.executable, "-c", "import os; open(os.environ['LOG'], 'a').write(f\"worker rank={os.environ['RANK']}\\n\")"]
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "--module",
            "capture.rank_exec", "--profile-rank", "1", "--", str(fake), "--worker", *worker]
    log = tmp_path / "log"
    out = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120, env={**_env(), "LOG": str(log)})
    assert out.returncode == 0, out.stderr[-2000:]
    assert sorted(log.read_text().splitlines()) == ["ncu rank=1", "worker rank=0", "worker rank=1"]


def test_dry_run_prints_torchrun_and_the_ncu_rank() -> None:
    out = _capture("run", "--workload", "llm-decode", "--tp", "2", "--nproc-per-node", "2", "--ncu-rank", "1",
                   "--name", "tp", "--out", "/nonexistent-kr", "--dry-run")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    nsys = next(line for line in lines if " profile " in line and "nsys" in line.split()[0])
    assert "-m torch.distributed.run --standalone --nproc-per-node 2 --module capture.worker" in nsys
    assert "--tp 2" in nsys and "--link" in nsys
    ncu = next(line for line in lines if "capture.rank_exec" in line)
    assert "--profile-rank 1 --" in ncu
    before, after = ncu.split(" --worker ")
    assert "--kernel-name" in before and "-o" in before.split()
    assert after.split()[1:3] == ["-m", "capture.worker"] and "--profile-plan" in after
    assert not Path("/nonexistent-kr").exists()


@pytest.mark.parametrize(("args", "says"), [
    (["--nproc-per-node", "2", "--ncu-rank", "2"], "--ncu-rank must name one of the 2 ranks"),
    (["--nproc-per-node", "0"], "--nproc-per-node must be at least 1"),
    (["--tp", "2"], "--tp 2 needs --nproc-per-node 2"),
    (["--nproc-per-node", "2", "--include-nccl"], "--include-nccl with several ranks"),
])
def test_rank_options_refused_in_one_line(args: list[str], says: str) -> None:
    out = _capture("run", "--workload", "llm-decode", *args, "--dry-run")
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and says in out.stderr and "Traceback" not in out.stderr
