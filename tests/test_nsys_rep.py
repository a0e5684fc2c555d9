""".nsys-rep: exported through nsys when it is there, a one-line InputError when it is not."""
from __future__ import annotations

import lzma
import shutil
import stat
from pathlib import Path

import pytest

from generator.errors import InputError
from generator.readers import detect, read
from tests.conftest import DATA

DEEP = DATA / "nsight-systems-deep-dive"
REPORTS = sorted(DEEP.glob("*.nsys-rep.xz"))
VLM = DATA / "h200-small/small_vlm.nsys.sqlite.xz"


@pytest.fixture
def no_nsys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("NSYS", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))


def _fake_nsys(tmp_path: Path, body: str) -> Path:
    tool = tmp_path / "nsys"
    tool.write_text("#!/bin/sh\n" + body)
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    return tool


@pytest.mark.parametrize("report", REPORTS, ids=lambda p: p.name)
def test_without_nsys_the_error_says_what_to_run(report: Path, no_nsys) -> None:
    assert len(REPORTS) == 2
    with pytest.raises(InputError) as err:
        read(report)
    name = report.name.removesuffix(".xz")
    assert str(err.value) == f"{report}: needs nsys to convert; run `nsys export --type sqlite {name}`"
    console = read(DEEP / name.replace(".nsys-rep", ".stats_console.txt"))
    assert console.kernel_summary["name"].tolist() == ["vectorAdd(const float *, const float *, float *, int)"]
    assert console.kernel_summary["count"].iloc[0] in (1010, 410)


def test_sniffed_by_magic(tmp_path: Path) -> None:
    plain = tmp_path / "renamed.bin"
    with lzma.open(REPORTS[0]) as src:
        plain.write_bytes(src.read())
    assert detect(plain).format == "nsys-rep"


def test_with_nsys_the_export_is_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A stand-in nsys that 'exports' the real H200 capture: the reader's plumbing end to end."""
    sqlite = tmp_path / "vlm.sqlite"
    with lzma.open(VLM) as src, open(sqlite, "wb") as dst:
        shutil.copyfileobj(src, dst)
    tool = _fake_nsys(tmp_path, f'[ "$1" = export ] || exit 9\n'
                                f'while [ $# -gt 0 ]; do [ "$1" = --output ] && cp {sqlite} "$2"; shift; done\n')
    monkeypatch.setenv("NSYS", str(tool))
    ds = read(REPORTS[0], stage="decode")
    assert ds.provenance.format == "nsys-rep" and ds.provenance.path == str(REPORTS[0])
    assert ds.provenance.format_version == "nsys 2025.3.2.0 / export schema 3.20.3"
    assert ds.kernel_summary["count"].sum() == 6600


def test_failed_export_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    tool = _fake_nsys(tmp_path, 'echo "some progress"\necho "ERROR: report is corrupt" >&2\nexit 1\n')
    monkeypatch.setenv("NSYS", str(tool))
    with pytest.raises(InputError, match=r"nsys export failed: ERROR: report is corrupt$"):
        read(REPORTS[0])
