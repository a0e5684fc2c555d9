"""The same launches read from a `.ncu-rep` and from its CSV exports must agree.

Runs on our H200 prefill report and the CSVs `ncu --import … --csv --page raw|details` made of it,
and on every `ncu/report.ncu-rep(.xz)` + `raw.csv(.xz)` pair of the capture runs committed under
`examples/`: a pair that disagrees fails.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from generator.metric_table import CANONICAL_METRIC_NAMES
from generator.readers import read
from tests.conftest import DATA, ROOT

H200 = DATA / "h200-small"
IDENTITY = ["launch_id", "stage", "nvtx", "grid", "block", "device", "cc"]


def mismatches(rep: pd.DataFrame, exported: pd.DataFrame, *, rtol: float, atol: float) -> list[str]:
    """Where a CSV export disagrees with its report: identity columns, then every canonical metric
    both carry (a CSV prints rounded numbers, hence the tolerances). Empty when they agree."""
    if len(rep) != len(exported):
        return [f"{len(rep)} launches in the report, {len(exported)} in the CSV"]
    problems = []
    a, b = rep.reset_index(drop=True), exported.reset_index(drop=True)
    for column in IDENTITY:
        differ = ~((a[column] == b[column]) | (a[column].isna() & b[column].isna()))
        problems += [f"launch {a['launch_id'][i]}: {column} {a[column][i]!r} ≠ {b[column][i]!r}"
                     for i in np.flatnonzero(differ)]
    for metric in CANONICAL_METRIC_NAMES:
        x, y = a[metric].to_numpy(float), b[metric].to_numpy(float)
        both = ~np.isnan(x) & ~np.isnan(y)
        bad = both & ~np.isclose(x, y, rtol=rtol, atol=atol)
        problems += [f"launch {a['launch_id'][i]}: {metric} {x[i]!r} ≠ {y[i]!r}" for i in np.flatnonzero(bad)]
    return problems


def _pairs() -> list[tuple[Path, Path]]:
    found = []
    for ncu_dir in sorted(ROOT.glob("examples/**/ncu")):
        rep = next((p for p in (ncu_dir / "report.ncu-rep", ncu_dir / "report.ncu-rep.xz") if p.is_file()), None)
        raw = next((p for p in (ncu_dir / "raw.csv", ncu_dir / "raw.csv.xz") if p.is_file()), None)
        if rep and raw:
            found.append((rep, raw))
    return found


def test_h200_report_and_raw_page_agree():
    rep = read(H200 / "small_vlm_prefill.ncu-rep.xz").kernel_metrics
    raw = read(H200 / "small_vlm_prefill_export_raw.csv.xz").kernel_metrics
    assert mismatches(rep, raw, rtol=1e-4, atol=0.01) == []
    # The raw page carries every metric the report gives (nothing lost between the two readers).
    assert (rep[CANONICAL_METRIC_NAMES].notna() == raw[CANONICAL_METRIC_NAMES].notna()).all().all()


def test_h200_report_and_details_page_agree():
    rep = read(H200 / "small_vlm_prefill.ncu-rep.xz").kernel_metrics
    details = read(H200 / "small_vlm_prefill_export_details.csv.xz").kernel_metrics
    # The details page prints two decimals in scaled units ("1.76 us", "0.03 %", "1.91 Ghz").
    assert mismatches(rep, details, rtol=0.01, atol=0.01) == []
    assert details["duration_ns"].notna().all() and details["memory_busy_pct"].notna().all()


def test_mismatches_finds_disagreement():
    rep = read(H200 / "small_vlm_prefill.ncu-rep.xz").kernel_metrics
    raw = read(H200 / "small_vlm_prefill_export_raw.csv.xz").kernel_metrics.copy()
    raw.loc[3, "duration_ns"] *= 1.01
    raw.loc[4, "stage"] = "decode"
    assert mismatches(rep, raw, rtol=1e-4, atol=0.01) == [
        "launch 4: stage 'prefill' ≠ 'decode'",
        f"launch 3: duration_ns {rep['duration_ns'][3]!r} ≠ {raw['duration_ns'][3]!r}"]


def test_example_captures_carry_report_and_raw_pairs():
    assert len(_pairs()) >= 2  # ocr-vlm eager and sdpa at least


@pytest.mark.parametrize("pair", _pairs(), ids=lambda p: str(p[0].parent.parent.relative_to(ROOT)))
def test_example_capture_report_and_raw_page_agree(pair):
    rep_path, raw_path = pair
    # The raw page prints some rates and byte counts with four significant digits in scaled units
    # ("3.529 Gbyte/s"), hence a relative tolerance of 1e-3 here.
    assert mismatches(read(rep_path).kernel_metrics, read(raw_path).kernel_metrics, rtol=1e-3, atol=0.01) == []
