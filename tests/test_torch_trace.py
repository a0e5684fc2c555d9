"""The Kineto trace reader against the real HTA and H200 traces, recomputed with plain json loops."""
from __future__ import annotations

import gzip
import json
import lzma
import statistics
import time
from collections import defaultdict
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

import pytest

from generator.errors import InputError
from generator.model import ALL_STAGES, KERNEL_SUMMARY_COLUMNS, MEMCPY_SUMMARY_COLUMNS
from generator.readers import detect, read

DATA = Path(__file__).parent / "data"
ALEXNET = DATA / "hta/alexnet_benchmark_result_2869224_1695835535_trace.json.xz"
NS_RES = DATA / "hta/ns_resolution_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
NEG_QUEUE = DATA / "hta/negative_queue_length_rank0.json.gz"
H200 = DATA / "h200-small/small_vlm_torch_trace.json.gz"
TRACES = [ALEXNET, NS_RES, NEG_QUEUE, H200]


@cache
def load(path: Path) -> dict:
    """The trace as plain json sees it (cached; never mutated)."""
    opener = {".xz": lzma.open, ".gz": gzip.open}.get(path.suffix, open)
    with opener(path, "rt") as fh:
        return json.load(fh)


def ns(us: float) -> int:
    return round(us * 1000)


def kernels(doc: dict) -> list[dict]:
    return [e for e in doc["traceEvents"] if str(e.get("cat", "")).lower() == "kernel"]


@cache
def summary(path: Path, stage: str | None = None):
    return read(path, stage=stage)


@pytest.fixture(scope="module", params=TRACES, ids=lambda p: p.name[:24])
def trace(request):
    return request.param, load(request.param), summary(request.param)


def test_detected_as_torch_trace():
    assert {detect(p).format for p in (NS_RES, NEG_QUEUE, H200)} == {"torch-trace"}
    assert read(ALEXNET).provenance.format == "torch-trace"


def test_launch_counts_and_totals_match_plain_loop(trace):
    path, doc, ds = trace
    ks = ds.kernel_summary
    assert list(ks.columns) == KERNEL_SUMMARY_COLUMNS
    assert (ks["stage"] == ALL_STAGES).all()
    events = kernels(doc)
    assert ks["count"].sum() == len(events)
    assert ks["name"].nunique() == len(ks) == len({e["name"] for e in events})
    assert ks["total_ns"].sum() == sum(ns(e["dur"]) for e in events)
    assert ks["time_pct"].sum() == pytest.approx(100.0)
    assert ks["total_ns"].is_monotonic_decreasing


def test_top_kernel_statistics_match_plain_loop(trace):
    _, doc, ds = trace
    top = ds.kernel_summary.iloc[0]
    durs = [ns(e["dur"]) for e in kernels(doc) if e["name"] == top["name"]]
    assert top["count"] == len(durs)
    assert top["total_ns"] == sum(durs)
    assert top["min_ns"] == min(durs) and top["max_ns"] == max(durs)
    assert top["avg_ns"] == pytest.approx(statistics.mean(durs))
    assert top["med_ns"] == pytest.approx(statistics.median(durs))
    expected_sd = statistics.stdev(durs) if len(durs) > 1 else 0.0
    assert top["stddev_ns"] == pytest.approx(expected_sd)
    every = sum(ns(e["dur"]) for e in kernels(doc))
    assert top["time_pct"] == pytest.approx(100 * sum(durs) / every)


def test_known_numbers():
    # Recomputed by hand from the files once; guards against silent unit changes.
    alex = summary(ALEXNET).kernel_summary
    assert alex["count"].sum() == 79
    h200 = summary(H200).kernel_summary
    assert h200["count"].sum() == 4722
    conv = h200[h200["name"].str.startswith("void implicit_convolve_sgemm<__nv_bfloat16")]
    assert conv["min_ns"].min() <= 74751 <= conv["max_ns"].max()


def test_sub_microsecond_float_durations_are_exact_ns():
    doc = load(NS_RES)
    assert doc["displayTimeUnit"] == "ns"
    first = kernels(doc)[0]
    assert first["dur"] == 4.928
    ks = summary(NS_RES).kernel_summary
    row = ks[ks["name"] == first["name"]].iloc[0]
    durs = [ns(e["dur"]) for e in kernels(doc) if e["name"] == first["name"]]
    assert 4928 in durs and row["min_ns"] == min(durs) and row["total_ns"] == sum(durs)


def test_ts_is_microseconds_even_with_display_unit_ns():
    # Kineto's INFO log (local time, UTC-7) says profiling began 2024-04-03 18:51:35; ts as µs since the
    # epoch gives the same minute (ts in ns would land in 1970).
    doc = load(NS_RES)
    assert "2024-04-03 18:51:35" in doc["INFO"][0]
    when = datetime.fromtimestamp(kernels(doc)[0]["ts"] / 1e6, tz=UTC)
    assert when.strftime("%Y-%m-%d %H:%M") == "2024-04-04 01:51"


def test_gpu_info_from_device_properties(trace):
    _, doc, ds = trace
    used = {e["args"]["device"] for e in kernels(doc)}
    props = {p["id"]: p for p in doc["deviceProperties"]}
    assert [g.index for g in ds.gpus] == sorted(used)
    for gpu in ds.gpus:
        p = props[gpu.index]
        assert gpu.name == p["name"]
        assert gpu.sm_count == p["numSms"]
        assert gpu.memory_bytes == p["totalGlobalMem"]
        assert gpu.compute_capability == f"{p['computeMajor']}.{p['computeMinor']}"
    assert summary(H200).gpus[0].name == "NVIDIA H200"
    assert summary(H200).gpus[0].compute_capability == "9.0"


def test_memcpy_summary_matches_plain_loop():
    doc = load(NEG_QUEUE)
    ms = summary(NEG_QUEUE).memcpy_summary
    assert list(ms.columns) == MEMCPY_SUMMARY_COLUMNS
    by_op: dict[str, list[dict]] = defaultdict(list)
    for e in doc["traceEvents"]:
        if e.get("cat") == "gpu_memcpy":
            by_op[e["name"].split()[1]].append(e)
        elif e.get("cat") == "gpu_memset":
            by_op["memset"].append(e)
    assert set(ms["operation"]) == set(by_op) == {"HtoD", "DtoH", "DtoD", "memset"}
    for op, events in by_op.items():
        row = ms[ms["operation"] == op].iloc[0]
        assert row["count"] == len(events)
        assert row["total_ns"] == sum(ns(e["dur"]) for e in events)
        assert row["total_bytes"] == sum(e["args"]["bytes"] for e in events)


def test_nvtx_summary_from_user_annotations():
    doc = load(NS_RES)
    ranges = [e for e in doc["traceEvents"] if e.get("cat") == "user_annotation"]
    nv = summary(NS_RES).nvtx_summary
    assert nv["count"].sum() == len(ranges)
    fwd = [ns(e["dur"]) for e in ranges if e["name"] == "## forward ##"]
    row = nv[nv["name"] == "## forward ##"].iloc[0]
    assert (row["count"], row["total_ns"], row["style"]) == (len(fwd), sum(fwd), "PushPop")


def stage_launches(doc: dict, stage: str) -> list[dict]:
    """Kernels of a stage, the slow obvious way: GPU range on the stream, else the launch's CPU range."""
    events = doc["traceEvents"]

    def span(e):
        return ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])

    gpu = [e for e in events if e.get("cat") == "gpu_user_annotation" and e["name"] == stage]
    cpu = [e for e in events if e.get("cat") == "user_annotation" and e["name"] == stage]
    launch = {}
    for e in events:
        if e.get("cat") in ("cuda_runtime", "cuda_driver"):
            launch.setdefault(e["args"]["correlation"], e)

    def within(e, ranges):
        s, t = span(e)
        return any(
            r["pid"] == e["pid"] and r["tid"] == e["tid"] and span(r)[0] <= s and t <= span(r)[1] for r in ranges
        )

    found = []
    for k in kernels(doc):
        caller = launch.get(k["args"]["correlation"])
        if within(k, gpu) or (caller is not None and within(caller, cpu)):
            found.append(k)
    return found


@pytest.mark.parametrize(
    "path, stage",
    [
        (NS_RES, "DistributedDataParallel.forward"),  # GPU and CPU ranges
        (NS_RES, "Optimizer.step#SGD.step"),
        (NS_RES, "ProfilerStep#103"),  # CPU range only
        (NEG_QUEUE, "ProfilerStep#550"),
        (ALEXNET, "[param|pytorch.model.alex_net|0|0|0|warmup|forward]"),
    ],
)
def test_stage_restriction_matches_plain_loop(path, stage):
    expected = stage_launches(load(path), stage)
    assert expected, "the fixture range should hold kernels"
    ks = read(path, stage=stage).kernel_summary
    assert (ks["stage"] == stage).all()
    assert ks["count"].sum() == len(expected)
    assert ks["total_ns"].sum() == sum(ns(e["dur"]) for e in expected)
    per_name: dict[str, int] = defaultdict(int)
    for e in expected:
        per_name[e["name"]] += ns(e["dur"])
    assert dict(zip(ks["name"], ks["total_ns"])) == per_name
    assert ks["time_pct"].sum() == pytest.approx(100.0)


def test_unknown_stage_and_empty_stage_are_input_errors():
    with pytest.raises(InputError, match="no range named 'nope'"):
        read(NS_RES, stage="nope")
    with pytest.raises(InputError, match="'nccl:all_reduce' contains no kernels"):
        read(NS_RES, stage="nccl:all_reduce")


def test_large_trace_reads_fast():
    start = time.perf_counter()
    read(NEG_QUEUE)
    assert time.perf_counter() - start < 5.0


def write_gz(path: Path, doc) -> Path:
    with gzip.open(path, "wt") as fh:
        json.dump(doc, fh)
    return path


def test_bad_inputs_raise_input_error(tmp_path):
    random_json = tmp_path / "config.json"
    random_json.write_text(json.dumps({"model": "llama", "layers": [1, 2, 3]}))
    truncated = tmp_path / "cut.json"
    truncated.write_bytes(gzip.decompress(NS_RES.read_bytes())[:100_000])
    not_gzip = tmp_path / "plain.json.gz"
    not_gzip.write_text('{"traceEvents": []}')
    doc = load(ALEXNET)
    cpu_only = write_gz(
        tmp_path / "cpu_only.json.gz",
        {**doc, "traceEvents": [e for e in doc["traceEvents"] if e.get("cat") != "kernel"]},
    )
    events = [dict(e) for e in doc["traceEvents"]]
    next(e for e in events if e.get("cat") == "kernel").pop("dur")
    no_dur = write_gz(tmp_path / "no_dur.json.gz", {**doc, "traceEvents": events})
    cases = {
        random_json: "no traceEvents",
        truncated: "invalid or truncated JSON",
        not_gzip: "gzip",
        cpu_only: "no GPU kernel events",
        no_dur: "'dur'",
    }
    for path, problem in cases.items():
        with pytest.raises(InputError) as info:
            read(path)
        assert info.value.path == str(path)
        assert problem in info.value.problem
        assert "\n" not in info.value.problem
