#!/usr/bin/env bash
# How the 2026-11-29 H200 captures in examples/runs/*-h200{,-a,-b} were made: on the device, from the
# repository root with .whl/ (duckdb, adbc, backports.zstd, nvtx, platformdirs, cpp-demangle wheels for
# Python 3.12) and .device/ (libdw/libelf debs) carried: `bash bench/device_session.sh compiled llm-a …`.
# The run directories were renamed when committed: compiled-block → compiled-block-h200, llm-decode-a/-b →
# llm-decode-h200-a/-b, llm-decode-eager-attn → llm-decode-eager-attn-h200, llm-decode-graph-node →
# llm-decode-graph-h200, llm-decode-graph-whole → llm-decode-graph-whole-h200, ocr-vlm-a/-b → ocr-vlm-sdpa-h200-a/-b.
# The 2026-12-07 probes and llm-decode-h100-{a,b}: `bash bench/device_session.sh probe probe-again llm-probe llm-b`.
# One device call: install carried wheels, then each job NAME in "$@" (see job()), packed into $OUT.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
source capture/device_job.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv | tee -a $OUT/log.txt
CAP="python3 -m capture run --out runs --overhead-runs 0"
job() {
  local t0=$SECONDS
  case "$1" in
    compiled) timeout 240 $CAP --workload capture.workloads.compiled:build --name compiled-block ;;
    llm-a) timeout 240 $CAP --workload llm-decode --name llm-decode-a ;;
    llm-b) timeout 240 $CAP --workload llm-decode --name llm-decode-b ;;
    llm-eager) timeout 240 $CAP --workload llm-decode --attn-impl eager --name llm-decode-eager-attn ;;
    llm-graph) timeout 240 $CAP --workload llm-decode --cuda-graph --name llm-decode-graph-node ;;
    probe) timeout 170 python3 -m capture chip-probe --out "$OUT/probe.yaml" ;;
    probe-again) timeout 150 python3 -m capture chip-probe --only dram tensor fp32 launch --out "$OUT/probe-again.yaml" ;;
    llm-probe) timeout 360 $CAP --probe-chip --workload llm-decode --name llm-decode-probe ;;
    ocr-a) timeout 300 $CAP --workload ocr-vlm --name ocr-vlm-a ;;
    ocr-b) timeout 300 $CAP --workload ocr-vlm --name ocr-vlm-b ;;
    whole-graph)
      mkdir -p runs/llm-decode-graph-whole
      timeout 120 nsys profile --trace=cuda,nvtx --sample=none --cpuctxsw=none --cuda-graph-trace=graph \
        -o runs/llm-decode-graph-whole/report python3 -m capture.worker --workload llm-decode --cuda-graph \
        --stages-out runs/llm-decode-graph-whole/stages.json \
      && nsys export --type sqlite --output runs/llm-decode-graph-whole/report.sqlite runs/llm-decode-graph-whole/report.nsys-rep \
      && rm -f runs/llm-decode-graph-whole/report.nsys-rep && xz -T0 -6 runs/llm-decode-graph-whole/report.sqlite ;;
  esac
  echo "JOB $1 rc=$? ${SECONDS}s-$t0" | tee -a $OUT/log.txt
}
for j in "$@"; do job "$j"; done
python3 - <<'PY' | tee -a $OUT/log.txt
import json, pathlib
for m in sorted(pathlib.Path("runs").glob("*/manifest.json")):
    d = json.loads(m.read_text())
    f = d.get("fidelity") or {}
    print(m.parent.name, d.get("status"), "fidelity:", f.get("verdict"), {s: v for s, v in (f.get("stages") or {}).items()} if f.get("verdict") != "same kernels" else "",
          "energy:", json.dumps(d.get("energy"))[:300], "tokens:", d.get("tokens"),
          "phases:", [(p["name"], p.get("status"), p.get("seconds")) for p in d.get("phases", [])], "failed:", d.get("failed_phases"), "notes:", d.get("notes"))
PY
if [ -d runs ]; then cd runs && for d in */; do d=${d%/}; pack "$d" "$d" >/dev/null; done; fi
cd "$OUT" && for f in *.tar; do if [ $(stat -c %s "$f") -gt 16000000 ]; then split -b 15M "$f" "$f.part-" && rm "$f"; fi; done; ls -la "$OUT"
