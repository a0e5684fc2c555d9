"""One report version: every registered analysis over its inputs (VersionInputs → VersionResult).

The analyses themselves are declared in the modules of generator/analyses/ (``ANALYSES = [...]``)
and run by generator.analyses.registry; this module only hands them the version and collects the
results into the typed VersionResult the renderer reads.
"""
from __future__ import annotations

import dataclasses

from generator.analyses import registry
from generator.analyses.result import VersionResult
from generator.analyses.settings import AnalysisSettings
from generator.model import VersionInputs

__all__ = ["AnalysisSettings", "analyze_version"]


def analyze_version(version_id: str, inputs: VersionInputs, settings: AnalysisSettings,
                    previous: VersionResult | None = None) -> VersionResult:
    """Every table, dataset and finding of one report version (compared with ``previous``)."""
    analyses = registry.discover()
    values = registry.analyze({"version_id": version_id, "inputs": inputs, "settings": settings,
                               "previous": previous}, analyses)
    fields = {f.name for f in dataclasses.fields(VersionResult)}
    return VersionResult(
        version_id=version_id,
        **{key: value for key, value in values.items() if key in fields},
        has_nsys=bool(len(inputs.kernel_summary)),
        has_ncu=bool(len(inputs.kernel_metrics)),
        gpu=inputs.gpus[0] if inputs.gpus else None,
        provenance=list(inputs.provenance),
        manifest=inputs.manifest,
        stage_sources=dict(inputs.stage_sources),
        values=values,
        published=tuple(a.key for a in analyses if a.publish),
    )
