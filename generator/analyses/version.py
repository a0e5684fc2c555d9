"""One report version: every analysis over its inputs (VersionInputs → VersionResult)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import yaml

from generator.analyses.classify import class_stats, classify, method_params, profiled_kernels
from generator.analyses.compare_versions import compare_versions
from generator.analyses.durations import top_by_duration
from generator.analyses.findings import find
from generator.analyses.histograms import histogram_datasets
from generator.analyses.join import attach_stage_time, coverage
from generator.analyses.naming import kernels_yaml, name_kernels
from generator.analyses.result import VersionResult
from generator.analyses.roofline import device_peaks, roofline_datasets
from generator.analyses.top_kernels import top_kernels
from generator.model import ALL_STAGES, VersionInputs

TOP_BY_DURATION_N = 10


@dataclass
class AnalysisSettings:
    top_n: int = 20
    rule: str = "roofline"  # "roofline" | "sol" | "sm_dram_margin"
    margin: float = 5.0  # sm_dram_margin only
    #: report.yaml overrides: {"peak_dram_gbps": 4800, "peak_tflops": {"bf16_tensor": 989, "fp32": 67}}
    peaks: dict[str, Any] = field(default_factory=dict)


def stages_in_order(summary: pd.DataFrame) -> list[str]:
    """"all" first, then the NVTX stages in the order the summary first lists them."""
    seen = [s for s in dict.fromkeys(summary["stage"]) if s != ALL_STAGES]
    return [ALL_STAGES, *seen]


def names_by_time(summary: pd.DataFrame, joined: pd.DataFrame) -> list[str]:
    """Every nsys kernel name, most total time first (all-stages summary first), then the ncu names
    of launches that joined no nsys kernel (``joined`` = metrics after ``attach_stage_time``).

    Naming numbers colliding friendly names in this order, so the biggest kernel gets "-1".
    """
    ranked = summary.sort_values(["stage", "total_ns"], key=lambda col: col != ALL_STAGES
                                 if col.name == "stage" else -col, kind="stable")
    unjoined = joined.loc[joined["summary_name"].isna(), "name"]
    return list(dict.fromkeys([*ranked["name"].dropna(), *unjoined.dropna()]))


def analyze_version(version_id: str, inputs: VersionInputs, settings: AnalysisSettings,
                    previous: VersionResult | None = None) -> VersionResult:
    """Every table, dataset and finding of one report version (compared with ``previous``)."""
    summary = inputs.kernel_summary
    metrics = attach_stage_time(inputs.kernel_metrics, summary)
    names = name_kernels(names_by_time(summary, metrics))
    stages = stages_in_order(summary)
    tops = {stage: top_kernels(summary, stage, settings.top_n, names) for stage in stages}
    peaks = device_peaks(metrics, inputs.gpus, settings.peaks)
    kernels = classify(profiled_kernels(metrics, names), settings.rule,
                       margin=settings.margin, peaks=peaks)
    classification = class_stats(kernels, settings.rule, method_params(settings.rule, settings.margin, peaks))
    shown = dict.fromkeys([*(n for top in tops.values() for n in top["name"]), *kernels["name"]])
    yaml_text = kernels_yaml(names[n] for n in shown)
    result = VersionResult(
        version_id=version_id,
        stages=stages,
        top_kernels=tops,
        kernel_names=yaml.safe_load(yaml_text),
        kernels_yaml=yaml_text,
        ncu_metrics=kernels,
        coverage=coverage(summary, metrics, settings.top_n),
        has_nsys=bool(len(summary)),
        has_ncu=bool(len(metrics)),
        classification=classification,
        top_by_duration=top_by_duration(kernels, TOP_BY_DURATION_N),
        histograms=histogram_datasets(kernels),
        roofline=roofline_datasets(kernels, peaks),
        findings=find(kernels, summary, names, peaks),
        gpu=inputs.gpus[0] if inputs.gpus else None,
        provenance=list(inputs.provenance),
        manifest=inputs.manifest,
    )
    if previous is not None:
        result.comparison = compare_versions(previous, result)
    return result
