"""Issue 16: is ncu's slow replay pass a property of the process (the model loaded) or of the kernel?
MODE=fresh: five small ops only; model: after building the ocr-vlm preset and running it once;
freed: the same, then the model dropped and torch's cache emptied."""
import gc, os, torch
mode = os.environ.get("MODE", "fresh")
if mode != "fresh":
    import capture.worker as w
    from capture.workloads import resolve
    params = w.workload_params.from_namespace(w.parser().parse_args(["--workload", "ocr-vlm"]))
    it = resolve("ocr-vlm")(params)
    it(); torch.cuda.synchronize()
    if mode == "freed":
        del it; gc.collect(); torch.cuda.empty_cache()
    print("reserved GiB", torch.cuda.memory_reserved() / 2**30, flush=True)
x = torch.randn(1 << 20, device="cuda")
torch.cuda.synchronize()
torch.cuda.nvtx.range_push("probe")
for op in (lambda: x + 1, lambda: x * 2, lambda: x.exp(), lambda: x.sum(), lambda: x.tanh()):
    op()
torch.cuda.synchronize()
torch.cuda.nvtx.range_pop()
