"""Every kernel of the committed captures (examples/runs, every nsys SQLite export, demangled and mangled) has a friendly name that says
what it does: none falls back to a generic label built from its own base name (``cuDNN kernel: Kernel``,
``Elementwise: elementwise_kernel``), and names are unique within a run."""
from __future__ import annotations

import sqlite3
from functools import cache
from pathlib import Path

import pytest
from conftest import ROOT
from helpers_runs import content

from generator.analyses.family_words import families
from generator.analyses.naming import name_kernels
from generator.analyses.recognizers import Match, recognize

EXPORTS = sorted((ROOT / "examples" / "runs").rglob("report.sqlite*"))
#: raw name → why a generic label is right for it (none today: every committed kernel is recognized)
ALLOWED_GENERIC: dict[str, str] = {}


@cache
def _names(export: Path, column: str = "demangledName") -> tuple[str, ...]:
    """Distinct kernel names of one export in one form (``demangledName``, or ``mangledName`` as ncu's
    ``--print-kernel-base mangled`` prints them), by plain SQL (the generator's reader is not used)."""
    data = content(export)
    con = sqlite3.connect(":memory:")
    con.deserialize(data)
    rows = con.execute(f"SELECT DISTINCT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
                       f"JOIN StringIds AS s ON s.id = k.{column} ORDER BY s.value").fetchall()
    con.close()
    return tuple(r[0] for r in rows)


def _generic(match: Match) -> bool:
    """The label is the fallback that quotes the kernel's own name: an unknown or "other" family, or a
    family's "generic" op, whose label is ``…: {short}``."""
    family = families()["families"][match.family]
    label = (family.get("ops", {}).get(match.op or "", {}).get("label") or family["label"]) if match.op else \
        family["label"]
    return "{short}" in label and (match.family == "unknown" or match.family.endswith("_other")
                                   or match.op == "generic")


def test_every_committed_kernel_has_a_specific_friendly_name() -> None:
    assert len(EXPORTS) == 25
    demangled = {n for export in EXPORTS for n in _names(export)}
    mangled = {n for export in EXPORTS for n in _names(export, "mangledName")}
    assert (len(demangled), len(mangled)) == (169, 169)  # distinct names over the 25 exports
    names = sorted(demangled | mangled)
    assert _generic(recognize("void my_kernel<int>(int)"))  # the check can fail: an unknown name is generic
    generic = {n: recognize(n).family for n in names if _generic(recognize(n)) and n not in ALLOWED_GENERIC}
    assert not generic, "\n".join(f"{family}: {n[:160]}" for n, family in generic.items())


@pytest.mark.parametrize("export", EXPORTS, ids=lambda p: str(p.relative_to(ROOT / "examples" / "runs").parent))
def test_friendly_names_are_unique_within_a_run(export: Path) -> None:
    for column in ("demangledName", "mangledName"):
        named = name_kernels(_names(export, column))
        friendly = [k.friendly_name for k in named.values()]
        assert len(friendly) == len(set(friendly)) == len(_names(export, column))


def test_the_issue_examples_read_as_what_they_do() -> None:
    """The kernels the issue quoted, found by the op in their raw name (grep), and the names they get now."""
    names = {n for export in EXPORTS for n in _names(export)}
    by_pattern = {
        "masked_fill_kernel": "Masked Fill (BF16)",
        "cutlass__5x_cudnn::Kernel<cutlass_tensorop_bf16_s16816fprop": "cuDNN Conv Forward (BF16, 128x128)",
        "void reduce_1Block_kernel<float": "cuBLAS Block Reduce (FP32)",
        "void dot_kernel<float": "cuBLAS Dot (FP32)",
        "nchwToNhwcKernel": "cuDNN Layout Transform (BF16, NCHW→NHWC)",
        "erfinv_kernel_vectorized4_kernel": "Elementwise Erfinv (vec)",
        "prepare_grouped_gemm_data": "Grouped GEMM Setup (BF16)",
        "upsample_linear1d_out_frame": "Upsample (BF16, linear1d)",
    }
    for pattern, friendly in by_pattern.items():
        hits = sorted(n for n in names if pattern in n)
        assert len(hits) == 1, pattern
        assert name_kernels(hits)[hits[0]].friendly_name == friendly
    # the mangled form of a kernel reads the same
    masked = next(n for export in EXPORTS for n in _names(export, "mangledName") if "masked_fill_kernel" in n)
    assert name_kernels([masked])[masked].friendly_name == "Masked Fill (BF16)"
