"""The kernel model (projection.KERNEL_MODEL, docs/projection.md) on the committed H200/H100 pair,
both ways, against the excess model and no change (bench/PROJECTION.md). No H200 was probed, so
every figure is the datasheet's on both chips (projection.figure_basis) and the shortest kernel is
0.608 µs on both: the kernel model adds no fixed cost here."""
from __future__ import annotations

from pathlib import Path

import pytest

from generator.analyses import projection as proj
from generator.analyses.join import attach_stage_time
from generator.model import VersionInputs
from generator.pipeline.chips import load_chip, read_run, shipped_chips

RUNS = Path(__file__).resolve().parent.parent / "examples" / "runs"
H200_RUN, H100_RUN = RUNS / "ocr-vlm-sdpa-h200", RUNS / "ocr-vlm-sdpa-v2"


@pytest.fixture(scope="module")
def runs() -> dict[str, VersionInputs]:
    return {"h200": read_run(H200_RUN), "h100": read_run(H100_RUN)}


def _check(source: VersionInputs, target: VersionInputs, chip: str, model: str) -> dict:
    other = proj.Check("other", target.gpus[0].name, target.kernel_summary, target.manifest)
    metrics = attach_stage_time(source.kernel_metrics, source.kernel_summary)
    return proj.what_if(source, metrics, load_chip(chip), shipped_chips(), other, with_sensitivity=False, model=model)


def _errors(result: dict) -> dict[str, tuple[float, float]]:
    return {r["stage"]: (round(r["error_pct"], 1), round(r["baseline_error_pct"], 1))
            for r in result["validation"]["stages"] if r["validated"]}


def test_families_cover_every_naming_category() -> None:
    from generator.analyses.naming import CATEGORIES

    grouped = [c for cats in proj.FAMILIES.values() for c in cats]
    assert sorted(grouped) == sorted(CATEGORIES) and len(grouped) == len(set(grouped))
    assert set(proj.FAMILY_TERMS) == set(proj.FAMILIES)


def test_h200_to_h100(runs: dict[str, VersionInputs]) -> None:
    """Kernels: median |error| 3.74 % against no change's 4.37 % (the excess model: 4.64 %); every
    stage ≥ 1 ms within 10 %, and nearer than no change but SAM (+4.1 % against −3.4 %)."""
    result = _check(runs["h200"], runs["h100"], "h100-sxm", proj.KERNEL_MODEL)
    assert set(result["figures_used"].values()) == {proj.DATASHEET}
    assert result["model"] == proj.KERNEL_MODEL
    assert _errors(result) == {"sam": (4.1, -3.4), "clip": (-0.6, -3.2), "prefill": (2.4, -8.3),
                               "decode": (-4.9, -9.8)}
    check = result["validation"]
    assert check["matched_kernels"] == 66
    assert round(check["kernel_median_abs_error_pct"], 2) == 3.74
    assert round(check["kernel_baseline_median_abs_error_pct"], 2) == 4.37


def test_h100_to_h200(runs: dict[str, VersionInputs]) -> None:
    """The other way: kernels 3.97 % against 4.93 %; SAM −4.4 % against +3.5 %, the rest nearer."""
    result = _check(runs["h100"], runs["h200"], "h200", proj.KERNEL_MODEL)
    assert _errors(result) == {"sam": (-4.4, 3.5), "clip": (1.4, 3.3), "prefill": (-2.8, 9.0), "decode": (5.2, 10.9)}
    check = result["validation"]
    assert check["matched_kernels"] == 67
    assert round(check["kernel_median_abs_error_pct"], 2) == 3.97
    assert round(check["kernel_baseline_median_abs_error_pct"], 2) == 4.93
