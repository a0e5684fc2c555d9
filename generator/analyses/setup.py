"""The setup facts of a version (GPU, driver, CUDA, libraries, profiler versions, DRAM bandwidth), each taken
from ONE source so every page shows the same value: the profiler files first (what wrote the data), then the
capture manifest (what the capture machine reported)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from generator.analyses.result import VersionResult
from generator.model import ALL_STAGES
from generator.readers.fidelity import DIFFERENT, SAME
from generator.workload_params import PRESET_DEFAULTS, generated_tokens, params_read

_TOOL_IN_FORMAT = re.compile(r"\b(nsys|ncu) (\d+(?:\.\d+)+)")
_VERSION = re.compile(r"\d{4}\.\d+(?:\.\d+)*")
#: fact key → manifest path for the ones a capture manifest states
_MANIFEST = {"driver": ("environment", "driver"), "cuda": ("environment", "cuda_runtime"),
             "torch": ("environment", "torch"), "transformers": ("environment", "transformers"),
             "python": ("environment", "python")}
#: software facts in table order
SOFTWARE = ("driver", "cuda", "torch", "transformers", "python", "nsys", "ncu")


def _dig(node: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    return node


def tool_versions(result: VersionResult) -> dict[str, str]:
    """nsys/ncu version as the profiler file records it (its export or report), else as the manifest's
    ``tools.<tool>.version`` line says; the first file of each tool wins."""
    found: dict[str, str] = {}
    for p in result.provenance:
        for tool, version in _TOOL_IN_FORMAT.findall(p.format_version or ""):
            found.setdefault(tool, version)
    for tool in ("nsys", "ncu"):
        line = _dig(result.manifest, ("tools", tool, "version"))
        match = _VERSION.search(str(line)) if line else None
        if tool not in found and match:
            found[tool] = match[0]
    return found


def setup_facts(result: VersionResult) -> dict[str, Any]:
    """Fact key → value (None: unknown): the GPU's (name … memory_clock_hz), ``bandwidth`` (the DRAM peak the
    roofline draws, else the device's), and SOFTWARE."""
    gpu = result.gpu
    facts: dict[str, Any] = {key: getattr(gpu, key, None) for key in
                             ("name", "compute_capability", "sm_count", "memory_bytes", "sm_clock_hz",
                              "memory_clock_hz")}
    roofs = (result.roofline or {}).get("roofs") or {}
    facts["bandwidth"] = roofs.get("peak_dram_bytes_per_s") or getattr(gpu, "memory_bandwidth_bytes_per_s", None)
    facts["driver"] = getattr(gpu, "driver", None)
    for key, path in _MANIFEST.items():
        if facts.get(key) in (None, ""):
            facts[key] = _dig(result.manifest, path)
    facts.update(tool_versions(result))
    return {key: facts.get(key) for key in (*facts, *SOFTWARE)}


def _preset_value(workload: str, params: dict[str, Any], key: str) -> tuple[Any, str]:
    """(value, how it was set): "given" (on the command line), "default" (the preset's, from
    workload_params.PRESET_DEFAULTS), "model" (the model directory's own) or "unknown"."""
    value = params.get(key)
    if value is not None:
        return value, "given"
    if params.get("model"):
        return None, "model"
    default = PRESET_DEFAULTS.get(workload, {}).get(key)
    return (" / ".join(str(v) for v in default), "default") if default else (None, "unknown")


def _overhead_row(stage: str, values: dict[str, Any]) -> dict[str, Any]:
    """One stage's module-range cost: calls, timed % (older captures: ``overhead_pct``), its spread and
    the direct %; None where the manifest lacks it."""
    timed = values.get("timed_pct", values.get("overhead_pct"))
    return {"stage": stage, "calls": values.get("calls"), "timed_pct": timed, "spread_pct": values.get("spread_pct"),
            "direct_pct": values.get("direct_pct")}


def _overhead_runs_given(argv: Any) -> int | None:
    """The ``--overhead-runs`` a capture command line gave (None: not given or not a number)."""
    words = [str(w) for w in argv] if isinstance(argv, list) else []
    for i, word in enumerate(words):
        if word == "--overhead-runs" and i + 1 < len(words):
            value = words[i + 1]
        elif word.startswith("--overhead-runs="):
            value = word.partition("=")[2]
        else:
            continue
        return int(value) if value.isdigit() else None
    return None


def overhead_absent(manifest: dict[str, Any], depth: Any) -> str | None:
    """Why a manifest has no instrumentation cost: "predates" (no ``module_overhead`` key),
    "no_ranges" (module depth 0), "not_timed" (captured with ``--overhead-runs 0``), "unknown";
    None when it has one."""
    if "module_overhead" not in manifest:
        return "predates"
    if isinstance(manifest["module_overhead"], dict):
        return None
    if depth == 0:
        return "no_ranges"
    return "not_timed" if _overhead_runs_given(manifest.get("argv")) == 0 else "unknown"


def _figure(value: Any) -> float | None:
    """A manifest number, None where it is null or not a number."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def energy_stages(record: Any) -> dict[str, dict[str, Any]]:
    """The stages of a manifest's ``energy`` record: {stage: {"joules", "seconds", "watts": float or
    None (null: a stage too short for the counter), "resolved": bool}}; entries that are no record skipped."""
    stages = record.get("stages") if isinstance(record, dict) else None
    if not isinstance(stages, dict):
        return {}
    return {stage: {key: _figure(item.get(key)) for key in ("joules", "seconds", "watts")}
            | {"resolved": item.get("resolved") is True} for stage, item in stages.items() if isinstance(item, dict)}


def _verdict(record: Any) -> str | None:
    """"same" | "different" for the verdicts readers.fidelity writes, else None."""
    return {SAME: "same", DIFFERENT: "different"}.get(str((record or {}).get("verdict")))


def rank_fidelity(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """Each rank's fidelity check (``ranks[i].fidelity`` of a torchrun capture): rank, pid, GPU index,
    ``verdict`` as recorded, ``verdict_key`` (:func:`_verdict`), measured and plain launches over its
    stages; [] where the manifest records none."""
    ranks = manifest.get("ranks") if isinstance(manifest.get("ranks"), list) else []
    rows = []
    for rank in ranks:
        record = rank.get("fidelity") if isinstance(rank, dict) else None
        if not isinstance(record, dict):
            continue
        stages = [v for v in (record.get("stages") or {}).values() if isinstance(v, dict)]
        rows.append({"rank": rank.get("rank"), "pid": rank.get("pid"), "gpu": _dig(rank, ("gpu", "index")),
                     "verdict": record.get("verdict"), "verdict_key": _verdict(record),
                     "measured": sum(int(v.get("measured_launches") or 0) for v in stages),
                     "plain": sum(int(v.get("plain_launches") or 0) for v in stages)})
    return rows


def workload_setup(manifest: dict[str, Any] | None) -> dict[str, Any] | None:
    """The test setup a capture manifest records, for the overview (None without a manifest):
    ``model`` {workload, source: "preset" | "directory" | "function", directory, weights: "random" |
    "real" | "unknown"}, ``params`` [(key, value, how)] of the parameters the workload reads,
    ``mode`` "eager" | "cuda_graph", ``capture`` settings, ``overhead`` rows per stage (module
    ranges' cost: timed and direct %, spread), ``overhead_absent`` (why there are none), and the keys
    newer captures add (``fidelity``, ``energy``, ``clocks``, ``tokens``, ``gpus``), each None where
    the manifest lacks it; ``fidelity_verdict`` "same" | "different" for the verdicts
    readers.fidelity writes, else None; a torchrun capture's ``fidelity_ranks`` (:func:`rank_fidelity`)
    and ``ncu_profiled`` (the rank ncu profiled)."""
    if not isinstance(manifest, dict):
        return None
    workload = str(manifest.get("workload") or "")
    params = manifest.get("params") if isinstance(manifest.get("params"), dict) else {}
    model = params.get("model")
    if ":" in workload:
        source, weights = "function", "unknown"
    elif model:
        source, weights = "directory", "real"
    else:
        source, weights = "preset", "random"
    shown = [(key, *_preset_value(workload, params, key)) for key in params_read(workload, params)
             if key not in ("model", "cuda_graph", "attn_impl", "module_depth", "device")]
    ranges = manifest.get("module_ranges") if isinstance(manifest.get("module_ranges"), dict) else None
    depth = params.get("module_depth")
    if depth is None:
        depth = ranges.get("depth") if ranges else None
    collection = manifest.get("ncu_collection") if isinstance(manifest.get("ncu_collection"), dict) else {}
    overhead = _dig(manifest, ("module_overhead", "stages"))
    gpus = _dig(manifest, ("environment", "gpus"))
    fidelity = manifest.get("fidelity") if isinstance(manifest.get("fidelity"), dict) else None
    return {
        "model": {"workload": workload, "source": source, "directory": Path(str(model)).name if model else None,
                  "weights": weights},
        "attn_impl": params.get("attn_impl") if "attn_impl" in params_read(workload, params) else None,
        "mode": "cuda_graph" if params.get("cuda_graph") else "eager",
        "params": shown,
        "capture": {"module_depth": depth, "top_n": manifest.get("top_n_requested"),
                    "ncu_selection": manifest.get("ncu_selection"),
                    "ncu_sections": collection.get("sections"), "ncu_metrics": len(collection.get("metrics") or []),
                    "overhead_runs": _dig(manifest, ("module_overhead", "runs"))},
        "overhead": [_overhead_row(stage, values) for stage, values in overhead.items() if isinstance(values, dict)]
        if isinstance(overhead, dict) else [],
        "overhead_absent": overhead_absent(manifest, depth),
        "overhead_total": _overhead_row(ALL_STAGES, _dig(manifest, ("module_overhead", "total")) or {}),
        "overhead_per_call_us": (lambda s: s * 1e6 if isinstance(s, (int, float)) else None)(
            _dig(manifest, ("module_overhead", "seconds_per_call"))),
        "fidelity": fidelity,
        "fidelity_verdict": _verdict(fidelity),
        "fidelity_ranks": rank_fidelity(manifest),
        "ncu_profiled": manifest.get("ncu_profiled") if isinstance(manifest.get("ncu_profiled"), dict) else None,
        "energy": manifest.get("energy") if isinstance(manifest.get("energy"), dict) else None,
        "clocks": manifest.get("clocks") if isinstance(manifest.get("clocks"), dict) else None,
        "tokens": generated_tokens(manifest),  # the one source findings divide by
        "gpus": [g for g in gpus if isinstance(g, dict)] if isinstance(gpus, list) else [],
    }
