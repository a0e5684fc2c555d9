"""A version's machine-readable data files (``data/`` beside its pages), in deterministic bytes."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from generator.analyses.result import SweepResult, VersionResult
from generator.analyses.setup import setup_facts, workload_setup
from generator.metric_table import CANONICAL_METRIC_NAMES
from generator.model import ReportMeta
from generator.render.findings import finding_record
from generator.text_safety import csv_safe

FLOAT_FORMAT = "%.15g"  # every float in the data files: 15 significant digits (exact for ns counts)
#: ncu_metrics.csv: identity, class and nsys share columns, then the canonical metrics
NCU_METRICS_CSV_COLUMNS = ["name", "friendly_name", "library", "category", "class", "qualifier", "busiest_unit",
                           "ncu_class", "arithmetic_intensity", "roof_pct", "ncu_name", "stage", "stage_time_pct",
                           "launches", "max_duration_ns", *CANONICAL_METRIC_NAMES]
TOP_KERNELS_CSV = "data/top_kernels.csv"
KERNELS_YAML = "data/kernels.yaml"
NCU_METRICS_CSV = "data/ncu_metrics.csv"
SUMMARY_JSON = "data/summary.json"
FINDINGS_JSON = "data/findings.json"
#: Which report and version this is, its GPU, software and workload (the overview's setup facts)
VERSION_JSON = "data/version.json"
#: The sweep's data file, next to the version's (``data/`` of the version's docs).
SWEEP_CSV = "data/sweep.csv"
#: A version's data files (paths under its docs/) and the downloads page's word key for each.
DATA_FILES: tuple[tuple[str, str], ...] = ((TOP_KERNELS_CSV, "top_kernels"), (KERNELS_YAML, "kernels_yaml"),
                                           (NCU_METRICS_CSV, "ncu_metrics"), (SUMMARY_JSON, "summary"),
                                           (FINDINGS_JSON, "findings"), (VERSION_JSON, "version"))


def published_files(result: VersionResult) -> tuple[tuple[str, str], ...]:
    """(path under docs/, downloads word key) of each analysis the version publishes
    (``Analysis(..., publish=True)``): ``data/<key>.csv`` for a table, else ``data/<key>.json``."""
    return tuple((f"data/{key}.{'csv' if isinstance(result.values[key], pd.DataFrame) else 'json'}", key)
                 for key in result.published)


def json_safe(value: Any) -> Any:
    """JSON-safe and byte-stable: NaN → None, floats to 15 significant digits, numpy → Python."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else float(f"{value:.15g}")
    return value


def _write_csv(frame: pd.DataFrame, path: Path) -> None:
    """``frame`` as CSV, text cells a spreadsheet would run as a formula neutralized."""
    csv_safe(frame).to_csv(path, index=False, float_format=FLOAT_FORMAT, lineterminator="\n")


def write_version_data(result: VersionResult, out_dir: Path) -> None:
    """data/top_kernels.csv, kernels.yaml, ncu_metrics.csv, summary.json and the published analyses
    (:func:`published_files`) under ``out_dir``.

    Deterministic bytes: fixed column order, 15-significant-digit floats, sorted JSON keys, no
    timestamps. ``top_kernels.csv`` holds every stage, ``stage`` first, with the seven duration
    statistics and the stage-true classes (``profiled``: "stage=class" pairs, ";"-joined).
    """
    out_dir = Path(out_dir)
    (out_dir / "data").mkdir(parents=True, exist_ok=True)
    tops = [frame.assign(stage=stage) for stage, frame in result.top_kernels.items()]
    top = pd.concat(tops, ignore_index=True) if tops else pd.DataFrame(columns=["stage"])
    if "profiled" in top:  # stage-true classes as "stage=class" pairs; empty: not profiled in the stage
        top["profiled"] = [";".join(f"{p['stage']}={p['class']}" for p in found) for found in top["profiled"]]
    _write_csv(top[["stage", *[c for c in top.columns if c != "stage"]]], out_dir / TOP_KERNELS_CSV)
    (out_dir / KERNELS_YAML).write_text(result.kernels_yaml, encoding="utf-8")
    _write_csv(result.ncu_metrics.reindex(columns=NCU_METRICS_CSV_COLUMNS), out_dir / NCU_METRICS_CSV)
    _write_json(result.summary(), out_dir / SUMMARY_JSON)
    for path, key in published_files(result):
        value = result.values[key]
        if isinstance(value, pd.DataFrame):
            _write_csv(value, out_dir / path)
        else:
            _write_json(value, out_dir / path)
    records = [finding_record(f, rank) for rank, f in enumerate(result.findings, 1)]
    _write_json({"version": result.version_id, "findings": records}, out_dir / FINDINGS_JSON)


def write_version_facts(result: VersionResult, report: ReportMeta, out_dir: Path) -> None:
    """data/version.json: the report and version (ids, titles, date), the setup facts of its GPU and
    software (analyses.setup.setup_facts) and its workload as the capture manifest records it
    (analyses.setup.workload_setup; None without a manifest)."""
    version = report.version(result.version_id)
    _write_json({"report": {"id": report.id, "title": report.title},
                 "version": {"id": version.id, "title": version.title, "date": version.date.isoformat()},
                 "setup": setup_facts(result), "workload": workload_setup(result.manifest)},
                Path(out_dir) / VERSION_JSON)


def _write_json(value: Any, path: Path) -> None:
    """``value`` as sorted, indented JSON (json_safe numbers)."""
    text = json.dumps(json_safe(value), sort_keys=True, indent=2, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")


def write_sweep_data(sweep: SweepResult, out_dir: Path) -> Path:
    """``data/sweep.csv``: one row per config, ``param.<name>`` columns first, then CONFIG_COLUMNS
    (stages joined by ";"); deterministic bytes like the version's data files."""
    configs = sweep.configs
    names = list(dict.fromkeys(k for params in configs["params"] for k in params))
    params = {f"param.{k}": [p.get(k) for p in configs["params"]] for k in names}
    frame = configs.drop(columns="params").assign(stages=[";".join(s) for s in configs["stages"]])
    frame = pd.concat([frame[["label"]], pd.DataFrame(params, index=frame.index), frame.drop(columns="label")], axis=1)
    path = Path(out_dir) / SWEEP_CSV
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_csv(frame, path)
    return path
