"""One report version: every registered analysis over its inputs (VersionInputs → VersionResult).

The analyses themselves are declared in the modules of generator/analyses/ (``ANALYSES = [...]``)
and run by generator.analyses.registry; this module only hands them the version and collects the
results into the typed VersionResult the renderer reads. A command reading a few results asks for
them by key (``keys``): only those and the analyses they read run, and what was left out stays
unreadable (:class:`LeftOut`, :class:`PartialValues`) rather than empty.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any, NoReturn

from generator.analyses import registry
from generator.analyses.result import VersionResult
from generator.analyses.settings import AnalysisSettings
from generator.model import VersionInputs

__all__ = ["AnalysisSettings", "analyze_version", "analyze_alone", "LeftOut", "PartialValues"]


class LeftOut:
    """A VersionResult field whose analysis a partial run (``keys``) did not run: any use is an error."""

    def __init__(self, key: str) -> None:
        self.key = key

    def _refuse(self, *_: object) -> NoReturn:
        raise LookupError(f"analysis {object.__getattribute__(self, 'key')!r} was not run (a partial run)")

    __getattr__ = __getitem__ = __iter__ = __len__ = __bool__ = _refuse

    def __repr__(self) -> str:
        return f"LeftOut({self.key!r})"


class PartialValues(dict):
    """The ``values`` of a partial run: reading an analysis it did not run is an error, ``get`` included."""

    def __init__(self, values: dict[str, Any], left_out: Iterable[str]) -> None:
        super().__init__(values)
        self.left_out = frozenset(left_out)

    def __getitem__(self, key: str) -> Any:
        if key in self.left_out:
            LeftOut(key)._refuse()
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self.left_out else super().get(key, default)


def _analyses(keys: Iterable[str] | None) -> list[registry.Analysis]:
    """Every discovered analysis, or those ``keys`` name with those they read (registry.needed)."""
    found = registry.discover()
    return found if keys is None else registry.needed(keys, found)


def analyze_alone(version_id: str, inputs: VersionInputs, settings: AnalysisSettings,
                  keys: Iterable[str] | None = None) -> dict[str, Any]:
    """The results of the analyses of one version that do not compare it with the previous one
    (those not reading ``previous``; with ``keys``, of those ``keys`` need): computed ahead, beside
    other work, and handed to :func:`analyze_version` as ``alone``."""
    given = {"version_id": version_id, "inputs": inputs, "settings": settings}
    return registry.analyze(given, registry.not_reading("previous", _analyses(keys)))


def analyze_version(version_id: str, inputs: VersionInputs, settings: AnalysisSettings,
                    previous: VersionResult | None = None, alone: dict[str, Any] | None = None,
                    keys: Iterable[str] | None = None) -> VersionResult:
    """Every table, dataset and finding of one report version (compared with ``previous``); the
    results ``alone`` (:func:`analyze_alone` of the same version) are taken as they are. With
    ``keys``, only the analyses they name and those they read (a partial run): the others' fields
    are :class:`LeftOut` and ``values`` a :class:`PartialValues`."""
    analyses = _analyses(keys)
    given = {"version_id": version_id, "inputs": inputs, "settings": settings, "previous": previous}
    computed = {**(alone or {}), **registry.analyze({**given, **(alone or {})}, analyses)}
    values = {a.key: computed[a.key] for a in registry.in_order(analyses)}  # the order of one run of them all
    fields = {f.name for f in dataclasses.fields(VersionResult)}
    left_out = [] if keys is None else [a.key for a in registry.discover() if a.key not in values]
    return VersionResult(
        version_id=version_id,
        **{key: value for key, value in values.items() if key in fields},
        **{key: LeftOut(key) for key in left_out if key in fields},
        has_nsys=bool(len(inputs.kernel_summary)),
        has_ncu=bool(len(inputs.kernel_metrics)),
        gpu=inputs.gpus[0] if inputs.gpus else None,
        provenance=list(inputs.provenance),
        manifest=inputs.manifest,
        stage_sources=dict(inputs.stage_sources),
        values=PartialValues(values, left_out) if keys is not None else values,
        published=tuple(a.key for a in analyses if a.publish and values[a.key] is not None),
    )
