"""The projection's models by name, apart from analyses.projection so that ``project --help`` reads
them without pandas (docs/projection.md says what each does)."""
from __future__ import annotations

MODELS = ("excess", "efficiency")
#: the model the projected figures use (docs/projection.md says why: ncu's busy fractions)
MODEL = "excess"
#: the kernel-level model (docs/projection.md): per launch the chip's fixed cost (its shortest kernel)
#: plus the throughput terms of the kernel's family, each term's change weighted by that unit's busy
#: fraction ``u``; ``t' = t + Σ u·Δterm + Δshortest kernel``
KERNEL_MODEL = "kernel"
