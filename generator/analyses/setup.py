"""The setup facts of a version (GPU, driver, CUDA, libraries, profiler versions, DRAM bandwidth), each taken
from ONE source so every page shows the same value: the profiler files first (what wrote the data), then the
capture manifest (what the capture machine reported)."""
from __future__ import annotations

import re
from typing import Any

from generator.analyses.result import VersionResult

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
