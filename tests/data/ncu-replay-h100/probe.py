"""Five small element-wise launches inside the NVTX range ``probe``, after MODE has set the process up.

Run under ncu by ``trace.py``; every MODE of ``states.txt``:

- ``fresh``: nothing first.
- ``model``: the ocr-vlm preset built and run once (``LAYERS``: its ``--layers``); ``freed``: then dropped and torch's cache
  emptied; ``model-hostempty``: torch's pinned-memory cache emptied instead; ``model-stackreset``:
  the CUDA stack limit set back to 1 KiB instead.
- ``imports``: transformers and the model classes imported; ``libs``: a first cuBLAS GEMM, cuDNN
  convolution and SDPA call; ``libs-many``: GEMMs, convolutions and attention of many shapes and
  dtypes; ``manyops<N>``: 40 element-wise and reduction operators in N dtypes.
- ``sam``, ``clip``, ``llm`` (``LAYERS`` layers, default 1, built and run), ``sam-build``, ``llm-build``
  (built only). The decoder's first layer is dense (``first_k_dense_replace=1``): its MoE needs 2.
- ``hostmem``: 6 GiB of pageable host memory; ``pinned<MiB>``: a pinned host buffer; ``patchconv``,
  ``patchconv-small``: SAM's patch-embedding convolution alone (1024 px, 64 px).
- ``live``, ``freed-allocations``, ``cached-live``: N (default 5,000) device buffers of 1 MiB, kept,
  or freed, with ``PYTORCH_NO_CUDA_MEMORY_CACHING=1`` (trace.py sets it) except ``cached-live``.
- ``launches``: 50,000 tiny launches; ``stack<KiB>``: the CUDA stack limit raised.
- ``moeops``: the routed experts' operators alone (top-k, bincount, argsort, one-hot, grouped GEMMs).
- ``parts``: the whole model built as the preset builds it (``LAYERS``), then only ``PARTS`` of its
  iteration run (comma-separated: ``sam``, ``clip``, ``proj``, ``llm``; the decoder gets random
  embeddings in place of the parts not run; empty: built only; ``NEW_TOKENS``: the decode steps,
  default the preset's 32).

Every MODE prints ``state:`` with the device memory in use (``cudaMemGetInfo``) and torch's reserved
memory and segment count once it is set up.
"""
import ctypes
import gc
import os

import torch
import torch.nn.functional as F

MODE = os.environ["MODE"]


def cudart() -> ctypes.CDLL:
    for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            pass
    raise OSError("no libcudart")


def stack_limit(rt: ctypes.CDLL) -> int:
    value = ctypes.c_size_t()
    rt.cudaDeviceGetLimit(ctypes.byref(value), 0)
    return value.value


def model() -> object:
    import capture.worker as w
    from capture.workloads import resolve

    layers = ["--layers", os.environ["LAYERS"]] if os.environ.get("LAYERS") else []
    params = w.workload_params.from_namespace(w.parser().parse_args(["--workload", "ocr-vlm", *layers]))
    iteration = resolve("ocr-vlm")(params)
    iteration()
    torch.cuda.synchronize()
    if MODE == "freed":
        del iteration
        gc.collect()
        torch.cuda.empty_cache()
        iteration = None
    if MODE == "model-hostempty":
        torch._C._host_emptyCache()
    if MODE == "model-stackreset":
        cudart().cudaDeviceSetLimit(0, ctypes.c_size_t(1024))
    print("reserved GiB", torch.cuda.memory_reserved() / 2**30, "stack", stack_limit(cudart()), flush=True)
    return iteration


def tower() -> torch.nn.Module:
    import capture.worker as w
    from capture.workloads import ocr_vlm
    from capture.workloads.generate import prefill_and_decode

    layers = os.environ.get("LAYERS") or "1"
    params = w.workload_params.from_namespace(w.parser().parse_args(["--workload", "ocr-vlm", "--layers", layers]))
    sam_cfg, clip_cfg, llm_cfg = ocr_vlm._configs(params)
    dt = torch.bfloat16
    with torch.inference_mode(), torch.device("cuda"):
        if MODE.startswith("sam"):
            built = ocr_vlm.SamEncoder(sam_cfg).to(dt).eval()
            if MODE == "sam":
                built(torch.randn(1, 3, 1024, 1024, dtype=dt))
        elif MODE == "clip":
            built = ocr_vlm.CLIPVisionModel(clip_cfg).to(dt).eval()
            built(pixel_values=torch.randn(1, 3, 224, 224, dtype=dt))
        else:
            built = ocr_vlm.DeepseekV2ForCausalLM(llm_cfg).to(dt).eval()
            if MODE == "llm":
                prefill_and_decode(built, torch.randn(1, 64, 1280, dtype=dt), 4)
    torch.cuda.synchronize()
    return built


def parts() -> object:
    """The preset's towers built as ``ocr_vlm.build`` builds them; the PARTS of its iteration run."""
    import capture.worker as w
    from capture.workloads import ocr_vlm
    from capture.workloads.generate import prefill_and_decode

    layers = ["--layers", os.environ["LAYERS"]] if os.environ.get("LAYERS") else []
    params = w.workload_params.from_namespace(w.parser().parse_args(["--workload", "ocr-vlm", *layers]))
    sam_cfg, clip_cfg, llm_cfg = ocr_vlm._configs(params)
    dt = params.torch_dtype()
    with torch.device("cuda"):
        sam = ocr_vlm.SamEncoder(sam_cfg).to(dt).eval()
        clip = ocr_vlm.CLIPVisionModel(clip_cfg).to(dt).eval()
        projector = torch.nn.Linear(2048, llm_cfg.hidden_size).to(dt).eval()
        llm = ocr_vlm.DeepseekV2ForCausalLM(llm_cfg).to(dt).eval()
    gen = torch.Generator(device="cuda").manual_seed(params.seed)
    image = torch.randn(params.batch, 3, sam_cfg.image_size, sam_cfg.image_size, device="cuda", dtype=dt, generator=gen)
    crop = torch.randn(params.batch, 3, clip_cfg.image_size, clip_cfg.image_size, device="cuda", dtype=dt, generator=gen)
    prompt = torch.randint(0, llm_cfg.vocab_size, (params.batch, params.prompt_len), device="cuda", generator=gen)
    run = set(filter(None, os.environ.get("PARTS", "").split(",")))
    with torch.inference_mode():
        tokens = (sam_cfg.image_size // 64) ** 2
        sam_tokens = sam(image) if "sam" in run else torch.randn(params.batch, tokens, 1024, device="cuda", dtype=dt)
        clip_tokens = clip(pixel_values=crop).last_hidden_state[:, 1:] if "clip" in run else torch.randn_like(sam_tokens)
        vision = projector(torch.cat([clip_tokens, sam_tokens], dim=-1)) if "proj" in run else \
            torch.randn(params.batch, tokens, llm_cfg.hidden_size, device="cuda", dtype=dt)
        if "llm" in run:
            prefill_and_decode(llm, torch.cat([vision, llm.get_input_embeddings()(prompt)], dim=1),
                               int(os.environ.get("NEW_TOKENS", params.new_tokens)))
    torch.cuda.synchronize()
    return sam, clip, projector, llm


def moe_operators() -> None:
    """The routed experts' operators alone: top-k routing, index bookkeeping and grouped GEMMs of
    64 experts (the decoder's shapes), prefill-like (320 tokens) and decode-like (1 token)."""
    dt, experts, hidden, inner = torch.bfloat16, 64, 1280, 896
    grouped = getattr(F, "grouped_mm", None) or torch._grouped_mm
    w_up = torch.randn(experts, hidden, 2 * inner, device="cuda", dtype=dt)
    w_down = torch.randn(experts, inner, hidden, device="cuda", dtype=dt)
    for tokens in (320, 1):
        x = torch.randn(tokens, hidden, device="cuda", dtype=dt)
        weights, index = torch.topk(torch.randn(tokens, experts, device="cuda").softmax(-1), 6, dim=-1, sorted=False)
        flat = index.flatten()
        order = flat.argsort()
        counts = torch.bincount(flat, minlength=experts)
        offs = counts.cumsum(0).to(torch.int32)
        hit = torch.greater(torch.nn.functional.one_hot(index, experts).sum((0, 1)), 0).nonzero()
        rows = x[order // 6]
        up = grouped(rows, w_up, offs=offs)
        down = grouped(F.silu(up[:, :inner]) * up[:, inner:], w_down, offs=offs)
        out = torch.zeros_like(x).index_add_(0, order // 6, down * weights.flatten()[order, None].to(dt))
        del hit, out
    torch.cuda.synchronize()


def libraries() -> None:
    dtypes = (torch.bfloat16,) if MODE == "libs" else (torch.bfloat16, torch.float16, torch.float32)
    shapes = ((1024, 1024, 1024),) if MODE == "libs" else (
        (64, 64, 64), (1024, 1024, 1024), (4096, 4096, 1024), (16, 8192, 2048), (8192, 16, 2048), (1, 4096, 4096), (300, 700, 900))
    convs = ((3, 8, 3, 1, 64),) if MODE == "libs" else (
        (3, 768, 16, 16, 512), (256, 512, 3, 2, 64), (512, 1024, 3, 2, 32), (64, 64, 1, 1, 56), (3, 1024, 14, 14, 224))
    attention = ((8, 128, 64),) if MODE == "libs" else ((16, 4096, 64), (10, 256, 192), (12, 196, 64))
    torch.backends.cuda.matmul.allow_tf32 = True
    for dt in dtypes:
        for m, n, k in shapes:
            a, b = torch.randn(m, k, device="cuda", dtype=dt), torch.randn(k, n, device="cuda", dtype=dt)
            a @ b
            if MODE == "libs-many":
                F.linear(a, b.t(), torch.randn(n, device="cuda", dtype=dt))
                torch.bmm(a[None].expand(3, m, k), b[None].expand(3, k, n))
        for cin, cout, size, stride, side in convs:
            F.conv2d(torch.randn(1, cin, side, side, device="cuda", dtype=dt),
                     torch.randn(cout, cin, size, size, device="cuda", dtype=dt), stride=stride)
        for heads, seq, dim in attention if dt != torch.float32 else ():
            q = torch.randn(1, heads, seq, dim, device="cuda", dtype=dt)
            F.scaled_dot_product_attention(q, q, q)
            if MODE == "libs-many":
                F.scaled_dot_product_attention(q, q, q, is_causal=True)
    torch.cuda.synchronize()


def operators() -> None:
    unary = [torch.exp, torch.log1p, torch.tanh, torch.sigmoid, torch.sin, torch.cos, torch.sqrt, torch.rsqrt, torch.abs,
             torch.neg, torch.erf, torch.floor, torch.ceil, torch.round, torch.sign, torch.expm1, torch.log2,
             torch.reciprocal, F.gelu, F.silu, F.relu, F.softplus, F.mish, F.elu, F.hardswish]
    other = [lambda t: t.sum(-1), lambda t: t.amax(-1), lambda t: t.mean(-1), lambda t: t.cumsum(-1),
             lambda t: t.softmax(-1), lambda t: t.log_softmax(-1), lambda t: t.var(-1), lambda t: t.argmax(-1),
             lambda t: torch.topk(t, 4), lambda t: torch.sort(t)[0], lambda t: t.t().contiguous(),
             lambda t: F.layer_norm(t, t.shape[-1:]), lambda t: torch.where(t > 0, t, t * 2),
             lambda t: t.clamp(-1, 1), lambda t: t.pow(3)]
    for dt in (torch.float32, torch.bfloat16, torch.float16)[:int(MODE[len("manyops"):] or 3)]:
        t = torch.randn(256, 256, device="cuda", dtype=dt)
        for op in unary + other:
            op(t)
    torch.cuda.synchronize()


def setup() -> object:
    """What the process holds while the probe runs (kept alive until then)."""
    if MODE in ("model", "freed", "model-hostempty", "model-stackreset"):
        return model()
    if MODE in ("sam", "sam-build", "clip", "llm", "llm-build"):
        return tower()
    if MODE in ("libs", "libs-many"):
        return libraries()
    if MODE.startswith("manyops"):
        return operators()
    if MODE == "imports":
        import capture.workloads.ocr_vlm  # noqa: F401
        return None
    if MODE == "hostmem":
        return torch.ones(6 * 2**28)
    if MODE.startswith("pinned"):
        return torch.empty(int(MODE[len("pinned"):]) << 20, dtype=torch.uint8).pin_memory()
    if MODE.startswith("patchconv"):
        side = 1024 if MODE == "patchconv" else 64
        conv = torch.nn.Conv2d(3, 768, 16, stride=16, device="cuda", dtype=torch.bfloat16)
        with torch.inference_mode():
            conv(torch.randn(1, 3, side, side, device="cuda", dtype=torch.bfloat16))
        return conv
    if MODE in ("live", "freed-allocations", "cached-live"):
        buffers = [torch.empty(1 << 19, dtype=torch.bfloat16, device="cuda") for _ in range(int(os.environ.get("N", "5000")))]
        torch.cuda.synchronize()
        return None if MODE == "freed-allocations" else buffers
    if MODE == "launches":
        y = torch.zeros(16, device="cuda")
        for _ in range(50_000):
            y.add_(1)
        return None
    if MODE.startswith("stack"):
        torch.zeros(1, device="cuda")
        return cudart().cudaDeviceSetLimit(0, ctypes.c_size_t(int(MODE[len("stack"):]) * 1024))
    if MODE == "parts":
        return parts()
    if MODE == "moeops":
        return moe_operators()
    if MODE == "fresh":
        return None
    raise SystemExit(f"unknown MODE {MODE}")


held = setup()
x = torch.randn(1 << 20, device="cuda")
torch.cuda.synchronize()
free, total = torch.cuda.mem_get_info()
print(f"state: used GiB {(total - free) / 2**30:.2f} reserved GiB {torch.cuda.memory_reserved() / 2**30:.2f}"
      f" segments {torch.cuda.memory_stats().get('segment.all.current', 0)}", flush=True)
torch.cuda.nvtx.range_push("probe")
for probe in (lambda: x + 1, lambda: x * 2, lambda: x.exp(), lambda: x.sum(), lambda: x.tanh()):
    probe()
torch.cuda.synchronize()
torch.cuda.nvtx.range_pop()
