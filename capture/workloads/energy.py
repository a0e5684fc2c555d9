"""Energy and clocks per stage from NVML, read at the stage boundaries of the plain repeat.

NVML's total-energy counter (``nvmlDeviceGetTotalEnergyConsumption``, millijoules since the driver
loaded) is read, after a device synchronize, when each stage of the nsys run's plain repeat
(capture.worker) starts and ends; the SM and memory clocks when it ends. The repeat carries no
module range and no operator mark, and the measured iteration's timeline gets no synchronize from
this. NVML refreshes the counter about every :data:`NVML_REFRESH_S`: a stage shorter than that is
not resolved (no joules stated). Without NVML (no ``nvidia-ml-py``, no driver library, a GPU
without the counter, a CPU device) every stage keeps its seconds and the record says why in one line.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable

#: About how often NVML refreshes the total-energy counter (seconds).
NVML_REFRESH_S = 0.1


def _handle(device: str):  # -> pynvml handle
    """The NVML handle of the torch device ``device``, found by its PCI bus id, else by its UUID
    (NVML counts GPUs in its own order, whatever CUDA_VISIBLE_DEVICES says)."""
    import pynvml
    import torch

    index = torch.device(device).index
    props = torch.cuda.get_device_properties(torch.cuda.current_device() if index is None else index)
    try:
        bus = f"{props.pci_domain_id:08X}:{props.pci_bus_id:02X}:{props.pci_device_id:02X}.0"
        return pynvml.nvmlDeviceGetHandleByPciBusId(bus)
    except (AttributeError, pynvml.NVMLError):
        return pynvml.nvmlDeviceGetHandleByUUID(f"GPU-{props.uuid}")


class Energy:
    """Stage hooks (:meth:`enter`, :meth:`exit`) that read NVML; :meth:`record` and :meth:`clocks`
    are the manifest's ``energy`` and ``clocks``."""

    def __init__(self, device: str, synchronize: Callable[[], None]) -> None:
        self.synchronize = synchronize
        self.seconds: dict[str, float] = {}
        self.millijoules: dict[str, int | None] = {}
        self.clock_mhz: dict[str, list[int]] = {"sm": [], "memory": []}
        self._start: tuple[float, int | None] = (0.0, None)
        self._nvml = None
        self.note = self._open(device)

    def _open(self, device: str) -> str:
        try:
            import pynvml
        except ImportError:
            return "no energy per stage: nvidia-ml-py (pynvml) is not installed"
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            return f"no energy per stage: NVML cannot start ({exc})"
        if not device.startswith("cuda"):
            return f"no energy per stage: the workload runs on {device}, not a GPU"
        try:
            handle = _handle(device)
            pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        except (pynvml.NVMLError, AttributeError, RuntimeError) as exc:
            return f"no energy per stage: this GPU's NVML total-energy counter cannot be read ({exc})"
        self._nvml = (pynvml, handle)
        return (f"NVML total energy of the workload's GPU ({device}), read at each stage's start and end in a plain "
                f"repeat of the measured iteration after a synchronize; stages under {NVML_REFRESH_S} s are not "
                "resolved (the counter refreshes about that often)")

    @property
    def source(self) -> str | None:
        return "nvml" if self._nvml else None

    def _read(self) -> tuple[float, int | None]:
        self.synchronize()
        now = time.perf_counter()
        if not self._nvml:
            return now, None
        pynvml, handle = self._nvml
        return now, pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)

    def enter(self, stage: str) -> None:
        self._start = self._read()

    def exit(self, stage: str) -> None:
        (t0, e0), (t1, e1) = self._start, self._read()
        self.seconds[stage] = self.seconds.get(stage, 0.0) + t1 - t0
        known = e0 is not None and e1 is not None and self.millijoules.get(stage, 0) is not None
        self.millijoules[stage] = self.millijoules.get(stage, 0) + e1 - e0 if known else None
        if self._nvml:
            pynvml, handle = self._nvml
            for kind, clock in (("sm", pynvml.NVML_CLOCK_SM), ("memory", pynvml.NVML_CLOCK_MEM)):
                try:
                    self.clock_mhz[kind].append(pynvml.nvmlDeviceGetClockInfo(handle, clock))
                except pynvml.NVMLError:  # a GPU that does not report this clock: none seen
                    pass

    def record(self) -> dict:
        """{"source", "note", "stages": {stage: {"joules", "seconds", "watts", "resolved"}}}."""
        out = {}
        for stage, seconds in self.seconds.items():
            resolved = self.millijoules.get(stage) is not None and seconds >= NVML_REFRESH_S
            joules = self.millijoules[stage] / 1000.0 if resolved else None
            out[stage] = {"joules": joules, "seconds": seconds, "watts": joules / seconds if resolved else None,
                          "resolved": resolved}
        return {"source": self.source, "note": self.note, "stages": out}

    def clocks(self) -> dict:
        """{"sm_mhz", "memory_mhz"}: the median of the clocks read at the stage ends (None without NVML)."""
        return {f"{kind}_mhz": statistics.median(seen) if seen else None for kind, seen in self.clock_mhz.items()}
