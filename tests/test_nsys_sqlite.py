"""nsys SQLite reader on the real exports: every number against an independent query."""
from __future__ import annotations

import lzma
import math
import shutil
import sqlite3
import statistics
from pathlib import Path

import pytest

from generator import nsys_queries as q
from generator.errors import InputError
from generator.model import ALL_STAGES, API_SUMMARY_COLUMNS, KERNEL_SUMMARY_COLUMNS
from generator.readers import nsys_sqlite as ns
from generator.readers import read
from tests.conftest import DATA

VLM = DATA / "h200-small/small_vlm.nsys.sqlite.xz"
PERLMUTTER = DATA / "pipit/perlmutter-cloverleaf-cuda.sqlite.xz"
CUDF = DATA / "nvtx-examples/cudf-groupby.sqlite"
FIXTURES = [VLM, PERLMUTTER, CUDF]
VLM_STAGES = ["vision", "projector", "prefill", "decode"]


@pytest.fixture(scope="session")
def plain(tmp_path_factory: pytest.TempPathFactory):
    """The exports as plain .sqlite files (the .xz ones decompressed once)."""
    out = tmp_path_factory.mktemp("nsys")

    def get(path: Path) -> Path:
        if path.suffix != ".xz":
            return path
        target = out / path.stem
        if not target.exists():
            with lzma.open(path) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
        return target

    return get


def _kern_sum(db: Path, where: str = "", params: tuple = ()) -> dict[str, dict]:
    """cuda_gpu_kern_sum the plain way: every duration per demangled name, stats in Python."""
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT s.value, sh.value, k.end - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
        "JOIN StringIds AS s ON s.id = k.demangledName JOIN StringIds AS sh ON sh.id = k.shortName "
        + where, params).fetchall()
    con.close()
    by: dict[str, list[int]] = {}
    short: dict[str, str] = {}
    for name, sname, d in rows:
        by.setdefault(name, []).append(d)
        short[name] = sname
    grand = sum(sum(v) for v in by.values())
    return {n: {"count": len(v), "total_ns": sum(v), "avg_ns": sum(v) / len(v),
                "med_ns": statistics.median(v), "min_ns": min(v), "max_ns": max(v),
                "stddev_ns": statistics.stdev(v) if len(v) > 1 else 0.0,
                "time_pct": 100 * sum(v) / grand, "short_name": short[n]} for n, v in by.items()}


def _assert_matches(frame, expected: dict[str, dict]) -> None:
    assert sorted(frame["name"]) == sorted(expected)
    for row in frame.to_dict("records"):
        want = expected[row["name"]]
        for col, value in want.items():
            if isinstance(value, str):
                assert row[col] == value, (row["name"], col)
            else:
                assert row[col] == pytest.approx(value, rel=1e-9, abs=1e-6), (row["name"], col)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_kernel_summary_equals_independent_query(path: Path, plain) -> None:
    ks = read(path).kernel_summary
    assert list(ks.columns) == KERNEL_SUMMARY_COLUMNS
    assert set(ks["stage"]) == {ALL_STAGES}
    assert list(ks["total_ns"]) == sorted(ks["total_ns"], reverse=True)
    _assert_matches(ks, _kern_sum(plain(path)))


def test_known_totals() -> None:
    vlm = read(VLM).kernel_summary
    assert (len(vlm), vlm["count"].sum(), vlm["total_ns"].sum()) == (52, 7568, 18_317_145)
    top = vlm.iloc[0]
    assert (top["name"], top["count"], top["total_ns"], top["med_ns"]) == (
        "nvjet_sm90_tst_8x64_64x16_2x1_v_bz_TNN", 288, 2_097_467, 7264)
    assert read(PERLMUTTER).kernel_summary["count"].sum() == 1312
    assert read(CUDF).kernel_summary["count"].sum() == 195


def test_legacy_stats_tables_written_by_nsys_2020(plain) -> None:
    """nsys 2020.3 wrote its own summaries into the file: ours must equal them."""
    ds = read(CUDF)
    con = sqlite3.connect(CUDF)
    kern = {r[0]: r[1:] for r in con.execute(
        "SELECT s.value, num, min, max, avg, total FROM cudaKernelStats AS k JOIN StringIds AS s ON s.id = k.demangledName")}
    nvtx = {r[0]: r[1:] for r in con.execute("SELECT tag, num, min, max, avg, total FROM nvtxPushPopRangeStats")}
    mem = {r[0]: r[1:] for r in con.execute("SELECT name, num, min, max, avg, total FROM cudaMemoryOperationTimeStats")}
    size = {r[0]: r[1] for r in con.execute("SELECT name, total FROM cudaMemoryOperationByteStats")}
    con.close()
    for frame, legacy, key in ((ds.kernel_summary, kern, "name"), (ds.nvtx_summary, nvtx, "name"),
                               (ds.memcpy_summary, mem, "operation")):
        assert len(frame) == len(legacy)
        for row in frame.to_dict("records"):
            label = row[key] if key == "name" else f"[CUDA memcpy {row[key]}]"
            num, mn, mx, avg, total = legacy[label]
            assert (row["count"], row["min_ns"], row["max_ns"], row["total_ns"]) == (num, mn, mx, total)
            assert row["avg_ns"] == pytest.approx(avg)
    assert dict(zip(ds.memcpy_summary["operation"], ds.memcpy_summary["total_bytes"])) == {
        "HtoD": size["[CUDA memcpy HtoD]"], "DtoH": size["[CUDA memcpy DtoH]"]}


def _in_stage_where() -> str:
    """Kernels whose launch call started inside a range of that name on the same thread."""
    return """
    WHERE k.rowid IN (
        SELECT k2.rowid FROM CUPTI_ACTIVITY_KIND_KERNEL AS k2
        JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS r ON r.correlationId = k2.correlationId
        WHERE EXISTS (SELECT 1 FROM NVTX_EVENTS AS n LEFT JOIN StringIds AS t ON t.id = n.textId
                      WHERE coalesce(n.text, t.value) = ? AND n.eventType IN (59, 60)
                        AND n.globalTid = r.globalTid AND r.start BETWEEN n.start AND n.end))"""


def test_stage_filter_equals_independent_query(plain) -> None:
    db = plain(VLM)
    ks = ns.kernel_summary(db, [ALL_STAGES, *VLM_STAGES])
    assert list(dict.fromkeys(ks["stage"])) == [ALL_STAGES, *VLM_STAGES]
    for stage in VLM_STAGES:
        part = ks[ks["stage"] == stage]
        _assert_matches(part, _kern_sum(db, _in_stage_where(), (stage,)))
        assert part["time_pct"].sum() == pytest.approx(100)
    per_stage = ks[ks["stage"] != ALL_STAGES].groupby("stage")["count"].sum().to_dict()
    assert per_stage == {"vision": 165, "projector": 9, "prefill": 783, "decode": 6600}
    assert read(VLM, stage="decode").kernel_summary["total_ns"].sum() == 13_873_072


def test_stage_by_registered_string_and_domain(plain) -> None:
    """cuDF names its ranges via StringIds (textId) inside named domains."""
    db = plain(CUDF)
    ks = ns.kernel_summary(db, ["GROUPBY_AGG", "cudf_python:GROUPBY_AGG", "agg-all"])
    totals = ks.groupby("stage")["count"].sum().to_dict()
    assert totals["GROUPBY_AGG"] == totals["cudf_python:GROUPBY_AGG"] == 194
    for stage in ("GROUPBY_AGG", "agg-all"):
        _assert_matches(ks[ks["stage"] == stage], _kern_sum(db, _in_stage_where(), (stage,)))


def test_nested_repeated_ranges_count_each_launch_once(plain, tmp_path: Path) -> None:
    """An extra copy of every 'decode' range nested in itself must not change the numbers."""
    db = tmp_path / "nested.sqlite"
    shutil.copy(plain(VLM), db)
    con = sqlite3.connect(db)
    con.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) SELECT start + 1, end - 1, "
                "eventType, text, globalTid FROM NVTX_EVENTS WHERE text = 'decode'")
    con.commit()
    con.close()
    nested = ns.kernel_summary(db, ["decode"])
    original = ns.kernel_summary(plain(VLM), ["decode"])
    assert nested.equals(original)


def test_missing_or_empty_range_is_an_input_error(plain, tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"small_vlm.*NVTX range 'nope' not found"):
        read(VLM, stage="nope")
    with pytest.raises(InputError, match=r"cudf-groupby.sqlite: NVTX range 'libcudf:from_arrow' contains no kernel"):
        ns.kernel_summary(CUDF, ["libcudf:from_arrow"])
    with pytest.raises(InputError, match="no NVTX trace"):
        ns.kernel_summary(plain(PERLMUTTER), ["main"])


def test_nvtx_memcpy_api_and_gpus_of_the_h200_capture(plain) -> None:
    ds = read(VLM)
    assert ds.provenance.format == "nsys-sqlite"
    assert ds.provenance.format_version == "nsys 2025.3.2.0 / export schema 3.20.3"
    assert ds.provenance.path == str(VLM)
    (gpu,) = ds.gpus
    assert (gpu.name, gpu.index, gpu.compute_capability, gpu.sm_count) == ("NVIDIA H200", 0, "9.0", 132)
    assert (gpu.memory_bytes, gpu.memory_bandwidth_bytes_per_s, gpu.sm_clock_hz) == (150109880320, 4.814304e12, 1.98e9)
    assert gpu.driver == "580.159.04"

    con = sqlite3.connect(plain(VLM))
    ranges: dict[str, list[int]] = {}
    for text, d in con.execute("SELECT text, end - start FROM NVTX_EVENTS WHERE eventType = 59"):
        ranges.setdefault(text, []).append(d)
    nvtx = ds.nvtx_summary.set_index("name")
    assert list(nvtx.index) == ["decode", "prefill", "vision", "projector"]
    for name, durations in ranges.items():
        row = nvtx.loc[name]
        assert (row["style"], row["count"], row["total_ns"]) == ("PushPop", 3, sum(durations))
        assert row["med_ns"] == statistics.median(durations)
        assert row["stddev_ns"] == pytest.approx(statistics.stdev(durations))

    mem = ds.memcpy_summary.set_index("operation")
    copies = con.execute("SELECT count(*), sum(end - start), sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY "
                         "WHERE copyKind = 1").fetchone()
    sets = con.execute("SELECT count(*), sum(end - start), sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMSET").fetchone()
    assert tuple(mem.loc["HtoD", ["count", "total_ns", "total_bytes"]]) == copies
    assert tuple(mem.loc["memset", ["count", "total_ns", "total_bytes"]]) == sets

    api = ds.api_summary
    assert list(api.columns) == API_SUMMARY_COLUMNS
    launches = con.execute("SELECT count(*), sum(r.end - r.start) FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r "
                           "JOIN StringIds AS s ON s.id = r.nameId WHERE s.value = 'cudaLaunchKernel_v7000'").fetchone()
    con.close()
    row = api.set_index("name").loc["cudaLaunchKernel"]  # ABI suffix dropped, as nsys prints it
    assert (row["count"], row["total_ns"]) == launches


def test_gpus_of_other_schemas() -> None:
    perl = read(PERLMUTTER)
    assert perl.provenance.format_version == "nsys 2024.5.1.113 / export schema 3.13.2"
    assert [(g.index, g.name, g.compute_capability, g.sm_count) for g in perl.gpus] == [
        (i, "NVIDIA A100-SXM4-80GB", "8.0", 108) for i in range(4)]
    assert perl.gpus[0].memory_bytes == 84990623744
    assert list(perl.memcpy_summary["operation"]) == ["HtoD", "DtoH"]
    assert perl.nvtx_summary is None

    old = read(CUDF)
    assert old.provenance.format_version is None and "legacy" in old.provenance.notes[0]
    assert [(g.index, g.name, g.compute_capability, g.sm_count, g.sm_clock_hz) for g in old.gpus] == [
        (0, "Quadro RTX 8000", "7.5", 72, 1.77e9), (1, "Quadro RTX 8000", "7.5", 72, 1.77e9)]
    assert old.gpus[0].memory_bytes == 48601 * 2**20
    assert old.gpus[0].memory_bandwidth_bytes_per_s is None  # unit not stated by the 2020 schema


def _walk(groups: list[list[tuple[int, int]]]) -> dict:
    """Timeline figures of kernels (start, end) in start order, one list per stage instance."""
    gaps, span, kern, n = [], 0, 0, 0
    for group in groups:
        reach = None
        for s, e in group:
            if reach is not None and s > reach:
                gaps.append(s - reach)
            reach = e if reach is None else max(reach, e)
            kern += e - s
            n += 1
        span += max(e for _, e in group) - group[0][0]
    return {"launches": n, "kernel_ns": kern, "idle_ns": sum(gaps), "idle_count": len(gaps),
            "idle_med_ns": statistics.median(gaps), "span_ns": span, "busy_ns": span - sum(gaps)}


def test_stage_timeline_equals_python_walk(plain) -> None:
    db = plain(VLM)
    tl = ns.stage_timeline(db, [ALL_STAGES, "projector"]).set_index("stage")
    con = sqlite3.connect(db)
    kernels = con.execute("SELECT k.start, k.end, r.start FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
                          "JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS r ON r.correlationId = k.correlationId "
                          "ORDER BY k.start").fetchall()
    ranges = con.execute("SELECT start, end FROM NVTX_EVENTS WHERE text = 'projector' ORDER BY start").fetchall()
    con.close()
    everything = _walk([[(s, e) for s, e, _ in kernels]])
    per_range = _walk([[(s, e) for s, e, call in kernels if a <= call <= b] for a, b in ranges])
    for stage, want in ((ALL_STAGES, everything), ("projector", per_range)):
        got = tl.loc[stage]
        for col, value in want.items():
            assert got[col] == value, (stage, col)
    assert tl.loc["projector", "instances"] == 3 and tl.loc["projector", "launches"] == 9


def test_whole_capture_timeline_per_device(plain, tmp_path: Path) -> None:
    """The whole capture's timeline (computed in DuckDB) per device, here with the kernels dealt
    round-robin to three devices, equals the Python walk of each device's kernels."""
    db = tmp_path / "three.sqlite"
    shutil.copy(plain(VLM), db)
    con = sqlite3.connect(db)
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = rowid % 3")
    con.commit()
    kernels = con.execute("SELECT deviceId, start, end FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start, end").fetchall()
    con.close()
    tl = ns.stage_timeline(db, [ALL_STAGES]).set_index("device")
    assert list(tl.index) == [0, 1, 2]
    for device in range(3):
        want = _walk([[(s, e) for d, s, e in kernels if d == device]])
        assert {col: tl.loc[device, col] for col in want} == want, device


def test_bad_files_are_one_line_input_errors(plain, tmp_path: Path) -> None:
    source = plain(VLM)
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(source.read_bytes()[: source.stat().st_size // 2])
    with pytest.raises(InputError, match="cut.sqlite: unreadable nsys SQLite export"):
        read(cut)
    stub = tmp_path / "stub.sqlite"
    stub.write_bytes(source.read_bytes()[:100])
    with pytest.raises(InputError):
        read(stub)
    no_cuda = tmp_path / "no_cuda.sqlite"
    con = sqlite3.connect(no_cuda)
    con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    con.execute("CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, text TEXT)")
    con.commit()
    con.close()
    with pytest.raises(InputError, match="without CUPTI_ACTIVITY_KIND_KERNEL"):
        read(no_cuda)
    with pytest.raises(InputError, match="not an SQLite file"):
        ns.kernel_summary(DATA / "pipit/nbody-nvtx_trace.csv")
    with pytest.raises(InputError) as err:
        read(cut)
    assert "\n" not in str(err.value)


def test_reader_never_writes_the_input(plain) -> None:
    db = plain(VLM)
    before = (db.stat().st_mtime_ns, db.stat().st_size)
    ns.kernel_summary(db, VLM_STAGES)
    ns.stage_timeline(db, VLM_STAGES)
    assert (db.stat().st_mtime_ns, db.stat().st_size) == before
    assert not math.isnan(read(VLM).kernel_summary["stddev_ns"].iloc[0])


def test_instances_of_a_stage(plain) -> None:
    """NAME/INDEX/COUNT picks instances by start order; here the 2nd and 3rd 'prefill'."""
    db = plain(VLM)
    ks = ns.kernel_summary(db, ["prefill/2/2"])
    assert set(ks["stage"]) == {"prefill/2/2"}
    where = """
    WHERE k.rowid IN (
        SELECT k2.rowid FROM CUPTI_ACTIVITY_KIND_KERNEL AS k2
        JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS r ON r.correlationId = k2.correlationId
        JOIN (SELECT start, end, globalTid FROM NVTX_EVENTS WHERE text = 'prefill' ORDER BY start LIMIT 2 OFFSET 1) AS n
          ON n.globalTid = r.globalTid AND r.start BETWEEN n.start AND n.end)"""
    _assert_matches(ks, _kern_sum(db, where))
    assert ns.stage_spec("prefill/2/2") == ("prefill", 2, 2)
    assert ns.stage_spec("decode") == ("decode", None, None)
    with pytest.raises(InputError, match="stage 'prefill/4': NVTX range 'prefill' has 3 instance\\(s\\), so there is no instance 4"):
        ns.kernel_summary(db, ["prefill/4"])


def test_one_range_per_call(plain, tmp_path: Path) -> None:
    """A stage of thousands of instances (one NVTX range around each call in 'decode') counts the
    same launches as 'decode', with one timeline instance per range that launched a kernel; each
    call finds its range by an index search on (stage, thread, start), not by walking the thread's
    ranges (a stage of 2904 instances took 116 s so)."""
    db = tmp_path / "ticks.sqlite"
    shutil.copy(plain(VLM), db)
    con = sqlite3.connect(db)
    added = con.execute(
        "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) SELECT r.start, r.start, 59, 'call', "
        "r.globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r JOIN NVTX_EVENTS AS d ON d.text = 'decode' "
        "AND d.globalTid = r.globalTid AND r.start BETWEEN d.start AND d.end").rowcount
    con.commit()
    con.close()
    assert added > 2000
    reading = ns.read_stages(db, ["call", "decode"])
    per_call, decode = (reading.summary[reading.summary["stage"] == s].drop(columns="stage") for s in ("call", "decode"))
    assert per_call.reset_index(drop=True).equals(decode.reset_index(drop=True))
    timeline = reading.timeline.set_index("stage")
    assert reading.instances["call"]["total"] == added
    assert timeline.loc["call", "launches"] == timeline.loc["decode", "launches"] == 6600
    assert timeline.loc["call", "instances"] == 6600  # each call here launches one kernel
    with ns._open(db, ns._LAUNCH_TABLES) as cap, cap.staged(["call"]):
        plan = [row[3] for row in cap.conn.execute("EXPLAIN QUERY PLAN " + q.CREATE_STAGE_CALLS)]
    assert "SEARCH h USING COVERING INDEX stage_ranges_at (stage=? AND tid=? AND start<?)" in plan


@pytest.mark.parametrize("stages", [VLM_STAGES, [ALL_STAGES], [ALL_STAGES, "projector"]], ids=str)
def test_read_stages_equals_the_readers_one_by_one(plain, stages: list[str]) -> None:
    """One pass over the file gives what each reader gives alone."""
    db = plain(VLM)
    reading = ns.read_stages(db, stages)
    assert reading.summary.equals(ns.kernel_summary(db, stages))
    assert reading.instances == ns.stage_instances(db, stages)
    assert reading.graphs.equals(ns.graph_summary(db, stages))
    assert reading.timeline.equals(ns.stage_timeline(db, stages))
    named = [s for s in stages if s != ALL_STAGES]
    modules = ns.module_kernels(db, named) if named else ns.ModuleAttribution(None, None, {})
    assert reading.module_form == modules.form and reading.module_classes == modules.classes
    assert (reading.module_kernels is None and modules.kernels is None) or reading.module_kernels.equals(modules.kernels)
    assert set(reading.summary["stage"]) == set(stages)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_capture_facts_are_those_of_the_whole_dataset(plain, path: Path) -> None:
    """What a build takes from a capture run's export besides its stages (provenance, GPUs, CUDA API
    summary) is what the whole Dataset holds, without the summaries it does not use."""
    db = plain(path)
    facts, dataset = ns.capture_facts(db), ns.READER.read(db)
    assert facts.provenance == dataset.provenance and facts.gpus == dataset.gpus
    assert (facts.api_summary is None) == (dataset.api_summary is None)
    assert facts.api_summary is None or facts.api_summary.equals(dataset.api_summary)
    assert facts.kernel_summary is facts.nvtx_summary is facts.memcpy_summary is None
