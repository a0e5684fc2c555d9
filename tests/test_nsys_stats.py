"""nsys stats readers: console text and trace CSV of real captures, CSV layouts, fuzzed input."""
from __future__ import annotations

import csv
import io
import math
import statistics
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.errors import InputError
from generator.model import ALL_STAGES, KERNEL_SUMMARY_COLUMNS, MEMCPY_SUMMARY_COLUMNS, NVTX_SUMMARY_COLUMNS
from generator.readers import detect, read
from tests.conftest import DATA

DEEP = DATA / "nsight-systems-deep-dive"
V3 = DEEP / "vector_add_profile_v3.stats_console.txt"
STREAMED = DEEP / "vector_add_profile_streamed.stats_console.txt"
TRACE = DATA / "pipit/nbody-nvtx_trace.csv"
VECTOR_ADD = "vectorAdd(const float *, const float *, float *, int)"


def _rows(frame, columns):
    return [tuple(r) for r in frame[columns].itertuples(index=False)]


def test_console_v3_equals_printed_numbers() -> None:
    ds = read(V3)
    assert ds.provenance.format == "nsys-stats-console"
    assert _rows(ds.kernel_summary, KERNEL_SUMMARY_COLUMNS) == [
        (ALL_STAGES, VECTOR_ADD, None, 1010, 1831281, 1813.1, 1823.0, 1791, 4705, 93.3, 100.0)]
    assert _rows(ds.nvtx_summary, NVTX_SUMMARY_COLUMNS) == [
        ("Profile_Loop", "PushPop", 1, 3481709, 3481709.0, 3481709.0, 3481709, 3481709, 0.0, 95.0),
        ("Warmup", "PushPop", 1, 182472, 182472.0, 182472.0, 182472, 182472, 0.0, 5.0)]
    assert _rows(ds.memcpy_summary, MEMCPY_SUMMARY_COLUMNS) == [
        ("HtoD", 2, 2432, 1216.0, 1216.0, 1024, 1408, 271.5, 0.0),
        ("DtoH", 1, 2336, 2336.0, 2336.0, 2336, 2336, 0.0, 0.0)]
    api = ds.api_summary.set_index("name")
    assert list(api.index) == ["cudaMalloc", "cudaLaunchKernel", "cudaFree", "cudaMemcpy",
                               "cudaDeviceSynchronize", "cuModuleGetLoadingMode"]
    assert tuple(api.loc["cudaLaunchKernel"]) == (1010, 3201638, 3169.9, 2922.0, 0, 138218, 5124.5, 2.9)
    assert ds.gpus == []  # the console text names no device table


def test_console_streamed_equals_printed_numbers() -> None:
    ds = read(STREAMED)
    assert _rows(ds.kernel_summary, KERNEL_SUMMARY_COLUMNS) == [
        (ALL_STAGES, VECTOR_ADD, None, 410, 14835396, 36183.9, 27904.0, 27360, 374496, 52212.4, 100.0)]
    assert _rows(ds.nvtx_summary, NVTX_SUMMARY_COLUMNS) == [
        ("Streamed_Loop", "PushPop", 1, 2119060716, 2119060716.0, 2119060716.0, 2119060716, 2119060716, 0.0, 99.8),
        ("Warmup", "PushPop", 1, 3873115, 3873115.0, 3873115.0, 3873115, 3873115, 0.0, 0.2),
        ("Create streams", "PushPop", 1, 44220, 44220.0, 44220.0, 44220, 44220, 0.0, 0.0)]
    assert _rows(ds.memcpy_summary, MEMCPY_SUMMARY_COLUMNS) == [
        ("HtoD", 802, 2122685654, 2646740.2, 2696327.5, 1946597, 8562357, 473005.2, 40_400_000_000),
        ("DtoH", 400, 1180787472, 2951968.7, 2884376.0, 2086598, 6008847, 291259.5, 20_000_000_000)]
    assert len(ds.api_summary) == 10 and ds.api_summary["count"].sum() == 2 + 3 + 3 + 4 + 2 + 1200 + 410 + 3 + 4 + 1


def test_console_tables_against_the_text_parsed_by_whitespace() -> None:
    """Every kernel/API row re-read from the text with a plain split must equal ours."""
    for path in (V3, STREAMED):
        lines = path.read_text().splitlines()
        ds = read(path)
        for report, frame in (("cuda_api_sum", ds.api_summary), ("cuda_gpu_kern_sum", ds.kernel_summary)):
            at = next(i for i, line in enumerate(lines) if f"'{report}'" in line) + 4
            printed = []
            while lines[at].strip():
                cells = lines[at].split()
                nums = [float(c.replace(",", "")) for c in cells[:8]]
                printed.append((" ".join(cells[8:]), *nums))
                at += 1
            ours = [(r["name"], r["time_pct"], r["total_ns"], r["count"], r["avg_ns"], r["med_ns"],
                     r["min_ns"], r["max_ns"], r["stddev_ns"]) for r in frame.to_dict("records")]
            assert ours == printed


def test_nvtx_trace_csv_summarized_like_nvtx_sum() -> None:
    ds = read(TRACE)
    with open(TRACE, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 131
    by: dict[str, list[int]] = {}
    for row in rows:
        by.setdefault(row["Name"], []).append(int(row["Duration (ns)"]))
    grand = sum(sum(v) for v in by.values())
    nvtx = ds.nvtx_summary.set_index("name")
    assert sorted(nvtx.index) == sorted(by)
    for name, d in by.items():
        row = nvtx.loc[name]
        assert (row["count"], row["total_ns"], row["min_ns"], row["max_ns"]) == (len(d), sum(d), min(d), max(d))
        assert row["med_ns"] == statistics.median(d)
        assert row["stddev_ns"] == pytest.approx(statistics.stdev(d) if len(d) > 1 else 0.0)
        assert row["time_pct"] == pytest.approx(100 * sum(d) / grand)
    assert nvtx.loc["main", "total_ns"] == 1005098329 and nvtx.loc["bodyForce", "count"] == 20
    assert ds.kernel_summary is None


KERN_NEW = ('"Time (%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)","Min (ns)","Max (ns)",'
            '"StdDev (ns)","Name"\n')
KERN_OLD = "Time(%),Total Time (ns),Instances,Average,Minimum,Maximum,Name\n"


def _write(tmp_path: Path, text: str, name: str = "report.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_csv_layouts_old_and_new(tmp_path: Path) -> None:
    new = _write(tmp_path, "Processing [report.sqlite] with [/opt/nsys/reports/cuda_gpu_kern_sum.py]... \n\n"
                 "NOTICE: Existing SQLite export found: report.sqlite\n" + KERN_NEW +
                 f'"100.0","1831281","1010","1813.1","1823.0","1791","4705","93.3","{VECTOR_ADD}"\n', "new.csv")
    ds = read(new)
    assert ds.provenance.format_version == "nsys 2022.2+ stats layout"
    assert _rows(ds.kernel_summary, KERNEL_SUMMARY_COLUMNS) == [
        (ALL_STAGES, VECTOR_ADD, None, 1010, 1831281, 1813.1, 1823.0, 1791, 4705, 93.3, 100.0)]
    old = _write(tmp_path, KERN_OLD + f'61.5,1126272,1010,1115.1,1088,2304,"{VECTOR_ADD}"\n'
                 "38.5,704000,2,352000.0,1000,703000,plain_kernel\n", "old.csv")
    ks = read(old).kernel_summary
    assert read(old).provenance.format_version == "nsys pre-2022.2 stats layout"
    assert list(ks["name"]) == [VECTOR_ADD, "plain_kernel"]
    assert list(ks["avg_ns"]) == [1115.1, 352000.0]
    assert ks["med_ns"].isna().all() and ks["stddev_ns"].isna().all()
    assert detect(old).format == "nsys-stats"


def test_csv_other_reports_and_units(tmp_path: Path) -> None:
    text = ('Time (%),Total Time (us),Count,Avg (us),Med (us),Min (us),Max (us),StdDev (us),Operation\n'
            '64.3,"2,122,685.654",802,2646.7402,2696.3275,1946.597,8562.357,473.0052,[CUDA memcpy Host-to-Device]\n'
            '35.7,1180787.472,400,2951.9687,2884.376,2086.598,6008.847,291.2595,[CUDA memset]\n\n'
            'Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n'
            '100.0,4646961,1200,3872.5,3760.0,3310,42871,1841.8,cudaMemcpyAsync\n\n'
            'Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Style,Range\n'
            '100.0,44220,1,44220.0,44220.0,44220,44220,0.0,PushPop,"Create, streams"\n')
    ds = read(_write(tmp_path, text))
    mem = ds.memcpy_summary
    assert list(mem["operation"]) == ["HtoD", "memset"]
    assert mem["total_ns"].iloc[0] == pytest.approx(2122685654) and mem["count"].iloc[1] == 400
    assert mem["total_bytes"].isna().all()
    assert tuple(ds.api_summary.iloc[0][["name", "count", "total_ns"]]) == ("cudaMemcpyAsync", 1200, 4646961)
    assert tuple(ds.nvtx_summary.iloc[0][["name", "style", "total_ns"]]) == ("Create, streams", "PushPop", 44220)


def test_bad_stats_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"weird.csv: unknown nsys stats layout: columns Time \(%\), Widgets, Name"):
        read(_write(tmp_path, "Time (%),Widgets,Name\n1.0,2,x\n", "weird.csv"))
    with pytest.raises(InputError, match=r"line 3: 6 fields, header has 7"):
        read(_write(tmp_path, KERN_OLD + "1,2,3,4,5,6,a\n1,2,3,4,5,b\n"))
    with pytest.raises(InputError, match=r"line 2: Instances 'many' is not a number"):
        read(_write(tmp_path, KERN_OLD + "1,2,many,4,5,6,a\n"))
    with pytest.raises(InputError, match="osrt_sum"):
        read(_write(tmp_path, "Time (%),Total Time (ns),Num Calls,Avg (ns),Name\n90.0,100,2,50.0,sem_wait\n"))
    with pytest.raises(InputError, match="stage 'decode': the file summarizes NVTX ranges Profile_Loop, Warmup too"):
        read(V3, stage="decode")  # a whole-capture --stats=true output is not one stage's summary
    plain = _write(tmp_path, "hello,world\n1,2\n", "other.csv")
    with pytest.raises(InputError, match="unrecognized format"):
        read(plain)


# --- property tests ---------------------------------------------------------------------------

names = st.text(alphabet=st.sampled_from(list('abcXYZ_<>:,"* ()&')), min_size=1, max_size=40).filter(
    lambda s: s.strip() == s and s.strip())
counts = st.integers(min_value=1, max_value=10**5)
durations = st.integers(min_value=0, max_value=10**10)  # totals stay below 2**53 ns (104 days)


def _fmt(value: int | float, thousands: bool) -> str:
    return f"{value:,}" if thousands else str(value)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(names, counts, durations, durations), min_size=1, max_size=8,
                     unique_by=lambda r: r[0]),
       quote_all=st.booleans(), thousands=st.booleans(), na_median=st.booleans())
def test_property_kernel_csv_roundtrip(tmp_path: Path, rows, quote_all, thousands, na_median) -> None:
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL if quote_all else csv.QUOTE_MINIMAL, lineterminator="\n")
    writer.writerow(["Time (%)", "Total Time (ns)", "Instances", "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)",
                     "StdDev (ns)", "Name"])
    for name, count, lo, hi in rows:
        lo, hi = min(lo, hi), max(lo, hi)
        writer.writerow(["50.0", _fmt(hi * count, thousands), _fmt(count, thousands), f"{(lo + hi) / 2}",
                         "n/a" if na_median else _fmt(hi, thousands), _fmt(lo, thousands), _fmt(hi, thousands),
                         "0.0", name])
    path = tmp_path / "prop.csv"
    path.write_text(out.getvalue())
    ks = read(path).kernel_summary
    assert list(ks["name"]) == [r[0] for r in rows]
    assert list(ks["count"]) == [r[1] for r in rows]
    assert list(ks["min_ns"]) == [min(r[2], r[3]) for r in rows]
    assert list(ks["total_ns"]) == [max(r[2], r[3]) * r[1] for r in rows]
    assert all(math.isnan(m) for m in ks["med_ns"]) if na_median else list(ks["med_ns"]) == [max(r[2], r[3]) for r in rows]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cells=st.lists(st.lists(st.text(alphabet=st.sampled_from(list('0123456789,."an/ x')), max_size=8),
                               min_size=0, max_size=10), min_size=1, max_size=6))
def test_property_garbage_rows_raise_input_error_not_crash(tmp_path: Path, cells) -> None:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["Time(%)", "Total Time (ns)", "Instances", "Average", "Minimum", "Maximum", "Name"])
    for row in cells:
        writer.writerow(row)
    path = tmp_path / "fuzz.csv"
    path.write_text(out.getvalue())
    try:
        ds = read(path)
    except InputError as exc:
        assert "\n" not in str(exc)
    else:
        written = out.getvalue().splitlines()[1:]
        assert len(ds.kernel_summary) == sum(1 for line in written if line.strip())


def _console(report: str, header: list[str], rows: list[list[str]]) -> str:
    """A table laid out the way nsys prints it: numbers right-aligned, the last column left-aligned."""
    widths = [max(len(c) for c in col) for col in zip(header, *rows)]

    def line(cells: list[str], centre: bool = False) -> str:
        out = [c.center(w) if centre else (c.ljust(w) if i == len(cells) - 1 else c.rjust(w))
               for i, (c, w) in enumerate(zip(cells, widths))]
        return " " + "  ".join(out)

    body = "\n".join(line(r) for r in rows)
    return (f"[6/8] Executing '{report}' stats report\n\n{line(header, centre=True)}\n"
            f"{line(['-' * w for w in widths])}\n{body}\n\n")


console_names = st.text(alphabet=st.sampled_from(list("abcXYZ_<>:,* ()&")), min_size=1, max_size=30).filter(
    lambda s: s.strip() == s)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(console_names, counts, durations, durations), min_size=1, max_size=6,
                     unique_by=lambda r: r[0]))
def test_property_console_table_roundtrip(tmp_path: Path, rows) -> None:
    header = ["Time (%)", "Total Time (ns)", "Instances", "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)",
              "StdDev (ns)", "Name"]
    cells = [["12.5", f"{hi * n:,}", f"{n:,}", f"{(lo + hi) / 2:,.1f}", f"{hi:,.1f}", f"{lo:,}", f"{hi:,}", "n/a", name]
             for name, n, lo, hi in ((r[0], r[1], min(r[2:]), max(r[2:])) for r in rows)]
    path = tmp_path / "console.txt"
    path.write_text("Generating '/tmp/nsys-report-1.qdstrm'\n" + _console("cuda_gpu_kern_sum", header, cells))
    ks = read(path).kernel_summary
    assert list(ks["name"]) == [r[0] for r in rows]
    assert list(ks["count"]) == [r[1] for r in rows]
    assert list(ks["total_ns"]) == [max(r[2:]) * r[1] for r in rows]
    assert list(ks["min_ns"]) == [min(r[2:]) for r in rows]
    assert ks["stddev_ns"].isna().all()
