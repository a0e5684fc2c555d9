#!/usr/bin/env bash
# Issue 16: locked/pinned host memory of the model's process (VmLck/VmPin), against a 2 GiB pinned buffer
set -uo pipefail
source capture/device_job.sh
mkdir -p /tmp/pylib
for pair in nvtx:nvtx rich:rich pydantic:pydantic pydantic_core:pydantic_core annotated_types:annotated_types typing_inspection:typing_inspection platformdirs:platformdirs; do
  mod=${pair%%:*}; whl=${pair##*:}
  python3 -c "import $mod" 2>/dev/null || pip install -q --no-deps --target /tmp/pylib .device/${whl}-*.whl 2>/dev/null
done
export PYTHONPATH=/tmp/pylib:$PWD
cat > /tmp/vm.py <<'PY'
import os, re, torch
def vm(tag):
    st = open("/proc/self/status").read()
    print(tag, " ".join(l.replace("\t", "").replace(" ", "") for l in st.splitlines() if re.match(r"Vm(Lck|Pin|RSS|Size)|RssAnon|RssFile|HugetlbPages", l)), flush=True)
vm("start")
torch.zeros(1, device="cuda"); vm("cuda-init")
if os.environ["MODE"] == "pinned":
    keep = torch.empty(2 << 30, dtype=torch.uint8).pin_memory(); vm("pinned-2GiB")
else:
    import capture.worker as w
    from capture.workloads import resolve
    params = w.workload_params.from_namespace(w.parser().parse_args(["--workload", "ocr-vlm"]))
    it = resolve("ocr-vlm")(params); torch.cuda.synchronize(); vm("built")
    it(); torch.cuda.synchronize(); vm("run-once")
    maps = open("/proc/self/maps").read().splitlines()
    print("maps", len(maps), "nvidia/uvm maps", sum(("nvidia" in m) or ("uvm" in m) for m in maps), flush=True)
PY
for m in pinned model; do MODE=$m python3 /tmp/vm.py 2>&1 | grep -v Warning | tee -a $OUT/exp43.txt; done
