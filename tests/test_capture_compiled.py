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
    """A torch profiler around each stage of the measured iteration (stage hooks fire there only)."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._prof: profile | None = None

    def enter(self, name: str) -> None:
        self._prof = profile()
        self._prof.__enter__()

    def exit(self, name: str) -> None:
        self._prof.__exit__(None, None, None)
        self.names += [e.name for e in self._prof.events()]

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
    compiled = [n for n in seen.names if n.startswith("Torch-Compiled Region")]
    assert len(compiled) == 1, seen.names
    assert not {"aten::native_layer_norm", "aten::layer_norm", "aten::gelu"} & set(seen.names), seen.names
    # the ncu run numbers the measured iteration's calls inside the same mode: still compiled, same calls
    ncu = MeasuredOps()
    numbered = ncu.run(params=replace(PARAMS, warmup=1), plan=Plan(operators={1}))
    assert numbered["operator_calls"] == result["operator_calls"] and numbered["profile_windows"] == 1
    assert sum(n.startswith("Torch-Compiled Region") for n in ncu.names) == 1
    assert "aten::gelu" not in ncu.names
