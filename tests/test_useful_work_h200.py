"""Useful work from the operator shapes of the H200 captures of 2026-11-29, against independent
authorities: the capture's own ops/calls.csv read with csv and json (2·M·N·K recomputed here), ncu's
raw tensor-op counters (ncu/raw.csv.xz, one row per profiled launch in the manifest's order), the
preset's MoE configuration (capture/workloads/ocr_vlm.py, read as text).

- examples/runs/ocr-vlm-sdpa-h200-a: DeepSeek-OCR-shaped VLM, MoE decoder (64 experts, top-6);
- examples/runs/llm-decode-h200-a: dense Llama-style GQA decoder;
- examples/runs/ocr-vlm-sdpa-h200: the same VLM captured without shapes.
Both shaped captures: batch 1, a 64-token prompt, 32 new tokens.
"""
from __future__ import annotations

import csv
import io
import json
import lzma
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from generator.analyses.version import AnalysisSettings, analyze_version
from generator.cli import main
from generator.pipeline.config import files_report
from generator.pipeline.inputs import InputCache, version_inputs

ROOT = Path(__file__).parent.parent
RUNS = ROOT / "examples" / "runs"
SHAPED = ("ocr-vlm-sdpa-h200-a", "llm-decode-h200-a")
#: profiled matrix-product kernels with known shapes per stage (read off the useful-work table by hand:
#: the split-K reduction of llm-decode's down projection shares its GEMM's call and has none)
PRODUCTS = {"ocr-vlm-sdpa-h200-a": {"sam": 4, "clip": 2, "projector": 1, "prefill": 5, "decode": 5},
            "llm-decode-h200-a": {"prefill": 5, "decode": 5}}
TENSOR_OPS = re.compile(r"sm__ops_path_tensor_src_[a-z0-9_]+\.sum")
#: stated rows or shape classes (saying that they are unknown is allowed)
ROW_WORDS = re.compile(r"\d\s*rows?\b|rows per|skinny|GEMV|matrix-vector|M = 1|\d\s*行|窄|矩阵-向量")


def _analyzed(name: str) -> tuple:
    run = RUNS / name
    config = files_report([run])
    with InputCache() as cache:
        inputs = version_inputs(config.versions[0], cache, RUNS, 0)
        return inputs, analyze_version("v1", inputs, AnalysisSettings(rule="sol"))


@pytest.fixture(scope="module", params=SHAPED)
def shaped(request):
    return (request.param, *_analyzed(request.param))


@pytest.fixture(scope="module")
def ocr():
    return _analyzed("ocr-vlm-sdpa-h200-a")


def _calls(name: str) -> dict[tuple[str, int], dict[str, str]]:
    """ops/calls.csv of the run by (iteration, call), read with csv."""
    text = lzma.decompress((RUNS / name / "ops" / "calls.csv.xz").read_bytes()).decode()
    return {(row["iteration"], int(row["call"])): row for row in csv.DictReader(io.StringIO(text))}


def _mnk(call: dict[str, str]) -> tuple[int, int, int, int]:
    """(total rows, N, K, groups) of a linear or grouped product from its input shapes."""
    shapes = json.loads(call["input_shapes"])
    if call["op"] == "aten.linear.default":  # input (..., K), weight (N, K)
        return math.prod(shapes[0][:-1]), shapes[1][0], shapes[0][-1], 1
    assert call["op"] == "aten._grouped_mm.default", call["op"]  # (rows, K)·(groups, K, N)
    (rows, k), (groups, k2, n) = shapes[0], shapes[1]
    assert k == k2
    return rows, n, k, groups


def _tensor_ops(name: str) -> dict[tuple[str, str], float]:
    """ncu's executed tensor ops per (stage, kernel name as nsys writes it), from the raw CSV: its rows
    are the profiled launches in the manifest's ncu_launches order, named there as launched (mangled
    where the manifest's mangled_names lists it under the nsys name)."""
    raw = pd.read_csv(RUNS / name / "ncu" / "raw.csv.xz", low_memory=False, thousands=",").iloc[1:]
    manifest = json.loads((RUNS / name / "manifest.json").read_text())
    launches = manifest["ncu_launches"]
    assert len(raw) == len(launches)
    demangled = {mangled: plain for plain, names in manifest["mangled_names"].items() for mangled in names}
    columns = [c for c in raw.columns if TENSOR_OPS.fullmatch(c)]
    ops: dict[tuple[str, str], list[float]] = {}
    for launch, (_, row) in zip(launches, raw.iterrows()):
        key = (launch["stage"], demangled.get(launch["kernel"], launch["kernel"]))
        ops.setdefault(key, []).append(sum(float(row[c]) for c in columns if pd.notna(row[c])))
    return {key: values[0] for key, values in ops.items() if len(values) == 1}


def _products(result) -> pd.DataFrame:
    useful = result.values["useful_work"]
    return useful[useful["shape_class"] != "unknown"]


def test_useful_flop_is_2mnk_and_padding_is_useful_over_ncu_tensor_ops(shaped):
    name, _, result = shaped
    products = _products(result)
    assert products.groupby("stage").size().to_dict() == PRODUCTS[name]
    calls = _calls(name)
    ops = _tensor_ops(name)
    for _, row in products.iterrows():
        iteration, number = row["call"].split(":")
        rows, n, k, _ = _mnk(calls[(iteration, int(number))])
        assert row["useful_flop"] == 2 * rows * n * k, (row["stage"], row["friendly_name"])
        executed = ops[(row["stage"], row["name"])]
        assert executed > 0 and row["padding"] == pytest.approx(row["useful_flop"] / executed, rel=1e-12)


def test_decode_products_at_batch_1_multiply_one_row_per_weight_matrix(shaped):
    name, inputs, result = shaped
    batch = inputs.manifest["params"]["batch"]
    assert batch == 1
    calls = _calls(name)
    decode = _products(result)
    decode = decode[decode["stage"] == "decode"]
    for _, row in decode.iterrows():
        iteration, number = row["call"].split(":")
        rows, _, _, groups = _mnk(calls[(iteration, int(number))])
        # a linear multiplies the one new token; a grouped product one row per routed expert: each of
        # the token's top-k experts is a different one, so at most one row reaches any expert
        assert rows == batch if groups == 1 else rows <= groups
        assert (row["rows"], row["shape_class"]) == (1, "gemv")
    (shapes,) = [f for f in result.findings if f.id == "matmul_shapes" and f.stage == "decode"]
    assert (shapes.evidence["verdict"], shapes.evidence["min_rows"], shapes.evidence["max_rows"]) == ("gemv", 1, 1)
    assert shapes.evidence["skinny_pct"] == shapes.evidence["gemm_pct"] == 0.0
    # the rest is llm-decode's split-K reduction, which carries no work of its own
    assert shapes.evidence["gemv_pct"] + shapes.evidence["unknown_pct"] == pytest.approx(100.0, abs=0.1)
    assert shapes.evidence["gemv_pct"] > 97
    (units,) = [f for f in result.findings if f.id == "hw_decode_units"]
    assert (units.evidence["min_rows"], units.evidence["max_rows"]) == (1, 1)


def test_moe_grouped_gemm_rows_per_expert_in_prefill(ocr):
    """Rows per expert = prefill tokens × top-k / experts, the MoE configuration read from the preset
    and the tokens from the router's shapes (the linear whose N is the expert count)."""
    preset = (ROOT / "capture" / "workloads" / "ocr_vlm.py").read_text()
    experts = int(re.search(r"n_routed_experts=(\d+)", preset)[1])
    top_k = int(re.search(r"num_experts_per_tok=(\d+)", preset)[1])
    _, result = ocr
    calls = [c for c in _calls("ocr-vlm-sdpa-h200-a").values() if c["stage"] == "prefill"]
    routers = {_mnk(c)[0] for c in calls if c["op"] == "aten.linear.default" and _mnk(c)[1] == experts}
    (tokens,) = routers
    grouped = {_mnk(c)[::3] for c in calls if c["op"] == "aten._grouped_mm.default"}
    assert grouped == {(tokens * top_k, experts)}
    useful = result.values["useful_work"]
    (row,) = useful[(useful["stage"] == "prefill") & (useful["op"] == "aten._grouped_mm.default")
                    & useful["rows"].notna()].itertuples()
    assert row.rows == tokens * top_k / experts == 30.0 and row.shape_class == "skinny"
    assert row.m == tokens * top_k  # FLOP over every row: 2 · 1920 · N · K


def test_grouped_gemm_ideal_bytes_read_only_reachable_experts(ocr):
    """Decode: one token's 6 rows reach 6 of 64 experts, so the ideal bytes hold 6 experts' weights
    (the capture's total counts all 64); ncu measured about as many DRAM bytes, and the floor they
    give stays below the measured launch."""
    _, result = ocr
    useful = result.values["useful_work"]
    (row,) = useful[(useful["stage"] == "decode") & (useful["op"] == "aten._grouped_mm.default")
                    & useful["rows"].notna()].itertuples()
    weights = 6 * row.k * row.n * 2
    rows_bytes = 2 * (6 * row.k + 6 * row.n) + 4 * 64  # activations in and out (bf16), int32 offsets
    assert row.ideal_bytes == weights + rows_bytes
    assert 0.95 < row.ideal_bytes / row.dram_bytes < 1.05
    assert row.floor_ns < row.duration_ns


def test_every_floor_from_shapes_is_below_its_measured_launch(shaped):
    """A physical floor is a least time: no profiled launch ran faster than the floor its shapes give."""
    _, _, result = shaped
    useful = result.values["useful_work"]
    shaped_rows = useful[useful["floor_basis"].isin(["useful_flop", "ideal_bytes"])]
    assert len(shaped_rows) >= 9
    late = shaped_rows[shaped_rows["floor_ns"] > shaped_rows["duration_ns"]]
    assert late.empty, late[["stage", "friendly_name", "op", "floor_ns", "duration_ns"]].to_string()


def test_a_call_s_other_kernels_carry_no_useful_work():
    """llm-decode's down projection runs as a split-K GEMM and its reduction, one call: the GEMM
    carries 2·M·N·K, the reduction none (its padding would otherwise read 2048×)."""
    _, result = _analyzed("llm-decode-h200-a")
    useful = result.values["useful_work"]
    for stage in ("prefill", "decode"):
        pair = useful[(useful["stage"] == stage) & useful["friendly_name"].str.contains("splitK|Split-K")]
        assert len(pair) == 2 and pair["call"].nunique() == 1
        gemm = pair[pair["friendly_name"].str.contains("splitK")].iloc[0]
        reduce = pair[pair["friendly_name"].str.contains("Split-K")].iloc[0]
        assert gemm["padding"] < 1 and math.isnan(reduce["useful_flop"]) and reduce["shape_class"] == "unknown"


def test_fusion_saving_is_measured_minus_floor(ocr):
    """The decode fusion finding saves Σ (time − launches × floor) of its kernels, not their whole time."""
    _, result = ocr
    (fusion,) = [f for f in result.findings if f.id == "fusion" and f.stage == "decode"]
    bound = fusion.bound
    assert bound.floor_basis and bound.saving_ns < bound.affected_ns
    assert bound.saving_ns == pytest.approx(sum(s for _, s in bound.parts))
    assert fusion.evidence["saving_ms"] == round(bound.saving_ns / 1e6, 2)


def test_no_page_of_a_capture_without_shapes_states_rows_or_a_class(tmp_path):
    run = RUNS / "ocr-vlm-sdpa-h200"
    assert not (run / "ops").exists()
    src = tmp_path / "site_src"
    assert main(["build", str(run), "--out", str(tmp_path / "site"), "--src", str(src), "--no-cache"]) == 0
    pages = [p for p in src.rglob("*") if p.suffix in (".md", ".csv", ".json") and p.is_file()]
    assert len(pages) > 20
    for page in pages:
        text = page.read_text(encoding="utf-8")
        match = ROW_WORDS.search(text)
        assert match is None, (page.name, text[max(match.start() - 80, 0):match.end() + 40])
