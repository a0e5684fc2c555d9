"""Issue 9's crashes and silently accepted garbage, one by one: each is now a one-line InputError
naming the file (and the row or line), or — for the committed sample — a correct reading."""
from __future__ import annotations

import gzip
import json
import lzma
import shutil
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from generator.cli import main
from generator.commands import compare as compare_command
from generator.errors import InputError
from generator.pipeline.config import load_report
from generator.readers import read
from generator.readers.inflate import FLOOR, FORMATS, zstd
from generator.readers.nsys_sqlite import capture_facts, kernel_summary
from generator.run_layout import COMPRESSED

DATA = Path(__file__).parent / "data"
STATS = DATA / "nsys-stats-2025"
GEMM_SQLITE = DATA / "gemm" / "nsys" / "report.sqlite.xz"


def one_line(capsys: pytest.CaptureFixture[str], argv: list[str], code: int = 2) -> str:
    assert main(argv) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    return err


def test_committed_memcpy_size_sample_is_read(capsys: pytest.CaptureFixture[str]) -> None:
    """It raised KeyError: 'total_ns' (a size-only table has no times)."""
    memcpy = read(STATS / "small_vlm_cuda_gpu_mem_size_sum.csv").memcpy_summary
    assert memcpy["operation"].tolist() == ["HtoD", "memset"]
    assert memcpy["count"].tolist() == [135, 35]
    assert memcpy["total_bytes"].tolist() == pytest.approx([330.315e6, 0.025e6])
    assert main(["inspect", str(STATS / "small_vlm_cuda_gpu_mem_size_sum.csv")]) == 0


@pytest.mark.parametrize(("cell", "problem"), [
    ("-5", "is not a number from 0"), ("inf", "is not a number from 0"), ("1e400", "is not a number from 0"),
    ("99999999999999999999999", "is not a number from 0"), ("abc", "is not a number"),
])
def test_bad_numbers_in_stats_csv_name_the_line(cell: str, problem: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    lines = (STATS / "small_vlm_prefill_cuda_gpu_kern_sum.csv").read_text(encoding="utf-8").splitlines()
    cells = lines[3].split(",", 8)
    cells[2] = cell  # Instances
    lines[3] = ",".join(cells)
    path = tmp_path / "kern_sum.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    err = one_line(capsys, ["inspect", str(path)])
    assert f"{path}: line 4: Instances {cell!r} {problem}" in err


@pytest.mark.parametrize(("sql", "problem"), [
    ("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start - 5 WHERE rowid = 3",
     r"kernel summary row \d+ '.+': min_ns is -5(\.0)?; expected a number from 0"),
    ("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 999999999 WHERE rowid = 1",
     r"kernel summary row \d+: no name \(empty or missing\)"),
    ("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = 9223372036854775807 WHERE rowid = 1",
     r"kernel summary row \d+ '.+': total_ns is .*; expected a number from 0 to 9\.01e\+15"),
])
def test_bad_rows_in_sqlite_are_named(sql: str, problem: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.sqlite"
    path.write_bytes(lzma.decompress(GEMM_SQLITE.read_bytes()))
    with sqlite3.connect(path) as con:
        con.execute(sql)
    with pytest.raises(InputError, match=problem) as caught:
        read(path)
    assert caught.value.path == str(path)


def test_wal_sqlite_is_read_without_files_beside_it(tmp_path: Path) -> None:
    path = tmp_path / "wal.sqlite"
    path.write_bytes(lzma.decompress(GEMM_SQLITE.read_bytes()))
    with sqlite3.connect(path) as con:
        assert con.execute("PRAGMA journal_mode = WAL").fetchone() == ("wal",)
    before = path.read_bytes()
    assert read(path).kernel_summary["count"].sum() > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wal.sqlite"] and path.read_bytes() == before


def damaged_page(tmp_path: Path, page: int, name: str = "damaged.sqlite") -> Path:
    """The gemm export with b-tree page ``page`` (1-based) claiming 65535 cells."""
    data = bytearray(lzma.decompress(GEMM_SQLITE.read_bytes()))
    at = (page - 1) * int.from_bytes(data[16:18], "big")
    data[at + 3: at + 5] = b"\xff\xff"
    path = tmp_path / name
    path.write_bytes(bytes(data))
    return path


# Pages of tests/data/gemm/nsys/report.sqlite (SQLite's dbstat): 2 = the root of StringIds, 25 = the
# one page of CUPTI_ACTIVITY_KIND_KERNEL, 86 = META_DATA_EXPORT, 21 = PROFILER_OVERHEAD (no read uses it).
STRING_IDS_ROOT, KERNELS, META_DATA_EXPORT, PROFILER_OVERHEAD = 2, 25, 86, 21
#: 27 = the one page of NVTX_EVENTS, 24 = the root of CUPTI_ACTIVITY_KIND_RUNTIME
NVTX_EVENTS, RUNTIME_ROOT = 27, 24


@pytest.mark.parametrize(("page", "table"), [(STRING_IDS_ROOT, "StringIds"), (KERNELS, "CUPTI_ACTIVITY_KIND_KERNEL")])
def test_sqlite_failing_quick_check_in_a_table_read_is_refused(page: int, table: str, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = damaged_page(tmp_path, page)
    with pytest.raises(InputError, match=rf"unreadable nsys SQLite export \(quick_check of {table}: ") as caught:
        kernel_summary(path)
    assert "\n" not in str(caught.value)
    assert f"{path}: unreadable nsys SQLite export (quick_check of {table}: " in one_line(capsys, ["inspect", str(path)])
    path.write_bytes(lzma.decompress(GEMM_SQLITE.read_bytes()) + b"garbage")
    with pytest.raises(InputError, match=r"\(7 bytes of garbage after its 86 pages\)"):
        read(path)


def test_sqlite_damage_only_where_a_read_does_not_look_changes_nothing(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """quick_check runs on the tables a read takes rows from: a broken page of a table no read uses
    leaves every number as it was, and one of a table only the Dataset read uses (META_DATA_EXPORT)
    refuses that read while the kernel summary of the same file stands."""
    intact = tmp_path / "intact.sqlite"
    intact.write_bytes(lzma.decompress(GEMM_SQLITE.read_bytes()))
    unused = damaged_page(tmp_path, PROFILER_OVERHEAD, "unused.sqlite")
    with sqlite3.connect(f"{unused.as_uri()}?mode=ro", uri=True) as con, \
            pytest.raises(sqlite3.DatabaseError, match="malformed"):  # the file is damaged
        con.execute("SELECT * FROM PROFILER_OVERHEAD").fetchall()
    expected, got = read(intact), read(unused)
    for field in ("kernel_summary", "nvtx_summary", "memcpy_summary", "api_summary"):
        pd.testing.assert_frame_equal(getattr(got, field), getattr(expected, field))
    assert got.gpus == expected.gpus and got.provenance.format_version == expected.provenance.format_version
    assert main(["inspect", str(unused)]) == 0
    capsys.readouterr()

    meta = damaged_page(tmp_path, META_DATA_EXPORT, "meta.sqlite")
    pd.testing.assert_frame_equal(kernel_summary(meta), kernel_summary(intact))
    assert kernel_summary(meta)["count"].tolist() == [2, 2]
    assert "quick_check of META_DATA_EXPORT: " in one_line(capsys, ["inspect", str(meta)])


def test_capture_facts_check_only_the_tables_they_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A capture run's facts (provenance, GPUs, CUDA API summary) stand with a broken NVTX page,
    which refuses the whole Dataset, and are refused with a broken page of the runtime calls."""
    intact = tmp_path / "intact.sqlite"
    intact.write_bytes(lzma.decompress(GEMM_SQLITE.read_bytes()))
    nvtx = damaged_page(tmp_path, NVTX_EVENTS, "nvtx.sqlite")
    with pytest.raises(InputError, match=r"quick_check of NVTX_EVENTS: "):
        read(nvtx)
    facts, expected = capture_facts(nvtx), capture_facts(intact)
    assert facts.gpus == expected.gpus and facts.api_summary.equals(expected.api_summary)
    with sqlite3.connect(intact) as con:  # every runtime call, counted independently
        assert facts.api_summary["count"].sum() == con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0] == 997
    runtime = damaged_page(tmp_path, RUNTIME_ROOT, "runtime.sqlite")
    with pytest.raises(InputError, match=r"\(quick_check of CUPTI_ACTIVITY_KIND_RUNTIME: ") as caught:
        capture_facts(runtime)
    assert caught.value.path == str(runtime) and "\n" not in str(caught.value)


def test_sqlite_shorter_than_its_header_states_is_refused(tmp_path: Path) -> None:
    """Cutting the last page (META_DATA_EXPORT) leaves the kernel summary's tables whole, but the
    header still states 86 pages; where the header's count is not valid (offsets 24 and 92 differ,
    as SQLite before 3.7.0 left them) a partial last page is refused."""
    data = lzma.decompress(GEMM_SQLITE.read_bytes())
    path = tmp_path / "cut.sqlite"
    path.write_bytes(data[:85 * 4096])
    with pytest.raises(InputError, match=r"\(truncated: 348160 bytes, its header states 86 pages of 4096 bytes\)"):
        kernel_summary(path)
    legacy = bytearray(data[:85 * 4096 + 100])
    legacy[92:96] = (int.from_bytes(legacy[24:28], "big") + 1).to_bytes(4, "big")
    path.write_bytes(bytes(legacy))
    with pytest.raises(InputError, match=r"\(100 bytes after its last whole page of 4096 bytes\)"):
        kernel_summary(path)


@pytest.mark.parametrize("suffix", [".xz", ".zst"])
@pytest.mark.parametrize("damage", ["truncated", "garbage after", "half a second stream"])
def test_damaged_compressed_file_is_refused(damage: str, suffix: str, tmp_path: Path) -> None:
    plain = lzma.decompress((STATS / "small_vlm_cuda_gpu_kern_sum.csv.xz").read_bytes())
    raw = lzma.compress(plain) if suffix == ".xz" else zstd().compress(plain)
    data = {"truncated": raw[:-30], "garbage after": raw + b"not compressed at all", "half a second stream": raw + raw[:40]}
    path = tmp_path / f"kern_sum.csv{suffix}"
    path.write_bytes(data[damage])
    name = {".xz": "xz", ".zst": "zstd"}[suffix]
    with pytest.raises(InputError, match=rf"kern_sum\.csv\{suffix}: corrupt or truncated {name} file"):
        read(path)


def test_zstd_frames_and_skippable_frames_are_read(tmp_path: Path) -> None:
    """Concatenated frames (``cat a.zst b.zst``) and the skippable frames pzstd writes read as the
    data they hold, as ``zstd -d`` reads them."""
    plain = lzma.decompress((STATS / "small_vlm_cuda_gpu_kern_sum.csv.xz").read_bytes())
    half = len(plain) // 2
    skippable = b"\x50\x2a\x4d\x18" + (4).to_bytes(4, "little") + b"kr!!"
    path = tmp_path / "kern_sum.csv.zst"
    path.write_bytes(skippable + zstd().compress(plain[:half]) + skippable + zstd().compress(plain[half:], level=19))
    (tmp_path / "kern_sum.csv").write_bytes(plain)
    read_zst, read_plain = read(path).kernel_summary, read(tmp_path / "kern_sum.csv").kernel_summary
    assert len(read_zst) == 52 and read_zst.equals(read_plain)


def test_xz_stream_padding_is_read_and_zeros_between_zstd_frames_are_refused(tmp_path: Path) -> None:
    """xz allows zero bytes (stream padding) between and after streams, as ``xz -d`` reads them;
    zstd has no padding, so zeros after a frame are garbage."""
    plain = lzma.decompress((STATS / "small_vlm_cuda_gpu_kern_sum.csv.xz").read_bytes())
    half = len(plain) // 2
    padded = tmp_path / "kern_sum.csv.xz"
    padded.write_bytes(lzma.compress(plain[:half]) + b"\0" * 8 + lzma.compress(plain[half:]) + b"\0" * 4)
    assert len(read(padded).kernel_summary) == 52
    zeros = tmp_path / "kern_sum.csv.zst"
    zeros.write_bytes(zstd().compress(plain[:half]) + b"\0" * 8 + zstd().compress(plain[half:]))
    with pytest.raises(InputError, match=r"corrupt or truncated zstd file \(not zstd data, or garbage after"):
        read(zeros)


def test_decompression_bombs_are_refused(tmp_path: Path) -> None:
    zeros = b"\0" * (FLOOR + (1 << 20))
    (tmp_path / "bomb.sqlite.xz").write_bytes(lzma.compress(zeros, preset=1))
    (tmp_path / "bomb.ncu-rep.zst").write_bytes(zstd().compress(zeros, level=1))
    for bomb in sorted(tmp_path.iterdir()):
        with pytest.raises(InputError, match=rf"{bomb.name}: decompresses to more than \d+ bytes"):
            read(bomb)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bomb.ncu-rep.zst", "bomb.sqlite.xz"]
    trace = tmp_path / "trace.json.gz"
    trace.write_bytes(gzip.compress(b'{"traceEvents": [' + b" " * (FLOOR + 1) + b"]}", compresslevel=1))
    with pytest.raises(InputError, match=r"trace\.json\.gz: decompresses to more than"):
        read(trace)


def test_deep_json_and_long_csv_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = tmp_path / "deep_trace.json"
    deep.write_text('{"traceEvents": [' + "[" * 100_000 + "]" * 100_000 + "]}")
    assert "JSON nested too deeply" in one_line(capsys, ["inspect", str(deep)])
    lines = (STATS / "small_vlm_cuda_api_sum.csv").read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2] + "x" * (1 << 20)
    wide = tmp_path / "api_sum.csv"
    wide.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert "field larger than field limit" in one_line(capsys, ["inspect", str(wide)])


@pytest.mark.parametrize(("date", "problem"), [
    ("2026-02-30", "not valid YAML (day is out of range for month)"),
    ("1969-12-31", "versions[0].date: 1969-12-31 is outside 1970-01-01"),
    ("2107-01-01", "versions[0].date: 2107-01-01 is outside"),
])
def test_dates_a_build_cannot_stamp(date: str, problem: str, tmp_path: Path) -> None:
    path = tmp_path / "report.yaml"
    path.write_text(f"id: r\ntitle: {{en: R, zh: R}}\nversions: [{{id: v, title: {{en: V, zh: V}}, date: {date}, "
                    f"inputs: {{ncu: [{DATA}/ESMM-Research/metrics.csv]}}}}]\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_report(path)
    assert problem in str(caught.value)


def test_yaml_bombs_and_infinite_peaks(tmp_path: Path) -> None:
    laughs = tmp_path / "laughs.yaml"
    rows = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    rows += [f"{c}: &{c} [{', '.join(['*' + p] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi")]
    laughs.write_text("\n".join(rows) + "\n")
    with pytest.raises(InputError, match="more than 100000 values once its aliases are expanded"):
        load_report(laughs)
    peaks = tmp_path / "peaks.yaml"
    peaks.write_text(f"id: r\ntitle: {{en: R, zh: R}}\ngpu: {{peak_tflops: {{fp16: .inf}}}}\nversions: "
                     f"[{{id: v, title: {{en: V, zh: V}}, date: 2026-01-01, inputs: {{ncu: [{DATA}/ESMM-Research/metrics.csv]}}}}]\n")
    with pytest.raises(InputError, match=r"gpu\.peak_tflops\.fp16: give .*a positive, finite number \(got \.inf\)"):
        load_report(peaks)


def test_globs_are_bounded(tmp_path: Path) -> None:
    path = tmp_path / "report.yaml"
    path.write_text("id: r\ntitle: {en: R, zh: R}\nversions: [{id: v, title: {en: V, zh: V}, date: 2026-01-01, "
                    "inputs: {ncu: ['/**/*.csv']}}]\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"versions\[0\]\.inputs\.ncu\[0\]: '/\*\*/\*\.csv' searches all of /"):
        load_report(path)
    many = tmp_path / "many"
    many.mkdir()
    for i in range(10_001):
        (many / f"{i}.csv").touch()
    path.write_text("id: r\ntitle: {en: R, zh: R}\nversions: [{id: v, title: {en: V, zh: V}, date: 2026-01-01, "
                    "inputs: {ncu: ['many/*.csv']}}]\n", encoding="utf-8")
    with pytest.raises(InputError, match="matches more than 10000 paths"):
        load_report(path)


def test_compare_exits_2_on_anything_but_a_regression(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    ncu = str(DATA / "ESMM-Research" / "metrics.csv")
    not_profile = tmp_path / "prices.csv"
    not_profile.write_text("date,close\n2024-01-02,10.9\n")
    assert "unrecognized format" in one_line(capsys, ["compare", ncu, str(not_profile)])

    def broken(path: Path) -> None:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(compare_command, "kernel_table", broken)
    err = one_line(capsys, ["compare", ncu, ncu])
    assert "internal error (ZeroDivisionError: a bug)" in err


def test_json_output_of_inspect_escapes_control_characters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "names.sqlite"
    path.write_bytes(lzma.decompress(GEMM_SQLITE.read_bytes()))
    with sqlite3.connect(path) as con:
        con.execute("UPDATE StringIds SET value = char(27) || '[31m' || char(7) || value WHERE id IN "
                    "(SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL)")
    assert main(["inspect", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    names = [row["name"] for row in json.loads(out)[0]["kernel_summary"][0]["top"]]
    assert names and all(name.startswith("\ufffd[31m\ufffd") for name in names)
    assert "\x1b" not in out and "\x07" not in out


def test_unreadable_directory_as_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(STATS / "small_vlm_cuda_api_sum.csv", tmp_path / "ok.csv")
    assert "is a directory" in one_line(capsys, ["inspect", str(tmp_path)])


def test_deep_yaml_and_huge_stage_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text("id: " + "[" * 20_000 + "]" * 20_000 + "\n")
    with pytest.raises(InputError, match=r"deep\.yaml: not valid YAML \(nested too deeply\)"):
        load_report(deep)
    sqlite = str(DATA / "h200-small" / "small_vlm.nsys.sqlite.xz")
    err = one_line(capsys, ["inspect", "--stage", "prefill/" + "9" * 30, sqlite])
    assert f"NVTX range 'prefill' has 3 instance(s), so there is no instance {'9' * 30}" in err


def test_every_compressed_suffix_a_run_may_hold_has_a_reader() -> None:
    assert list(FORMATS) == list(COMPRESSED)
