"""Issue 16: does ncu's slow replay step grow with the number of device allocations (live or ever made)?
MODE=live|freed|cached-live, N allocations of SIZE bytes."""
import os, torch
mode, n, size = os.environ["MODE"], int(os.environ.get("N", "5000")), int(os.environ.get("SIZE", str(1 << 20)))
keep = [torch.empty(size // 2, dtype=torch.bfloat16, device="cuda") for _ in range(n)]
torch.cuda.synchronize()
if mode == "freed":
    del keep[:]
    torch.cuda.empty_cache()
print("reserved GiB", torch.cuda.memory_reserved() / 2**30, flush=True)
x = torch.randn(1 << 20, device="cuda")
torch.cuda.synchronize()
torch.cuda.nvtx.range_push("probe")
for op in (lambda: x + 1, lambda: x * 2, lambda: x.exp(), lambda: x.sum(), lambda: x.tanh()):
    op()
torch.cuda.synchronize()
torch.cuda.nvtx.range_pop()
