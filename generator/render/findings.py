"""Findings and classification-method text: generator/templates/findings/<id>.<lang>.md.j2 over their evidence."""
from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import jinja2

from generator.analyses.result import Finding
from generator.languages import LANGS
from generator.render.compiled_templates import COMPILED
from generator.render.markdown import escape_text
from generator.render.translations import term
from generator.resources import TEMPLATES


@cache
def _env() -> jinja2.Environment:
    """The finding templates' environment; ``| md`` prints a name from the inputs as Markdown text."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES / "findings"),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=False, autoescape=False,
                             bytecode_cache=COMPILED)
    env.filters["md"] = escape_text
    return env


def compile_finding_templates() -> None:
    """Compile every finding template now (see pages.compile_templates)."""
    for name in _env().list_templates(filter_func=lambda n: n.endswith(".j2")):
        _env().get_template(name)


def _template(stem: str, lang: str) -> jinja2.Template:
    """``<stem>.<lang>.md.j2``, else (a language not yet translated here) the default language's."""
    return _env().select_template([f"{stem}.{lang}.md.j2", f"{stem}.{LANGS[0]}.md.j2"])


def _inert(value: Any) -> Any:
    """``value`` with every text in it (names from the inputs: stages, kernels, architectures)
    Markdown-escaped (:func:`escape_text`); numbers unchanged."""
    if isinstance(value, str):
        return escape_text(value)
    if isinstance(value, (list, tuple)):
        return [_inert(v) for v in value]
    if isinstance(value, dict):
        return {_inert_key(k): _inert(v) for k, v in value.items()}
    return value


def _inert_key(key: Any) -> Any:
    """An evidence key: per-stage keys (``<stage>.ms``) with the stage escaped as :func:`_inert`
    escapes a stage name, so ``e[s ~ '.ms']`` finds them from an escaped ``s``."""
    if not isinstance(key, str) or "." not in key:
        return key
    stage, _, figure = key.rpartition(".")
    return f"{escape_text(stage)}.{figure}"


def render_finding(finding: Finding, lang: str) -> str:
    """The finding's Markdown text in ``lang`` from its template and evidence; every name in it
    (stage, kernels, text evidence) is escaped here, so no name from an input becomes markup."""
    evidence = _inert(finding.evidence)
    kernels = _inert(list(finding.kernels))
    stages = [key[:-3] for key in finding.evidence if key.endswith(".ms")]
    fixed = {"e": evidence, "k": kernels, "kernel_names": kernels,
             "stage": None if finding.stage is None else escape_text(finding.stage), "stages": _inert(stages),
             "term": _terms(lang)}
    # evidence keys are also top-level names, except where they would shadow the names above
    # (stage_split_abstain's evidence "stages" is read as e.stages)
    named = {k: v for k, v in evidence.items() if k.isidentifier() and k not in fixed}
    return _template(finding.id, lang).render(**named, **fixed).strip()


def finding_record(finding: Finding, rank: int) -> dict[str, Any]:
    """One entry of data/findings.json: identity, claim in every language, evidence with units, bound."""
    bound = finding.bound
    return {
        "rank": rank,
        "id": finding.id,
        "kind": finding.kind,
        "stage": finding.stage,
        "kernels": [{"name": n, "friendly_name": f} for n, f in zip(finding.kernel_ids, finding.kernels)],
        "claim": {lang: render_finding(finding, lang) for lang in LANGS},
        "evidence": {k: {"value": v, "unit": finding.units.get(k, "")} for k, v in finding.evidence.items()},
        "bound": None if bound is None else {
            "basis": bound.basis, "affected_ns": round(bound.affected_ns), "stage_ns": round(bound.stage_ns),
            "total_ns": round(bound.total_ns), "stage_pct": round(bound.stage_pct, 1),
            "total_pct": round(bound.total_pct, 1), "headroom": None if bound.headroom is None else round(bound.headroom, 2),
            "saving_ns": round(bound.saving_ns), "saving_pct": round(bound.saving_pct, 1),
            "shared_ns": round(bound.shared_ns), "exclusive_saving_ns": round(bound.exclusive_saving_ns),
            "floor_basis": bound.floor_basis,
            "saving_hi_ns": None if bound.saving_hi_ns is None else round(bound.saving_hi_ns),
            "shapes_unknown": bound.saving_hi_ns is not None, "kernels": list(bound.kernels)},
        "confidence": finding.confidence,
        "abstained": finding.abstained,
        "merged": [{"id": m.id, "claim": {lang: render_finding(m, lang) for lang in LANGS}} for m in finding.merged],
    }


def render_method(rule: str, params: dict[str, Any], lang: str) -> str:
    """The classification method section for ``rule`` in ``lang``, quoting its thresholds."""
    return _template(f"method_{rule}", lang).render(**params, term=_terms(lang)).strip()


def _terms(lang: str) -> Callable[[str], str]:
    """``term("classes.compute-bound")`` inside a template: the glossary's word in ``lang``."""
    return lambda key: term(key, lang)
