"""torch.compile'd code keeps running under the capture's operator marking (CPU, Inductor's C++)."""
from __future__ import annotations

from dataclasses import replace

import torch
import torch._dynamo
from torch.profiler import profile

from capture import worker
from capture.workloads import stages
from capture.workloads.ops import Marks
from capture.workloads.params import Params
from capture.workloads.windows import Plan

WORKLOAD = "capture.workloads.compiled:build"
PARAMS = Params(device="cpu", dtype="float32", m=8, k=64, warmup=2, module_depth=0)


class MeasuredOps:
    """A torch profiler around each stage entered outside the warm-ups (stage hooks fire there only):
    the measured iteration's, then the nsys run's plain repeat's; ``names`` per stage entered."""

    def __init__(self) -> None:
        self.names: list[list[str]] = []
        self._prof: profile | None = None

    def enter(self, name: str) -> None:
        self._prof = profile()
        self._prof.__enter__()

    def exit(self, name: str) -> None:
        self._prof.__exit__(None, None, None)
        self.names.append([e.name for e in self._prof.events()])

    def run(self, **kwargs) -> dict:
        stages.add_hook(self.enter)
        stages.add_exit_hook(self.exit)
        try:
            return worker.run(WORKLOAD, kwargs.pop("params", PARAMS), **kwargs)
        finally:
            stages.remove_hook(self.enter)
            stages.remove_exit_hook(self.exit)


def test_compiled_block_runs_compiled_after_marked_warmups() -> None:
    """Both warm-ups marked (nsys run), then the measured iteration: Inductor's graph runs there and
    the ops it fused (layer norm, GELU) do not run as ATen calls. With a dispatch mode that does not
    ignore compile internals dynamo skips the frame for the process and this measured iteration is eager."""
    torch._dynamo.reset()
    events: list[str] = []
    seen = MeasuredOps()
    result = seen.run(marks=Marks((events.append, lambda: events.append("-"))))
    assert result["stages"] == ["block"] and result["operator_calls"] > 0
    assert events.count("op-first") == events.count("op") == result["operator_calls"]
    assert len(seen.names) == 2  # the measured iteration and its plain repeat
    for names in seen.names:
        assert sum(n.startswith("Torch-Compiled Region") for n in names) == 1, names
        assert not {"aten::native_layer_norm", "aten::layer_norm", "aten::gelu"} & set(names), names
    # the ncu run numbers the measured iteration's calls inside the same mode: still compiled, same calls
    ncu = MeasuredOps()
    numbered = ncu.run(params=replace(PARAMS, warmup=1), plan=Plan(operators={1}))
    assert numbered["operator_calls"] == result["operator_calls"] and numbered["profile_windows"] == 1
    [names] = ncu.names
    assert sum(n.startswith("Torch-Compiled Region") for n in names) == 1 and "aten::gelu" not in names
    # the dead weak proxies compiling leaves behind do not stop module ranges from finding their roots
    assert worker.run("gemm", Params(device="cpu", m=8, n=8, k=8, warmup=0, module_depth=5))["stages"] == ["gemm"]
