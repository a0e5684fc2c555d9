"""Issue 16: does the context's local-memory (stack) reservation make ncu's replay step slow?
MODE=model: the model built and run, its CUDA limits printed; model-stackreset: then the stack limit
set back to 1 KiB; stack<KiB>: a fresh process with cudaLimitStackSize raised first."""
import ctypes, glob, os, torch
mode = os.environ["MODE"]
torch.zeros(1, device="cuda")
def _cudart():
    for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            pass
    import pathlib
    import nvidia.cuda_runtime  # torch's CUDA runtime wheel
    return ctypes.CDLL(str(next(pathlib.Path(nvidia.cuda_runtime.__path__[0], "lib").glob("libcudart.so*"))))
rt = _cudart()
def limits(tag):
    out = []
    for name, code in (("stack", 0), ("printf", 1), ("heap", 2)):
        v = ctypes.c_size_t(); rc = rt.cudaDeviceGetLimit(ctypes.byref(v), code); out.append(f"{name}={v.value}(rc{rc})")
    print(tag, " ".join(out), flush=True)
limits("start")
if mode.startswith("model"):
    import capture.worker as w
    from capture.workloads import resolve
    params = w.workload_params.from_namespace(w.parser().parse_args(["--workload", "ocr-vlm"]))
    it = resolve("ocr-vlm")(params)
    it(); torch.cuda.synchronize()
    limits("after-run")
    if mode == "model-stackreset":
        print("set rc", rt.cudaDeviceSetLimit(0, ctypes.c_size_t(1024)), flush=True)
        limits("after-reset")
if mode.startswith("stack"):
    print("set rc", rt.cudaDeviceSetLimit(0, ctypes.c_size_t(int(mode[5:]) * 1024)), flush=True)
    limits("after-set")
x = torch.randn(1 << 20, device="cuda")
torch.cuda.synchronize()
torch.cuda.nvtx.range_push("probe")
for op in (lambda: x + 1, lambda: x * 2, lambda: x.exp(), lambda: x.sum(), lambda: x.tanh()):
    op()
torch.cuda.synchronize()
torch.cuda.nvtx.range_pop()
