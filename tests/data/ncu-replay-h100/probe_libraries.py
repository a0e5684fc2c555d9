"""Issue 16: does loading many library kernels (cuBLAS/cuBLASLt, cuDNN, attention) make ncu's
replay step slow, without any model? MODE=libs-many"""
import os, torch
import torch.nn.functional as F
mode = os.environ["MODE"]
if mode == "libs-many":
    torch.backends.cuda.matmul.allow_tf32 = True
    for dt in (torch.bfloat16, torch.float16, torch.float32):
        for m, n, k in ((64, 64, 64), (1024, 1024, 1024), (4096, 4096, 1024), (16, 8192, 2048), (8192, 16, 2048), (1, 4096, 4096), (300, 700, 900)):
            a = torch.randn(m, k, device="cuda", dtype=dt); b = torch.randn(k, n, device="cuda", dtype=dt)
            a @ b; F.linear(a, b.t(), torch.randn(n, device="cuda", dtype=dt)); torch.bmm(a[None].expand(3, m, k), b[None].expand(3, k, n))
        for cin, cout, ks, st, side in ((3, 768, 16, 16, 512), (256, 512, 3, 2, 64), (512, 1024, 3, 2, 32), (64, 64, 1, 1, 56), (3, 1024, 14, 14, 224)):
            F.conv2d(torch.randn(1, cin, side, side, device="cuda", dtype=dt), torch.randn(cout, cin, ks, ks, device="cuda", dtype=dt), stride=st)
        if dt != torch.float32:
            for heads, seq, d in ((16, 4096, 64), (10, 256, 192), (12, 196, 64)):
                q = torch.randn(1, heads, seq, d, device="cuda", dtype=dt)
                F.scaled_dot_product_attention(q, q, q); F.scaled_dot_product_attention(q, q, q, is_causal=True)
    torch.cuda.synchronize()
x = torch.randn(1 << 20, device="cuda")
torch.cuda.synchronize()
torch.cuda.nvtx.range_push("probe")
for op in (lambda: x + 1, lambda: x * 2, lambda: x.exp(), lambda: x.sum(), lambda: x.tanh()):
    op()
torch.cuda.synchronize()
torch.cuda.nvtx.range_pop()
