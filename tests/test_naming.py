"""Kernel naming on the real kernel names of every fixture (nsys, ncu, Kineto)."""
from __future__ import annotations

import csv
import gzip
import io
import json
import lzma
import sqlite3
from pathlib import Path

import ncu_report
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.analyses.cpp_names import canonical, parse_name
from generator.analyses.naming import CATEGORIES, kernels_yaml, name_kernels

DATA = Path(__file__).parent / "data"

SQLITE = ["h200-small/small_vlm.nsys.sqlite.xz", "nvtx-examples/cudf-groupby.sqlite"]
NCU_CSV = [
    "ESMM-Research/metrics.csv",
    "leleucas-apc/bert_torch_nsight.csv.xz",
    "leleucas-apc/gpt2_flashattn_nsight.csv.xz",
    "h200-small/small_vlm_decode_ncu_raw.csv.xz",
]
NCU_REP = [
    "h200-small/small_vlm_prefill.ncu-rep.xz",
    "ESMM-Research/profile_output.ncu-rep",
    "nsight-training/manual_nvtx.ncu-rep",
    "nsight-training/CuVectorAddDrv.ncu-rep",
]
TRACES = [
    "h200-small/small_vlm_torch_trace.json.gz",
    "hta/alexnet_benchmark_result_2869224_1695835535_trace.json.xz",
    "hta/negative_queue_length_rank0.json.gz",
    "hta/ns_resolution_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
]


def _plain(rel: str, tmp: Path) -> Path:
    path = DATA / rel
    if path.suffix != ".xz":
        return path
    out = tmp / path.stem
    if not out.exists():
        out.write_bytes(lzma.decompress(path.read_bytes()))
    return out


def _sqlite_names(path: Path) -> list[str]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        sql = ("SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName"
               " GROUP BY s.value ORDER BY SUM(k.end - k.start) DESC, s.value")
        return [row[0] for row in con.execute(sql)]


def _csv_names(path: Path) -> list[str]:
    rows = csv.reader(io.StringIO(path.read_text()))
    header = next(rows)
    col = header.index("Kernel Name")
    # the raw page's second row holds units; its Kernel Name cell is empty
    return sorted({row[col] for row in rows if len(row) > col and row[col]})


def _rep_names(path: Path) -> list[str]:
    ctx = ncu_report.load_report(str(path))
    return sorted({a.name(ncu_report.IAction.NameBase_DEMANGLED) for r in ctx for a in r})


def _trace_names(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else lzma.open
    with opener(path, "rt") as fh:
        events = json.load(fh)["traceEvents"]
    return sorted({e["name"] for e in events if e.get("cat") == "kernel"})


@pytest.fixture(scope="module")
def fixture_names(tmp_path_factory) -> dict[str, list[str]]:
    """Every kernel name of every fixture that carries kernel names, per file."""
    tmp = tmp_path_factory.mktemp("names")
    names = {rel: _sqlite_names(_plain(rel, tmp)) for rel in SQLITE}
    names |= {rel: _csv_names(_plain(rel, tmp)) for rel in NCU_CSV}
    names |= {rel: _rep_names(_plain(rel, tmp)) for rel in NCU_REP}
    names |= {rel: _trace_names(DATA / rel) for rel in TRACES}
    return names


@pytest.fixture(scope="module")
def all_names(fixture_names) -> list[str]:
    return sorted({n for names in fixture_names.values() for n in names})


# (substring of real names, source_lib, category, friendly name of every name that contains it)
CURATED = [
    ("nvjet_sm90_tst_8x64_64x16_2x1_v_bz_TNN", "cuBLAS", "gemm", "nvjet GEMM (8x64x64, 2x1, TNN)"),
    ("nvjet_sm90_tst_64x8_64x16_4x1_v_bz_splitK_TNT", "cuBLAS", "gemm", "nvjet GEMM (64x8x64, 4x1, splitK, TNT)"),
    ("nvjet_sm90_tst_256x72_64x5_2x1_v_bz_coopA_bias_TNT", "cuBLAS", "gemm",
     "nvjet GEMM (256x72x64, 2x1, coopA, bias, TNT)"),
    ("ampere_sgemm_128x64_nn", "cuBLAS", "gemm", "cuBLAS GEMM (FP32, 128x64, nn)"),
    ("ampere_sgemm_32x32_sliced1x4_tn", "cuBLAS", "gemm", "cuBLAS GEMM (FP32, 32x32, tn)"),
    ("ampere_fp16_s16816gemm_fp16_64x64_sliced1x2_ldg8_relu_f2f_stages_64x6_tn", "cuBLAS", "gemm",
     "cuBLAS GEMM (FP16, 64x64, tn)"),
    ("volta_sgemm_64x32_sliced1x4_nn", "cuBLAS", "gemm", "cuBLAS GEMM (FP32, 64x32, nn)"),
    ("gemv2T_kernel_val<int, int, float", "cuBLAS", "gemv", "GEMV (FP32)"),
    ("cublasLt::splitKreduce_kernel<(int)32, (int)16, int, float, __nv_bfloat16", "cuBLASLt", "gemm",
     "Split-K Reduce (BF16)"),
    ("splitKreduce_kernel<(int)32, (int)16, int, __half", "cuBLAS", "gemm", "Split-K Reduce (FP16)"),
    ("epilogue::impl::globalKernel", "cuBLASLt", "gemm", "GEMM Epilogue (FP32)"),
    ("cutlass_80_simt_sgemm_128x32_8x5_tn_align1>(T1::Params)", "CUTLASS", "gemm", "CUTLASS GEMM (FP32, 128x32x8, tn)"),
    ("cutlass_80_tensorop_f16_s16816gemm_relu_f16_64x64_64x6_tn_align8", "CUTLASS", "gemm",
     "CUTLASS GEMM (FP16, 64x64x64, relu, tn)"),
    ("cutlass_80_tensorop_s1688gemm_128x64_16x6_tn_align4", "CUTLASS", "gemm", "CUTLASS GEMM (TF32, 128x64x16, tn)"),
    ("fmha_fwd_loop_kernel<FMHA_kernel_traits", "FlashAttention", "attention", "FMHA Forward (FP16, hdim 64)"),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64", "cuDNN", "attention",
     "cuDNN Flash Attention Forward (sm90, 64x128x64)"),
    ("cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35_16x128x64", "cuDNN", "attention",
     "cuDNN Flash Attention Forward (sm80, 16x128x64)"),
    ("lean_reduction_kernel", "cuDNN", "reduce", "cuDNN Fused Reduction"),
    ("implicit_convolve_sgemm<__nv_bfloat16", "cuDNN", "conv", "cuDNN Conv Forward (BF16)"),
    ("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32", "cuDNN", "conv", "cuDNN Conv Forward (TF32, 128x128)"),
    ("cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1", "cuDNN", "conv", "cuDNN Conv Forward (FP32, 128x64)"),
    ("winogradForwardData4x4", "cuDNN", "conv", "cuDNN Conv Winograd (FP32)"),
    ("bn_fw_tr_1C11_singleread", "cuDNN", "norm", "cuDNN Batch Norm (FP32)"),
    ("nchwToNhwcKernel<float, float, float, false, true, (cudnnKernelDataType_t)2>", "cuDNN", "copy",
     "cuDNN Layout Transform (FP32, NCHW→NHWC)"),
    ("vectorized_elementwise_kernel<(int)8, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, "
     "at::native::binary_internal::MulFunctor", "PyTorch ATen", "elementwise", "Elementwise Multiply (BF16, vec)"),
    ("elementwise_kernel<(int)128, (int)4, void at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor"
     "<c10::BFloat16", "PyTorch ATen", "elementwise", "Elementwise Multiply (BF16)"),
    ("vectorized_elementwise_kernel<(int)8, at::native::CUDAFunctor_add<c10::BFloat16>", "PyTorch ATen",
     "elementwise", "Elementwise Add (BF16, vec)"),
    ("silu_kernel", "PyTorch ATen", "elementwise", "SiLU Activation (BF16, vec)"),
    ("GeluCUDAKernelImpl", "PyTorch ATen", "elementwise", "GELU Activation (BF16, vec)"),
    ("neg_kernel_cuda(at::TensorIteratorBase &)::[lambda() (instance 2)]::operator ()() const::[lambda() "
     "(instance 9)]", "PyTorch ATen", "elementwise", "Elementwise Neg (BF16)"),
    ("unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase &)::[lambda() "
     "(instance 3)]", "PyTorch ATen", "copy", "Direct Copy (FP32, unrolled)"),
    ("vectorized_elementwise_kernel<(int)8, at::native::bfloat16_copy_kernel_cuda", "PyTorch ATen", "copy",
     "Copy to BF16 (FP32, vec)"),
    ("rsqrt_kernel_cuda", "PyTorch ATen", "elementwise", "Elementwise Rsqrt (FP32, vec)"),
    ("arange_cuda_out", "PyTorch ATen", "elementwise", "Arange (INT64)"),
    ("FillFunctor<long>", "PyTorch ATen", "copy", "Fill (INT64, vec)"),
    ("fused_dropout_kernel_vec", "PyTorch ATen", "elementwise", "Dropout (FP32)"),
    ("MeanOps<float, float, float, float>, unsigned int, float, (int)4, (int)4>>", "PyTorch ATen", "reduce",
     "Reduce Mean (FP32)"),
    ("ArgMaxOps", "PyTorch ATen", "reduce", "ArgMax (BF16)"),
    ("CatArrayBatchedCopy_vectorized<at::native::<unnamed>::OpaqueType<(unsigned int)2>, unsigned int, (int)3, "
     "(int)128", "PyTorch ATen", "cat", "Cat Batched Copy (vec, 2B, dims=3, batch=128)"),
    ("CatArrayBatchedCopy<at::native::<unnamed>::OpaqueType<(unsigned int)2>, unsigned int, (int)4, (int)64",
     "PyTorch ATen", "cat", "Cat Batched Copy (2B, dims=4, batch=64)"),
    ("indexSelectSmallIndex<c10::BFloat16", "PyTorch ATen", "index", "Index Select (BF16)"),
    ("vectorized_gather_kernel", "PyTorch ATen", "index", "Gather"),
    ("softmax_warp_forward<float, float, float, (int)5", "PyTorch ATen", "softmax", "Softmax (FP32)"),
    ("softmax_warp_backward", "PyTorch ATen", "softmax", "Softmax Backward (FP32)"),
    ("vectorized_layer_norm_kernel<c10::BFloat16", "PyTorch ATen", "norm", "Layer Norm (BF16)"),
    ("max_pool_forward_nchw", "PyTorch ATen", "other", "Max Pool (FP32)"),
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", "NCCL", "comm", "NCCL SendRecv (INT8, Sum, RING/SIMPLE)"),
    ("triton__0d1d2d3d4d5d6d7d8d9d10d11d12d13d14", "Triton", "triton",
     "Triton: triton__0d1d2d3d4d5d6d7d8d9d10d11d12d13d14"),
    ("cub::DeviceRadixSortOnesweepKernel", "Thrust/CUB", "other", "CUB Sort: DeviceRadixSortOnesweepKernel"),
    ("cub::DeviceReduceSingleTileKernel", "Thrust/CUB", "reduce", "CUB Reduce: DeviceReduceSingleTileKernel"),
    ("warptiling<(int)128", "CUDA", "other", "CUDA kernel: warptiling"),
    ("daxpy_kernel", "CUDA", "other", "CUDA kernel: daxpy_kernel"),
    ("VecAdd_kernel", "CUDA", "other", "CUDA kernel: VecAdd_kernel"),
]


def test_curated_real_names_get_their_family(all_names):
    assert len(CURATED) >= 40
    for needle, lib, category, friendly in CURATED:
        hits = [n for n in all_names if needle in n]
        assert hits, needle
        for raw in hits:  # one call each: nsys, ncu and Kineto spell one kernel differently
            kernel = name_kernels([raw])[raw]
            assert (kernel.source_lib, kernel.category) == (lib, category), raw
            assert kernel.friendly_name == friendly, raw


def test_every_fixture_name_set_gets_unique_friendly_names(fixture_names):
    assert sum(len(v) for v in fixture_names.values()) == 400
    for rel, raws in fixture_names.items():
        named = name_kernels(raws)
        assert list(named) == raws, rel
        friendly = [k.friendly_name for k in named.values()]
        assert len(set(friendly)) == len(raws), rel
        for kernel in named.values():
            assert kernel.category in CATEGORIES
            assert kernel.description["en"] and kernel.description["zh"]
            assert "{" not in kernel.description["en"] + kernel.description["zh"] + kernel.friendly_name


def test_same_family_collisions_are_numbered_in_input_order(fixture_names):
    """The H200 decode has two CUTLASS SIMT GEMMs that differ only in layout, and the cudf capture
    two `kernel_v_v` instantiations that differ in one template argument (seed: template=7/6)."""
    names = name_kernels(fixture_names["nvtx-examples/cudf-groupby.sqlite"])
    kv = {raw: k.friendly_name for raw, k in names.items() if "kernel_v_v" in raw}
    assert sorted(kv.values()) == ["CUDA kernel: kernel_v_v-1 (template=double)",
                                   "CUDA kernel: kernel_v_v-2 (template=longlong)"]
    sums = [r for r in fixture_names["hta/ns_resolution_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"]
            if "sum_functor<float" in r]
    named = name_kernels(sums)
    assert [named[r].friendly_name for r in sums] == ["Reduce Sum-1 (FP32, template=128,4)",
                                                      "Reduce Sum-2 (FP32, template=512,1)"]
    flipped = name_kernels(list(reversed(sums)))
    assert flipped[sums[1]].friendly_name == "Reduce Sum-1 (FP32, template=512,1)"


def test_unrecognized_names_are_said_to_be_unrecognized(fixture_names):
    named = name_kernels(fixture_names["ESMM-Research/metrics.csv"])
    basic = named["basic(int, int, int, const float *, const float *, float *)"]
    assert basic.friendly_name == "CUDA kernel: basic"
    assert basic.source_lib == "CUDA" and basic.category == "other"
    assert "Unrecognized" in basic.description["en"] and "未识别" in basic.description["zh"]
    assert basic.data_shape == {"generic": None, "fixed": None, "tiled": None}


def test_gemm_and_attention_tiles_come_from_the_name(all_names):
    nvjet = name_kernels(["nvjet_sm90_tst_128x288_64x4_2x1_v_bz_coopA_TNT"])["nvjet_sm90_tst_128x288_64x4_2x1_v_bz_coopA_TNT"]
    assert nvjet.data_shape["tiled"] == {
        "tile_m": 128, "tile_n": 288, "tile_k": 64, "stages": 4, "cluster": "2x1", "layout": "TNT",
        "shape": "(128, 64), (64, 288) -> (128, 288)",
    }
    fmha = next(n for n in all_names if "fmha_fwd_loop_kernel" in n)
    named = name_kernels([fmha])[fmha]
    assert named.data_shape["fixed"] == {"head_dim": 64}
    assert named.data_shape["tiled"] == {"seq_tile": 128, "step": 16, "warps": "1x4"}
    cutlass = next(n for n in all_names if "cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align1" in n)
    assert name_kernels([cutlass])[cutlass].data_shape["tiled"]["shape"] == "(256, 32), (32, 128) -> (256, 128)"


# Names the issue lists that no fixture holds: the patterns must still read them.
DOCUMENTED = {
    "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT":
        ("cuBLAS", "gemm", "nvjet GEMM (256x128x64, 1x2, coopA, NNT)"),
    "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x256_32x3_tn_align8>(T1::Params)":
        ("CUTLASS", "gemm", "CUTLASS GEMM (BF16, 128x256x32, relu, tn)"),
    "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn": ("cuBLAS", "gemm", "cuBLAS GEMM (FP16, 128x128, nn)"),
    "turing_fp16_s1688gemm_fp16_256x128_ldg8_f2f_tn": ("cuBLAS", "gemm", "cuBLAS GEMM (FP16, 256x128, tn)"),
    "fmha_cutlassF_bf16_aligned_64x64_rf_sm80": ("PyTorch mem-eff attention", "attention",
                                                 "Mem-Efficient Attention Forward (BF16, 64x64)"),
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL": ("NCCL", "comm", "NCCL AllReduce (BF16, Sum, RING/LL)"),
    "triton_poi_fused_add_mul_0": ("Triton", "triton", "Triton Pointwise (fused_add_mul_0)"),
    "triton_red_fused_sum_1": ("Triton", "triton", "Triton Reduction (fused_sum_1)"),
    "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<(int)128, (int)64, (int)128, (int)4, (bool)0, "
    "(bool)0, cutlass::bfloat16_t, Flash_kernel_traits<(int)128, (int)64, (int)128, (int)4, cutlass::bfloat16_t>>, "
    "(bool)0, (bool)0, (bool)0, (bool)0, (bool)1, (bool)1, (bool)0, (bool)0>(flash::Flash_fwd_params)":
        ("FlashAttention", "attention", "FlashAttention Split-KV (BF16, hdim 128, 64x128)"),
    "void flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<(int)128, (int)64, (int)128, (int)4, "
    "(bool)0, (bool)0, cutlass::bfloat16_t, Flash_kernel_traits<(int)128, (int)64, (int)128, (int)4, "
    "cutlass::bfloat16_t>>, (int)4, (int)1, (bool)1>(flash::Flash_fwd_params)":
        ("FlashAttention", "attention", "FlashAttention Split-KV Combine (BF16, hdim 128, 64x128)"),
    "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<(int)64, (int)128, (int)128, "
    "(int)4, (bool)0, (bool)0, cutlass::half_t, pytorch_flash::Flash_kernel_traits<(int)64, (int)128, (int)128, "
    "(int)4, cutlass::half_t>>, (bool)1, (bool)0, (bool)0>(pytorch_flash::Flash_fwd_params)":
        ("FlashAttention", "attention", "FlashAttention Forward (FP16, hdim 64, 128x128)"),
    "void at::native::<unnamed>::cunn_SoftMaxForward<(int)4, float, float, float, at::native::<unnamed>::"
    "SoftMaxForwardEpilogue>(T3 *, const T1 *, int)": ("PyTorch ATen", "softmax", "Softmax (FP32)"),
    "void at::native::<unnamed>::RowwiseMomentsCUDAKernel<c10::BFloat16, float>(long, T2, const T1 *, T2 *, T2 *)":
        ("PyTorch ATen", "norm", "Row-wise Moments (BF16)"),
    "void at::native::sbtopk::gatherTopK<float, unsigned int, (int)2, (bool)0>(at::cuda::detail::TensorInfo<const "
    "T1, T2>, T2, T2, bool, T2, T2, at::cuda::detail::TensorInfo<T1, T2>, T2, at::cuda::detail::TensorInfo<long, "
    "T2>, T2, T1 *)": ("PyTorch ATen", "moe", "Top-K (FP32)"),
    "void at::cuda::kernelHistogram1D<float, float, long, (int)1, (int)2, (int)-1, "
    "(at::cuda::CUDAHistogramMemoryType)0, at::native::<unnamed>::histc_cuda_template<float>(const at::Tensor &, "
    "long, const at::Scalar &, const at::Scalar &)::[lambda(float) (instance 1)]>(at::cuda::detail::TensorInfo<T1, "
    "T3>, at::cuda::detail::TensorInfo<T2, T3>, at::cuda::detail::TensorInfo<T1, T3>, int, T2, T2, T3, T4)":
        ("PyTorch ATen", "moe", "Histogram (FP32)"),
    "void at::native::indexFuncSmallIndex<c10::BFloat16, long, unsigned int, (int)2, (int)2, (int)-2, "
    "at::native::ReduceAdd>(at::cuda::detail::TensorInfo<T1, T3>, at::cuda::detail::TensorInfo<const T1, T3>, "
    "at::cuda::detail::TensorInfo<const T2, T3>, int, int, T3, T3, long, const T4 &, T1)":
        ("PyTorch ATen", "moe", "Index Add (BF16)"),
}


CUTLASS3 = (
    "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<{problem}, cutlass::gemm::collective::"
    "CollectiveMma<cutlass::gemm::MainloopSm90TmaGmmaWarpSpecialized<(int)4, cute::tuple<cute::C<(int)2>, "
    "cute::C<(int)1>, cute::C<(int)1>>, cutlass::gemm::KernelTmaWarpSpecializedCooperative>, cute::tuple<"
    "cute::C<(int)128>, cute::C<(int)256>, cute::C<(int)64>>, cutlass::bfloat16_t, cute::tuple<long, cute::C<(int)1>, "
    "long>, cutlass::bfloat16_t, cute::tuple<long, cute::C<(int)1>, long>>, void>>(T1::Params)"
)


def test_cutlass3_tile_stages_and_cluster_come_from_the_template_arguments():
    plain = CUTLASS3.format(problem="cute::tuple<int, int, int, int>")
    grouped = CUTLASS3.format(problem="cutlass::gemm::GroupProblemShape<cute::tuple<int, int, int>>")
    named = name_kernels([plain, grouped])
    assert named[plain].friendly_name == "CUTLASS 3 GEMM (BF16, 128x256x64)"
    assert named[plain].data_shape["tiled"] == {
        "tile_m": 128, "tile_n": 256, "tile_k": 64, "stages": 4, "cluster": "2x1x1",
        "shape": "(128, 64), (64, 256) -> (128, 256)",
    }
    assert named[grouped].friendly_name == "CUTLASS Grouped GEMM (BF16, 128x256x64)"
    assert {k.source_lib for k in named.values()} == {"CUTLASS"}


def test_documented_library_names():
    for raw, (lib, category, friendly) in DOCUMENTED.items():
        kernel = name_kernels([raw])[raw]
        assert (kernel.source_lib, kernel.category, kernel.friendly_name) == (lib, category, friendly), raw
    flash = name_kernels(list(DOCUMENTED))[next(r for r in DOCUMENTED if "splitkv_kernel" in r)]
    assert flash.data_shape["fixed"] == {"head_dim": 128}
    assert flash.data_shape["tiled"]["shape"] == (
        "Q_tile:(64, 128), K_tile:(128, 128), V_tile:(128, 128) -> O_tile:(64, 128)")


def test_seed_gemv_pair_is_told_apart_by_its_template_argument():
    """Seed 000: two cuBLAS gemvx instantiations, GEMV-1 (BF16, template=7) / GEMV-2 (BF16, template=6)."""
    def gemvx(variant: int) -> str:
        return ("std::enable_if<!T7, void>::type internal::gemvx::kernel<int, int, __nv_bfloat16, __nv_bfloat16, "
                f"__nv_bfloat16, float, (bool)0, (bool)1, (bool)1, (bool)0, (int){variant}, (bool)0, "
                "cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<const __nv_bfloat16>, "
                "cublasGemvTensorStridedBatched<const __nv_bfloat16>, cublasGemvTensorStridedBatched<__nv_bfloat16>, "
                "float>>(T13)")
    named = name_kernels([gemvx(7), gemvx(6)])
    assert [k.friendly_name for k in named.values()] == ["GEMV-1 (BF16, template=7)", "GEMV-2 (BF16, template=6)"]
    assert {k.source_lib for k in named.values()} == {"cuBLAS"}


def test_nsys_ncu_and_kineto_spellings_parse_alike(fixture_names):
    nsys = next(n for n in fixture_names["h200-small/small_vlm.nsys.sqlite.xz"] if "indexSelectSmallIndex" in n)
    ncu = next(n for n in fixture_names["h200-small/small_vlm_decode_ncu_raw.csv.xz"] if "indexSelectSmallIndex" in n)
    kineto = next(n for n in fixture_names["h200-small/small_vlm_torch_trace.json.gz"] if "indexSelectSmallIndex" in n)
    parsed = [parse_name(n) for n in (nsys, ncu, kineto)]
    assert {p.base for p in parsed} == {"indexSelectSmallIndex"}
    assert {canonical(",".join(p.template_args)) for p in parsed} == {"BFloat16,long,unsignedint,2,2,-2"}
    assert parsed[0].scopes == ("at", "native", "_anon_")


def test_kernels_yaml_round_trips_with_the_schema(fixture_names):
    raws = fixture_names["h200-small/small_vlm.nsys.sqlite.xz"]
    text = kernels_yaml(name_kernels(raws).values())
    assert text == kernels_yaml(name_kernels(raws).values())
    entries = yaml.safe_load(text)
    assert [e["raw_name"] for e in entries] == raws
    for entry in entries:
        assert list(entry) == ["raw_name", "friendly_name", "source_lib", "category", "data_shape", "description"]
        assert set(entry["data_shape"]) == {"generic", "fixed", "tiled"}
        assert set(entry["description"]) == {"en", "zh"}
    top = entries[0]
    assert top["friendly_name"] == "nvjet GEMM (8x64x64, 2x1, TNN)"
    assert top["data_shape"]["tiled"]["stages"] == 16


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="<>()[]{}:,# _abcTv01", max_size=40), max_size=8))
def test_any_text_gets_a_unique_name_without_error(raws):
    named = name_kernels(raws)
    assert list(named) == list(dict.fromkeys(raws))
    assert len({k.friendly_name for k in named.values()}) == len(named)
