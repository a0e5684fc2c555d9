"""The projection's models by name, apart from analyses.projection so that ``project --help`` reads
them without pandas (docs/projection.md says what each does)."""
from __future__ import annotations

#: the stage-level models: the floor's change in full, the excess over it carried as measured
#: (``excess``) or in proportion (``efficiency``); the low–high ends of ``excess`` take both
MODELS = ("excess", "efficiency")
#: the kernel-level model (docs/projection.md): per launch the throughput terms of the kernel's
#: family, each term's change weighted by that unit's busy fraction ``u``, plus the change of the
#: chip's fixed cost per launch; ``t' = t + Σ u·Δterm + Δfixed cost``
KERNEL_MODEL = "kernel"
#: the model the projected figures use: the kernel model, nearer than no change on every stage of the
#: held-out H200/H100 pairs where the excess model was not (bench/PROJECTION.md)
MODEL = KERNEL_MODEL
#: what ``project --model`` offers
CHOICES = (KERNEL_MODEL, "excess")
