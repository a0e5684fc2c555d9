"""Issue 16: the pinned host allocation behind ncu's slow replay step: its size, and whether SAM's
patch-embedding convolution alone (cuDNN) makes it. MODE=pinned<MiB>|patchconv|patchconv-small"""
import os, torch
mode = os.environ["MODE"]
if mode.startswith("pinned"):
    keep = torch.empty(int(mode[6:]) << 20, dtype=torch.uint8).pin_memory()
if mode.startswith("patchconv"):
    side = 1024 if mode == "patchconv" else 64
    conv = torch.nn.Conv2d(3, 768, 16, stride=16, device="cuda", dtype=torch.bfloat16)
    with torch.inference_mode():
        conv(torch.randn(1, 3, side, side, device="cuda", dtype=torch.bfloat16))
    torch.cuda.synchronize()
x = torch.randn(1 << 20, device="cuda")
torch.cuda.synchronize()
torch.cuda.nvtx.range_push("probe")
for op in (lambda: x + 1, lambda: x * 2, lambda: x.exp(), lambda: x.sum(), lambda: x.tanh()):
    op()
torch.cuda.synchronize()
torch.cuda.nvtx.range_pop()
