"""Module ranges (--module-depth) and ncu profile windows, run on the CPU with a recording backend,
and what the committed H200 captures recorded about them."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from torch.utils._python_dispatch import TorchDispatchMode

from capture import worker
from capture.workloads import modules, overhead, resolve, stages
from capture.workloads.ops import Marks, Operators
from capture.workloads.params import Params
from capture.workloads.windows import Plan, Windows
from generator.readers.ncu_rep import nvtx_identity
from generator.run_layout import MODULE_NVTX_DOMAIN, PROFILE_NVTX_DOMAIN

ROOT = Path(__file__).parent.parent
TINY = Params(device="cpu", dtype="float32", layers=1, prompt_len=4, new_tokens=2, warmup=0)


class Recorder:
    """A stand-in NVTX backend: every push and pop in order, and the open stack."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.stack: list[str] = []

    def backend(self) -> modules.Backend:
        def pusher(name: str):
            return lambda: (self.events.append("+" + name), self.stack.append(name))

        return pusher, lambda: self.events.append("-" + self.stack.pop())


def test_ranges_name_path_and_class_down_to_the_depth_and_balance() -> None:
    iteration = resolve("llm-decode")(TINY)
    rec = Recorder()
    ranges = modules.install(iteration, 3, rec.backend())
    assert ranges.roots == {"model": "LlamaForCausalLM"}
    iteration()
    ranges.remove()
    iteration()  # removed: nothing more recorded
    names = {e[1:] for e in rec.events}
    assert "model [LlamaForCausalLM]" in names and "model.model.layers.0 [LlamaDecoderLayer]" in names
    assert max(n.split(" [")[0].count(".") for n in names) == 3  # root + 3 levels
    assert rec.stack == [] and len(rec.events) == 2 * sum(e.startswith("+") for e in rec.events)
    # one forward per call: prefill + 2 decode steps
    assert rec.events.count("+model [LlamaForCausalLM]") == 3
    assert ranges.describe() == {"domain": MODULE_NVTX_DOMAIN, "depth": 3, "name_format": "{path} [{cls}]",
                                 "roots": {"model": "LlamaForCausalLM"}, "modules": ranges.modules}


def test_ranges_leave_no_wrapper_behind() -> None:
    iteration = resolve("llm-decode")(TINY)
    model = modules.roots_of(iteration)["model"]
    ranges = modules.install(iteration, 5, Recorder().backend())
    assert ranges.modules == sum(1 for path, _ in model.named_modules() if path.count(".") + 1 <= 5 or not path)
    assert all("forward" in vars(m) for _, m in model.named_modules())
    ranges.remove()
    assert not any("forward" in vars(m) for _, m in model.named_modules())


def test_depth_zero_installs_nothing() -> None:
    ranges = modules.install(resolve("llm-decode")(TINY), 0)
    assert ranges.modules == 0 and ranges.roots == {}


def test_profile_windows_open_around_planned_calls_and_gaps() -> None:
    """A module window spans exactly the planned call; a gap window opens at the stage's start (or
    when the last module call closes) and closes at the next module call or the stage's end."""
    iteration = resolve("llm-decode")(TINY)
    plan = Plan({"model.lm_head [Linear]": {2}}, {"decode": {(1, 0)}, "prefill": {(1, 0), (1, 99)}})
    rec = Recorder()
    windows = Windows(plan, (lambda: rec.events.append("W+"), lambda: rec.events.append("W-")))
    ranges = modules.install(iteration, 5, rec.backend(), observer=windows)
    stages.add_hook(windows.stage_enter)
    stages.add_exit_hook(windows.stage_exit)
    try:
        iteration()
    finally:
        stages.remove_hook(windows.stage_enter)
        stages.remove_exit_hook(windows.stage_exit)
        ranges.remove()
    ev = rec.events
    opened = [i for i, e in enumerate(ev) if e == "W+"]
    assert len(opened) == windows.opened == ev.count("W-") == 3  # (1, 99): no such gap in prefill
    # prefill and decode gaps (1, 0): from the stage's start to its first module call
    assert ev[:3] == ["W+", "+model [LlamaForCausalLM]", "W-"]
    decode_start = ev.index("-model [LlamaForCausalLM]") + 1
    assert ev[decode_start:decode_start + 3] == ["W+", "+model [LlamaForCausalLM]", "W-"]
    # the second lm_head call (first decode step) is the module window
    second = [i for i, e in enumerate(ev) if e == "+model.lm_head [Linear]"][1]
    assert ev[second:second + 4] == ["+model.lm_head [Linear]", "W+", "W-", "-model.lm_head [Linear]"]
    assert Plan.from_json(json.loads(json.dumps(plan.to_json()))) == plan and len(plan) == 4


class Names(TorchDispatchMode):
    """Records the name of each operator call it sees."""

    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(str(func))
        return func(*args, **(kwargs or {}))


def test_operator_windows_open_around_the_calls_the_nsys_run_marked() -> None:
    """The nsys run marks each operator call of its first and of its last warm-up iteration (one
    iteration when it warms up once); the ncu run numbers its measured iteration's calls alike and
    opens a window around exactly the planned ones."""
    events: list[str] = []
    marks = Marks((events.append, lambda: events.append("-")))
    calls = worker.run("llm-decode", replace(TINY, warmup=3), marks=marks)["operator_calls"]
    assert calls > 100
    # then the plain repeat's stage ranges (the repeat domain; here the same recorder)
    repeat = ["prefill", "-", "decode", "-"]
    assert events == ["op-first", "-"] * calls + ["op", "-"] * calls + ["measured", "-"] + repeat
    events.clear()
    assert worker.run("llm-decode", replace(TINY, warmup=1), marks=marks)["operator_calls"] == calls
    assert events == ["op-first", "-"] * calls + ["measured", "-"] + repeat
    iteration = resolve("llm-decode")(TINY)
    with Names() as first:
        iteration()
    planned = {1, calls // 2, calls}
    opened: list[int] = []
    names = Names()
    windows = Windows(Plan(operators=planned), (lambda: opened.append(len(names.names)), lambda: opened.append(-1)))
    with Operators(windows.operator_enter, windows.operator_exit) as counted, names:
        iteration()
    assert counted.calls == len(names.names) == calls and names.names == first.names
    # each window opens just after its call is dispatched and closes when it returns
    assert opened == [n for number in sorted(planned) for n in (number, -1)] and windows.opened == 3
    assert Plan.from_json(json.loads(json.dumps(windows.plan.to_json()))) == windows.plan
    # the ncu run as capture.targets.ncu_params has it with operator windows only: it measures the
    # iteration the nsys run marked (the first, with no warm-up; else the last warm-up's successor)
    # and installs no module range
    for params, plan in [(replace(TINY, warmup=0, module_depth=0), Plan(operators=planned, first=True)),
                         (replace(TINY, warmup=1, module_depth=0), Plan(operators=planned))]:
        ncu_run = worker.run("llm-decode", params, plan=plan)
        assert (ncu_run["operator_calls"], ncu_run["profile_windows"], ncu_run["module_ranges"]["modules"]) == (calls, 3, 0)


def test_stage_of_an_ncu_launch_ignores_module_and_window_ranges() -> None:
    stage, text, names = nvtx_identity(
        [("<default domain>", ["decode"]), (MODULE_NVTX_DOMAIN, ["model [LlamaForCausalLM]", "model.lm_head [Linear]"]),
         (PROFILE_NVTX_DOMAIN, ["target"])], [])
    assert stage == "decode"
    assert text == ("<default domain>:decode; kr.modules:model [LlamaForCausalLM]/model.lm_head [Linear]; "
                    "kr.profile:target")
    assert names == ["decode", "model [LlamaForCausalLM]", "model.lm_head [Linear]", "target"]


def test_overhead_counts_module_calls_per_stage_and_prices_them() -> None:
    iteration = resolve("llm-decode")(TINY)
    rec = Recorder()
    ranges = modules.install(iteration, 5, rec.backend())
    stages.add_hook(lambda name: rec.events.append("stage " + name))
    try:
        iteration()
    finally:
        stages._hooks.pop()
        ranges.remove()
    expected: dict[str, int] = {}
    current = None
    for event in rec.events:
        if event.startswith("stage "):
            current = event[6:]
        elif event.startswith("+"):
            expected[current] = expected.get(current, 0) + 1
    cost = overhead.measure(iteration, lambda: None, 3, 5, Recorder().backend())
    assert cost["runs"] == 3 and list(cost["stages"]) == ["prefill", "decode"]
    assert {s: f["calls"] for s, f in cost["stages"].items()} == expected and expected["decode"] > 0
    assert cost["total"]["calls"] == sum(expected.values())
    per_call = cost["seconds_per_call"]
    assert 0 < per_call < 1e-3
    for figures in [*cost["stages"].values(), cost["total"]]:
        assert figures["direct_pct"] == pytest.approx(100 * figures["calls"] * per_call / figures["without_s"])
        assert figures["spread_pct"] >= 0 and figures["timed_pct"] is not None
    assert stages.current is None


@pytest.mark.parametrize("run", ["ocr-vlm-eager-v2", "llm-decode-eager", "llm-decode-graph"])
def test_captures_record_module_ranges_and_their_overhead(run: str) -> None:
    """These three were captured with the first overhead measure (3 timed pairs, no direct figure)."""
    man = json.loads((ROOT / "examples" / "runs" / run / "manifest.json").read_text())
    ranges, cost = man["module_ranges"], man["module_overhead"]
    assert ranges["domain"] == MODULE_NVTX_DOMAIN and ranges["depth"] == modules.PRESET_DEPTH
    assert ranges["modules"] == {"ocr-vlm-eager-v2": 534}.get(run, 215)
    assert cost["runs"] == 3 and list(cost["stages"]) == man["stages"]
    for figures in [*cost["stages"].values(), cost["total"]]:
        assert figures["overhead_pct"] == pytest.approx(100 * (figures["with_s"] / figures["without_s"] - 1))
    assert cost["total"]["without_s"] == pytest.approx(sum(s["without_s"] for s in cost["stages"].values()))


def test_sdpa_capture_states_overhead_both_ways_below_three_percent() -> None:
    """ocr-vlm-sdpa-v2 (H100, 6 ABBA-paired runs): the direct figure (calls × cost of one range) is
    below 3 % in every stage and recomputes from the manifest; the timed figure sits inside its
    run-to-run spread."""
    man = json.loads((ROOT / "examples" / "runs" / "ocr-vlm-sdpa-v2" / "manifest.json").read_text())
    cost = man["module_overhead"]
    assert cost["runs"] == 6 and list(cost["stages"]) == man["stages"]
    assert man["module_ranges"]["modules"] == 534  # the same model tree as ocr-vlm-eager-v2
    per_call = cost["seconds_per_call"]
    for figures in [*cost["stages"].values(), cost["total"]]:
        assert figures["direct_pct"] == pytest.approx(100 * figures["calls"] * per_call / figures["without_s"])
        assert figures["direct_pct"] < 3
        assert abs(figures["timed_pct"]) <= figures["spread_pct"]
    assert cost["total"]["calls"] == 5746 and round(cost["total"]["direct_pct"], 2) == 0.66
