"""One report version: every registered analysis over its inputs (VersionInputs → VersionResult).

The analyses themselves are declared in the modules of generator/analyses/ (``ANALYSES = [...]``)
and run by generator.analyses.registry; this module only hands them the version and collects the
results into the typed VersionResult the renderer reads.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from generator.analyses import registry
from generator.analyses.result import VersionResult
from generator.analyses.settings import AnalysisSettings
from generator.model import VersionInputs

__all__ = ["AnalysisSettings", "analyze_version", "analyze_alone"]


def analyze_alone(version_id: str, inputs: VersionInputs, settings: AnalysisSettings) -> dict[str, Any]:
    """The results of the analyses of one version that do not compare it with the previous one
    (those not reading ``previous``): computed ahead, beside other work, and handed to
    :func:`analyze_version` as ``alone``."""
    given = {"version_id": version_id, "inputs": inputs, "settings": settings}
    return registry.analyze(given, registry.not_reading("previous", registry.discover()))


def analyze_version(version_id: str, inputs: VersionInputs, settings: AnalysisSettings,
                    previous: VersionResult | None = None, alone: dict[str, Any] | None = None) -> VersionResult:
    """Every table, dataset and finding of one report version (compared with ``previous``); the
    results ``alone`` (:func:`analyze_alone` of the same version) are taken as they are."""
    analyses = registry.discover()
    given = {"version_id": version_id, "inputs": inputs, "settings": settings, "previous": previous}
    computed = {**(alone or {}), **registry.analyze({**given, **(alone or {})}, analyses)}
    values = {a.key: computed[a.key] for a in registry.in_order(analyses)}  # the order of one run of them all
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
        published=tuple(a.key for a in analyses if a.publish and values[a.key] is not None),
    )
