"""Every committed H200/H100 pair of one workload, projected each way and checked against the capture
on the other chip: per stage of ≥ 1 ms and per matched kernel, the error of the kernel and excess
models and of no change, with the probes' figures (the fixed cost per launch the one-element add's,
or the empty kernel's) and with datasheet figures. Prints the Markdown tables of bench/PROJECTION.md.

    .venv/bin/python bench/projection_validation.py [--pairs held-out|built|all]
"""
from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "examples" / "runs"
#: (source run, target chip, run on the target, used while building the model)
PAIRS = (
    ("ocr-vlm-sdpa-h200", "h100-sxm", "ocr-vlm-sdpa-v2", True),
    ("ocr-vlm-sdpa-v2", "h200", "ocr-vlm-sdpa-h200", True),
    ("llm-decode-h200-a", "h100-sxm", "llm-decode-h100-a", False),
    ("llm-decode-h200-b", "h100-sxm", "llm-decode-h100-b", False),
    ("llm-decode-h100-a", "h200", "llm-decode-h200-a", False),
    ("llm-decode-h100-b", "h200", "llm-decode-h200-b", False),
    ("ocr-vlm-sdpa-h200-a", "h100-sxm", "ocr-vlm-sdpa-h100-a", False),
    ("ocr-vlm-sdpa-h100-a", "h200", "ocr-vlm-sdpa-h200-a", False),
)
#: figure variants: which chip figures both sides use
VARIANTS = ("probe, add", "probe, empty kernel", "datasheet")


def _pair(source: str, chip: str, other: str, model: str, variant: str) -> dict:
    from generator.analyses import projection as proj
    from generator.analyses.join import attach_stage_time
    from generator.pipeline.chips import check_of, load_chip, read_run, shipped_chips

    inputs = read_run(RUNS / source)
    target = load_chip(chip)
    shipped = shipped_chips()
    if variant == "datasheet":  # no probe on either side
        target = replace(target, measured={})
        shipped = [replace(c, measured={}) for c in shipped]
        inputs = replace(inputs, manifest={k: v for k, v in (inputs.manifest or {}).items() if k != "chip_probe"})
    figures = ("launch_latency_us",) if variant != "probe, add" else proj.LAUNCH_FIGURES
    with mock.patch.object(proj, "LAUNCH_FIGURES", figures):
        metrics = attach_stage_time(inputs.kernel_metrics, inputs.kernel_summary)
        return proj.what_if(inputs, metrics, target, shipped, check_of(RUNS / other), 20, False, model)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", choices=("held-out", "built", "all"), default="all")
    args = parser.parse_args()
    print("| pair | figures | stage | kernel model | excess | no change |")
    print("|---|---|---|--:|--:|--:|")
    for source, chip, other, built in PAIRS:
        if (args.pairs == "held-out" and built) or (args.pairs == "built" and not built):
            continue
        for variant in VARIANTS:
            found = {m: _pair(source, chip, other, m, variant)["validation"] for m in ("kernel", "excess")}
            stages = [s for s in found["kernel"]["stages"] if s["validated"]]
            label = f"{source} → {other}{'' if not built else ' (built on)'}"
            for i, s in enumerate(stages):
                excess = next(e for e in found["excess"]["stages"] if e["stage"] == s["stage"])
                print(f"| {label if i == 0 else ''} | {variant if i == 0 else ''} | {s['stage']} | "
                      f"{s['error_pct']:+.1f} % | {excess['error_pct']:+.1f} % | {s['baseline_error_pct']:+.1f} % |")
            k, e = found["kernel"], found["excess"]
            print(f"| | | kernels, median \\|error\\| ({k['matched_kernels']}) | {k['kernel_median_abs_error_pct']:.2f} % "
                  f"| {e['kernel_median_abs_error_pct']:.2f} % | {k['kernel_baseline_median_abs_error_pct']:.2f} % |")


if __name__ == "__main__":
    main()
