"""What the nsys run's worker records besides its ranges, run on the CPU: each marked operator call's
shapes and FLOP (ops/calls.csv), the workload's tokens, and energy per stage where NVML cannot tell it."""
from __future__ import annotations

import csv
import importlib.util
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from capture import worker
from capture.commands import worker_argv
from capture.workloads.ops import Marks, Operators
from capture.workloads.params import Params
from capture.workloads.shapes import Calls
from generator.run_layout import CALLS_COLUMNS, FIRST_OP_RANGE, OP_RANGE, RunLayout

ROOT = Path(__file__).parent.parent
TINY = Params(device="cpu", dtype="float32", layers=1, prompt_len=4, new_tokens=2, warmup=2)
PRODUCTS = ("aten.mm.", "aten.addmm.", "aten.bmm.", "aten.linear.")


@pytest.fixture(scope="module")
def decode(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, list[dict[str, str]], list[str]]:
    """llm-decode at batch 1 through the nsys run's marking path: (worker result, calls.csv rows, marks)."""
    events: list[str] = []
    calls = Calls()
    result = worker.run("llm-decode", TINY, marks=Marks((events.append, lambda: events.append("-"))), calls=calls)
    path = tmp_path_factory.mktemp("run") / "ops" / "calls.csv"
    calls.write(path)
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        assert tuple(reader.fieldnames) == CALLS_COLUMNS
        return result, list(reader), events


def test_calls_are_the_numbered_calls_of_both_marked_iterations(decode) -> None:
    result, rows, events = decode
    n = result["operator_calls"]
    for name in (FIRST_OP_RANGE, OP_RANGE):
        assert [int(r["call"]) for r in rows if r["iteration"] == name] == list(range(1, n + 1))
        assert events.count(name) == n  # one NVTX range per row
    first = [(r["op"], r["input_shapes"]) for r in rows if r["iteration"] == FIRST_OP_RANGE]
    assert first == [(r["op"], r["input_shapes"]) for r in rows if r["iteration"] == OP_RANGE]
    # the stage each call ran in; the generated tokens are joined after the decode stage, in none
    assert {r["stage"] for r in rows} == {"prefill", "decode", ""}
    assert [(r["call"], r["op"]) for r in rows if not r["stage"]] == [(str(n), "aten.cat.default")] * 2


def test_matrix_products_have_two_m_n_k_flop_and_decode_is_m_1(decode) -> None:
    """Each product's FLOP is torch's formula, = 2*m*n*k*batch from its shapes; decode projections at
    batch 1 are M = 1, prefill's have the prompt's 4 rows."""
    _, rows, _ = decode
    products = [r for r in rows if r["op"].startswith(PRODUCTS)]
    assert len(products) == 2 * (7 + 1) * (1 + 2)  # 7 projections + lm_head, per prefill and decode step, twice
    for r in products:
        m, n, k, batch = (int(r[c]) for c in ("m", "n", "k", "batch"))
        assert int(r["flop"]) == 2 * m * n * k * batch
        shapes = json.loads(r["input_shapes"])
        assert (k, n) == (shapes[0][-1], shapes[1][0]) and json.loads(r["output_shapes"])[0][-1] == n
        assert m == {"prefill": 4, "decode": 1}[r["stage"]]
        dtypes = json.loads(r["input_dtypes"])
        size = 4 * (m * k + n * k + m * n + (n if len(shapes) == 3 else 0))  # float32, bias when given
        assert dtypes[0] == "float32" and int(r["ideal_bytes"]) == size
    down = next(r for r in products if r["stage"] == "decode" and json.loads(r["input_shapes"])[1] == [2048, 8192])
    assert (down["m"], down["n"], down["k"], down["flop"]) == ("1", "2048", "8192", str(2 * 2048 * 8192))
    attention = [r for r in rows if r["op"].startswith("aten.scaled_dot_product_attention")]
    # torch's SDPA formula: 4*b*h*s_q*s_kv*d (prefill 4x4, decode 1x5 then 1x6; 32 heads of 64)
    assert sorted({int(r["flop"]) for r in attention}) == [4 * 32 * 1 * 5 * 64, 4 * 32 * 1 * 6 * 64, 4 * 32 * 4 * 4 * 64]
    assert all(r["flop"] == "" and r["m"] == "" for r in rows if r["op"].startswith("aten.silu"))


def test_tokens_are_declared_by_the_workload(decode) -> None:
    assert decode[0]["tokens"] == {"generated": 2}
    assert worker.run("gemm", Params(device="cpu", m=8, n=8, k=8, warmup=0))["tokens"] == {"generated": None}
    assert worker.run("llm-decode", replace(TINY, batch=3, new_tokens=1, warmup=0))["tokens"] == {"generated": 3}


def test_energy_without_nvml_says_so_and_goes_on(decode, capsys: pytest.CaptureFixture[str]) -> None:
    """This machine has no NVIDIA driver: the repeat still runs and times its stages, with no joules."""
    result = decode[0]
    energy = result["energy"]
    reason = ("NVML cannot start (NVML Shared Library Not Found)" if importlib.util.find_spec("pynvml")
              else "nvidia-ml-py (pynvml) is not installed")
    assert energy["source"] is None and energy["note"] == f"no energy per stage: {reason}"
    assert list(energy["stages"]) == ["prefill", "decode"]
    for stage in energy["stages"].values():
        assert stage["seconds"] > 0 and (stage["joules"], stage["watts"], stage["resolved"]) == (None, None, False)
    assert result["clocks"] == {"sm_mhz": None, "memory_mhz": None} and result["repeat"] is True
    capsys.readouterr()
    worker.run("gemm", Params(device="cpu", m=8, n=8, k=8, warmup=0), marks=Marks((lambda _: None, lambda: None)))
    assert capsys.readouterr().err.splitlines() == [f"capture.worker: no energy per stage: {reason}"]


def test_worker_process_writes_calls_and_facts(tmp_path: Path) -> None:
    """The nsys run's worker argv (capture.commands.worker_argv) on the CPU: gemm's one product a @ b
    of 16x4 by 4x8 is aten.mm with 2*16*8*4 FLOP, read and written once in float32."""
    lay = RunLayout(tmp_path)
    argv = worker_argv(sys.executable, "gemm", Params(device="cpu", dtype="float32", m=16, n=8, k=4, warmup=1),
                       lay.stages_json, calls_out=lay.calls_csv)
    lay.logs.mkdir()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert [line for line in proc.stderr.splitlines() if "energy" in line] == [
        f"capture.worker: {json.loads(lay.stages_json.read_text())['energy']['note']}"]
    written = json.loads(lay.stages_json.read_text())
    assert written["tokens"] == {"generated": None} and written["repeat"] is True
    assert list(written["energy"]["stages"]) == ["gemm"] and written["operator_calls"] == 1
    with lay.calls_csv.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["iteration"], r["call"], r["op"], r["stage"]) for r in rows] == [(FIRST_OP_RANGE, "1", "aten.mm.default", "gemm")]
    row = rows[0]
    assert (row["m"], row["n"], row["k"], row["batch"], row["flop"]) == ("16", "8", "4", "1", str(2 * 16 * 8 * 4))
    assert json.loads(row["input_strides"]) == [[4, 1], [8, 1]] and json.loads(row["output_shapes"]) == [[16, 8]]
    assert int(row["ideal_bytes"]) == 4 * (16 * 4 + 4 * 8 + 16 * 8)


def test_calls_of_sparse_tensors_have_no_strides_and_no_ideal_bytes() -> None:
    """A layout without strides is recorded, not fatal: the workload runs on as it would."""
    calls = Calls()
    with Operators(lambda _: None, lambda _: None, calls.recorder(OP_RANGE)):
        dense = torch.eye(3)
        total = dense.to_sparse() + dense.to_sparse()
    assert torch.equal(total.to_dense(), 2 * torch.eye(3))
    rows = {r[2]: r for r in calls.rows}
    added = rows["aten.add.Tensor"]
    assert json.loads(added[6]) == [None, None] and added[9] is None
    assert json.loads(added[4]) == [[3, 3], [3, 3]] and json.loads(added[7]) == [[3, 3]]
    copied = rows["aten._to_sparse.default"]
    assert json.loads(copied[6]) == [[3, 1]] and copied[9] is None  # its output is sparse
