"""The analyses of a report version, discovered and run in dependency order — adding one is one place.

How to add an analysis (nothing else to edit):

1. In any module of ``generator/analyses/`` (a new file is fine), write a pure function. Its
   parameter names are its inputs: other analyses' keys, or what every version is given
   (:data:`GIVEN`: ``version_id``, ``inputs`` (model.VersionInputs), ``settings``
   (settings.AnalysisSettings), ``previous`` (the previous version's VersionResult, or None)).
   Its return annotation is its typed result.
2. Declare it at module level::

       ANALYSES = [Analysis("kernel_count", kernel_count, publish=True)]

   ``key`` is the name other analyses (and the pages, as ``result.values[key]``) use for its result.
   ``publish=True`` also writes the result to ``data/<key>.csv`` (a DataFrame) or ``data/<key>.json``
   (anything else) beside the version's pages and lists it on the downloads page
   (generator.render.data_files writes it; the downloads page's description is the word
   ``downloads.<key>`` of generator/templates/i18n/<lang>.yaml, the key itself when absent).
   An analysis reading ``previous`` names the previous version's results it reads in
   ``previous=(...)`` (keys of analyses): a partial run (:func:`needed`) computes them there.

:func:`analyze` runs every discovered analysis once, each after the ones it reads; a missing input
or a cycle is an error naming the analysis. Analyses never write files nor render text. A command
that reads a few results runs only those and the ones they read (:func:`needed`).
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property
from types import ModuleType
from typing import Any

#: The names every version provides to its analyses (analyses.version.analyze_version).
GIVEN: tuple[str, ...] = ("version_id", "inputs", "settings", "previous")


@dataclass(frozen=True)
class Analysis:
    """One analysis: ``function``'s parameters name its inputs, its return annotation its result."""

    key: str
    function: Callable[..., Any]
    publish: bool = False
    #: the keys of the previous version's results it reads (``previous.values`` and its fields)
    previous: tuple[str, ...] = ()

    @cached_property
    def inputs(self) -> tuple[str, ...]:
        """The keys (analyses' or :data:`GIVEN`) this analysis reads, in parameter order."""
        return tuple(inspect.signature(self.function).parameters)

    @cached_property
    def result_type(self) -> Any:
        """The function's return annotation, resolved in its module (e.g. ``pd.DataFrame``)."""
        annotation = inspect.signature(self.function).return_annotation
        return eval(annotation, self.function.__globals__) if isinstance(annotation, str) else annotation


def discover(package: ModuleType | None = None) -> list[Analysis]:
    """Every ``ANALYSES`` entry of the modules of ``package`` (default: generator.analyses), by
    module name then declaration order; two analyses with one key are an error."""
    if package is None:
        package = importlib.import_module(__name__.rsplit(".", 1)[0])
    found: list[Analysis] = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        found += getattr(module, "ANALYSES", [])
    keys = [a.key for a in found]
    duplicates = sorted({k for k in keys if keys.count(k) > 1} | (set(keys) & set(GIVEN)))
    if duplicates:
        raise ValueError(f"analysis key(s) declared twice or shadowing a given name: {', '.join(duplicates)}")
    return found


def in_order(analyses: Iterable[Analysis], given: Iterable[str] = GIVEN) -> list[Analysis]:
    """``analyses`` so that each comes after every analysis it reads (stable otherwise)."""
    pending = list(analyses)
    known = set(given)
    keys = {a.key for a in pending}
    for analysis in pending:
        missing = [name for name in analysis.inputs if name not in keys and name not in known]
        if missing:
            raise ValueError(f"analysis {analysis.key!r} reads {', '.join(missing)}: "
                             f"neither an analysis nor one of {', '.join(GIVEN)}")
    ordered: list[Analysis] = []
    while pending:
        ready = [a for a in pending if all(name in known for name in a.inputs)]
        if not ready:
            raise ValueError(f"analyses depend on each other in a cycle: {', '.join(a.key for a in pending)}")
        for analysis in ready:
            ordered.append(analysis)
            known.add(analysis.key)
        pending = [a for a in pending if a not in ready]
    return ordered


def analyze(given: dict[str, Any], analyses: Iterable[Analysis] | None = None) -> dict[str, Any]:
    """Run ``analyses`` (default: every discovered one) on ``given``: key → result. An analysis whose
    key ``given`` holds (its result computed before, :func:`not_reading`) is not run again."""
    values = dict(given)
    pending = [a for a in (discover() if analyses is None else analyses) if a.key not in given]
    for analysis in in_order(pending, given):
        values[analysis.key] = analysis.function(**{name: values[name] for name in analysis.inputs})
    return {key: value for key, value in values.items() if key not in given}


def not_reading(name: str, analyses: Iterable[Analysis]) -> list[Analysis]:
    """The ``analyses`` that do not read ``name`` (one of :data:`GIVEN`), directly or through
    another analysis: they can run before ``name`` is known."""
    reading = {name}
    ordered = in_order(analyses)
    for analysis in ordered:
        if reading.intersection(analysis.inputs):
            reading.add(analysis.key)
    return [a for a in ordered if a.key not in reading]


def needed(keys: Iterable[str], analyses: Iterable[Analysis]) -> list[Analysis]:
    """The ``analyses`` that ``keys`` name and every one they read, directly or through another, in
    the order of :func:`in_order`; an unknown key is an error."""
    ordered = in_order(analyses)
    by_key = {a.key: a for a in ordered}
    unknown = sorted(set(keys) - set(by_key))
    if unknown:
        raise ValueError(f"no analysis {', '.join(unknown)}")
    wanted, pending = set(), list(keys)
    while pending:
        key = pending.pop()
        if key in by_key and key not in wanted:
            wanted.add(key)
            pending += by_key[key].inputs
    return [a for a in ordered if a.key in wanted]


def read_before(keys: Iterable[str], analyses: Iterable[Analysis]) -> tuple[str, ...]:
    """The previous version's results that the analyses :func:`needed` for ``keys`` read
    (their ``previous`` declarations), in declaration order."""
    return tuple(dict.fromkeys(k for a in needed(keys, analyses) if "previous" in a.inputs for k in a.previous))
