"""The build cache of parsed inputs: same site with and without it, never a stale or damaged entry, bounded size."""
from __future__ import annotations

import lzma
import math
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import vl_convert
from conftest import DATA, BuiltSite

import generator
from generator.commands.build import EXAMPLE
from generator.pipeline.build import build_site
from generator.pipeline.build_cache import READING_CODE, BuildCache
from generator.pipeline.config import load_report
from generator.pipeline.inputs import InputCache, version_inputs
from generator.render import assets

NSYS = DATA / "h200-small" / "small_vlm.nsys.sqlite.xz"
NCU_CSV = DATA / "h200-small" / "small_vlm_decode_ncu_raw.csv.xz"


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def plain_copy(tmp_path: Path) -> Path:
    """The small H200 nsys export, decompressed into ``tmp_path`` (a file the test may edit)."""
    path = tmp_path / "capture.sqlite"
    path.write_bytes(lzma.decompress(NSYS.read_bytes()))
    return path


def read_summary(path: Path, store: BuildCache):
    with InputCache(store) as inputs:
        return inputs.read(path).kernel_summary


@pytest.mark.slow
def test_example_site_identical_from_a_warm_cache(example_site: BuiltSite, tmp_path: Path) -> None:
    """The bundled example built with every input taken from the cache is byte-identical to the
    build without a cache (conftest turns the cache off for every other build)."""
    store = BuildCache(tmp_path / "cache")
    with InputCache(store) as inputs:
        for index, version in enumerate(load_report(EXAMPLE).versions):
            version_inputs(version, inputs, EXAMPLE, index)
    filled = store.misses
    assert filled >= 6  # per run: export, ncu report(s), its stages (one entry; asked again: hits)
    build_site([EXAMPLE], tmp_path / "site", tmp_path / "site_src", cache=store)
    assert store.misses == filled and store.hits >= filled  # nothing read afresh
    assert tree(tmp_path / "site") == tree(example_site.site)
    assert tree(tmp_path / "site_src") == tree(example_site.src)


def test_edited_input_is_read_again(tmp_path: Path) -> None:
    """Editing an input's bytes (here: deleting 100 kernel rows) changes its key: the summary is the
    edited file's, counted independently with plain SQL, never the stored one."""
    path = plain_copy(tmp_path)
    store = BuildCache(tmp_path / "cache")
    before = read_summary(path, store)
    with sqlite3.connect(path) as con:
        con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid IN "
                    "(SELECT rowid FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY rowid LIMIT 100)")
        launches = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    con.close()
    after = read_summary(path, store)
    assert store.hits == 0 and store.misses == 2
    assert int(before["count"].sum()) == launches + 100
    assert int(after["count"].sum()) == launches
    assert read_summary(path, store)["count"].sum() == launches and store.hits == 1


def test_same_value_from_the_cache(tmp_path: Path) -> None:
    """A stored Dataset reads back with the same tables, dtypes, provenance and devices."""
    store = BuildCache(tmp_path / "cache")
    with InputCache(store) as inputs:
        fresh = inputs.read(NCU_CSV)
    with InputCache(store) as inputs:
        cached = inputs.read(NCU_CSV)
    assert store.hits == 1 and cached is not fresh
    assert cached.provenance == fresh.provenance and cached.gpus == fresh.gpus
    assert cached.kernel_metrics.dtypes.tolist() == fresh.kernel_metrics.dtypes.tolist()
    assert cached.kernel_metrics.equals(fresh.kernel_metrics)


@pytest.mark.parametrize("damage", ["garbage table", "truncated meta", "foreign meta"])
def test_corrupt_or_foreign_entry_is_rebuilt(tmp_path: Path, damage: str) -> None:
    path = plain_copy(tmp_path)
    lines: list[str] = []
    store = BuildCache(tmp_path / "cache", warn=lines.append)
    expected = read_summary(path, store)
    (entry,) = [p for p in (tmp_path / "cache").glob("*/*") if p.is_dir()]
    if damage == "garbage table":
        next(entry.glob("*.parquet")).write_bytes(b"PAR1 not parquet at all")
    elif damage == "truncated meta":
        meta = entry / "meta.json"
        meta.write_bytes(meta.read_bytes()[:40])
    else:
        (entry / "meta.json").write_text('{"format": "someone-else/3", "key": "x", "tables": {}}', encoding="utf-8")
    again = read_summary(path, store)
    assert len(lines) == 1 and lines[0].startswith(f"build cache: entry {entry} is unreadable or foreign (")
    assert lines[0].endswith("); rebuilt") and "\n" not in lines[0]
    assert again.equals(expected) and store.misses == 2
    assert read_summary(path, store).equals(expected) and store.hits == 1 and len(lines) == 1  # rebuilt entry is good


def test_size_cap_evicts_least_recently_used(tmp_path: Path) -> None:
    """Over its cap the cache drops the entries used longest ago, and stays under the cap."""
    sources = []
    for n in range(4):  # four different inputs: the same export with n kernel rows fewer
        (tmp_path / str(n)).mkdir()
        path = plain_copy(tmp_path / str(n))
        with sqlite3.connect(path) as con:
            con.execute(f"DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid IN (SELECT rowid FROM "
                        f"CUPTI_ACTIVITY_KIND_KERNEL LIMIT {n})")
        con.close()
        sources.append(path)
    root = tmp_path / "cache"
    store = BuildCache(root, max_bytes=math.inf)
    read_summary(sources[0], store)
    one = sum(f.stat().st_size for f in root.rglob("*") if f.is_file())
    store.max_bytes = int(2.5 * one)
    for path in sources[1:]:
        read_summary(path, store)
    total = sum(f.stat().st_size for f in root.rglob("*") if f.is_file())
    assert total <= store.max_bytes
    assert len([p for p in root.glob("*/*") if p.is_dir()]) == 2
    read_summary(sources[3], store)  # the newest is kept …
    read_summary(sources[0], store)  # … the oldest was evicted
    assert store.hits == 1 and store.misses == 5


def test_eviction_removes_only_its_own_entries(tmp_path: Path) -> None:
    """KERNEL_REPORT_CACHE pointed at a user's folder with a tiny cap: eviction removes the cache's
    entries and nothing else (issue 35: any ROOT/*/* folder went), also a folder named like an entry;
    a root whose path holds a quote is written through a parameter, never SQL text."""
    root = tmp_path / "it's mine"
    (root / "photos" / "2024").mkdir(parents=True)
    (root / "photos" / "2024" / "a.jpg").write_bytes(b"\xff\xd8" * 5000)
    lookalike = root / "ab" / ("ab" + "0" * 62)
    lookalike.mkdir(parents=True)
    (lookalike / "notes.txt").write_text("not a cache entry\n")
    forged = root / "cd" / ("cd" + "1" * 62)
    forged.mkdir(parents=True)
    (forged / "meta.json").write_text('{"format": "something else"}')
    user_files = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    store = BuildCache(root, max_bytes=1)
    expected = read_summary(NSYS, store)
    assert store.misses == 1
    assert {p: p.read_bytes() for p in user_files} == user_files  # every file of the user's is there
    entries = [p for p in root.glob("*/*") if p.is_dir() and p not in (lookalike, forged, root / "photos" / "2024")]
    assert entries == []  # its own entry, over the cap, was evicted
    store.max_bytes = math.inf
    assert read_summary(NSYS, store).equals(expected)
    assert read_summary(NSYS, store).equals(expected) and store.hits == 1  # stored under the quoted path, read back


def test_no_cache_neither_reads_nor_writes(tmp_path: Path) -> None:
    store = BuildCache(None)
    read_summary(NSYS, store)
    read_summary(NSYS, store)
    assert (store.hits, store.misses) == (0, 0)


def small_report(folder: Path) -> Path:
    """A 2-version, English-only report over nsys exports copied into ``folder`` (one per version)."""
    for version in ("v1", "v2"):
        (folder / version).mkdir(parents=True)
        plain_copy(folder / version)
    report = folder / "report.yaml"
    report.write_text("""id: reuse
title: {en: "Reuse", zh: "复用"}
versions:
  - {id: v1, title: {en: V1, zh: 一}, date: 2026-11-20, inputs: {nsys: [v1/capture.sqlite]}}
  - {id: v2, title: {en: V2, zh: 二}, date: 2026-11-21, inputs: {nsys: [v2/capture.sqlite]}}
""", encoding="utf-8")
    return report


class ProgressLog:
    """Stands in for rich's Progress: keeps the step lines a build reports (in this process, also
    for work done in forked workers)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add_task(self, description: str, total: float) -> int:
        return 0

    def update(self, task: int, advance: float, description: str) -> None:
        self.lines.append(description)


@pytest.mark.slow
def test_only_changed_versions_are_rendered_again(tmp_path: Path) -> None:
    """A rebuild keeps unchanged versions' pages; after an edit of v2's input only v2 is rendered,
    and the site equals a build of the edited report without any cache."""
    steps = ProgressLog()
    report = small_report(tmp_path / "inputs")
    store = BuildCache(tmp_path / "cache")
    site, src = tmp_path / "site", tmp_path / "src"

    def run(cache: BuildCache | None = store, out: Path = site, md: Path = src) -> list[str]:
        steps.lines.clear()
        build_site([report], out, md, langs=["en"], cache=cache or BuildCache(None), progress=steps)
        return sorted(line.split("/")[1].split(":")[0] for line in steps.lines if line.endswith("rendered and built"))

    assert run() == ["v1", "v2"]
    first = tree(site)
    assert run() == [] and tree(site) == first
    with sqlite3.connect(tmp_path / "inputs" / "v2" / "capture.sqlite") as con:
        con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid IN (SELECT rowid FROM "
                    "CUPTI_ACTIVITY_KIND_KERNEL LIMIT 50)")
    con.close()
    assert run() == ["v2"]
    assert run(None, tmp_path / "fresh-site", tmp_path / "fresh-src") == ["v1", "v2"]
    assert tree(site) == tree(tmp_path / "fresh-site") and tree(src) == tree(tmp_path / "fresh-src")
    assert tree(site) != first


@pytest.mark.slow
def test_report_settings_render_every_version_again(tmp_path: Path) -> None:
    """The report's settings (here top_n) shape every version's pages: after an edit of them no
    version is kept from the last build, and the site equals a build of the edited report without
    any cache."""
    steps = ProgressLog()
    report = small_report(tmp_path / "inputs")
    site, src = tmp_path / "site", tmp_path / "src"
    top_page = src / "reuse" / "v2" / "docs" / "top-kernels.md"

    def ranks() -> set[int]:
        return {int(rank) for rank in re.findall(r"^\| (\d+) \| <a", top_page.read_text(encoding="utf-8"), re.M)}

    def run(cache: BuildCache, out: Path = site, md: Path = src) -> list[str]:
        steps.lines.clear()
        build_site([report], out, md, langs=["en"], cache=cache, progress=steps)
        return sorted(line.split("/")[1].split(":")[0] for line in steps.lines if line.endswith("rendered and built"))

    store = BuildCache(tmp_path / "cache")
    assert run(store) == ["v1", "v2"]
    first = tree(site)
    assert max(ranks()) > 3
    assert "top_n: 3" not in report.read_text(encoding="utf-8")
    report.write_text(report.read_text(encoding="utf-8").replace("versions:", "top_n: 3\nversions:"), encoding="utf-8")
    assert run(store) == ["v1", "v2"]
    assert run(BuildCache(None), tmp_path / "fresh-site", tmp_path / "fresh-src") == ["v1", "v2"]
    assert tree(site) == tree(tmp_path / "fresh-site") and tree(src) == tree(tmp_path / "fresh-src")
    assert tree(site) != first
    assert ranks() == {1, 2, 3}


#: Modules the reading code imports that do not decide what an input reads as (they run readers in
#: child processes, count CPUs, name paths, or validate report.yaml), so editing them keeps entries.
NOT_READING = {"__init__.py", "forks.py", "machine.py", "languages.py", "resources.py", "pipeline/__init__.py",
               "pipeline/config.py", "pipeline/bounded_glob.py", "temp_dirs.py", "analyses/__init__.py",
               "analyses/registry.py"}


def test_every_module_the_readers_import_is_in_the_key() -> None:
    """An edit of any module that shapes what an input reads as changes every entry's key: the
    modules imported with the readers are all in READING_CODE, or named in NOT_READING."""
    code = ("import sys, generator.pipeline.inputs, generator.readers.base as b; b.readers(); "
            "print(' '.join(sorted(m.__file__ for n, m in sys.modules.items() if n.startswith('generator'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    root = Path(generator.__file__).parent
    loaded = {Path(f).relative_to(root).as_posix() for f in out}
    assert "readers/ncu_rep.py" in loaded and "text_safety.py" in loaded
    covered = {name for name in loaded if any(name == part or name.startswith(part + "/") for part in READING_CODE)}
    assert loaded - covered - NOT_READING == set()


@pytest.mark.parametrize("damage", ["cut", "edited"])
def test_damaged_vega_bundle_is_bundled_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str], damage: str) -> None:
    """The cached vega bundle is used only while it matches its seal: a file cut short or edited
    is reported in one line and bundled again, and every site gets vl-convert's own bundle."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    expected = vl_convert.javascript_bundle()
    assets.vega_bundle.cache_clear()
    assert assets.vega_bundle() == expected
    cached = assets._cache_file()
    sealed = cached.read_text(encoding="utf-8")
    assert sealed.startswith(expected) and len(sealed) == len(expected) + len(assets._SEAL) + 65
    assets.vega_bundle.cache_clear()
    assert assets.vega_bundle() == expected and capsys.readouterr().err == ""  # from the file, silently
    cached.write_text(sealed[: len(sealed) // 2] if damage == "cut" else sealed.replace("vega", "VEGA", 1),
                      encoding="utf-8")
    assets.vega_bundle.cache_clear()
    assert assets.vega_bundle() == expected
    err = capsys.readouterr().err.splitlines()
    assert err == [f"build cache: {cached} does not match its seal; bundled again"]
    assert cached.read_text(encoding="utf-8") == sealed
    assets.vega_bundle.cache_clear()
