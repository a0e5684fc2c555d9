#!/usr/bin/env bash
# Source on the lent GPU machine, from the repository root:
#   source capture/device_job.sh   # profiler setup (nsys needs libdw/libelf from .device/*.deb)
#   pack RUN_DIR [RUN_DIR…] NAME  # compress a run for committing and tar it into $OUT/NAME.tar
# Large artifacts become .xz (the generator's readers open .xz); report.nsys-rep is dropped when
# it is over 5 MB (the .sqlite export holds the same data), with a note in the manifest.
mkdir -p /tmp/dw && for f in .device/*.deb; do dpkg -x "$f" /tmp/dw; done
export LD_LIBRARY_PATH=/tmp/dw/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export PATH=/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64:$PATH
export PYTHONUNBUFFERED=1

pack() {
  local name="${!#}" dirs=("${@:1:$#-1}") d f
  for d in "${dirs[@]}"; do
    find "$d" -name 'report.nsys-rep' -size +5000000c -print0 | while IFS= read -r -d '' f; do
      rm -f "$f"
      python3 - "$(dirname "$(dirname "$f")")/manifest.json" <<'PY'
import json, sys
p = sys.argv[1]; m = json.load(open(p))
m["notes"].append("nsys/report.nsys-rep (over 5 MB) was not kept; nsys/report.sqlite(.xz) is its full export")
open(p, "w").write(json.dumps(m, indent=1, ensure_ascii=False) + "\n")
PY
    done
    find "$d" \( -name 'report*.sqlite' -o -name 'report*.ncu-rep' -o -name 'raw*.csv' -o -name 'ncu_kernels_mangled*.csv' -o -name 'calls.csv' \) \
      -size +64k -exec xz -T0 -6 {} +
  done
  tar -cf "$OUT/$name.tar" "${dirs[@]}"
  ls -la "$OUT"
}
