"""What a report's config sets for every analysis of its versions (report.yaml → AnalysisSettings)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: The classification rule (analyses.classify.RULES) and sm_dram_margin's margin (points) unless configured.
DEFAULT_RULE = "sol"
DEFAULT_MARGIN = 5.0


@dataclass
class AnalysisSettings:
    top_n: int = 20
    rule: str = DEFAULT_RULE  # "sol" | "roofline" | "sm_dram_margin"
    margin: float = DEFAULT_MARGIN  # sm_dram_margin only
    #: report.yaml overrides: {"peak_dram_gbps": 4800, "peak_tflops": {"bf16_tensor": 989, "fp32": 67}}
    peaks: dict[str, Any] = field(default_factory=dict)
    #: report.yaml ``chips``: analyses.projection.Target per chip; ``chip_basis``: the shipped chips
    #: (the basis a captured GPU is compared on)
    chips: tuple[Any, ...] = ()
    chip_basis: tuple[Any, ...] = ()
