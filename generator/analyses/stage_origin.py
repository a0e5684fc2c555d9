"""Where a version's stages came from, for the Overview's line saying so."""
from __future__ import annotations

from typing import Any

from generator.analyses.registry import Analysis
from generator.model import ALL_STAGES, VersionInputs
from generator.readers.nvtx_stages import MAX_FOUND_STAGES


def stage_origin(inputs: VersionInputs) -> dict[str, Any]:
    """{"source", "stages", "found"}: ``source`` "option" (--stages), "whole" (--stages all), "nvtx" (the
    workload's NVTX ranges found), "runs" (capture runs' manifests), "report" (report.yaml's nsys
    entries) or "none" (no kernel times per stage: ncu or PyTorch traces only); ``stages`` the
    measured stages (no "all"); ``found`` the range names found ("nvtx")."""
    stages = [s for s in dict.fromkeys(inputs.kernel_summary["stage"]) if s != ALL_STAGES]
    if inputs.stages_from is not None:
        source = inputs.stages_from
    elif inputs.manifest is not None or any("union" in s for s in inputs.stage_sources.values()):
        source = "runs"
    elif len(inputs.kernel_summary):
        source = "report"
    else:
        source = "none"
    return {"source": source, "stages": stages, "found": list(inputs.stages_found), "most": MAX_FOUND_STAGES}


ANALYSES = [Analysis("stage_origin", stage_origin)]
