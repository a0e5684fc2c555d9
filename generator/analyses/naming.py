"""Kernel naming: raw profiler names → friendly name, library, category, data shapes, EN/ZH text.

The recognizers (generator.analyses.recognizers) find a name's family and values; every word a
reader sees comes from generator/templates/kernel_families.yaml; here they are put together and made unique.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd
import yaml

from generator.analyses.cpp_names import canonical, parse_name
from generator.analyses.family_words import families, fragment
from generator.analyses.recognizers import DTYPE_CODES, Match, recognize
from generator.analyses.registry import Analysis
from generator.languages import LANGS
from generator.model import ALL_STAGES, VersionInputs
from generator.resources import SAFE_LOADER

CATEGORIES = (
    "gemv", "gemm", "attention", "elementwise", "reduce", "norm", "softmax", "copy", "cat",
    "index", "conv", "moe", "comm", "triton", "other",
)


@dataclass(frozen=True)
class KernelName:
    raw_name: str  # the full name as given (nsys demangled, or ncu function name)
    friendly_name: str  # unique within one name_kernels call
    source_lib: str
    category: str  # one of CATEGORIES
    data_shape: dict  # {"generic": str|None, "fixed": dict|None, "tiled": dict|None}
    description: dict  # {lang: str} for every language of generator.languages


def _words(match: Match) -> tuple[dict, dict]:
    """(family entry, op entry or {}) from the templates."""
    family = families()["families"][match.family]
    op = family.get("ops", {}).get(match.op or "", {}) if match.op else {}
    return family, op


def _label_and_details(match: Match) -> tuple[str, list[str]]:
    family, op = _words(match)
    label = (op.get("label") or family["label"]).format(short=match.short, coll=match.coll)
    details = list(match.details)
    if match.variant:  # after the data type, as in the seed: "Elementwise Multiply (BF16, vec)"
        details.insert(1 if details and details[0] in DTYPE_CODES else 0, families()["variants"][match.variant])
    return label, details


def _kernel_name(raw: str, match: Match, friendly: str) -> KernelName:
    family, op = _words(match)
    # a language the family is not yet translated into reads the default language's words
    fmt = {f"op_{lang}": op.get(lang, op.get(LANGS[0], "")) for lang in LANGS}
    generic = op.get("generic", family.get("generic"))
    return KernelName(
        raw_name=raw,
        friendly_name=friendly,
        source_lib=family["source_lib"],
        category=op.get("category", family["category"]),
        data_shape={"generic": generic, "fixed": match.fixed, "tiled": match.tiled},
        description={lang: family.get(lang, family[LANGS[0]]).format(**fmt) for lang in LANGS},
    )


def _friendly(label: str, details: list[str]) -> str:
    return f"{label} ({', '.join(details)})" if details else label


def _distinguishing_args(raws: list[str]) -> list[str] | None:
    """Per name, the short top-level template arguments in which the names differ (seed: template=7)."""
    parsed = [parse_name(r) for r in raws]
    counts = {len(p.template_args) for p in parsed}
    if len(counts) != 1 or not counts.pop():
        return None
    columns = list(zip(*(p.template_args for p in parsed)))
    differing = [i for i, col in enumerate(columns) if len({canonical(v) for v in col}) > 1]
    if not differing or len(differing) > 2:
        return None
    values = [",".join(canonical(p.template_args[i]) for i in differing) for p in parsed]
    return values if all(len(v) <= 16 for v in values) else None


def name_kernels(raw_names: Iterable[str]) -> dict[str, KernelName]:
    """Name every distinct raw name; friendly names are unique (colliding ones get -1, -2, … in input
    order, which callers make total-time order, plus the template arguments that tell them apart)."""
    raws = list(dict.fromkeys(raw_names))
    labelled = {}
    for raw in raws:
        match = recognize(raw)
        labelled[raw] = (match, *_label_and_details(match))
    groups: dict[str, list[str]] = defaultdict(list)
    for raw, (_, label, details) in labelled.items():
        groups[_friendly(label, details)].append(raw)
    friendly: dict[str, str] = {}
    for name, members in groups.items():
        if len(members) == 1:
            friendly[members[0]] = name
            continue
        extra = _distinguishing_args(members)
        for i, raw in enumerate(members):
            _, label, details = labelled[raw]
            tag = [fragment("template", value=extra[i])] if extra else []
            friendly[raw] = _friendly(f"{label}-{i + 1}", details + tag)
    taken: set[str] = set()
    result = {}
    for raw in raws:
        name, n = friendly[raw], 1
        while name in taken:  # a suffixed name that equals another kernel's name
            n += 1
            name = f"{friendly[raw]} #{n}"
        taken.add(name)
        result[raw] = _kernel_name(raw, labelled[raw][0], name)
    return result


def kernels_yaml(names: Iterable[KernelName]) -> str:
    """kernels.yaml text in the seed-003 schema (a description per language); same input, same bytes."""
    entries = [
        {
            "raw_name": k.raw_name,
            "friendly_name": k.friendly_name,
            "source_lib": k.source_lib,
            "category": k.category,
            "data_shape": {key: k.data_shape.get(key) for key in ("generic", "fixed", "tiled")},
            "description": {lang: k.description[lang] for lang in LANGS},
        }
        for k in names
    ]
    return yaml.safe_dump(entries, allow_unicode=True, sort_keys=False, width=4096, default_flow_style=False)


def names_by_time(summary: pd.DataFrame, joined: pd.DataFrame) -> list[str]:
    """Every nsys kernel name, most total time first (all-stages summary first), then the ncu names
    of launches that joined no nsys kernel (``joined`` = metrics after ``attach_stage_time``).

    Naming numbers colliding friendly names in this order, so the biggest kernel gets "-1".
    """
    ranked = summary.sort_values(["stage", "total_ns"], key=lambda col: col != ALL_STAGES
                                 if col.name == "stage" else -col, kind="stable")
    unjoined = joined.loc[joined["summary_name"].isna(), "name"]
    return list(dict.fromkeys([*ranked["name"].dropna(), *unjoined.dropna()]))


def version_names(inputs: VersionInputs, metrics: pd.DataFrame) -> dict[str, KernelName]:
    """Every kernel of the version named (:func:`name_kernels` in :func:`names_by_time` order)."""
    return name_kernels(names_by_time(inputs.kernel_summary, metrics))


def shown_kernels_yaml(names: dict[str, KernelName], top_kernels: dict[str, pd.DataFrame],
                       ncu_metrics: pd.DataFrame) -> str:
    """data/kernels.yaml: the kernels the pages show (top kernels of every stage, then profiled ones)."""
    shown = dict.fromkeys([*(n for top in top_kernels.values() for n in top["name"]), *ncu_metrics["name"]])
    return kernels_yaml(names[n] for n in shown)


def kernel_names(kernels_yaml: str) -> list[dict[str, Any]]:
    """The kernels.yaml entries as data (the pages' and the comparison's name lookup)."""
    return yaml.load(kernels_yaml, Loader=SAFE_LOADER)


ANALYSES = [Analysis("names", version_names), Analysis("kernels_yaml", shown_kernels_yaml),
            Analysis("kernel_names", kernel_names)]
