"""nsys ↔ ncu join and coverage on the real H200 pair (nsys SQLite vs ncu report and raw CSV)."""
from __future__ import annotations

import gzip
import json
import lzma
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from generator.analyses.join import JOIN_COLUMNS, attach_stage_time, coverage
from generator.analyses.kernel_identity import identity
from generator.readers.base import read
from generator.readers.nsys_sqlite import kernel_summary, read_stages

H200 = Path(__file__).parent / "data" / "h200-small"
STAGES = ["all", "vision", "projector", "prefill", "decode"]


@pytest.fixture(scope="module")
def summary(tmp_path_factory) -> pd.DataFrame:
    plain = tmp_path_factory.mktemp("join") / "small_vlm.nsys.sqlite"
    plain.write_bytes(lzma.decompress((H200 / "small_vlm.nsys.sqlite.xz").read_bytes()))
    return kernel_summary(plain, STAGES)


@pytest.fixture(scope="module")
def prefill() -> pd.DataFrame:
    return read(H200 / "small_vlm_prefill.ncu-rep.xz").kernel_metrics


@pytest.fixture(scope="module")
def decode() -> pd.DataFrame:
    return read(H200 / "small_vlm_decode_ncu_raw.csv.xz").kernel_metrics


def base_name(name: str) -> str:
    """The function name without return type, scopes, template arguments or parameters."""
    return identity(name).function


def test_base_name_of_every_spelling():
    assert base_name("void at::native::vectorized_elementwise_kernel<(int)4, at::native::CUDAFunctorOnSelf_add"
                     "<float>, std::array<char *, (unsigned long)2>>(int, T2, T3)") == "vectorized_elementwise_kernel"
    assert base_name("void at::vectorized_elementwise_kernel<4, at::CUDAFunctorOnSelf_add<float>, "
                     "std::array<char *, 2>>(int, T2, T3)") == "vectorized_elementwise_kernel"
    assert base_name("vectorized_elementwise_kernel") == "vectorized_elementwise_kernel"
    assert base_name("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 1, 64, 64>"
                     "(float*)") == "CatArrayBatchedCopy"
    assert base_name("std::enable_if<!T7, void>::type internal::gemvx::kernel<int, int, float>(T13)") == "kernel"
    assert base_name("nvjet_sm90_tst_8x64_64x16_2x1_v_bz_TNN") == "nvjet_sm90_tst_8x64_64x16_2x1_v_bz_TNN"


def _pair(joined: pd.DataFrame, launch_id: int) -> pd.Series:
    return joined.set_index("launch_id").loc[launch_id]


def test_prefill_report_joins_every_launch(summary, prefill):
    joined = attach_stage_time(prefill, summary)
    assert len(joined) == 30
    assert list(joined.columns[-len(JOIN_COLUMNS):]) == JOIN_COLUMNS
    assert joined["summary_name"].notna().sum() == 30
    assert not joined["ambiguous"].any()
    assert set(joined["summary_stage"]) == {"prefill"}
    # checked by hand: the nn (not the tn) CUTLASS SIMT GEMM, 3 launches in the 3 prefill runs
    cutlass = _pair(joined, 4)
    assert cutlass["summary_name"] == "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>(T1::Params)"
    assert cutlass["count"] == 3
    nvjet = _pair(joined, 20)
    assert nvjet["summary_name"] == "nvjet_sm90_tst_64x144_64x8_4x2_h_bz_TNT"
    assert nvjet["count"] == 54
    row = summary[(summary["stage"] == "prefill") & (summary["name"] == nvjet["summary_name"])].iloc[0]
    assert nvjet["stage_time_pct"] == row["time_pct"] and nvjet["total_ns"] == row["total_ns"]


def test_decode_raw_csv_joins_despite_ncu_spelling(summary, decode):
    """ncu's raw CSV drops `native::`/`fusion::` scopes and `(int)` casts; nsys keeps them."""
    joined = attach_stage_time(decode, summary)
    assert len(joined) == 40
    assert joined["summary_name"].notna().sum() == 40
    assert not joined["ambiguous"].any()
    lean = _pair(joined, 37)
    assert lean["name"].startswith("void cudnn::lean_reduction_kernel<0, 0, 0>")
    assert lean["summary_name"].startswith("void cudnn::fusion::lean_reduction_kernel<(bool)0, (bool)0, (bool)0>")
    assert lean["count"] == 144
    mul = _pair(joined, 24)  # BF16 multiply, not the FP32 one nor the BF16 neg of the same base name
    assert mul["summary_name"].startswith(
        "void at::native::elementwise_kernel<(int)128, (int)4, void at::native::gpu_kernel_impl_nocast<"
        "at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor")
    assert mul["count"] == 576
    neg = _pair(joined, 25)
    assert "neg_kernel_cuda" in neg["summary_name"] and neg["count"] == 288
    index = _pair(joined, 0)
    assert index["summary_name"].startswith("void at::native::<unnamed>::indexSelectSmallIndex<c10::BFloat16, long, "
                                            "unsigned int, (int)2, (int)2, (int)-2>")
    assert index["count"] == 24
    top = _pair(joined, 21)
    assert top["summary_name"] == "nvjet_sm90_tst_8x64_64x16_2x1_v_bz_TNN"
    assert top["stage_time_pct"] == pytest.approx(15.11898, abs=1e-4)


def test_short_names_alone_are_ambiguous_not_guessed(summary, prefill):
    """With only ncu function names, several nsys kernels share `elementwise_kernel`: no match is made."""
    joined = attach_stage_time(prefill.assign(name=prefill["short_name"]), summary)
    ambiguous = joined[joined["ambiguous"]]
    assert len(ambiguous) == 21
    assert set(ambiguous["short_name"]) == {"vectorized_elementwise_kernel", "elementwise_kernel", "CatArrayBatchedCopy"}
    assert ambiguous["summary_name"].isna().all() and ambiguous["stage_time_pct"].isna().all()
    assert ambiguous["count"].isna().all()
    unique = joined[~joined["ambiguous"]]
    assert unique["summary_name"].notna().all() and len(unique) == 9


def test_launch_without_stage_is_looked_up_in_the_whole_capture(summary, prefill):
    joined = attach_stage_time(prefill.assign(stage=None), summary)
    assert set(joined["summary_stage"]) == {"all"}
    assert joined["summary_name"].notna().all()
    assert _pair(joined, 19)["count"] == 687  # BF16 multiply over vision + prefill + decode of 3 runs


def test_coverage_of_top_kernels(summary, prefill, decode):
    assert coverage(summary, decode, 10, "decode") == {
        "top_n": 10,
        "profiled": 8,
        "missing": ["nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT", "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_splitK_TNT"],
    }
    pre = coverage(summary, prefill, 10, "prefill")
    assert (pre["top_n"], pre["profiled"]) == (10, 7)
    assert pre["missing"][0] == "nvjet_sm90_tst_128x144_64x6_1x2_h_bz_TNT"
    assert pre["missing"][2].startswith("cudnn_generated_fort_native_sdpa_sm90_flash_fprop")
    # decode launches say nothing about prefill kernels
    assert coverage(summary, decode, 10, "prefill")["profiled"] == 0
    assert coverage(summary, decode, 100, "projector") == {"top_n": 2, "profiled": 0, "missing": list(
        summary[summary["stage"] == "projector"]["name"])}


def test_ncu_launches_join_a_kineto_summary_too(decode):
    """Kineto spells lambdas `{lambda()#2}` and substitutes template parameters in enclosing
    functions' parameter lists; the join still finds each launch's one kernel."""
    trace = H200 / "small_vlm_torch_trace.json.gz"
    joined = attach_stage_time(decode, read(trace).kernel_summary).set_index("launch_id")
    assert joined["summary_name"].notna().sum() == 40 and not joined["ambiguous"].any()
    mul = joined.loc[24]
    assert mul["summary_name"].startswith(
        "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor"
        "<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> > >")
    with gzip.open(trace, "rt") as fh:
        events = json.load(fh)["traceEvents"]
    assert mul["count"] == sum(e.get("cat") == "kernel" and e["name"] == mul["summary_name"] for e in events) == 421
    assert joined.loc[37, "summary_name"].startswith("void cudnn::fusion::lean_reduction_kernel<false, false, false>")


@pytest.fixture(scope="module")
def nsys_plain(tmp_path_factory) -> Path:
    plain = tmp_path_factory.mktemp("configs") / "small_vlm.nsys.sqlite"
    plain.write_bytes(lzma.decompress((H200 / "small_vlm.nsys.sqlite.xz").read_bytes()))
    return plain


def test_launch_configuration_decides_where_the_base_name_cannot(summary, prefill, nsys_plain):
    """ncu's function names alone join 9 of the 30 prefill launches; the launch configuration (grid,
    block, registers per thread) of the nsys export joins 6 more, each to the one prefill kernel of
    that base name plain SQL finds with that configuration; 15 stay ambiguous."""
    configs = read_stages(nsys_plain, STAGES).launch_configs
    short = prefill.assign(name=prefill["short_name"])
    alone = attach_stage_time(short, summary)
    joined = attach_stage_time(short, summary, configs)
    assert alone["summary_name"].notna().sum() == 9
    assert joined["summary_name"].notna().sum() == 15 and joined["ambiguous"].sum() == 15
    full = attach_stage_time(prefill, summary)
    decided = joined["summary_name"].notna() & alone["summary_name"].isna()
    assert decided.sum() == 6
    assert (joined.loc[decided, "summary_name"] == full.loc[decided, "summary_name"]).all()
    in_prefill = set(summary.loc[summary["stage"] == "prefill", "name"])
    con = sqlite3.connect(nsys_plain)
    for row in joined[decided].itertuples():
        grid = [int(v) for v in row.grid.strip("()").split(",")]
        block = [int(v) for v in row.block.strip("()").split(",")]
        found = {name for (name,) in con.execute(
            "SELECT DISTINCT d.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds d ON d.id = k.demangledName "
            "JOIN StringIds s ON s.id = k.shortName WHERE s.value = ? AND gridX = ? AND gridY = ? AND gridZ = ? "
            "AND blockX = ? AND blockY = ? AND blockZ = ? AND registersPerThread = ?",
            (row.short_name, *grid, *block, int(row.registers_per_thread)))}
        assert found & in_prefill == {row.summary_name}
    # with ncu's demangled names the configuration changes nothing
    assert list(attach_stage_time(prefill, summary, configs)["summary_name"]) == list(full["summary_name"])
