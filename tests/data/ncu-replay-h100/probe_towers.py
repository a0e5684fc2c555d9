"""Issue 16: bisect the ocr-vlm process state that makes ncu's replay slow, one tower at a time
(one layer each). MODE=sam|clip|llm|llm-build|sam-build."""
import os, torch
import capture.worker as w
from capture.workloads import ocr_vlm
from capture.workloads.generate import prefill_and_decode
mode = os.environ["MODE"]
params = w.workload_params.from_namespace(w.parser().parse_args(["--workload", "ocr-vlm", "--layers", "1"]))
sam_cfg, clip_cfg, llm_cfg = ocr_vlm._configs(params)
dt = torch.bfloat16
with torch.inference_mode(), torch.device("cuda"):
    if mode.startswith("sam"):
        m = ocr_vlm.SamEncoder(sam_cfg).to(dt).eval()
        if mode == "sam": m(torch.randn(1, 3, 1024, 1024, dtype=dt))
    if mode == "clip":
        m = ocr_vlm.CLIPVisionModel(clip_cfg).to(dt).eval(); m(pixel_values=torch.randn(1, 3, 224, 224, dtype=dt))
    if mode.startswith("llm"):
        m = ocr_vlm.DeepseekV2ForCausalLM(llm_cfg).to(dt).eval()
        if mode == "llm": prefill_and_decode(m, torch.randn(1, 64, 1280, dtype=dt), 4)
    torch.cuda.synchronize()
x = torch.randn(1 << 20, device="cuda")
torch.cuda.synchronize()
torch.cuda.nvtx.range_push("probe")
for op in (lambda: x + 1, lambda: x * 2, lambda: x.exp(), lambda: x.sum(), lambda: x.tanh()):
    op()
torch.cuda.synchronize()
torch.cuda.nvtx.range_pop()
