"""The SQLite reader against what nsys 2025.3.1 itself printed for the same files (see the README
in tests/data/nsys-stats-2025): exact counts/totals/extremes, the rounded figures to nsys' 0.1."""
from __future__ import annotations

import lzma
from pathlib import Path

import pandas as pd
import pytest

from generator.readers import nsys_sqlite as ns
from generator.readers import read
from tests.conftest import DATA

TRUTH = DATA / "nsys-stats-2025"
SOURCES = {
    "small_vlm": DATA / "h200-small/small_vlm.nsys.sqlite.xz",
    "perlmutter-cloverleaf-cuda": DATA / "pipit/perlmutter-cloverleaf-cuda.sqlite.xz",
    "cudf-groupby": DATA / "nvtx-examples/cudf-groupby.sqlite",
}
EXACT = ["count", "total_ns", "min_ns", "max_ns"]
ROUNDED = ["avg_ns", "med_ns", "stddev_ns", "time_pct"]


def _truth(name: str) -> Path:
    plain = TRUTH / f"{name}.csv"
    return plain if plain.exists() else TRUTH / f"{name}.csv.xz"


def _same(ours: pd.DataFrame, nsys: pd.DataFrame, key: str, rounded: list[str] = ROUNDED) -> None:
    assert len(nsys) > 0
    assert sorted(ours[key]) == sorted(nsys[key])
    a, b = ours.set_index(key).loc[nsys[key]], nsys.set_index(key)
    assert (a[EXACT].to_numpy() == b[EXACT].to_numpy()).all()
    assert ((a[rounded] - b[rounded]).abs() <= 0.05 + 1e-6).all().all()
    assert list(ours[key]) == list(nsys[key])  # same order: total time, descending


@pytest.mark.parametrize("name", SOURCES)
def test_kernel_and_api_summaries_equal_nsys(name: str) -> None:
    ds = read(SOURCES[name])
    _same(ds.kernel_summary, read(_truth(f"{name}_cuda_gpu_kern_sum")).kernel_summary, "name")
    _same(ds.api_summary, read(_truth(f"{name}_cuda_api_sum")).api_summary, "name")


@pytest.mark.parametrize("name", ["small_vlm", "cudf-groupby"])
def test_nvtx_summary_equals_nsys(name: str) -> None:
    _same(read(SOURCES[name]).nvtx_summary, read(_truth(f"{name}_nvtx_sum")).nvtx_summary, "name")


def test_memcpy_summary_equals_nsys() -> None:
    ours = read(SOURCES["small_vlm"]).memcpy_summary
    times = read(_truth("small_vlm_cuda_gpu_mem_time_sum")).memcpy_summary
    _same(ours, times, "operation", ROUNDED[:-1])  # the memcpy table has no time share
    sizes = pd.read_csv(_truth("small_vlm_cuda_gpu_mem_size_sum"))
    assert list(sizes["Total (MB)"]) == [round(b / 1e6, 3) for b in ours["total_bytes"]]


@pytest.fixture(scope="module")
def vlm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    plain = tmp_path_factory.mktemp("vlm") / "small_vlm.sqlite"
    with lzma.open(SOURCES["small_vlm"]) as src:
        plain.write_bytes(src.read())
    return plain


@pytest.mark.parametrize("stage", ["vision", "projector", "prefill", "decode"])
def test_first_instance_of_a_stage_equals_nsys_filter_nvtx(stage: str, vlm: Path) -> None:
    """nsys' --filter-nvtx NAME is our NAME/1; plain NAME (every instance) is three times as many."""
    nsys = read(_truth(f"small_vlm_{stage}_cuda_gpu_kern_sum")).kernel_summary
    ours = ns.kernel_summary(vlm, [f"{stage}/1", stage])
    _same(ours[ours["stage"] == f"{stage}/1"], nsys, "name")
    every = ours[ours["stage"] == stage]
    assert every["count"].sum() == 3 * nsys["count"].sum()
