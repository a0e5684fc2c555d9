"""How far captures of one unchanged program move between sessions: the figures behind
launch_stats.SESSION_NOISE and SESSION_KERNEL_MOVE.

For each pair of committed captures of the same program (examples/runs), made minutes apart in one
device session or days apart, ``python -m generator compare --json`` gives every stage's kernel-time
change with its 95 % interval and every kernel's median change. Printed per pair: the largest
|change| and |interval bound| of a stage, and the largest |change| of a kernel with enough launches.
Run: .venv/bin/python bench/session_noise.py (about a minute); results in bench/session_noise.md.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

RUNS = Path(__file__).resolve().parent.parent / "examples" / "runs"
#: (baseline, current): the same preset and parameters, the same kernels (fidelity), one H200 model
PAIRS = [("ocr-vlm-sdpa-h200-a", "ocr-vlm-sdpa-h200-b"), ("llm-decode-h200-a", "llm-decode-h200-b"),
         ("ocr-vlm-sdpa", "ocr-vlm-sdpa-h200"), ("ocr-vlm-sdpa-h200", "ocr-vlm-sdpa-h200-a"),
         ("llm-decode-eager", "llm-decode-h200-a"), ("llm-decode-graph", "llm-decode-graph-h200")]


def pair_figures(baseline: str, current: str) -> dict:
    """The comparison's largest stage and kernel movements, in %."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "compare.json"
        subprocess.run([sys.executable, "-m", "generator", "compare", str(RUNS / baseline), str(RUNS / current),
                        "--json", str(out)], check=False, capture_output=True)
        report = json.loads(out.read_text(encoding="utf-8"))
    stages = [s for s in report["stages"] if s["kernel_low_pct"] is not None]
    kernels = [k for k in report["kernels"] if k["low_pct"] is not None]
    return {"hours": report["like_with_like"]["hours_apart"],
            "stage_change": max(abs(s["kernel_rel_pct"]) for s in stages),
            "stage_bound": max(max(abs(s["kernel_low_pct"]), abs(s["kernel_high_pct"])) for s in stages),
            "kernel_change": max(abs(k["rel_pct"]) for k in kernels)}


def main() -> None:
    print("| baseline → current | hours apart | stage max |change| % | stage max |bound| % | kernel max |change| % |")
    print("|---|--:|--:|--:|--:|")
    for baseline, current in PAIRS:
        f = pair_figures(baseline, current)
        print(f"| {baseline} → {current} | {f['hours']:.1f} | {f['stage_change']:.2f} | {f['stage_bound']:.2f} | "
              f"{f['kernel_change']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
