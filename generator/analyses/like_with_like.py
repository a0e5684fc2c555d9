"""Like with like: what differs between two captures before any faster/slower verdict.

From the capture manifests (run_layout.MANIFEST) where both sides have one: the workload and its
model (a difference there means two different programs: no verdict at all), the other workload
parameters (the change being measured, usually), the stage set, the capture settings (warm-ups,
module ranges, operator marks, module-overhead runs, ncu clock control, profiler, driver and library
versions) and the GPU. Without manifests, what the files say: the stage set and the GPU. Two
captures made more than SESSION_GAP_HOURS apart (by the manifests' ``created``), or of unknown time,
are not of one session: what changes between sessions (another GPU unit of the same model, its
clocks and temperature) is not in the noise either capture measures, so ``same_session`` is False
and the stage verdicts widen their band to launch_stats.SESSION_NOISE.
"""
from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from generator.analyses.registry import Analysis
from generator.analyses.result import VersionResult
from generator.model import VersionInputs

#: a difference of one of these kinds: different programs, no faster/slower verdict
WORKLOAD, PARAMETER, STAGES, CAPTURE, SESSION, GPU = "workload", "parameter", "stages", "capture", "session", "gpu"
#: captures made further apart than this are of different sessions (a device lease lasts at most 30 min)
SESSION_GAP_HOURS = 1.0
#: params keys that name the program itself (a different one: no verdict)
PROGRAM_PARAMS = ("model",)
#: params keys of the capture harness, not the program (warm-up iterations run before the measured one)
HARNESS_PARAMS = ("warmup", "module_depth")
#: environment facts of the manifest that are capture settings
ENVIRONMENT_KEYS = ("torch", "transformers", "cuda_runtime", "driver")


def _command_option(manifest: dict, phase: str, option: str) -> str | None:
    """The value of ``option`` in the first command of the phase named ``phase`` (None: not given)."""
    for entry in manifest.get("phases") or []:
        if isinstance(entry, dict) and entry.get("name") == phase:
            for command in entry.get("commands") or []:
                if isinstance(command, list) and option in command[:-1]:
                    return str(command[command.index(option) + 1])
    return None


def capture_settings(manifest: dict) -> dict[str, Any]:
    """The capture settings a manifest states (absent ones None)."""
    modules = manifest.get("module_ranges")
    overhead = manifest.get("module_overhead")
    tools = manifest.get("tools") if isinstance(manifest.get("tools"), dict) else {}
    environment = manifest.get("environment") if isinstance(manifest.get("environment"), dict) else {}
    settings: dict[str, Any] = {
        "module_ranges": bool(modules),
        "module_depth": modules.get("depth") if isinstance(modules, dict) else None,
        "operator_calls_marked": manifest.get("operator_calls_marked") is not None,
        "module_overhead_runs": overhead.get("runs") if isinstance(overhead, dict) else None,
        "ncu_clock_control": _command_option(manifest, "ncu_profile", "--clock-control"),
        "nsys_cuda_graph_trace": _command_option(manifest, "nsys_profile", "--cuda-graph-trace"),
    }
    for tool in ("nsys", "ncu"):
        entry = tools.get(tool)
        settings[f"{tool}_version"] = entry.get("version") if isinstance(entry, dict) else None
    settings.update({key: environment.get(key) for key in ENVIRONMENT_KEYS})
    return settings


def _created(manifest: dict | None) -> datetime | None:
    """When the capture was made (the manifest's ISO ``created``), None where unknown."""
    try:
        made = datetime.fromisoformat(str((manifest or {}).get("created")))
    except ValueError:
        return None
    return made if made.tzinfo else made.replace(tzinfo=UTC)


def _shown(value: Any) -> Any:
    return value if value is None or isinstance(value, (str, int, float, bool)) else json.dumps(value, sort_keys=True)


def like_with_like(previous: dict | None, current: dict | None, previous_stages: list[str],
                   current_stages: list[str], gpu_change: dict[str, Any] | None) -> dict[str, Any]:
    """``{"comparable", "same_session", "hours_apart", "differences": [{"kind", "key", "previous",
    "current"}]}``: ``comparable`` is False when the workload or its model differs (then no
    faster/slower verdict is given); ``hours_apart`` None where either capture time is unknown."""
    differences: list[dict[str, Any]] = []

    def differ(kind: str, key: str, before: Any, after: Any) -> None:
        if before != after:
            differences.append({"kind": kind, "key": key, "previous": _shown(before), "current": _shown(after)})

    if isinstance(previous, dict) and isinstance(current, dict):
        differ(WORKLOAD, "workload", previous.get("workload"), current.get("workload"))
        before = previous.get("params") if isinstance(previous.get("params"), dict) else {}
        after = current.get("params") if isinstance(current.get("params"), dict) else {}
        for key in sorted(set(before) & set(after)):  # a key one capture does not state: its default
            kind = WORKLOAD if key in PROGRAM_PARAMS else CAPTURE if key in HARNESS_PARAMS else PARAMETER
            differ(kind, f"params.{key}", before.get(key), after.get(key))
        settings_before, settings_after = capture_settings(previous), capture_settings(current)
        for key in settings_before:
            differ(CAPTURE, key, settings_before[key], settings_after[key])
    made = _created(previous), _created(current)
    hours = abs((made[1] - made[0]).total_seconds()) / 3600 if None not in made else None
    same_session = hours is not None and hours <= SESSION_GAP_HOURS
    if hours is not None and not same_session:
        differ(SESSION, "created", made[0].strftime("%Y-%m-%d %H:%M"), made[1].strftime("%Y-%m-%d %H:%M"))
    differ(STAGES, "stages", previous_stages, current_stages)
    if gpu_change is not None and gpu_change["changed"]:
        differ(GPU, "gpu", gpu_change["previous"]["name"], gpu_change["current"]["name"])
    return {"comparable": not any(d["kind"] == WORKLOAD for d in differences), "same_session": same_session,
            "hours_apart": hours, "differences": differences}


def measured_stages(inputs: VersionInputs) -> list[str]:
    """The stages whose launches the version holds, in capture order."""
    return list(dict.fromkeys(inputs.launches["stage"])) if inputs.launches is not None else []


def version_like_with_like(previous: VersionResult | None, inputs: VersionInputs,
                           gpu_change: dict[str, Any] | None) -> dict[str, Any] | None:
    """:func:`like_with_like` of the previous version and this one; None for the first."""
    if previous is None:
        return None
    return like_with_like(previous.manifest, inputs.manifest, previous.values.get("measured_stages", []),
                          measured_stages(inputs), gpu_change)


ANALYSES = [Analysis("measured_stages", measured_stages),
            Analysis("like_with_like", version_like_with_like, previous=("measured_stages",))]
