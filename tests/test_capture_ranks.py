"""Captures of several ranks, on the CPU: torchrun with the gloo backend runs the real worker as two
ranks of transformers' tensor-parallel plan, the ncu wrapper picks one rank, and the launcher's
commands and refusals are those a GPU capture would run (``--dry-run``)."""
from __future__ import annotations

import csv
import dataclasses
import json
import lzma
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from helpers_pages import example_result

from capture.manifest import Manifest
from capture.run import FIDELITY_RANKS_NOTE, RunConfig, _fidelity_phase, ncu_profiled, profiled_processes
from capture.workloads.distributed import bus_factor, link_rows
from capture.workloads.params import Params
from generator.analyses.setup import workload_setup
from generator.errors import InputError
from generator.readers.documents import validated
from generator.readers.fidelity import DIFFERENT, SAME, process_kernels
from generator.readers.manifest import Manifest as ManifestSchema
from generator.readers.manifest import read_manifest
from generator.readers.nsys_ranks import rank_processes
from generator.readers.nsys_sqlite import kernel_summary
from generator.render.pages import render_page
from generator.render.translations import translator
from generator.run_layout import REPEAT_NVTX_DOMAIN, RunLayout

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


# --- each rank's fidelity check and the rank ncu profiled -------------------------------------------------------

#: CI's read-only copy of shared/ sits beside the checkout; a worktree's is one level further up.
SHARED = next((p for p in (ROOT.parent / "shared", ROOT.parent.parent / "shared") if p.is_dir()), ROOT / "shared")
TP2 = SHARED / "fixtures" / "h200x2-tp" / "tp2_llama_tpplan.nsys.sqlite.xz"
needs_tp2 = pytest.mark.skipif(not TP2.is_file(), reason=f"{TP2} not present")
#: The launches of ``name`` ranges in domain ``domain`` (0: none) on process ``pid``'s threads, per kernel
#: (demangled), counted at their launch call: plain SQL, one range per thread.
PER_PID_SQL = """
WITH rng AS (
    SELECT n.globalTid AS tid, n.start, n.end FROM NVTX_EVENTS AS n LEFT JOIN StringIds AS s ON s.id = n.textId
    WHERE n.eventType = 59 AND coalesce(n.text, s.value) = :name AND coalesce(n.domainId, 0) = :domain
      AND (n.globalTid >> 24) & 16777215 = :pid)
SELECT ks.value, count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r
JOIN CUPTI_ACTIVITY_KIND_KERNEL AS k ON k.correlationId = r.correlationId AND k.globalPid >> 24 = r.globalTid >> 24
JOIN StringIds AS ks ON ks.id = k.demangledName
JOIN rng AS g ON g.tid = r.globalTid AND r.start BETWEEN g.start AND g.end
GROUP BY 1"""
#: The domain id the derived exports give kr.repeat (the fixture's own domains are 1 and 2).
REPEAT_ID = 99


def _per_pid(db: Path, pid: int, name: str = "measured", domain: int = 0) -> Counter:
    with sqlite3.connect(db) as conn:
        return Counter({n: int(c) for n, c in conn.execute(PER_PID_SQL, {"name": name, "domain": domain, "pid": pid})})


def _with_repeat(plain: Path, out: Path, cut: dict[int, int] | None = None) -> Path:
    """A copy of the 2-rank export whose ``measured`` range of each process is also a ``kr.repeat:measured``
    range (the plain repeat a capture makes), ending at ``cut[pid]`` where given."""
    shutil.copy(plain, out)
    with sqlite3.connect(out) as conn:
        rows = conn.execute("SELECT n.start, n.end, n.globalTid FROM NVTX_EVENTS AS n LEFT JOIN StringIds AS s "
                            "ON s.id = n.textId WHERE n.eventType = 59 AND coalesce(n.text, s.value) = 'measured'"
                            ).fetchall()
        for start, end, tid in rows:
            pid = (tid >> 24) & 0xFFFFFF
            conn.execute("INSERT INTO NVTX_EVENTS (start, eventType, text, globalTid, domainId) VALUES (?, 75, ?, ?, ?)",
                         (start, REPEAT_NVTX_DOMAIN, tid, REPEAT_ID))
            conn.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) "
                         "VALUES (?, ?, 59, 'measured', ?, ?)", (start, (cut or {}).get(pid, end), tid, REPEAT_ID))
    return out


@pytest.fixture(scope="module")
def tp2(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The real 2 × H200 export: decompressed; its ranks (rank_processes: pid, GPU) as the worker records them;
    a copy with a plain repeat equal to the measured iteration, and one whose rank 1 repeat stops before its
    last three launch calls (their kernels computed here by SQL)."""
    folder = tmp_path_factory.mktemp("tp2fid")
    plain = folder / "tp2.sqlite"
    with lzma.open(TP2) as src, open(plain, "wb") as dst:
        shutil.copyfileobj(src, dst)
    procs = rank_processes(plain)
    ranks = [{"rank": i, "pid": int(p), "device": f"cuda:{int(g)}", "gpu": {"index": int(g)}}
             for i, (p, g) in enumerate(zip(procs["pid"], procs["gpu"]))]
    pid1 = ranks[1]["pid"]
    with sqlite3.connect(plain) as conn:
        calls = conn.execute(
            "SELECT r.start, ks.value FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r JOIN CUPTI_ACTIVITY_KIND_KERNEL AS k "
            "ON k.correlationId = r.correlationId AND k.globalPid >> 24 = r.globalTid >> 24 "
            "JOIN StringIds AS ks ON ks.id = k.demangledName JOIN NVTX_EVENTS AS n ON n.globalTid = r.globalTid "
            "AND n.eventType = 59 AND n.text = 'measured' AND r.start BETWEEN n.start AND n.end "
            "WHERE (r.globalTid >> 24) & 16777215 = ? ORDER BY r.start", (pid1,)).fetchall()
    cut_at = calls[-3][0]
    return {"plain": plain, "ranks": ranks, "same": _with_repeat(plain, folder / "same.sqlite"),
            "cut": _with_repeat(plain, folder / "cut.sqlite", {pid1: cut_at - 1}),
            "dropped": Counter(name for start, name in calls if start >= cut_at)}


def _fidelity_manifest(tmp_path: Path, export: Path, ranks: list[dict]) -> tuple[Path, dict | None]:
    """The capture's fidelity phase over ``export`` with the worker's ``ranks``: (manifest file, record)."""
    lay = RunLayout(tmp_path / "run")
    lay.sqlite.parent.mkdir(parents=True)
    shutil.copy(export, lay.sqlite)
    man = Manifest(lay.manifest, status="ok", ranks=ranks)
    return lay.manifest, _fidelity_phase(lay, ["measured"], True, man)


@needs_tp2
def test_each_rank_counted_in_its_own_process(tp2: dict) -> None:
    """12,536 launches in ``measured`` on each GPU (of 25,072), each rank's kernels as plain SQL per process."""
    pids = [r["pid"] for r in tp2["ranks"]]
    assert pids == [850, 851] and [r["gpu"]["index"] for r in tp2["ranks"]] == [0, 1]
    counted = process_kernels(tp2["plain"], {"measured": "measured"}, pids)
    for pid in pids:
        assert Counter(counted[pid]["measured"]) == _per_pid(tp2["plain"], pid)
        assert sum(counted[pid]["measured"].values()) == 12536
    assert int(kernel_summary(tp2["plain"], ["measured"])["count"].sum()) == 2 * 12536
    with pytest.raises(InputError, match="process 4242 launched no kernel"):
        process_kernels(tp2["plain"], {"measured": "measured"}, [850, 4242])


@needs_tp2
def test_rank_fidelity_recorded_per_rank(tp2: dict, tmp_path: Path) -> None:
    """Each rank's measured iteration against its own plain repeat, recorded in ranks[i].fidelity; the manifest
    reads back through the schema."""
    path, record = _fidelity_manifest(tmp_path, tp2["same"], tp2["ranks"])
    manifest = read_manifest(path)
    assert record == manifest["fidelity"]
    assert record["verdict"] == SAME and record["note"] == FIDELITY_RANKS_NOTE
    assert record["stages"]["measured"] == {"measured_launches": 2 * 12536, "plain_launches": 2 * 12536,
                                            "only_measured": {}, "only_plain": {}}
    for rank in manifest["ranks"]:
        assert _per_pid(tp2["same"], rank["pid"], domain=REPEAT_ID) == _per_pid(tp2["same"], rank["pid"])
        assert rank["fidelity"] == {"verdict": SAME, "stages": {"measured": {
            "measured_launches": 12536, "plain_launches": 12536, "only_measured": {}, "only_plain": {}}}}


@needs_tp2
def test_one_rank_differing_makes_the_verdict(tp2: dict, tmp_path: Path) -> None:
    """Rank 1's repeat without its last three launches: rank 1 and the capture 'different kernels', rank 0
    'same kernels'; the launches rank 1 lacks are SQL's."""
    dropped = tp2["dropped"]
    assert sum(dropped.values()) == 3
    path, record = _fidelity_manifest(tmp_path, tp2["cut"], tp2["ranks"])
    rank0, rank1 = (r["fidelity"] for r in read_manifest(path)["ranks"])
    assert rank0["verdict"] == SAME and rank1["verdict"] == DIFFERENT and record["verdict"] == DIFFERENT
    pid1 = tp2["ranks"][1]["pid"]
    assert Counter(rank1["stages"]["measured"]["only_measured"]) == dropped
    assert rank1["stages"]["measured"]["plain_launches"] == sum(_per_pid(tp2["cut"], pid1, domain=REPEAT_ID).values())
    assert rank1["stages"]["measured"]["plain_launches"] == 12536 - 3
    assert record["stages"]["measured"]["only_measured"] == dict(sorted(dropped.items()))
    assert record["stages"]["measured"]["plain_launches"] == 2 * 12536 - 3


@needs_tp2
def test_ranks_not_in_the_export_fail_the_phase_in_one_line(tp2: dict, tp_run: tuple[Path, subprocess.CompletedProcess],
                                                            tmp_path: Path) -> None:
    """The CPU run's ranks (gloo: its own pids) name no process of the export: the phase fails, no verdict."""
    ranks = json.loads((tp_run[0] / "logs" / "stages.json").read_text())["ranks"]
    path, record = _fidelity_manifest(tmp_path, tp2["same"], ranks)
    manifest = read_manifest(path)  # the worker's rank records pass the schema
    assert record is None and "fidelity" not in manifest
    phase = next(p for p in manifest["phases"] if p["name"] == "fidelity")
    assert phase["status"] == "failed" and f"process {ranks[0]['pid']} launched no kernel" in phase["error"]


def test_the_rank_ncu_profiled_recorded(tp_run: tuple[Path, subprocess.CompletedProcess]) -> None:
    """ncu's own raw page names the process and device it profiled (compiled-block-h200: pid 1048, device 0,
    3 launches); the record names the rank, its nsys-run pid and GPU, and that collectives are not replayed."""
    raw = ROOT / "examples" / "runs" / "compiled-block-h200" / "ncu" / "raw.csv"
    assert profiled_processes(raw) == [(1048, 0)]
    ranks = json.loads((tp_run[0] / "logs" / "stages.json").read_text())["ranks"]
    record = ncu_profiled(1, ranks, raw)
    assert record == {"rank": 1, "world_size": 2, "nsys_pid": ranks[1]["pid"], "gpu": None, "ncu_pids": [1048],
                      "ncu_devices": [0], "collectives_replayed": False}
    validated(raw, ManifestSchema, {"ranks": ranks, "ncu_rank": 1, "ncu_profiled": record})


@needs_tp2
def test_setup_page_shows_each_rank_and_the_ncu_rank(tp2: dict, tmp_path: Path) -> None:
    """The Overview's setup table of a 2-rank manifest (the sdpa H200 manifest with the records above): each
    rank's verdict and launches beside the capture's, and the rank ncu profiled, in English and Chinese."""
    path, _ = _fidelity_manifest(tmp_path, tp2["cut"], tp2["ranks"])
    recorded = read_manifest(path)
    manifest = json.loads((ROOT / "examples" / "runs" / "ocr-vlm-sdpa-h200" / "manifest.json").read_text())
    raw = ROOT / "examples" / "runs" / "compiled-block-h200" / "ncu" / "raw.csv"
    manifest.update(fidelity=recorded["fidelity"], ranks=recorded["ranks"],
                    ncu_profiled=ncu_profiled(0, recorded["ranks"], raw))
    result, meta = example_result()
    cells = {}
    for lang in ("en", "zh"):
        text = render_page("index", dataclasses.replace(result, manifest=manifest), meta, lang, {})
        t = translator(lang)
        cells[lang] = {key: re.findall(rf"^\| {re.escape(t(key))} \| (.*) \|$", text, re.M)
                       for key in ("setup.fidelity", "setup_ranks.fidelity", "setup_ranks.ncu")}
    assert cells["en"]["setup_ranks.fidelity"] == [
        "rank 0 (GPU 0, process 850): same kernels, 12,536 launches measured against 12,536 plain; "
        "rank 1 (GPU 1, process 851): different kernels, 12,536 launches measured against 12,533 plain"]
    assert cells["en"]["setup.fidelity"][0].startswith("different kernels (measured); ")
    assert cells["en"]["setup_ranks.ncu"] == [
        "rank 0 of 2 (GPU 0, process 1048 of the ncu run); the other ranks ran unprofiled; collectives not replayed"]
    assert cells["zh"]["setup_ranks.fidelity"] == [
        "rank 0（GPU 0，进程 850）：内核相同，测量 12,536 次启动，普通重复 12,536 次；"
        "rank 1（GPU 1，进程 851）：内核不同，测量 12,536 次启动，普通重复 12,533 次"]
    assert cells["zh"]["setup.fidelity"][0] == ("内核不同 (measured); " + translator("zh")(
        "capture_texts.fidelity_ranks_note"))
    assert cells["zh"]["setup_ranks.ncu"] == [
        "2 个 rank 中的 rank 0（ncu 运行中 GPU 0，进程 1048）；其余 rank 未被分析；集合通信未重放"]
    assert workload_setup({"workload": "gemm"})["fidelity_ranks"] == []  # a one-GPU manifest: no row
