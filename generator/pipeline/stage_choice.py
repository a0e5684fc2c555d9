"""Which NVTX ranges a report made from profiler files (``build FILE…``) reads as its stages.

``--stages a,b`` names them; ``--stages all`` reads each nsys file whole, as one stage; without
the option each nsys SQLite export is read in the workload's own top-level NVTX ranges that hold
kernels (readers.nvtx_stages), at most MAX_FOUND_STAGES of them, else whole. A report.yaml
names its own stages (``inputs: nsys: [{path, stage}]``, or a capture run's manifest).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from generator.errors import InputError
from generator.model import ALL_STAGES
from generator.readers.nvtx_stages import MAX_FOUND_STAGES

#: "option": --stages names them; "whole": --stages all; "nvtx": the NVTX ranges found in the files
StagesFrom = Literal["option", "whole", "nvtx"]


@dataclass(frozen=True)
class StageChoice:
    """The stages one nsys file is read in and where they came from."""

    names: tuple[str, ...]  # () = the whole file as one stage
    source: StagesFrom | Literal["report"]
    #: "nvtx": every range name found (more than ``names`` holds when over MAX_FOUND_STAGES)
    found: tuple[str, ...] = ()


def option_source(option: list[str] | None) -> StagesFrom:
    """Where ``--stages`` (its names, or None when not given) puts the stages; InputError for an
    empty list or ``all`` beside names."""
    if option is None:
        return "nvtx"
    if not option:
        raise InputError("--stages", "names no range; give NVTX range names separated by commas "
                                     f"(e.g. prefill,decode), or {ALL_STAGES} for one stage")
    if ALL_STAGES in option:
        if len(option) > 1:
            raise InputError("--stages", f"{ALL_STAGES} is the one-stage view of the whole file; give it alone")
        return "whole"
    return "option"


def entry_stages(stage: str | None, stages_from: StagesFrom | None, nsys_sqlite: bool,
                 found: Callable[[], list[str]]) -> StageChoice:
    """The stages one nsys input file (an entry's ``stage``, None: none named) is read in; ``found``
    gives the file's workload ranges (readers.nvtx_stages), asked only when the names come from
    them, which only an nsys SQLite export (``nsys_sqlite``) holds."""
    if stage is not None:
        return StageChoice((stage,), stages_from or "report")
    if stages_from != "nvtx":
        return StageChoice((), stages_from or "report")
    names = tuple(found()) if nsys_sqlite else ()
    return StageChoice(names if len(names) <= MAX_FOUND_STAGES else (), "nvtx", names)
