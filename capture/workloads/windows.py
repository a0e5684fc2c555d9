"""ncu profile windows: an NVTX range ``target`` (domain ``kr.profile``) around exactly the code
that makes each launch the capture chose to profile, so one ncu run profiles one representative
launch per (kernel, stage) with ``--nvtx-include kr.profile@target/``.

A launch is found again, best, by the ATen operator call that made it: its number in the measured
iteration (capture.workloads.ops), so the window holds that call's launches only. Otherwise, a
launch inside a module call is found again by the call: the module range's name and how many
calls of it the process had made (the worker makes the same calls in the nsys and the ncu run).
A launch outside every module range (the code between model calls, a CUDA graph replay) is found
by its stage instance and how many module ranges had ended in it before: the window opens when
the last of those closes (or at the stage's start) and closes at the next module call or the
stage's end. The plan comes from the nsys export (capture.targets) as JSON.
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from generator.run_layout import PROFILE_NVTX_DOMAIN

#: The window range's name; ncu includes ``<domain>@<name>/``.
WINDOW = "target"
NCU_INCLUDE = f"{PROFILE_NVTX_DOMAIN}@{WINDOW}/"


@dataclass
class Plan:
    modules: dict[str, set[int]] = field(default_factory=dict)  # module range → call numbers (1-based)
    gaps: dict[str, set[tuple[int, int]]] = field(default_factory=dict)  # stage → (instance, modules ended)
    operators: set[int] = field(default_factory=set)  # operator calls of the measured iteration (1-based)
    #: the nsys run's first iteration launched as its measured one (it numbered the operator calls)
    first: bool = False

    def to_json(self) -> dict:
        data = {"modules": {k: sorted(v) for k, v in sorted(self.modules.items())},
                "gaps": {k: sorted(map(list, v)) for k, v in sorted(self.gaps.items())}}
        if self.operators:
            data["operators"] = sorted(self.operators)
        return {**data, "first_iteration": True} if self.first else data

    @classmethod
    def from_json(cls, data: dict) -> Plan:
        return cls({k: set(v) for k, v in data.get("modules", {}).items()},
                   {k: {tuple(p) for p in v} for k, v in data.get("gaps", {}).items()},
                   set(data.get("operators", ())), bool(data.get("first_iteration", False)))

    @classmethod
    def load(cls, path: Path) -> Plan:
        return cls.from_json(json.loads(path.read_text()))

    def __len__(self) -> int:
        return sum(map(len, self.modules.values())) + sum(map(len, self.gaps.values())) + len(self.operators)

    @property
    def operators_only(self) -> bool:
        """Whether every window is one operator call (and there is one)."""
        return bool(self.operators) and not self.modules and not self.gaps


def _nvtx() -> tuple[Callable[[], None], Callable[[], None]]:
    import nvtx

    domain = nvtx.get_domain(PROFILE_NVTX_DOMAIN)
    attributes = domain.get_event_attributes(message=WINDOW)
    return (lambda: domain.push_range(attributes)), domain.pop_range


class Windows:
    """Opens and closes the planned windows as modules and stages are entered and left."""

    def __init__(self, plan: Plan, backend: tuple[Callable[[], None], Callable[[], None]] | None = None) -> None:
        self.plan = plan
        self._push, self._pop = backend or _nvtx()
        self._calls: Counter[str] = Counter()
        self._instances: Counter[str] = Counter()
        self._open: list[bool] = []  # per open module call: whether it opened a window
        self._stage: tuple[str, int] | None = None
        self._ended = 0
        self._gap_open = False
        self.opened = 0

    def _open_window(self) -> None:
        self._push()
        self.opened += 1

    def _close_gap(self) -> None:
        if self._gap_open:
            self._pop()
            self._gap_open = False

    def _maybe_gap(self) -> None:
        if self._stage and (self._stage[1], self._ended) in self.plan.gaps.get(self._stage[0], ()):
            self._open_window()
            self._gap_open = True

    def module_enter(self, name: str) -> None:
        self._close_gap()
        self._calls[name] += 1
        hit = self._calls[name] in self.plan.modules.get(name, ())
        if hit:
            self._open_window()
        self._open.append(hit)

    def module_exit(self, name: str) -> None:
        if self._open.pop():
            self._pop()
        if self._stage:
            self._ended += 1
        if not self._open:
            self._maybe_gap()

    def stage_enter(self, name: str) -> None:
        self._instances[name] += 1
        self._stage, self._ended = (name, self._instances[name]), 0
        if not self._open:
            self._maybe_gap()

    def stage_exit(self, name: str) -> None:
        self._close_gap()
        self._stage = None

    def operator_enter(self, number: int) -> None:
        if number in self.plan.operators:
            self._open_window()

    def operator_exit(self, number: int) -> None:
        if number in self.plan.operators:
            self._pop()
