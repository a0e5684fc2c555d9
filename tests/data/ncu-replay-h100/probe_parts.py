"""Issue 16: which part of the model's process state makes ncu's replay slow.
MODE=imports: transformers and the model classes imported, nothing run; libs: one cuBLAS GEMM,
one cuDNN convolution and an SDPA call run first; hostmem: 6 GiB of pageable host memory touched."""
import os, torch
mode = os.environ.get("MODE", "fresh")
if mode == "imports":
    import capture.workloads.ocr_vlm  # noqa: F401
    import transformers  # noqa: F401
if mode == "libs":
    a = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
    a @ a
    torch.nn.functional.conv2d(torch.randn(1, 3, 64, 64, device="cuda", dtype=torch.bfloat16), torch.randn(8, 3, 3, 3, device="cuda", dtype=torch.bfloat16))
    q = torch.randn(1, 8, 128, 64, device="cuda", dtype=torch.bfloat16)
    torch.nn.functional.scaled_dot_product_attention(q, q, q)
    torch.cuda.synchronize()
if mode.startswith("manyops"):
    import torch.nn.functional as F
    n = int(mode[7:] or 3)
    ops = [torch.exp, torch.log1p, torch.tanh, torch.sigmoid, torch.sin, torch.cos, torch.sqrt, torch.rsqrt, torch.abs, torch.neg,
           torch.erf, torch.floor, torch.ceil, torch.round, torch.sign, torch.expm1, torch.log2, torch.reciprocal, F.gelu, F.silu,
           F.relu, F.softplus, F.mish, F.elu, F.hardswish, lambda t: t.sum(-1), lambda t: t.amax(-1), lambda t: t.mean(-1),
           lambda t: t.cumsum(-1), lambda t: t.softmax(-1), lambda t: t.log_softmax(-1), lambda t: t.var(-1),
           lambda t: t.argmax(-1), lambda t: torch.topk(t, 4), lambda t: torch.sort(t)[0], lambda t: t.t().contiguous(),
           lambda t: F.layer_norm(t, t.shape[-1:]), lambda t: torch.where(t > 0, t, t * 2), lambda t: t.clamp(-1, 1), lambda t: t.pow(3)]
    for dt in (torch.float32, torch.bfloat16, torch.float16)[:n]:
        t = torch.randn(256, 256, device="cuda", dtype=dt)
        for op in ops:
            op(t)
    torch.cuda.synchronize()
if mode == "hostmem":
    keep = torch.ones(6 * 2**28)
x = torch.randn(1 << 20, device="cuda")
torch.cuda.synchronize()
torch.cuda.nvtx.range_push("probe")
for op in (lambda: x + 1, lambda: x * 2, lambda: x.exp(), lambda: x.sum(), lambda: x.tanh()):
    op()
torch.cuda.synchronize()
torch.cuda.nvtx.range_pop()
