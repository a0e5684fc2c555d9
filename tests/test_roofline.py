"""Roofline peaks and datasets on real rows, recomputed here from the raw CSV."""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from helpers_ncu import read_once
from test_classify import decode_rows

from generator.analyses.classify import classify, profiled_kernels
from generator.analyses.roofline import Peaks, device_peaks, kernel_intensity, roofline_datasets
from generator.model import GpuInfo
from generator.readers import read
from generator.run_layout import ncu_candidates

GEMV = "nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN"


@pytest.fixture(scope="module")
def kernels() -> pd.DataFrame:
    return profiled_kernels(pd.DataFrame(decode_rows()))


def test_peaks_precedence_settings_over_ncu_over_device():
    """Per-cycle peaks (device constants) × the stated clock; DRAM bytes per cycle × memory clock,
    else the device's bandwidth; report.yaml overrides both; no clock → no FLOP roof."""
    metrics = pd.DataFrame({"peak_dram_bytes_per_cycle": [1504.0, 1504.0, math.nan],
                            "peak_tensor_flop_per_cycle": [540672.0, 540672.0, 540672.0],
                            # clock-scaled per-launch peaks (a boosted short launch): never used
                            "peak_tensor_flop_per_s": [1.07e15, 1.27e15, 1.0e15]})
    gpus = [GpuInfo(name="NVIDIA H200", memory_bandwidth_bytes_per_s=4.8e12, sm_clock_hz=1.98e9,
                    memory_clock_hz=3.201e9)]
    peaks = device_peaks(metrics, gpus, {})
    assert peaks.dram_bytes_per_s == pytest.approx(1504 * 3.201e9) and peaks.source["dram"] == "ncu"
    assert peaks.flop_per_s["tensor"] == pytest.approx(540672 * 1.98e9)  # 1070.5 TFLOP/s
    assert (peaks.sm_clock_hz, peaks.clock) == (1.98e9, "max_boost")
    locked = device_peaks(metrics, gpus, {}, locked_clock_hz=1.59e9)
    assert locked.flop_per_s["tensor"] == pytest.approx(540672 * 1.59e9) and locked.clock == "locked"
    assert device_peaks(metrics.drop(columns="peak_dram_bytes_per_cycle"), gpus, {}).source["dram"] == "device"
    assert device_peaks(metrics, [GpuInfo(name="no clock")], {}).flop_per_s == {}
    over = device_peaks(metrics, gpus, {"peak_dram_gbps": 4800, "peak_tflops": {"bf16_tensor": 989, "fp32": 67}})
    assert over.dram_bytes_per_s == 4.8e12 and over.source["dram"] == "settings"
    assert over.flop_per_s == {"tensor": 989e12, "fp32": 67e12}
    assert over.ridge("tensor") == pytest.approx(989e12 / 4.8e12)
    assert device_peaks(pd.DataFrame(), [], {}).dram_bytes_per_s is None


def test_physical_point_of_a_real_tensor_gemv(kernels):
    rows = [r for r in decode_rows() if r["name"] == GEMV]
    flop = sum(r["flop_tensor"] for r in rows) / len(rows)
    dram = sum(r["dram_bytes"] for r in rows) / len(rows)
    duration_s = sum(r["duration_ns"] for r in rows) / len(rows) * 1e-9
    peaks = Peaks(dram_bytes_per_s=4.8e12, flop_per_s={"tensor": 989e12})
    data = roofline_datasets(classify(kernels, "roofline", peaks=peaks), peaks)
    point = data["physical"].set_index(["name", "datapath"]).loc[(GEMV, "tensor")]
    assert point["flop"] == pytest.approx(flop) and flop > 0
    assert point["arithmetic_intensity"] == pytest.approx(flop / dram)
    assert point["achieved_flop_per_s"] == pytest.approx(flop / duration_s)
    # only kernels with tensor FLOP > 0 and DRAM bytes appear; the decode copy kernels have none
    expected = {r["name"] for r in decode_rows() if r["flop_tensor"] > 0 and r["dram_bytes"] > 0}
    assert set(data["physical"]["name"]) == expected
    assert data["roofs"]["ceilings"] == {"tensor": 989e12}
    assert data["roofs"]["ridges"]["tensor"] == pytest.approx(989e12 / 4.8e12)
    assert len(data["normalized"]) == 25


def test_dominant_datapath_and_intensity(kernels):
    row = kernels[kernels["name"] == GEMV].iloc[0].to_dict()
    peaks = Peaks(dram_bytes_per_s=4.8e12, flop_per_s={"tensor": 989e12, "fp32": 67e12})
    point = kernel_intensity({**row, "flop_fp32": 10.0}, peaks)
    assert point["datapath"] == "tensor"
    assert point["arithmetic_intensity"] == pytest.approx((row["flop_tensor"] + 10.0) / row["dram_bytes"])
    assert point["ridge"] == pytest.approx(989e12 / 4.8e12)
    assert kernel_intensity({**row, "flop_fp32": row["flop_tensor"] * 2}, peaks)["datapath"] == "fp32"
    assert math.isnan(kernel_intensity({**row, "dram_bytes": math.nan}, peaks)["arithmetic_intensity"])


# --- through the readers -------------------------------------------------------------------------

DATA = Path(__file__).parent / "data"
GEMM_DIR = DATA / "gemm"


def _find_mnk(node: Any) -> tuple[int, int, int] | None:
    """The first mapping in the manifest that holds m, n and k (any nesting, any case)."""
    if isinstance(node, dict):
        lower = {str(k).lower(): v for k, v in node.items()}
        if all(isinstance(lower.get(x), int) for x in "mnk"):
            return lower["m"], lower["n"], lower["k"]
        for value in node.values():
            if (found := _find_mnk(value)) is not None:
                return found
    if isinstance(node, list):
        for value in node:
            if (found := _find_mnk(value)) is not None:
                return found
    return None


def test_gemm_capture_tensor_flop_is_2mnk():
    """Acceptance: a real bf16 GEMM capture; our roofline's tensor FLOP within 5 % of 2·M·N·K."""
    if not GEMM_DIR.is_dir():
        pytest.skip("tests/data/gemm/ (the bf16 GEMM capture) is not committed yet")
    manifests = sorted(GEMM_DIR.rglob("manifest.json"))
    assert manifests, "tests/data/gemm has no manifest.json"
    mnk = _find_mnk(json.loads(manifests[0].read_text()))
    assert mnk is not None, "manifest.json names no m, n, k"
    run = manifests[0].parent  # a capture run directory: the ncu file the product would read
    ncu_files = [run / c for c in ncu_candidates() if (run / c).is_file()]
    assert ncu_files, "tests/data/gemm has no ncu report or raw CSV where a run keeps them"
    m, n, k = mnk
    for path in ncu_files:  # the product reads the first; every export of the launch must agree
        dataset = read(path)
        metrics = dataset.kernel_metrics
        peaks = device_peaks(metrics, dataset.gpus, {})
        kernels = classify(profiled_kernels(metrics), "roofline", peaks=peaks)
        points = roofline_datasets(kernels, peaks)["physical"]
        tensor = points[points["datapath"] == "tensor"]
        assert tensor["flop"].sum() == pytest.approx(2 * m * n * k, rel=0.05), path.name
        assert peaks.flop_per_s.get("tensor"), f"{path.name}: no dense tensor peak"
        assert list(kernels["class"]) == ["compute-bound"], path.name  # a 4096³ GEMM is compute-bound


def test_esmm_sgemm_fp32_flop_is_2mnk():
    """ESMM's 1024³ SGEMMs (A10G): FP32 FMA work is 2·1024³ FLOP per kernel (FMA = 2 FLOP)."""
    metrics = read(DATA / "ESMM-Research" / "metrics.csv").kernel_metrics
    points = roofline_datasets(profiled_kernels(metrics).assign(**{"class": None}), Peaks())["physical"]
    fp32 = points[points["datapath"] == "fp32"]
    with open(DATA / "ESMM-Research" / "metrics.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(fp32) == len({r["Kernel Name"] for r in rows}) == 8  # 9 launches, 8 distinct kernels
    for flop in fp32["flop"]:
        assert flop == pytest.approx(2 * 1024**3, rel=0.05)  # cuBLAS does 2.2 % extra (tile padding)
    # kernel 0's raw rows: ffma + fadd + fmul, read here with the csv module
    raw = {r["Metric Name"]: float(r["Metric Value"].replace(",", "")) for r in rows if r["ID"] == "0"}
    expected = 2 * raw["sm__sass_thread_inst_executed_op_ffma_pred_on.sum"] + \
        raw["sm__sass_thread_inst_executed_op_fadd_pred_on.sum"] + raw["sm__sass_thread_inst_executed_op_fmul_pred_on.sum"]
    first = fp32.iloc[0]
    assert first["flop"] == pytest.approx(expected)
    assert first["arithmetic_intensity"] == pytest.approx(expected / raw["dram__bytes.sum"])
    assert first["achieved_flop_per_s"] == pytest.approx(expected / (raw["gpu__time_duration.sum"] * 1e-9))


def test_prefill_rep_peaks_come_from_ncu():
    """The H200 report: one roof per datapath, ncu's per-cycle peak × the 1,980 MHz max boost clock
    the device attributes state (not the median of per-launch peaks at measured clocks)."""
    dataset = read(DATA / "h200-small" / "small_vlm_prefill.ncu-rep.xz")
    metrics = dataset.kernel_metrics
    peaks = device_peaks(metrics, dataset.gpus, {})
    assert peaks.sm_clock_hz == 1.98e9 and peaks.clock == "max_boost"
    assert peaks.source["dram"] == "ncu" and peaks.dram_bytes_per_s == pytest.approx(1504 * 3.201e9)  # 4.81 TB/s
    assert peaks.flop_per_s["fp32"] == pytest.approx(2 * 16896 * 1.98e9)  # 2 FLOP/FFMA × 16,896 FFMA/cycle
    assert peaks.flop_per_s["fp32"] >= metrics["peak_fp32_flop_per_s"].max() * 0.999  # no launch's clock is higher


ROOT = Path(__file__).parent.parent
#: every committed ncu capture whose device attributes state a clock (runs, tests/data)
CAPTURES = sorted([*ROOT.glob("examples/runs/**/ncu/*.xz"), *ROOT.glob("examples/runs/**/ncu/*.zst"), *DATA.glob("**/*.ncu-rep*"),
                   *DATA.glob("h200-small/*ncu_raw.csv.xz"), *DATA.glob("h200-small/*export_raw.csv.xz")])


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_launch_lies_above_its_roof(path):
    """Physical roofs: every profiled launch's FLOP/s is at or below min(datapath peak, intensity ×
    DRAM peak) and its DRAM traffic at or below the DRAM peak (0.5 % measurement slack)."""
    dataset = read_once(path)
    peaks = device_peaks(dataset.kernel_metrics, dataset.gpus, {})
    points = roofline_datasets(dataset.kernel_metrics.assign(friendly_name=None, **{"class": None}), peaks)["physical"]
    checked = 0
    for _, p in points.iterrows():
        peak = peaks.flop_per_s.get(p["datapath"])
        if peak is None or peaks.dram_bytes_per_s is None:
            continue
        roof = min(peak, p["arithmetic_intensity"] * peaks.dram_bytes_per_s)
        assert p["achieved_flop_per_s"] <= roof * 1.005, (path.name, p["name"][:80], p["datapath"])
        checked += 1
    metrics = dataset.kernel_metrics
    bandwidth = metrics["dram_bytes"] / (metrics["duration_ns"] * 1e-9)
    if peaks.dram_bytes_per_s:
        assert (bandwidth.dropna() <= peaks.dram_bytes_per_s * 1.005).all(), path.name
    if "examples/runs" in str(path) or "gemm" in str(path):
        assert checked > 0 and peaks.clock == "max_boost"
