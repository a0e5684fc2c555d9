"""What a run ran on: ``python -m capture.environment`` prints one JSON object.

GPU properties come from torch (name, compute capability, SMs, memory, L2 size) and ``nvidia-smi``
(driver, clocks) where present; anything unavailable is null.
"""
from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
from importlib import metadata

_SMI_FIELDS = ["driver_version", "clocks.max.sm", "clocks.max.mem", "clocks.sm", "clocks.mem", "pci.bus_id"]


def _smi() -> list[dict[str, str]]:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    try:
        out = subprocess.run(
            [smi, f"--query-gpu={','.join(_SMI_FIELDS)}", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=60,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [dict(zip(_SMI_FIELDS, (v.strip() for v in line.split(",")))) for line in out.splitlines() if line.strip()]


def _mhz(value: str | None) -> float | None:
    try:
        return float(value) * 1e6 if value else None
    except ValueError:
        return None


def collect() -> dict:
    info: dict = {"python": platform.python_version(), "host": platform.node(), "torch": None,
                  "transformers": None, "cuda_runtime": None, "driver": None, "gpus": []}
    try:
        import torch

        info["torch"] = torch.__version__
        info["cuda_runtime"] = torch.version.cuda
        smi = _smi()
        for i in range(torch.cuda.device_count() if torch.cuda.is_available() else 0):
            props = torch.cuda.get_device_properties(i)
            row = smi[i] if i < len(smi) else {}
            info["driver"] = row.get("driver_version") or info["driver"]
            info["gpus"].append({
                "index": i,
                "name": props.name,
                "compute_capability": f"{props.major}.{props.minor}",
                "sm_count": props.multi_processor_count,
                "memory_bytes": props.total_memory,
                "l2_cache_bytes": props.L2_cache_size,
                "max_sm_clock_hz": _mhz(row.get("clocks.max.sm")),
                "max_memory_clock_hz": _mhz(row.get("clocks.max.mem")),
                "sm_clock_hz_at_start": _mhz(row.get("clocks.sm")),
                "memory_clock_hz_at_start": _mhz(row.get("clocks.mem")),
                "pci_bus_id": row.get("pci.bus_id"),
            })
    except ImportError:
        pass
    try:
        from capture.workloads.stages import BACKEND

        info["nvtx_backend"] = BACKEND
    except ImportError:
        pass
    try:  # its installed version, without the 1.5 s of importing it
        info["transformers"] = metadata.version("transformers")
    except metadata.PackageNotFoundError:
        pass
    return info


if __name__ == "__main__":
    json.dump(collect(), sys.stdout, indent=1)
