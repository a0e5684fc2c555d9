"""Library recognizers: a kernel's raw name → its family, op and the values its friendly name and
data shapes quote (tiles, stages, data type, head dim, NCCL collective …).

Code holds only name patterns; the words for each family live in generator/templates/kernel_families.yaml
(read by generator.analyses.naming).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from generator.analyses.cpp_names import ParsedName, canonical, demangle, parse_name
from generator.analyses.family_words import fragment
from generator.model import is_whole_graph

_ID = r"(?<![A-Za-z0-9])"  # identifier edge where '_' separates tokens
_DTYPES_CPP = (
    ("BF16", re.compile(r"BFloat16|__nv_bfloat16|\bbfloat16_t\b")),
    ("FP16", re.compile(r"c10::Half\b|\b__half\b|\bhalf_t\b|\bhalf\b")),
    ("FP32", re.compile(r"\bfloat\b")),
    ("FP64", re.compile(r"\bdouble\b")),
)
_DTYPES_FLAT = (
    ("BF16", re.compile(_ID + r"bf16")),
    ("FP16", re.compile(_ID + r"(?:fp16|f16|h\d*gemm|half)")),
    ("TF32", re.compile(r"tf32|tensorop_s1688")),
    ("FP32", re.compile(_ID + r"(?:fp32|f32|s\d*gemm|scudnn|float)")),
    ("FP64", re.compile(_ID + r"(?:fp64|f64|d\d*gemm|double)")),
)
_NCCL_DTYPES = {
    "bf16": "BF16", "f16": "FP16", "half": "FP16", "f32": "FP32", "float": "FP32",
    "f64": "FP64", "double": "FP64", "i8": "INT8", "int8_t": "INT8", "u8": "UINT8",
    "uint8_t": "UINT8", "i32": "INT32", "int32_t": "INT32", "u32": "UINT32", "i64": "INT64",
    "int64_t": "INT64", "u64": "UINT64", "f8e4m3": "FP8", "f8e5m2": "FP8",
}
DTYPE_CODES = {"BF16", "FP16", "TF32", "FP32", "FP64", "INT64", "INT32"}
_NCCL_ALGOS = {"RING", "TREE", "NVLS", "NVLSTREE", "COLLNET", "COLLNETDIRECT", "COLLNETCHAIN", "PAT"}
_NCCL_PROTOS = {"LL", "LL128", "SIMPLE"}
_NCCL_REDOPS = {"Sum", "Prod", "Max", "Min", "PreMulSum", "SumPostDiv"}

_ELEMENTWISE_OPS = (
    ("masked_fill", r"masked_fill"),
    ("direct_copy", r"direct_copy_kernel"),
    ("bf16_copy", r"bfloat16_copy_kernel"),
    ("fp16_copy", r"(?:float16|half)_copy_kernel"),
    ("fp32_copy", r"float32_copy_kernel"),
    ("mul", r"MulFunctor|\bmul_kernel"),
    ("add", r"CUDAFunctor(?:OnSelf|OnOther)?_add|AddFunctor|\badd_kernel"),
    ("sub", r"SubFunctor|\bsub_kernel"),
    ("div", r"Div(?:(?!Div)\w)*?Functor|\bdiv_(?:true|floor|trunc)_kernel"),
    ("silu", r"silu_kernel"),
    ("gelu", r"[Gg]elu"),
    ("relu", r"threshold_kernel|relu"),
    ("sigmoid", r"sigmoid_kernel"),
    ("tanh", r"\btanh_kernel"),
    ("neg", r"\bneg_kernel"),
    ("rsqrt", r"\brsqrt_kernel"),
    ("pow", r"\bpow_(?:tensor|kernel)"),
    ("exp", r"\bexp2?_kernel"),
    ("log", r"\blog(?:2|10|1p)?_kernel"),
    ("sin", r"\bsin_kernel"),
    ("cos", r"\bcos_kernel"),
    ("reciprocal", r"\breciprocal_kernel"),
    ("polar", r"\bpolar_kernel"),
    ("erfinv", r"\berfinv_kernel"),
    ("abs", r"AbsFunctor|\babs_kernel"),
    ("sign", r"\bsign_kernel"),
    ("clamp", r"clamp"),
    ("where", r"where_kernel"),
    ("compare", r"compare_scalar|Compare(?:(?!Compare)\w)*?Functor|\b(?:eq|ne|lt|gt|le|ge)_kernel"),
    ("logical", r"logical_(?:and|or|not|xor)"),
    ("fill", r"FillFunctor|\bfill_kernel"),
    ("arange", r"arange|linspace|range_cuda"),
    ("random", r"distribution_|normal_kernel|uniform_kernel|random_"),
    ("dropout", r"dropout"),
    ("multi_tensor", r"multi_tensor_apply"),
)
_REDUCE_OPS = (
    ("mean", r"MeanOps"), ("argmax", r"ArgMaxOps"), ("argmin", r"ArgMinOps"),
    ("sum", r"sum_functor|SumOps"), ("max", r"MaxOps|max_(?:kernel|values)"),
    ("min", r"MinOps|min_(?:kernel|values)"), ("norm", r"Norm(?:(?!Norm)\w)*?Ops"), ("welford", r"WelfordOps"),
    ("prod", r"prod_functor|ProdOps"), ("logical", r"and_kernel|or_kernel|Logical"),
)
_MOE_OPS = (
    ("topk", r"[Tt]op[Kk]|sbtopk|radixFindKthValues|KthCounts"),
    ("sort", r"[Ss]ort"),
    ("histc", r"[Hh]istogram|bincount"),
    ("index_add", r"indexFunc(?:Small|Large)Index|index_add"),
)
_INDEX_OPS = (
    ("index_select", r"indexSelect"),
    ("embedding_bwd", r"embedding_backward|indexing_backward|EmbeddingBag(?:(?!EmbeddingBag)\w)*?[Bb]ackward|compute_grad_weight"),
    ("index_put", r"index_put"), ("scatter", r"scatter"), ("gather", r"gather"),
    ("index", r"index(?:(?!index)\w)*?kernel"),
)
_NORM_OPS = (
    ("layer_norm_bwd", r"(?i:layer_?norm(?:(?!layer_?norm)\w)*?(?:backward|grad))|GammaBetaBackward"),
    ("rms_norm", r"(?i:rms_?norm)"), ("layer_norm", r"(?i:layer_?norm)"),
    ("moments", r"RowwiseMoments"), ("group_norm", r"(?i:group_?norm)|ComputeFusedParams"),
    ("batch_norm", r"(?i:batch_?norm)"),
)
_POOL_OPS = (("max_pool", r"(?i:max_?pool)"), ("avg_pool", r"(?i:av(?:(?!av)\w)*?pool)"))
_THRUST_OPS = (("reduce", r"Reduce"), ("scan_init", r"ScanInit"), ("scan", r"[Ss]can"), ("sort", r"[Ss]ort"))
_ATEN_MISC_OPS = (("upsample", r"upsample_\w+?_out_frame"), ("grouped_gemm_setup", r"prepare_grouped_gemm_data"))
#: the op a TensorIterator lambda or functor belongs to: ``masked_fill_kernel(``, ``CompareEqFunctor<``
_FUNCTOR = re.compile(r"(?:::|^)(?:<unnamed>::)?(\w+?)(?:_kernel)?(?:_cuda|_impl)?\(|(\w+?)Functor<")
#: PyTorch's jiterator kernels: ``<op>_kernel_vectorized4_kernel``, ``<op>_kernel_unrolled_kernel``
_JITERATOR = re.compile(r"(\w+?)_kernel_(vectorized\d*|unrolled)_kernel")


def _first_op(table: tuple[tuple[str, str], ...], text: str) -> str:
    for op, pattern in table:
        if re.search(pattern, text):
            return op
    return "generic"


def _present(*values: str | None) -> list[str]:
    return [v for v in values if v]


def _dtype_cpp(text: str) -> str | None:
    """Storage type of a templated kernel: 16-bit types win over float (the accumulator type)."""
    for dtype, pattern in _DTYPES_CPP:
        if pattern.search(text):
            return dtype
    if re.search(r"<long>|lambda\(long\)", text):
        return "INT64"
    return "INT32" if "<int>" in text else None


def _dtype_flat(text: str) -> str | None:
    """Data type from a flat library kernel name such as ampere_fp16_s16816gemm_…"""
    lower = text.lower()
    for dtype, pattern in _DTYPES_FLAT:
        if pattern.search(lower):
            return dtype
    return None


def _gemm_tile(m: int, n: int, k: int | None = None, **extra: Any) -> dict:
    tile: dict[str, Any] = {"tile_m": m, "tile_n": n}
    if k is not None:
        tile["tile_k"] = k
    tile.update({key: value for key, value in extra.items() if value is not None})
    if k is not None:
        tile["shape"] = f"({m}, {k}), ({k}, {n}) -> ({m}, {n})"
    return tile


def _attention_tile(block_m: int, block_n: int, head_dim: int | None, **extra: Any) -> dict:
    tile: dict[str, Any] = {"block_m": block_m, "block_n": block_n}
    tile.update({key: value for key, value in extra.items() if value is not None})
    if head_dim is not None:
        d = head_dim
        tile["shape"] = (f"Q_tile:({block_m}, {d}), K_tile:({block_n}, {d}), V_tile:({block_n}, {d})"
                         f" -> O_tile:({block_m}, {d})")
    return tile


@dataclass
class Match:
    """What the patterns found: family, op and the values that go into names and shapes."""

    family: str
    op: str | None = None
    short: str = ""
    details: list[str] = field(default_factory=list)
    variant: str | None = None  # key of `variants` in the templates
    fixed: dict | None = None
    tiled: dict | None = None
    coll: str = ""


_WORD_RUN = re.compile(r"\w+")
_NVJET = re.compile(r"nvjet_(?:sm\d+_)?\w*?_(\d+)x(\d+)_(\d+)x(\d+)_(\d+)x(\d+)_([hv])_(\w*?)_?([NT]{2,3})$")


def _chain(text: str, *parts: re.Pattern[str], gap: int = 0) -> list[re.Match[str]] | None:
    """The matches of ``parts[0] \\w{gap,}? parts[1] \\w{gap,}? …`` inside one run of word characters,
    found in linear time: in the first run that has them all, the first ``parts[0]``, then the first
    ``parts[1]`` at least ``gap`` characters after it, and so on (one regex with lazy gaps retries
    from every start and is quadratic on long names; a later start in a run sees a subset of it)."""
    for run in _WORD_RUN.finditer(text):
        found: list[re.Match[str]] = []
        at = run.start()
        for part in parts:
            nxt = part.search(text, at, run.end())
            if not nxt:
                break
            found.append(nxt)
            at = nxt.end() + gap
        else:
            return found
    return None


def _nvjet(p: ParsedName, raw: str) -> Match | None:
    """nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT: tile, K tile x stages, cluster, raster, flags, layout."""
    if not p.base.startswith("nvjet_"):
        return None
    # the pattern backtracks quadratically on long names that cannot match: rule those out first
    whole = _WORD_RUN.fullmatch(p.base) and p.base.endswith(("NN", "NT", "TN", "TT"))
    m = whole and _NVJET.match(p.base)
    if not m:
        return Match("nvjet_gemm")
    tm, tn, tk, stages, cm, cn = (int(g) for g in m.groups()[:6])
    flags = [f for f in m.group(8).split("_") if f and f != "bz"]
    cluster, layout = f"{cm}x{cn}", m.group(9)
    tiled = _gemm_tile(tm, tn, tk, stages=stages, cluster=cluster, layout=layout)
    return Match("nvjet_gemm", details=[f"{tm}x{tn}x{tk}", cluster, *flags, layout], tiled=tiled)


def _cublas_gemm(p: ParsedName, raw: str) -> Match | None:
    if not re.match(r"(?:sm\d+|maxwell|pascal|volta|turing|ampere|ada|hopper|blackwell)_\w*gemm", p.base):
        return None
    s = p.base
    size = re.search(r"tilesize(\d+)x(\d+)x(\d+)", s)
    stages = re.search(r"stages?_?(\d+)x(\d+)", s)
    layout = re.search(r"_(nn|nt|tn|tt)(?=_|$)", s)
    if size:
        stage = re.search(r"_stage(\d+)", s)
        tiled = _gemm_tile(int(size[1]), int(size[2]), int(size[3]),
                           stages=int(stage[1]) if stage else None, layout=layout and layout[1])
    elif tile := re.search(r"_(\d+)x(\d+)(?=_)", s):
        k, st = (int(stages[1]), int(stages[2])) if stages else (None, None)
        tiled = _gemm_tile(int(tile[1]), int(tile[2]), k, stages=st, layout=layout and layout[1])
    else:
        tiled = None
    tile_text = [f"{tiled['tile_m']}x{tiled['tile_n']}"] if tiled else []
    details = _present(_dtype_flat(s)) + tile_text + ([layout[1]] if layout else [])
    return Match("cublas_gemm", details=details, tiled=tiled)


def _cutlass(p: ParsedName, raw: str) -> Match | None:
    if "Mainloop" in raw or "GemmUniversal" in raw or "cutlass::gemm::kernel" in raw:
        grouped = re.search(r"Group|PtrArray", raw) is not None
        tiled = _cutlass3_tile(raw)
        details = _present(_dtype_cpp(raw))
        if tiled:
            details.append(f"{tiled['tile_m']}x{tiled['tile_n']}x{tiled['tile_k']}")
        return Match("cutlass3_grouped" if grouped else "cutlass3_gemm", details=details, tiled=tiled)
    flat = re.search(r"cutlass_\d+_(?:tensorop|simt|wmma)_\w+", raw)
    if flat:
        s = flat[0]
        tile = re.search(r"_(\d+)x(\d+)_(\d+)x(\d+)_", s)
        layout = re.search(r"_(nn|nt|tn|tt)(?:_align(\d+))?$", s)
        tiled = None
        if tile:
            tiled = _gemm_tile(int(tile[1]), int(tile[2]), int(tile[3]), stages=int(tile[4]),
                               layout=layout and layout[1],
                               alignment=int(layout[2]) if layout and layout[2] else None)
        details = _present(_dtype_flat(s))
        if tiled:
            details.append(f"{tiled['tile_m']}x{tiled['tile_n']}x{tiled['tile_k']}")
        details += [e for e in ("relu", "gelu", "bias") if f"_{e}_" in s] + ([layout[1]] if layout else [])
        return Match("cutlass2_gemm", details=details, tiled=tiled)
    if p.scopes[:1] == ("cutlass",):
        return Match("cutlass_other")
    return None


def _balanced_end(text: str, start: int) -> int:
    """Index just past the '>' closing the '<' at ``start``."""
    depth = 0
    for i in range(start, len(text)):
        depth += text[i] == "<"
        depth -= text[i] == ">"
        if depth == 0:
            return i + 1
    return len(text)


_TRIPLE = re.compile(r"C<(?:\(int\))?(\d+)>,\s*(?:cute::)?C<(?:\(int\))?(\d+)>,\s*(?:cute::)?C<(?:\(int\))?(\d+)>")


def _cutlass3_tile(raw: str) -> dict | None:
    """CollectiveMma<MainloopSm90…<Stages, ClusterShape, …>, TileShape, …>: tile follows the policy."""
    runs = (run for run in _WORD_RUN.finditer(raw) if "Mainloop" in run[0] and raw[run.end():run.end() + 1] == "<")
    policy = next(runs, None)
    if not policy:
        return None
    end = _balanced_end(raw, policy.end())
    inside = raw[policy.end() + 1 : end]
    stages = re.match(r"\s*(?:\(int\))?(\d+)\s*,", inside)
    cluster = _TRIPLE.search(inside)
    tile = _TRIPLE.search(raw, end)
    if not tile:
        return None
    return _gemm_tile(int(tile[1]), int(tile[2]), int(tile[3]),
                      stages=int(stages[1]) if stages else None,
                      cluster="x".join(cluster.groups()) if cluster else None)


def _flash(p: ParsedName, raw: str) -> Match | None:
    if p.base.startswith("fmha_fwd") and "FMHA_kernel_traits" in raw:
        t = re.search(r"FMHA_kernel_traits<" + r",\s*".join([r"(?:\(int\))?(\d+)"] * 5), raw)
        details = _present(_dtype_cpp(raw))
        if not t:
            return Match("fmha_v1", details=details)
        seq, hd, step, wm, wn = (int(g) for g in t.groups())
        details.append(fragment("head_dim", value=hd))
        return Match("fmha_v1", details=details, fixed={"head_dim": hd},
                      tiled={"seq_tile": seq, "step": step, "warps": f"{wm}x{wn}"})
    if not ({"flash", "pytorch_flash"} & set(p.scopes) or "flash::" in raw):
        return None
    if "combine" in p.base:
        family = "flash_combine"
    elif "splitkv" in p.base.lower():
        family = "flash_splitkv"
    elif "bwd" in p.base.lower() or "Bwd" in raw:
        family = "flash_bwd"
    else:
        family = "flash_fwd"
    details = _present(_dtype_cpp(raw))
    t = re.search(r"Flash_(?:fwd|bwd)_kernel_traits<" + r",\s*".join([r"(?:\(int\))?(\d+)"] * 4), raw)
    if not t:
        return Match(family, details=details)
    hd, bm, bn, warps = (int(g) for g in t.groups())
    details += [fragment("head_dim", value=hd), f"{bm}x{bn}"]
    return Match(family, details=details, fixed={"head_dim": hd},
                  tiled=_attention_tile(bm, bn, hd, warps=warps))


_MEMEFF_HEAD = re.compile(r"fmha_cutlass([FB])_")
_MEMEFF_TAIL = re.compile(r"_(aligned|notaligned)_(\d+)x(\d+)_(rf|gmem)_sm\d+")


def _memeff(p: ParsedName, raw: str) -> Match | None:
    found = _chain(raw, _MEMEFF_HEAD, _MEMEFF_TAIL, gap=1)  # a dtype between them
    if found:
        head, tail = found
        q, k = int(tail[2]), int(tail[3])
        fixed = {"max_head_dim": k} if tail[4] == "rf" else None
        details = _present(_dtype_flat("_" + raw[head.end():tail.start()])) + [f"{q}x{k}"]
        return Match("memeff_fwd" if head[1] == "F" else "memeff_bwd", details=details, fixed=fixed,
                      tiled=_attention_tile(q, k, None))
    if "PyTorchMemEffAttention" in raw or "AttentionKernel<" in raw and "cutlass" in raw:
        family = "memeff_bwd" if "Backward" in raw else "memeff_fwd"
        return Match(family, details=_present(_dtype_cpp(raw)))
    return None


_CONV = re.compile(r"implicit_convolve|scudnn|xmma_(?:fprop|dgrad|wgrad)|winograd|dgrad_engine|wgrad_alg"
                   r"|cutlass_\w*?(?:fprop|dgrad|wgrad)_"
                   r"|fft2d_|Offsets(?:(?!Offsets)\w)*?Kernel|reduce_wgrad")
_CONV_OPS = (("helper", r"Offsets(?:(?!Offsets)\w)*?Kernel|reduce_wgrad"), ("winograd", r"(?i:winograd)"), ("fft", r"fft"),
             ("wgrad", r"(?i:wgrad)"), ("dgrad", r"dgrad"))
_CUDNN_BARE = re.compile(r"implicit_convolve|wgrad_alg|dgrad_engine|fft2d_|sm\d+_xmma_(?:fprop|dgrad|wgrad)")


_SDPA = (re.compile(r"sdpa_(sm\d+)_"), re.compile(r"(fprop|bprop)"),
         re.compile(r"_(\d+)x(\d+)x(\d+)_(\d+x\d+x\d+)_cga(\d+x\d+x\d+)"))


def _cudnn(p: ParsedName, raw: str) -> Match | None:
    sdpa = _chain(raw, *_SDPA)
    if sdpa:
        (arch, direction, shape) = (m.groups() for m in sdpa)
        tile = "x".join(shape[:3])
        return Match("cudnn_sdpa_fwd" if direction[0] == "fprop" else "cudnn_sdpa_bwd",
                      details=[arch[0], tile], tiled={"tile": tile, "warps": shape[3], "cga": shape[4]})
    if "sdpa" in raw and "cudnn" in raw:
        return Match("cudnn_sdpa_bwd" if "bprop" in raw else "cudnn_sdpa_fwd")
    cudnn = "cudnn" in raw.lower() or _CUDNN_BARE.match(p.base)
    if cudnn and _CONV.search(raw):
        size = (re.search(r"tilesize(\d+)x(\d+)x(\d+)", raw) or re.search(r"scudnn_(?:winograd_)?(\d+)x(\d+)", raw)
                or re.search(r"cutlass_\w*?_(\d+)x(\d+)_(\d+)x\d+_", raw))
        flat = re.search(r"cutlass_\w*?(?:fprop|dgrad|wgrad)\w*", raw)  # cuDNN's CUTLASS-built engines
        details = _present(_dtype_flat(flat[0]) if flat else _dtype_cpp(raw) if "<" in raw else _dtype_flat(p.base))
        tiled = None
        if size:
            tiled = _gemm_tile(int(size[1]), int(size[2]), int(size[3]) if size.lastindex == 3 else None)
            details.append(f"{size[1]}x{size[2]}")
        return Match("cudnn_conv", op=_first_op(_CONV_OPS, raw), details=details, tiled=tiled)
    if not cudnn:
        return None
    if re.search(r"\bbn_(?:fw|bw)", raw):
        return Match("cudnn_bn", details=_present(_dtype_cpp(raw)))
    if layout := re.search(r"(nchw|nhwc)To(Nhwc|Nchw)", raw):
        return Match("cudnn_layout", details=[*_present(_dtype_cpp(raw)), f"{layout[1].upper()}→{layout[2].upper()}"])
    if "reduction" in p.base:
        return Match("cudnn_reduce")
    return Match("cudnn_other")


def _cublas_misc(p: ParsedName, raw: str) -> Match | None:
    if re.search(r"gemv", " ".join((*p.scopes, p.base)), re.IGNORECASE):
        return Match("gemv", details=_present(_dtype_cpp(raw)))
    if p.base == "splitKreduce_kernel":
        return Match("cublaslt_splitk" if "cublasLt" in p.scopes else "cublas_splitk",
                      details=_present(_dtype_cpp(raw)))
    if p.base == "dot_kernel" and "cublas" in raw:
        return Match("cublas_dot", details=_present(_dtype_cpp(raw)))
    if p.base.startswith("reduce_1Block") and "cublas" in raw:  # the dot product's second pass
        return Match("cublas_reduce", details=_present(_dtype_cpp(raw)))
    if "cublasLt" in raw and ("epilogue" in p.scopes or "Epilogue" in raw):
        return Match("cublaslt_epilogue", details=_present(_dtype_cpp(raw)))
    if "cublasLt" in p.scopes:
        return Match("cublaslt_other")
    return None


def _nccl(p: ParsedName, raw: str) -> Match | None:
    if not re.match(r"nccl(?:Dev)?Kernel_", p.base):
        return None
    rest = p.base.split("_", 1)[1]
    coll, _, rest = rest.partition("_")
    parts = rest.split("_")
    dtype = re.search(r"(?:^|_)(" + "|".join(sorted(_NCCL_DTYPES, key=len, reverse=True)) + r")(?:_|$)", rest)
    details = [_NCCL_DTYPES[dtype[1]]] if dtype else []
    details += [x for x in parts if x in _NCCL_REDOPS]
    algo = [x for x in parts if x in _NCCL_ALGOS]
    proto = [x for x in parts if x in _NCCL_PROTOS]
    if algo or proto:
        details.append("/".join(algo + proto))
    return Match("nccl", coll=coll, details=details)


def _triton(p: ParsedName, raw: str) -> Match | None:
    if not p.base.startswith("triton"):
        return None
    m = re.match(r"triton_(poi|red|per|tem)_(\w+)", p.base)
    if not m:
        return Match("triton", op="generic", short=p.base)
    op = {"poi": "pointwise", "red": "reduction", "per": "persistent", "tem": "template"}[m[1]]
    return Match("triton", op=op, details=[_shorten(m[2])])


def _aten(p: ParsedName, raw: str) -> Match | None:
    base = p.base
    aten = p.scopes[:1] == ("at",) or p.scopes[:1] == ("_anon_",) and "at::" in "".join(p.template_args)
    if base.startswith(("softmax_warp", "cunn_SoftMax")) or aten and "softmax" in base.lower():
        op = "backward" if re.search(r"[Bb]ackward|bwd", base) else "forward"
        return Match("aten_softmax", op=op, details=_present(_dtype_cpp(raw)))
    if not aten:
        return None
    dtype = _present(_dtype_cpp(raw))
    if base.startswith("CatArrayBatchedCopy"):
        variant = "vectorized" if "vectorized" in base else "aligned" if "aligned16" in base else None
        return Match("aten_cat", details=_cat_details(p), variant=variant)
    if base == "reduce_kernel":
        return Match("aten_reduce", op=_first_op(_REDUCE_OPS, raw), details=dtype)
    if (op := _first_op(_MOE_OPS, base)) != "generic":
        return Match("aten_moe", op=op, details=dtype)
    if re.search(r"elementwise|dropout|multi_tensor_apply", base) and not base.startswith("index"):
        variant = next((v for v in ("vectorized", "unrolled") if base.startswith(v)), None)
        op = _first_op(_ELEMENTWISE_OPS, raw)
        return Match("aten_elementwise", op=op, details=dtype, variant=variant,
                     short=_functor(raw) if op == "generic" else "")
    if re.search(r"(?i:index|gather|scatter|embedding|take_kernel|masked_)", base):
        return Match("aten_index", op=_first_op(_INDEX_OPS, base), details=dtype)
    if (op := _first_op(_NORM_OPS, base)) != "generic":
        return Match("aten_norm", op=op, details=dtype)
    if (op := _first_op(_POOL_OPS, base)) != "generic":
        return Match("aten_pool", op=op, details=dtype)
    if (op := _first_op(_ATEN_MISC_OPS, base)) != "generic":
        mode = re.search(r"upsample_(\w+?)_out_frame", base)
        return Match("aten_misc", op=op, details=dtype + ([mode[1]] if mode else []))
    return Match("aten_other", details=dtype)


def _functor(raw: str) -> str:
    """The op inside a TensorIterator kernel's template arguments (its lambda's enclosing function or
    its functor), so an unlisted op still reads as itself rather than as ``elementwise_kernel``."""
    inner = raw[raw.find("<") + 1:] if "<" in raw else ""
    for match in _FUNCTOR.finditer(inner):
        name = match[1] or match[2]
        if name and not re.fullmatch(r"operator|gpu_kernel\w*|\w*elementwise\w*|lambda|void", name):
            return _shorten(name)
    return ""


def _jiterator(p: ParsedName, raw: str) -> Match | None:
    """PyTorch jiterator kernels (runtime-compiled elementwise ops): ``erfinv_kernel_vectorized4_kernel``."""
    m = _JITERATOR.fullmatch(p.base)
    if not m:
        return None
    op = _first_op(_ELEMENTWISE_OPS, m[1] + "_kernel")
    variant = "vectorized" if m[2].startswith("vectorized") else "unrolled"
    return Match("aten_elementwise", op=op, variant=variant, short=m[1] if op == "generic" else "")


def _cat_details(p: ParsedName) -> list[str]:
    args = [canonical(a) for a in p.template_args]
    details = []
    if args:
        opaque = re.match(r"OpaqueType<(\d+)>", args[0])
        if opaque:
            details.append(fragment("bytes", value=opaque[1]))
        elif dtype := _dtype_cpp(p.template_args[0]):
            details.append(dtype)
    if len(args) >= 4 and args[2].lstrip("-").isdigit() and args[3].isdigit():
        details += [fragment("dims", value=args[2]), fragment("batch", value=args[3])]
    return details


def _thrust(p: ParsedName, raw: str) -> Match | None:
    if p.scopes[:1] not in (("thrust",), ("cub",)) and "cub" not in p.scopes[1:2]:  # at_cuda_detail::cub::…
        return None
    short = p.base
    if p.base == "_kernel_agent" and p.template_args:
        short = parse_name(p.template_args[0]).base
    return Match("thrust", op=_first_op(_THRUST_OPS, short), short=short)


#: The recognizers, tried in order (the first that returns a Match names the kernel); a new library
#: is one function above and one entry here, its words one family in generator/templates/kernel_families.yaml.
RECOGNIZERS: tuple[Callable[[ParsedName, str], Match | None], ...] = (
    _nccl, _triton, _flash, _memeff, _cudnn, _cublas_misc, _nvjet, _cutlass, _cublas_gemm, _aten,
    _jiterator, _thrust,
)


def _shorten(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: Recognizers read this much of a name (real ones stay under 4 KB): a hostile megabyte-long name
#: costs the same as a long real one. Patterns that repeat a word around a gap are written so that
#: they do not rescan the gap from every occurrence (``A(?:(?!A)\w)*?B`` for ``A\w*B``; _chain).
MAX_RECOGNIZED = 16_384


def recognize(raw: str) -> Match:
    """The first recognizer that recognizes ``raw`` (a mangled ``_Z…`` name is demangled first), else the
    'unknown' family; a CUDA graph traced as a whole is the 'whole_graph' family, named by its own name."""
    if is_whole_graph(raw):
        return Match("whole_graph", short=raw)
    raw = demangle(raw[:MAX_RECOGNIZED])[:MAX_RECOGNIZED]
    parsed = parse_name(raw)
    for rule in RECOGNIZERS:
        found = rule(parsed, raw)
        if found is not None:
            if not found.short:
                found.short = _shorten(parsed.base)
            return found
    return Match("unknown", short=_shorten(parsed.base or raw.strip()))
