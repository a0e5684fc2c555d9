"""The fuzzing campaign of issue 9 as code: mutated real files and hostile report.yaml variants, each
run through the CLI in a forked child with a time limit, and the outcome classified.

Outcomes: ``ok`` (exit 0), ``error`` (exit 2, one line on stderr starting "error: "), ``regression``
(compare's exit 1), ``internal`` (the CLI's catch-all "error: internal error (…)": a bug, counted as a
failure), ``traceback`` (anything else a Python exception printed), ``crash`` (killed by a signal),
``hang`` (over the time limit), ``messy`` (exit 2 but not one line). Also counted per case: input
files modified or lost (checksums before/after), files created beside the inputs, elements a payload
injected into a built site, and the child's peak memory (its ``ru_maxrss``).
"""
from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import lzma
import os
import random
import re
import signal
import sqlite3
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
H200 = DATA / "h200-small"

#: Seed files: one or more per reader and layout (small ones; .xz seeds are mutated decompressed).
SEEDS = [
    DATA / "nsys-stats-2025" / "small_vlm_cuda_gpu_mem_size_sum.csv",
    DATA / "nsys-stats-2025" / "small_vlm_cuda_gpu_mem_time_sum.csv",
    DATA / "nsys-stats-2025" / "small_vlm_nvtx_sum.csv",
    DATA / "nsys-stats-2025" / "small_vlm_cuda_api_sum.csv",
    DATA / "nsys-stats-2025" / "small_vlm_prefill_cuda_gpu_kern_sum.csv",
    DATA / "nsys-stats-2025" / "cudf-groupby_cuda_gpu_kern_sum.csv.xz",
    DATA / "gemm" / "nsys" / "stats" / "nvtx_sum.csv",
    DATA / "nsight-systems-deep-dive" / "vector_add_profile_v3.stats_console.txt",
    DATA / "pipit" / "nbody-nvtx_trace.csv",
    DATA / "ESMM-Research" / "metrics.csv",
    DATA / "gemm" / "ncu" / "raw.csv.xz",
    DATA / "h200-small" / "small_vlm_prefill_export_details.csv.xz",
    DATA / "hta" / "alexnet_benchmark_result_2869224_1695835535_trace.json.xz",
    DATA / "gemm" / "nsys" / "report.sqlite.xz",
    DATA / "nsight-training" / "CuVectorAddDrv.ncu-rep",
]
NUMBER = re.compile(rb"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")
NSYS_STATS_HEAD = (b"Time (%)", b"Total Time (ns)", b"Total (MB)")
BAD_NUMBERS = [b"nan", b"inf", b"-inf", b"-5", b"-0.5", b"1e400", b"99999999999999999999999999999", b"abc",
               b"", b"0x10", b"1,5"]
CONTROL = ["\x00", "\x07", "\x1b[2J\x1b]0;pwned\x07", "\x9b31m", "\r", "\u2028"]
XSS = "<script>alert(1)</script><img src=x onerror=alert(2)>"
FORMULA = "=HYPERLINK(\"http://evil\",\"x\")"


@dataclass
class Case:
    """One run: a name, the CLI arguments, and the files the run must leave untouched."""

    name: str
    argv: list[str]
    inputs: list[Path] = field(default_factory=list)
    timeout: float = 60.0
    bad: bool = False  # certainly unusable: must be answered by a one-line error, exit 2
    fresh: bool | None = None  # a new interpreter rather than fork() (default: for builds)
    env: dict[str, str] = field(default_factory=dict)  # environment variables set for the run


@dataclass
class Outcome:
    case: str
    bad: bool
    kind: str
    detail: str = ""
    modified: int = 0
    created: int = 0
    injected: int = 0
    peak_mb: float = 0.0  # the child's peak resident memory


def plain_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    return lzma.decompress(data) if path.suffix == ".xz" else data


def plain_name(path: Path) -> str:
    return path.name[:-3] if path.suffix == ".xz" else path.name


# --- mutators: bytes → bytes (text formats) ------------------------------------------------------

def bad_number(data: bytes, rng: random.Random) -> bytes:
    spots = list(NUMBER.finditer(data))
    if not spots:
        return data + b"\n" + rng.choice(BAD_NUMBERS)
    spot = rng.choice(spots)
    return data[: spot.start()] + rng.choice(BAD_NUMBERS) + data[spot.end():]


def control_in_text(data: bytes, rng: random.Random) -> bytes:
    words = list(re.finditer(rb"[A-Za-z_][A-Za-z0-9_]{3,}", data))
    if not words:
        return data
    spot = rng.choice(words)
    inject = (rng.choice(CONTROL) + rng.choice([XSS, FORMULA, ""])).encode("utf-8")
    return data[: spot.start()] + inject + data[spot.start():]


def truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randint(0, max(len(data) - 1, 0))]


def flip_bytes(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 16)):
        if out:
            out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


def huge_field(data: bytes, rng: random.Random) -> bytes:
    words = list(re.finditer(rb"[A-Za-z_][A-Za-z0-9_]{3,}", data)) or [re.match(rb"", data)]
    spot = rng.choice(words)
    return data[: spot.start()] + b"x" * (1 << 20) + data[spot.start():]


def garbage_tail(data: bytes, rng: random.Random) -> bytes:
    return data + bytes(rng.randrange(256) for _ in range(rng.randint(1, 512)))


def duplicate_lines(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    at = rng.randrange(len(lines))
    return b"\n".join(lines[:at] + [lines[at]] * rng.randint(2, 50) + lines[at:])


def deep_json(data: bytes, rng: random.Random) -> bytes:
    depth = rng.choice([1000, 10_000, 100_000])
    return b'{"traceEvents": [' + b"[" * depth + b"]" * depth + b"]}"


def json_event(key: str, value: object) -> Callable[[bytes, random.Random], bytes]:
    """A mutator setting ``key`` of one random kernel event of a PyTorch trace to ``value``."""
    def mutate(data: bytes, rng: random.Random) -> bytes:
        doc = json.loads(data)
        events = [e for e in doc["traceEvents"] if isinstance(e, dict) and e.get("cat") == "kernel"]
        rng.choice(events)[key] = value
        return json.dumps(doc).encode()
    return mutate


JSON_MUTATORS = {
    "json-negative-dur": json_event("dur", -5), "json-huge-dur": json_event("dur", 1e308),
    "json-nan-dur": json_event("dur", "nan"), "json-null-dur": json_event("dur", None),
    "json-inf-ts": json_event("ts", "1e400"), "json-empty-name": json_event("name", ""),
    "json-xss-name": json_event("name", XSS + "\x1b[2J"), "json-long-name": json_event("name", "x" * 300_000),
    "json-negative-ts": json_event("ts", -(10 ** 30)), "json-huge-ts": json_event("ts", 10 ** 40),
}
BAD_CELLS = ["inf", "-inf", "-5", "-0.5", "1e400", "99999999999999999999999", "abc", "0x10"]


def bad_cell(data: bytes, rng: random.Random) -> bytes:
    """An nsys stats CSV with one number (a count, time or size cell) replaced by a bad value."""
    rows = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
    used = r"\((ns|us|ms|s|%)\)|^Total \(MB\)$|^(Count|Instances|Num Calls)$"  # MB statistics are not read
    numeric = [i for i, head in enumerate(rows[0]) if re.search(used, head)]
    row = rng.randrange(1, len(rows))
    rows[row][rng.choice(numeric)] = rng.choice(BAD_CELLS)
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().encode("utf-8")


#: Text mutations that always make the file unusable.
CERTAINLY_BAD = {"deep-json", "bad-cell", "json-negative-dur", "json-huge-dur", "json-nan-dur", "json-null-dur",
                 "json-inf-ts", "json-empty-name"}
TEXT_MUTATORS: dict[str, Callable[[bytes, random.Random], bytes]] = {
    "bad-number": bad_number, "control": control_in_text, "truncate": truncate, "flip": flip_bytes,
    "huge-field": huge_field, "garbage-tail": garbage_tail, "dup-lines": duplicate_lines,
}


# --- SQLite mutations: SQL on a copy ----------------------------------------------------------------

SQLITE_MUTATIONS = {
    "negative-duration": "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start - 5 WHERE rowid IN "
                         "(SELECT rowid FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 3)",
    "negative-start": "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = -1000, end = -10 WHERE rowid = 1",
    "dangling-string": "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 999999999 WHERE rowid = 1",
    "null-name": "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = NULL, shortName = NULL WHERE rowid = 1",
    "text-duration": "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = 'soon' WHERE rowid = 1",
    "huge-duration": "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = 9223372036854775807 WHERE rowid = 1",
    "real-nan": "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = 1e999 WHERE rowid = 1",
    "control-name": "UPDATE StringIds SET value = char(27) || '[2J' || char(7) || char(0) || value "
                    "WHERE id IN (SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 2)",
    "xss-name": f"UPDATE StringIds SET value = '{XSS}' || value "
                "WHERE id IN (SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 2)",
    "empty-name": "UPDATE StringIds SET value = '' "
                  "WHERE id IN (SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1)",
    "no-kernels": "DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL",
    "drop-strings": "DROP TABLE StringIds",
    "bad-device": "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = -7 WHERE rowid = 1",
    "wal": "PRAGMA journal_mode = WAL",
}


#: SQLite mutations that leave a usable export (the others must be refused).
SQLITE_USABLE = {"control-name", "xss-name", "wal", "bad-device", "negative-start", "no-kernels", "null-name"}


def mutate_sqlite(plain: bytes, sql: str, dest: Path) -> None:
    dest.write_bytes(plain)
    con = sqlite3.connect(dest)
    try:
        con.execute(sql)
        con.commit()
    except sqlite3.Error:
        pass
    finally:
        con.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{dest}{suffix}").unlink(missing_ok=True)


def binary_cases(seed: Path, plain: bytes, work: Path, rng: random.Random) -> Iterator[tuple[str, Path, bool]]:
    """Mutations of a binary (SQLite / .ncu-rep) seed and of .xz containers."""
    name = plain_name(seed)
    if plain.startswith(b"SQLite format 3\x00"):
        for label, sql in SQLITE_MUTATIONS.items():
            path = work / f"{label}-{name}"
            mutate_sqlite(plain, sql, path)
            yield label, path, label not in SQLITE_USABLE
    for label, mutate in (("truncate", truncate), ("flip", flip_bytes), ("garbage-tail", garbage_tail)):
        path = work / f"{label}-{name}"
        path.write_bytes(mutate(plain, rng))
        yield label, path, label == "truncate" or label == "garbage-tail" and plain.startswith(b"SQLite format 3")
    if seed.suffix == ".xz":
        raw = seed.read_bytes()
        for label, data in (("xz-truncated", raw[: len(raw) * 2 // 3]), ("xz-garbage-tail", raw + b"garbage\x00" * 9),
                            ("xz-concatenated", raw + raw[:100])):
            path = work / f"{label}-{seed.name}"
            path.write_bytes(data)
            yield label, path, True


def file_cases(work: Path, per_seed: int, seed_value: int) -> list[Case]:
    """Mutated copies of every seed, ``per_seed`` text mutations each (binary seeds: all mutations)."""
    rng = random.Random(seed_value)
    cases: list[Case] = []
    for index, seed in enumerate(SEEDS):
        folder = work / f"seed{index}"
        folder.mkdir(parents=True)
        plain = plain_bytes(seed)
        name = plain_name(seed)
        if plain.startswith(b"SQLite format 3\x00") or seed.suffix == ".ncu-rep":
            found = binary_cases(seed, plain, folder, rng)
        else:
            found = _text_cases(seed, plain, name, folder, per_seed, rng)
        for label, path, bad in found:
            cases.append(Case(f"{seed.name}:{label}:{path.name}", ["inspect", str(path)], [path], bad=bad))
    return cases


def _text_cases(seed: Path, plain: bytes, name: str, folder: Path, per_seed: int,
                rng: random.Random) -> Iterator[tuple[str, Path, bool]]:
    mutators = dict(TEXT_MUTATORS)
    if name.endswith(".json"):
        mutators.update({"deep-json": deep_json, **JSON_MUTATORS})
    if plain.startswith(NSYS_STATS_HEAD):
        mutators["bad-cell"] = bad_cell
    labels = sorted(mutators)
    for n in range(per_seed):
        label = labels[n % len(labels)]
        path = folder / f"{n}-{label}-{name}"
        data = mutators[label](plain, rng)
        path.write_bytes(data)
        if seed.suffix == ".xz" and rng.random() < 0.3:  # keep some compressed, as users bring them
            path = path.with_name(path.name + ".xz")
            path.write_bytes(lzma.compress(data))
        yield label, path, label in CERTAINLY_BAD


def special_cases(work: Path) -> list[Case]:
    """Hand-made cases the campaign found: bombs, committed samples, deep YAML, compare failures."""
    cases: list[Case] = []
    bomb = work / "bomb.sqlite.xz"
    bomb.write_bytes(lzma.compress(b"\0" * (256 << 20), preset=1))
    cases.append(Case("xz-bomb", ["inspect", str(bomb)], [bomb], bad=True))
    gz = work / "bomb_trace.json.gz"
    gz.write_bytes(gzip.compress(b'{"traceEvents": [' + b" " * (512 << 20) + b"]}", compresslevel=1))
    cases.append(Case("gz-bomb", ["inspect", str(gz)], [gz], bad=True))
    sample = DATA / "nsys-stats-2025" / "small_vlm_cuda_gpu_mem_size_sum.csv"
    cases.append(Case("committed-mem-size-sum", ["inspect", str(sample)], [sample]))
    ncu = DATA / "ESMM-Research" / "metrics.csv"
    broken = work / "not-a-profile.csv"
    broken.write_text("a,b\n1,2\n")
    for label, argv in (("compare-bad-current", ["compare", str(ncu), str(broken)]),
                        ("compare-missing", ["compare", str(ncu), str(work / "missing.csv")]),
                        ("compare-empty-dir", ["compare", str(ncu), str(work)])):
        cases.append(Case(label, argv, [ncu], bad=True))
    return cases


#: Rebuilds the kernel table without its NOT NULL constraints (CREATE TABLE … AS keeps none).
_UNCONSTRAINED = ("CREATE TABLE k2 AS SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL; DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL; "
                  "ALTER TABLE k2 RENAME TO CUPTI_ACTIVITY_KIND_KERNEL; ")
#: Issue 35's SQLite reproductions on the committed gemm export: label → (script, certainly bad).
ISSUE35_SQLITE = {
    "all-names-null": (_UNCONSTRAINED + "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = NULL", True),
    "name-id-beyond-int64": (_UNCONSTRAINED + "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = "
                             "18446744073709551615 WHERE rowid = 1", True),
    "end-text-nan": (_UNCONSTRAINED + "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = 'NaN' WHERE rowid = 1", True),
    "string-ids-view": ("ALTER TABLE StringIds RENAME TO StringTable; "
                        "CREATE VIEW StringIds AS SELECT id, value FROM StringTable", False),
}


def sqlite_script(plain: bytes, script: str, dest: Path) -> Path:
    """``plain`` (an SQLite file's bytes) written to ``dest`` and changed by ``script``."""
    dest.write_bytes(plain)
    con = sqlite3.connect(dest)
    try:
        con.executescript(script)
        con.commit()
    finally:
        con.close()
    return dest


def issue35_cases(work: Path) -> list[Case]:
    """Issue 35's reproductions that `inspect` answers, derived from committed files: NULL and
    out-of-range name ids, a "NaN" timestamp (SQLite and Kineto), a view for StringIds, a header-only
    kernel CSV, ``1_000`` numbers, and /proc/self/mem as an input."""
    work.mkdir(parents=True, exist_ok=True)
    cases: list[Case] = []
    gemm = plain_bytes(DATA / "gemm" / "nsys" / "report.sqlite.xz")
    for label, (script, bad) in ISSUE35_SQLITE.items():
        path = sqlite_script(gemm, script, work / f"{label}.sqlite")
        cases.append(Case(f"issue35:{label}", ["inspect", str(path)], [path], bad=bad))
    trace = json.loads(plain_bytes(DATA / "hta" / "alexnet_benchmark_result_2869224_1695835535_trace.json.xz"))
    for event in trace["traceEvents"]:
        if isinstance(event, dict) and "ts" in event:
            event["ts"] = "NaN"
    path = work / "ts-nan_trace.json"
    path.write_text(json.dumps(trace), encoding="utf-8")
    cases.append(Case("issue35:kineto-ts-nan", ["inspect", str(path)], [path], bad=True))
    kern_sum = (DATA / "nsys-stats-2025" / "small_vlm_prefill_cuda_gpu_kern_sum.csv").read_text(encoding="utf-8")
    path = work / "header-only_cuda_gpu_kern_sum.csv"
    path.write_text(kern_sum.splitlines()[0] + "\n", encoding="utf-8")
    cases.append(Case("issue35:header-only-csv", ["inspect", str(path)], [path], bad=True))
    path = work / "underscores_cuda_gpu_kern_sum.csv"
    path.write_text(re.sub(r"(?m)^([\d.]+),(\d+)(\d{3}),", r"\1,\2_\3,", kern_sum), encoding="utf-8")
    cases.append(Case("issue35:underscore-numbers", ["inspect", str(path)], [path], bad=True))
    cases.append(Case("issue35:proc-self-mem", ["inspect", "/proc/self/mem"], [], bad=True))
    return cases


def huge_name_export(dest: Path, length: int) -> Path:
    """The committed llm-decode-small export with its most-run kernel's name ``length`` characters
    long (the name repeated, then padded): an ordinary SQLite export with one huge name."""
    plain = plain_bytes(ROOT / "examples" / "runs" / "llm-decode-small" / "nsys" / "report.sqlite.xz")
    dest.write_bytes(plain)
    con = sqlite3.connect(dest)
    try:
        (name_id,) = con.execute("SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY demangledName "
                                 "ORDER BY count(*) DESC LIMIT 1").fetchone()
        con.execute("UPDATE StringIds SET value = substr(value || '_' || printf('%.*c', ?, 'x'), 1, ?) WHERE id = ?",
                    (length, length, name_id))
        con.commit()
        con.execute("VACUUM")
    finally:
        con.close()
    return dest


# --- running a case ---------------------------------------------------------------------------------

def digest(paths: list[Path]) -> dict[str, str | None]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None for p in paths}


def siblings(paths: list[Path]) -> set[str]:
    return {str(p) for folder in {p.parent for p in paths} for p in folder.iterdir()}


def run_case(case: Case, scratch: Path) -> Outcome:
    """Run ``case`` in a child process (stdout/stderr to files, cwd ``scratch``) and classify it."""
    before, files_before = digest(case.inputs), siblings(case.inputs)
    out, err = scratch / "stdout", scratch / "stderr"
    if case.fresh or case.fresh is None and case.argv[0] == "build":  # vl-convert's runtime does not survive fork()
        status, peak = _run_fresh(case, scratch, out, err)
    else:
        status, peak = _run_forked(case, scratch, out, err)
        if status is None:  # fork() of a threaded test process can deadlock in the child: ask a new one
            status, peak = _run_fresh(case, scratch, out, err)
    text = err.read_text(encoding="utf-8", errors="replace") if err.exists() else ""
    outcome = Outcome(case.name, case.bad, _classify(case, status, text), text.strip()[-300:], peak_mb=peak)
    after = digest(case.inputs)
    outcome.modified = sum(before[p] != after[p] for p in before)
    outcome.created = len(siblings(case.inputs) - files_before)
    return outcome


def _run_fresh(case: Case, scratch: Path, out: Path, err: Path) -> tuple[int | None, float]:
    """``python -m generator ARGV`` in a new interpreter; its wait status (None on timeout) and peak MB."""
    import subprocess
    env = {**os.environ, "PYTHONPATH": str(ROOT), **case.env}
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        child = subprocess.Popen([sys.executable, "-m", "generator", *case.argv], cwd=scratch, env=env,
                                 stdout=stdout, stderr=stderr)
        return _wait(child.pid, case.timeout)


def _run_forked(case: Case, scratch: Path, out: Path, err: Path) -> tuple[int | None, float]:
    """``main(ARGV)`` in a forked child (cheap: modules are loaded); its wait status (None on timeout)
    and peak MB."""
    pid = os.fork()
    if pid == 0:  # child
        code = 70
        try:
            os.environ.update(case.env)
            os.chdir(scratch)
            fd_out, fd_err = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(fd_out, 1)
            os.dup2(fd_err, 2)
            sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), encoding="utf-8", write_through=True)
            sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", closefd=False), encoding="utf-8", write_through=True)
            import resource
            resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
            from generator.cli import main
            code = main(case.argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            import traceback
            traceback.print_exc()
            code = 1
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    return _wait(pid, case.timeout)


def _high_water_mb(pid: int) -> float:
    """The largest ``VmHWM`` (peak resident memory) of ``pid`` and its descendants now, in MB; 0 for
    processes already gone. Unlike ``ru_maxrss``, an exec'd child's figure is its own: Linux keeps the
    parent's peak in ``ru_maxrss`` of a child started by vfork (subprocess) or fork."""
    peak, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
        peak = max(peak, int(found[1]) / 1024 if found else 0.0)
        todo.extend(int(child) for child in children)
    return peak


def _wait(pid: int, timeout: float) -> tuple[int | None, float]:
    """The child's wait status (None after killing it at ``timeout`` seconds) and its peak resident
    memory in MB: the largest :func:`_high_water_mb` seen while it ran (``ru_maxrss`` of it and the
    children it waited for when it ended before the first look)."""
    import time
    deadline, peak = time.monotonic() + timeout, 0.0
    while time.monotonic() < deadline:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            return status, peak or usage.ru_maxrss / 1024
        peak = max(peak, _high_water_mb(pid))
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    _, _, usage = os.wait4(pid, 0)
    return None, peak or usage.ru_maxrss / 1024


def _classify(case: Case, status: int | None, stderr: str) -> str:
    if status is None:
        return "hang"
    if os.WIFSIGNALED(status):
        return "crash"
    code = os.WEXITSTATUS(status)
    if "Traceback (most recent call last)" in stderr:
        return "traceback"
    if code == 0:
        return "ok"
    if code == 1 and case.argv[0] == "compare":
        return "regression"
    lines = [line for line in stderr.splitlines() if line.strip()]
    if any(line.startswith("error: internal error") for line in lines):
        return "internal"
    if code == 2 and len(lines) == 1 and lines[0].startswith("error: "):
        return "error"
    if code == 2 and lines and all(line.startswith("error: ") or ": " in line for line in lines):
        return "error"  # report.yaml problems: one line per problem
    return "messy"


def summarize(outcomes: list[Outcome]) -> dict[str, int]:
    kinds = Counter(o.kind for o in outcomes)
    bad = [o for o in outcomes if o.bad]
    return {
        "cases": len(outcomes),
        "certainly_bad_inputs": len(bad),
        "certainly_bad_answered_one_line_exit_2": sum(o.kind == "error" for o in bad),
        "internal_errors": kinds["internal"],
        "tracebacks": kinds["traceback"],
        "crashes": kinds["crash"],
        "hangs": kinds["hang"],
        "messy_errors": kinds["messy"],
        "one_line_errors_exit_2": kinds["error"],
        "accepted_exit_0": kinds["ok"],
        "files_modified_or_lost": sum(o.modified for o in outcomes),
        "files_created_beside_inputs": sum(o.created for o in outcomes),
        "injected_elements": sum(o.injected for o in outcomes),
    }


def run_all(cases: list[Case], scratch: Path) -> list[Outcome]:
    scratch.mkdir(parents=True, exist_ok=True)
    return [run_case(case, scratch) for case in cases]


if __name__ == "__main__":  # python tests/fuzz_cases.py [PER_SEED]: a quick look while developing
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cases = file_cases(work / "files", int(sys.argv[1]) if len(sys.argv) > 1 else 7, 1) + special_cases(work)
        results = run_all(cases, work / "scratch")
        for o in results:
            if o.kind not in ("ok", "error") or o.modified or o.created or o.bad and o.kind != "error":
                print(o.kind, o.case, "|", o.detail.replace("\n", " ")[-250:])
        print(json.dumps(summarize(results), indent=1))
