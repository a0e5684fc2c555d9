"""Histogram datasets and the top-by-duration table on real ncu captures."""
from __future__ import annotations

import csv
import lzma
import statistics
from pathlib import Path

import pytest

from generator.analyses.classify import classify, profiled_kernels
from generator.analyses.durations import top_by_duration
from generator.analyses.histograms import HISTOGRAMS, histogram_datasets
from generator.readers import read

DATA = Path(__file__).parent / "data"
DECODE_RAW = DATA / "h200-small" / "small_vlm_decode_ncu_raw.csv.xz"


def _raw_by_kernel(metric: str) -> dict[str, list[tuple[float, str]]]:
    """Kernel name → [(value, unit)] of one raw ncu metric, read with the csv module."""
    with lzma.open(DECODE_RAW, "rt", newline="") as fh:
        rows = list(csv.reader(fh))
    header, units = rows[0], rows[1]
    i, name = header.index(metric), header.index("Kernel Name")
    out: dict[str, list[tuple[float, str]]] = {}
    for row in rows[2:]:
        out.setdefault(row[name], []).append((float(row[i].replace(",", "")), units[i]))
    return out


@pytest.fixture(scope="module")
def decode():
    return classify(profiled_kernels(read(DECODE_RAW).kernel_metrics), "sol")


def test_every_histogram_has_one_value_per_kernel(decode):
    data = histogram_datasets(decode)
    assert set(data) == set(HISTOGRAMS) and len(data) == 13
    for key, frame in data.items():
        assert list(frame.columns) == ["name", "friendly_name", "class", "value"]
        assert len(frame) == 25, key  # the full-set decode capture has every metric for every kernel


def test_histogram_values_in_display_units(decode):
    data = histogram_datasets(decode)
    durations = _raw_by_kernel("gpu__time_duration.sum")
    assert {u for vals in durations.values() for _, u in vals} == {"us"}
    expected_us = {n: statistics.mean(v for v, _ in vals) for n, vals in durations.items()}
    got = dict(zip(data["duration_us"]["name"], data["duration_us"]["value"]))
    assert got == pytest.approx(expected_us)
    gbps = _raw_by_kernel("dram__bytes.sum.per_second")
    scale = {"Gbyte/s": 1.0, "Mbyte/s": 1e-3, "Kbyte/s": 1e-6, "byte/s": 1e-9, "Tbyte/s": 1e3}
    # canonical memory throughput (bytes/s) shown in GB/s: ncu's DRAM bytes per second of each kernel
    expected_gbps = {n: statistics.mean(v * scale[u] for v, u in vals) for n, vals in gbps.items()}
    got = dict(zip(data["memory_throughput_gbps"]["name"], data["memory_throughput_gbps"]["value"]))
    assert got == pytest.approx(expected_gbps, rel=1e-5)
    hits = _raw_by_kernel("lts__t_sector_hit_rate.pct")
    got = dict(zip(data["l2_hit_rate_pct"]["name"], data["l2_hit_rate_pct"]["value"]))
    assert got == pytest.approx({n: statistics.mean(v for v, _ in vals) for n, vals in hits.items()})


def test_missing_metric_gives_empty_dataset_not_zeros():
    # leleucas (ncu 2021.2, roofline + occupancy sections): no DRAM % and no duration at all
    path = DATA / "leleucas-apc" / "gpt2_flashattn_nsight.csv.xz"
    kernels = classify(profiled_kernels(read(path).kernel_metrics), "sol")
    data = histogram_datasets(kernels)
    assert data["dram_throughput_pct"].empty and data["duration_us"].empty
    with lzma.open(path, "rt", newline="") as fh:
        distinct = {row[4] for row in csv.reader(fh) if row and row[0] != "ID"}
    assert len(data["achieved_occupancy_pct"]) == len(kernels) == len(distinct) == 7  # 10 launches
    assert top_by_duration(kernels).empty


def test_top_by_duration_on_prefill(decode):
    kernels = classify(profiled_kernels(read(DATA / "h200-small" / "small_vlm_prefill.ncu-rep.xz").kernel_metrics), "sol")
    top = top_by_duration(kernels, 5)
    assert list(top["rank"]) == [1, 2, 3, 4, 5]
    assert list(top["duration_us"]) == sorted(top["duration_us"], reverse=True)
    longest = kernels["duration_ns"].max() / 1e3
    assert top["duration_us"].iloc[0] == pytest.approx(longest)
    assert top["class"].iloc[0] == kernels.loc[kernels["duration_ns"].idxmax(), "class"]
    # decode: the longest mean launch, recomputed from the raw CSV
    durations = _raw_by_kernel("gpu__time_duration.sum")
    name, us = max(((n, statistics.mean(v for v, _ in vals)) for n, vals in durations.items()), key=lambda x: x[1])
    first = top_by_duration(decode, 3).iloc[0]
    assert (first["name"], first["duration_us"]) == (name, pytest.approx(us))
    assert first["max_duration_us"] == pytest.approx(max(v for v, _ in durations[name]))
