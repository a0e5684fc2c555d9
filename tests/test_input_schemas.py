"""Issue 43's inputs read through a schema at their reader: each case of the audit, made here from a
committed file, is one line naming the file and the key, exit 2 (never an internal error or a
published nonsense figure); then, per reader, random, deep, huge and wrongly typed values
(hypothesis) give the same: 0 internal errors, 0 tracebacks."""
from __future__ import annotations

import csv
import io
import json
import lzma
import math
import re
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.analyses.findings.context import FindingInputs
from generator.analyses.findings.hardware import decode_units
from generator.analyses.roofline import Peaks
from generator.cli import main
from generator.errors import InputError
from generator.model import KERNEL_SUMMARY_COLUMNS
from generator.pipeline.chips import CHIPS_DIR, load_chip
from generator.readers import read
from generator.readers.manifest import read_manifest
from generator.readers.nsys_sqlite import read_stages
from generator.readers.op_calls import read_op_calls

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "examples" / "runs" / "compiled-block-h200"  # one stage, an ops/calls.csv, 312 KB
GEMM_SQLITE = ROOT / "tests" / "data" / "gemm" / "nsys" / "report.sqlite.xz"
GEMM_RAW = ROOT / "tests" / "data" / "gemm" / "ncu" / "raw.csv.xz"
H100 = CHIPS_DIR / "h100-sxm.yaml"
DEEP = 100_000
HUGE_INT = "9" * 5000


def one_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """stderr of ``argv``, which must exit 2 with one line that is no internal error."""
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, (code, err)
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    assert "internal error" not in err, err
    return err


def _run_copy(tmp_path: Path, name: str = "run") -> Path:
    run = tmp_path / name
    shutil.copytree(RUN, run)
    return run


def _set(tree: dict, dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    for part in parents:
        tree = tree.setdefault(part, {})
    tree[last] = value


# --- manifest.json ----------------------------------------------------------------------------

MANIFEST_CASES = [
    ("energy.stages.block", {"joules": -5.0, "seconds": 0.5, "watts": -10.0, "resolved": True},
     "energy.stages.block.joules: Input should be greater than or equal to 0"),
    ("tokens.generated", -5, "tokens.generated: Input should be greater than or equal to 0"),
    ("clocks", {"sm_mhz": 0, "memory_mhz": -1}, "clocks.sm_mhz: Input should be greater than 0"),
    ("clocks.sm_mhz", "fast", "clocks.sm_mhz: Input should be a valid number"),
    ("module_overhead", {"stages": {"block": {"calls": "many"}}}, "module_overhead.stages.block.calls: Input should"),
    ("params", [], "params: Input should be a valid dictionary"),
    ("params.batch", -4, "params.batch: -4 is not a whole number from 0"),
    ("environment", "H200", "environment: Input should be a valid dictionary"),
    ("environment.gpus", [{"name": "x", "sm_count": -132}], "environment.gpus[0].sm_count: Input should be greater"),
    ("coverage.profiled", 1.5, "coverage.profiled: Input should be a valid integer"),
    ("notes", "a note", "notes: Input should be a valid list"),
    ("created", "2026-02-31T00:00:00", "created: not an ISO 8601 time (day is out of range for month)"),
    ("stages", [{"title": "x"}], "stages[0]"),
]


@pytest.mark.parametrize(("key", "value", "problem"), MANIFEST_CASES, ids=[c[0] for c in MANIFEST_CASES])
def test_bad_manifest_records_are_one_line(key: str, value: Any, problem: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    run = _run_copy(tmp_path)
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    _set(manifest, key, value)
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    err = one_line(capsys, ["inspect", str(run)])
    assert f"{run / 'manifest.json'}: {problem}" in err


@pytest.mark.parametrize(("text", "problem"), [
    ('{"stages": ["block"], "clocks": {"sm_mhz": Infinity}}', "clocks.sm_mhz: inf is not a finite number"),
    ('{"stages": ["block"], "tokens": {"generated": NaN}}', "tokens.generated: nan is not a finite number"),
    ('{"stages": ["block"], "x": ' + "[" * DEEP + "]" * DEEP + "}", "not a readable manifest (nested too deeply)"),
    ('{"stages": ["block"], "x": ' + "[" * 40 + "]" * 40 + "}", "x[0][0]"),
    ('{"stages": ["block"], "tokens": {"generated": ' + HUGE_INT + "}}", "not a readable manifest (Exceeds the limit"),
    ('{"stages": ["block"], "tokens": {"generated": 1' + "0" * 30 + "}}", "tokens.generated: 31-digit integer is out"),
    ("[1, 2]", "expected a JSON object"),
])
def test_unbounded_manifest_documents_are_one_line(text: str, problem: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    run = _run_copy(tmp_path)
    (run / "manifest.json").write_text(text, encoding="utf-8")
    assert problem in one_line(capsys, ["inspect", str(run)])
    with pytest.raises(InputError):
        read_manifest(run / "manifest.json")


def test_every_committed_manifest_passes_its_schema() -> None:
    manifests = sorted((ROOT / "examples" / "runs").rglob("manifest.json"))
    assert len(manifests) >= 20
    for path in manifests:
        assert read_manifest(path)["stages"]


@pytest.mark.parametrize(("value", "problem"), [
    ({"block": {"joules": float("inf"), "seconds": 0.5}}, "energy.stages.block.joules: inf is not a finite number"),
    ("DEEP", "not a readable manifest (nested too deeply)"),
])
def test_a_bad_manifest_stops_a_build_the_same_way(value: Any, problem: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The build reads the manifest first for the version's date: the same one line there."""
    run = _run_copy(tmp_path)
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    manifest["energy"]["stages"] = value
    text = json.dumps(manifest)  # json writes Infinity
    if value == "DEEP":
        text = text.replace('"DEEP"', "[" * DEEP + "]" * DEEP)
    (run / "manifest.json").write_text(text, encoding="utf-8")
    err = one_line(capsys, ["build", str(run), "--out", str(tmp_path / "site"), "--no-cache"])
    assert f"{run / 'manifest.json'}: {problem}" in err
    assert not (tmp_path / "site").exists()


def test_inspect_truncates_a_long_note_in_linear_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 30 MB note took 536 s (rich wrapping it); the console shows 2,000 characters, --json all."""
    run = _run_copy(tmp_path)
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    manifest["notes"] = ["n" * 30_000_000]
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    start = time.perf_counter()
    assert main(["inspect", str(run)]) == 0
    seconds = time.perf_counter() - start
    out = capsys.readouterr().out
    assert "…[+29,998,000 characters; --json shows all]" in " ".join(out.split()) and len(out) < 20_000
    assert seconds < 20, seconds
    assert main(["inspect", "--json", str(run)]) == 0
    assert json.loads(capsys.readouterr().out)[0]["notes"] == manifest["notes"]


# --- chip files ------------------------------------------------------------------------------

def _chip(tmp_path: Path, change: Any) -> Path:
    data = yaml.safe_load(H100.read_text(encoding="utf-8"))
    change(data)
    path = tmp_path / "chip.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


@pytest.mark.parametrize(("change", "problem"), [
    (lambda d: d["figures"]["tensor_bf16_tflops"].update(value=1e308),
     "figures: tensor_bf16_tflops.value 1e+308 is outside 0.001 … 1e+07"),
    (lambda d: d["figures"]["dram_bandwidth_gbps"].update(value=1e-300),
     "figures: dram_bandwidth_gbps.value 1e-300 is outside 0.001 … 1e+07"),
    (lambda d: d["figures"]["sm_count"].update(value=True), "figures.sm_count.value: Input should be a valid number"),
    (lambda d: d["figures"]["sm_count"].update(value="132"), "figures.sm_count.value: Input should be a valid number"),
    (lambda d: d["figures"]["power_w"].update(source="measured",
                                              measured={"method": "NVML", "repeats": 5, "spread_pct": -1.0}),
     "figures.power_w.measured.spread_pct: Input should be greater than or equal to 0"),
    (lambda d: d["figures"]["power_w"].update(measured={"method": "NVML", "repeats": 5, "spread_pct": 1.0}),
     "figures.power_w: source measured and a measured block go together"),
])
def test_implausible_chip_figures_are_one_line(change: Any, problem: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = _chip(tmp_path, change)
    err = one_line(capsys, ["project", str(RUN), "--chip", str(path)])
    assert f"{path}: {problem}" in err


@pytest.mark.parametrize(("text", "problem"), [
    ("name: x\nfigures: " + "[" * DEEP + "]" * DEEP, "not a readable chip file (nested too deeply)"),
    ("name: x\nfigures: {sm_count: {value: " + HUGE_INT + ", source: s}}", "not valid YAML (Exceeds the limit"),
    ("name: x\ndate: 2026-02-31\n", "not valid YAML (day is out of range for month)"),
    ("name: x\nfigures: {sm_count: {value: .inf, source: s}}", "figures.sm_count.value: inf is not a finite number"),
])
def test_unbounded_chip_documents_are_one_line(text: str, problem: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "chip.yaml"
    path.write_text(text, encoding="utf-8")
    assert problem in one_line(capsys, ["project", str(RUN), "--chip", str(path)])


def test_a_measured_block_is_taken() -> None:
    """A probe's ``measured`` record beside a figure (issue 48) is part of the schema: the shipped H100
    probe file loads with its method, repeats and spread."""
    chip = load_chip("h100-sxm-measured")
    dram = chip.figures["dram_bandwidth_gbps"]
    assert dram.value == 3129.0 and dram.source == "measured"
    assert dram.measured == {"method": dram.measured["method"], "repeats": 15, "spread_pct": 0.77, "median": 3104.0}
    add = chip.figures["launch_memory_us"]  # one repeat's record has no spread: null, and loads
    assert add.value == 1.12 and add.measured["repeats"] == 20 and add.measured["spread_pct"] == 0.0
    h200_add = load_chip("h200-measured").figures["launch_memory_us"]
    assert h200_add.value == 0.895 and h200_add.measured["repeats"] == 1 and h200_add.measured.get("spread_pct") is None


@pytest.mark.parametrize("top", ["0", "-5"])
def test_top_below_one_is_refused(top: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert f"error: --top: {top} kernels per stage; give 1 or more" in one_line(
        capsys, ["project", str(RUN), "--chip", "h100-sxm", "--top", top])


# --- ops/calls.csv ---------------------------------------------------------------------------

def _calls(run: Path, row: int, column: str, value: str) -> Path:
    path = run / "ops" / "calls.csv"
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
    rows[row][rows[0].index(column)] = value
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)
    return path


@pytest.mark.parametrize(("column", "value", "problem"), [
    ("flop", "-5", "line 3: flop '-5' is not a number from 0 to 1e+18"),
    ("flop", "1e300", "line 3: flop '1e300' is not a number from 0 to 1e+18"),
    ("m", "-4096", "line 3: m '-4096' is not a whole number from 0 to 1.1e+12"),
    ("ideal_bytes", "fast", "line 3: ideal_bytes 'fast' is not a number from 0 to 1e+16"),
    ("k", "2.5", "line 3: k '2.5' is not a whole number"),
    ("input_shapes", "[[1, 2]", "line 3: input_shapes '[[1, 2]' is not a JSON list of operands"),
    ("input_shapes", '[["a"]]', "line 3: input_shapes '[[\"a\"]]' is not a JSON list of operands"),
    ("input_dtypes", "[1], [2]", "line 3: input_dtypes '[1], [2]' is not a JSON list of operands"),
])
def test_bad_operator_calls_are_one_line(column: str, value: str, problem: str, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    run = _run_copy(tmp_path)
    path = _calls(run, 2, column, value)
    with pytest.raises(InputError, match=re.escape(problem)):
        read_op_calls(path)
    err = one_line(capsys, ["build", str(run), "--out", str(tmp_path / "site"), "--no-cache"])
    assert f"{path}: {problem}" in err


def test_committed_operator_calls_read() -> None:
    frame = read_op_calls(RUN / "ops" / "calls.csv")
    assert len(frame) == 4 and (frame["flop"].dropna() >= 0).all()


# --- ncu CSV launch ids, nsys NULL and backwards kernel times ----------------------------------

@pytest.mark.parametrize("cell", ["1e30", "inf", "-1", "2.5", "9" * 400])
def test_ncu_launch_id_out_of_range_is_one_line(cell: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = list(csv.reader(io.StringIO(lzma.decompress(GEMM_RAW.read_bytes()).decode("utf-8"))))
    rows[2][0] = cell
    path = tmp_path / "raw.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    err = one_line(capsys, ["inspect", str(path)])
    assert f"ID {cell!r} is not a whole number from 0 to 9,007,199,254,740,992" in err


def _gemm(tmp_path: Path, sql: str) -> Path:
    path = tmp_path / "report.sqlite"
    path.write_bytes(lzma.decompress(GEMM_SQLITE.read_bytes()))
    with sqlite3.connect(path) as con:
        con.executescript(sql)
    return path


#: nsys declares ``end`` NOT NULL; a copy of the table without the constraint holds a NULL
NULL_END = ("CREATE TABLE k2 AS SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL; DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL; "
            "ALTER TABLE k2 RENAME TO CUPTI_ACTIVITY_KIND_KERNEL; "
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = NULL WHERE rowid = 1;")


def test_null_kernel_end_is_one_line_alone_and_staged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _gemm(tmp_path, NULL_END)
    problem = f"{path}: CUPTI_ACTIVITY_KIND_KERNEL row 1: no start or end time (NULL)"
    assert problem in one_line(capsys, ["inspect", str(path)])
    assert problem in one_line(capsys, ["build", str(path), "--out", str(tmp_path / "a"), "--no-cache"])
    assert problem in one_line(capsys, ["build", str(path), "--stages", "gemm", "--out", str(tmp_path / "b"),
                                        "--no-cache"])


def test_backwards_kernels_in_a_run_are_refused_as_the_file_alone(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A run whose kernels all end before they start built with −0.0 ms kernel time; the same
    export given alone was refused. Both are now refused, naming the row and the figure."""
    run = _run_copy(tmp_path)
    (run / "nsys" / "report.sqlite.xz").unlink()
    sqlite = run / "nsys" / "report.sqlite"
    sqlite.write_bytes(lzma.decompress((RUN / "nsys" / "report.sqlite.xz").read_bytes()))
    with sqlite3.connect(sqlite) as con:
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start - 5")
    alone = one_line(capsys, ["build", str(sqlite), "--stages", "block", "--out", str(tmp_path / "a"), "--no-cache"])
    staged = one_line(capsys, ["build", str(run), "--out", str(tmp_path / "b"), "--no-cache"])
    for err in (alone, staged):
        assert f"{sqlite}: kernel summary row 1 " in err and "is -5.0; expected a number from 0" in err


def test_decode_units_without_nsys_times_say_unknown() -> None:
    """ncu profiled decode GEMMs that nsys did not time (total_ns missing): the rate is unknown, no
    ZeroDivisionError. FLOP: the gemm capture's one kernel (2·4096³ per launch)."""
    flop = 2 * 4096**3
    kernels = pd.DataFrame({"stage": ["decode"], "name": ["nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"],
                            "friendly_name": ["nvjet 256x128"], "category": ["gemm"], "flop_tensor": [float(flop)], "flop_fp32": [0.0],
                            "count": [float("nan")], "total_ns": [float("nan")]})
    summary = pd.DataFrame({c: pd.Series(dtype=object) for c in KERNEL_SUMMARY_COLUMNS})
    found = decode_units(FindingInputs(summary, kernels, {}, Peaks(flop_per_s={"tensor": 989.4e12}), None, None, {},
                                       20))
    assert found.id == "hw_decode_units" and found.evidence["executed_tflops"] is None
    from generator.render.findings import render_finding
    assert "an unknown rate (nsys timed none of them)" in render_finding(found, "en")
    assert "速率未知" in render_finding(found, "zh")


# --- property-based: every reader, random / deep / huge / wrongly typed values -----------------

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
HOSTILE_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
    st.just(HUGE_INT), st.just("1e308"), st.just("-1"), st.just("2026-02-31"))
HOSTILE = st.recursive(HOSTILE_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)), max_leaves=12)


def _deep(depth: int) -> Any:
    node: Any = 1
    for _ in range(depth):
        node = [node]
    return node


def _expect_ok_or_one_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code = main(argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "internal error" not in captured.err, captured.err
    assert code in (0, 2), (code, captured.err)
    if code == 2:
        assert captured.err.count("\n") == 1 and captured.err.startswith("error: "), captured.err


MANIFEST_KEYS = ["created", "params", "params.batch", "stages", "notes", "energy", "energy.stages",
                 "energy.stages.block", "energy.stages.block.joules", "clocks", "clocks.sm_mhz", "tokens",
                 "tokens.generated", "module_overhead", "module_overhead.stages", "environment",
                 "environment.gpus", "coverage", "coverage.top_n", "phases", "fidelity.stages", "top_n_requested"]


@SETTINGS
@given(key=st.sampled_from(MANIFEST_KEYS), value=st.one_of(HOSTILE, st.integers(30, 2000).map(_deep)))
def test_manifest_reader_property(key: str, value: Any, capsys: pytest.CaptureFixture[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        run = Path(folder) / "run"
        run.mkdir()
        manifest = json.loads((RUN / "manifest.json").read_text(encoding="utf-8"))
        try:
            _set(manifest, key, value)
        except (AttributeError, TypeError):  # a parent replaced by a scalar earlier: set it whole
            manifest[key.split(".")[0]] = value
        try:
            text = json.dumps(manifest)
        except (ValueError, RecursionError):
            return
        (run / "manifest.json").write_text(text, encoding="utf-8")
        _expect_ok_or_one_line(capsys, ["inspect", str(run)])


FIGURE_KEYS = ["value", "source", "estimate", "uncertainty_pct", "measured"]


@SETTINGS
@given(figure=st.sampled_from(["sm_count", "tensor_bf16_tflops", "launch_latency_us", "power_w"]),
       key=st.sampled_from(FIGURE_KEYS), value=st.one_of(HOSTILE, st.integers(30, 2000).map(_deep)))
def test_chip_reader_property(figure: str, key: str, value: Any, capsys: pytest.CaptureFixture[str]) -> None:
    data = yaml.safe_load(H100.read_text(encoding="utf-8"))
    data["figures"][figure][key] = value
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "chip.yaml"
        try:
            path.write_text(yaml.safe_dump(data), encoding="utf-8")
        except (ValueError, RecursionError, yaml.YAMLError):
            return
        try:
            load_chip(path)
        except InputError as exc:
            assert "\n" not in str(exc) and str(path) in str(exc)


CALL_COLUMNS = ["call", "flop", "ideal_bytes", "m", "n", "k", "batch", "input_shapes", "input_dtypes",
                "input_strides", "output_shapes", "iteration", "op"]
CELLS = st.one_of(st.text(max_size=30), st.just("-1"), st.just("1e300"), st.just("inf"), st.just("nan"),
                  st.just(HUGE_INT), st.just("[" * 5000), st.integers(30, 3000).map(lambda n: json.dumps(_deep(n))),
                  HOSTILE.map(json.dumps))


@SETTINGS
@given(row=st.integers(1, 4), column=st.sampled_from(CALL_COLUMNS), value=CELLS)
def test_operator_calls_reader_property(row: int, column: str, value: str) -> None:
    text = (RUN / "ops" / "calls.csv").read_text(encoding="utf-8")
    rows = list(csv.reader(io.StringIO(text)))
    rows[row][rows[0].index(column)] = value
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "calls.csv"
        with open(path, "w", newline="", encoding="utf-8") as f:
            csv.writer(f, lineterminator="\n").writerows(rows)
        try:
            frame = read_op_calls(path)
        except InputError as exc:
            assert "\n" not in str(exc) and str(path) in str(exc)
            return
        numbers = frame[["flop", "ideal_bytes", "m", "n", "k", "batch"]]
        assert not (numbers < 0).any().any() and not (numbers.abs() == float("inf")).any().any()
        for cell in frame["input_shapes"].dropna():
            assert isinstance(json.loads(cell), list)


@SETTINGS
@given(cell=st.one_of(st.text(max_size=20), st.floats().map(repr), st.integers(-(10**40), 10**40).map(str),
                      st.just("1e30"), st.just(HUGE_INT)))
def test_ncu_launch_id_property(cell: str, capsys: pytest.CaptureFixture[str]) -> None:
    rows = list(csv.reader(io.StringIO(lzma.decompress(GEMM_RAW.read_bytes()).decode("utf-8"))))
    rows[2][0] = cell
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "raw.csv"
        with open(path, "w", newline="", encoding="utf-8") as f:
            csv.writer(f, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
        try:
            metrics = read(path).kernel_metrics
        except InputError as exc:
            assert "\n" not in str(exc)
            return
        assert metrics["launch_id"].between(0, 2**53).all()


@settings(SETTINGS, max_examples=10)  # each example reads the export twice (~1 s)
@given(column=st.sampled_from(["start", "end"]), row=st.integers(1, 2),
       value=st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1), st.floats(), st.text(max_size=10),
                       st.binary(max_size=10)))
def test_nsys_kernel_times_property(column: str, row: int, value: Any) -> None:
    """Any start or end a kernel row can hold in SQLite (NULL, text, blobs, floats, int64 extremes):
    read alone and read by stage, a one-line InputError or non-negative finite figures."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "report.sqlite"
        path.write_bytes(lzma.decompress(GEMM_SQLITE.read_bytes()))
        with sqlite3.connect(path) as con:
            con.executescript(NULL_END.rsplit("UPDATE", 1)[0])
            con.execute(f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET {column} = ? WHERE rowid = ?", (value, row))
        for reading in (lambda: read(path).kernel_summary, lambda: read_stages(path, ["gemm"]).summary):
            try:
                summary = reading()
            except InputError as exc:
                assert "\n" not in str(exc) and str(path) in str(exc)
                continue
            figures = summary[["count", "total_ns", "min_ns", "max_ns"]].astype(float)
            assert (figures >= 0).all().all() and figures.map(math.isfinite).all().all()


def test_compare_summary_with_a_huge_integer_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "summary.json"
    path.write_text('{"gpu": {"sm_count": ' + HUGE_INT + "}}", encoding="utf-8")
    assert f"{path}: not valid JSON (Exceeds the limit (4300 digits)" in one_line(
        capsys, ["compare", str(path), str(path)])
