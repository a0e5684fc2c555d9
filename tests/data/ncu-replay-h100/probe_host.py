"""Issue 16: pinned host memory or launch history behind ncu's slow replay step?
MODE=model-hostempty: the model built and run, then torch's pinned-memory cache emptied (the model kept);
pinned: a fresh process holding one 2 GiB pinned host buffer; launches: 50,000 tiny launches first."""
import os, torch
mode = os.environ["MODE"]
def host():
    try:
        s = torch.cuda.host_memory_stats()
        return {k: v for k, v in s.items() if k in ("allocations.current", "reserved_bytes.current", "num_host_alloc", "allocated_bytes.current")}
    except Exception as e:
        return repr(e)
if mode.startswith("model"):
    import capture.worker as w
    from capture.workloads import resolve
    params = w.workload_params.from_namespace(w.parser().parse_args(["--workload", "ocr-vlm"]))
    it = resolve("ocr-vlm")(params)
    it(); torch.cuda.synchronize()
    print("host before", host(), flush=True)
    if mode == "model-hostempty":
        torch._C._host_emptyCache()
    print("host after", host(), flush=True)
if mode == "pinned":
    keep = torch.empty(2 << 30, dtype=torch.uint8).pin_memory()
if mode == "launches":
    y = torch.zeros(16, device="cuda")
    for _ in range(50000):
        y.add_(1)
    torch.cuda.synchronize()
x = torch.randn(1 << 20, device="cuda")
torch.cuda.synchronize()
torch.cuda.nvtx.range_push("probe")
for op in (lambda: x + 1, lambda: x * 2, lambda: x.exp(), lambda: x.sum(), lambda: x.tanh()):
    op()
torch.cuda.synchronize()
torch.cuda.nvtx.range_pop()
