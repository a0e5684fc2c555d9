"""A capture run's ``manifest.json`` through one schema: every record the pages, projection and
``inspect`` read has its type and range checked here, at the reader; the first problem is one
InputError naming the file and the key. Keys the generator does not read are kept as written.

Physical figures are finite and non-negative (energy, seconds, watts, tokens, counts, sizes),
clocks positive and at most :data:`MAX_MHZ`; ``created`` is an ISO 8601 time. The document is
read within the bounds of :mod:`generator.readers.documents` (size, depth, finite numbers).
"""
from __future__ import annotations

import datetime
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from generator.errors import InputError
from generator.readers.documents import load_json, validated

#: the highest clock taken (MHz): no GPU clock is near 100 GHz
MAX_MHZ = 100_000.0

Count = Annotated[int, Field(strict=True, ge=0)]
Amount = Annotated[float, Field(strict=True, ge=0, allow_inf_nan=False)]
Signed = Annotated[float, Field(strict=True, allow_inf_nan=False)]
Clock = Annotated[float, Field(strict=True, gt=0, le=MAX_MHZ, allow_inf_nan=False)]
Scalar = str | bool | int | float | None


def _iso_time(text: str) -> str:
    try:
        datetime.datetime.fromisoformat(text)
    except ValueError as exc:
        raise ValueError(f"not an ISO 8601 time ({exc})") from None
    return text


class _Record(BaseModel):
    """A manifest record: the keys named here checked, any other kept."""

    model_config = ConfigDict(extra="allow")


class StageEnergy(_Record):
    joules: Amount | None = None
    seconds: Amount | None = None
    watts: Amount | None = None
    resolved: bool | None = None


class Energy(_Record):
    source: str | None = None
    note: str | None = None
    stages: dict[str, StageEnergy] | None = None


class Clocks(_Record):
    sm_mhz: Clock | None = None
    memory_mhz: Clock | None = None


class Tokens(_Record):
    generated: Count | None = None


class OverheadRow(_Record):
    calls: Count | None = None
    timed_pct: Signed | None = None  # a difference of two timings: may be below 0 within its spread
    overhead_pct: Signed | None = None
    spread_pct: Amount | None = None
    direct_pct: Signed | None = None


class ModuleOverhead(_Record):
    runs: Count | None = None
    seconds_per_call: Amount | None = None
    stages: dict[str, OverheadRow] | None = None
    total: OverheadRow | None = None


class ModuleRanges(_Record):
    depth: Count | None = None
    modules: Count | None = None


class Gpu(_Record):
    index: Count | None = None
    name: str | None = None
    sm_count: Count | None = None
    memory_bytes: Count | None = None
    l2_cache_bytes: Count | None = None


class Environment(_Record):
    gpus: list[Gpu] | None = None


class Coverage(_Record):
    top_n: Count | None = None
    profiled: Count | None = None
    missing: list[Any] | None = None
    selected: Count | None = None
    selected_profiled: Count | None = None
    stage_pairs: Count | None = None
    stage_pairs_profiled: Count | None = None
    profiled_launches: Count | None = None


class FidelityStage(_Record):
    measured_launches: Count | None = None
    plain_launches: Count | None = None


class Fidelity(_Record):
    verdict: str | None = None
    note: str | None = None
    stages: dict[str, FidelityStage] | None = None


class Rank(_Record):
    """One rank of a torchrun capture (the worker's record; ``fidelity`` its own check)."""

    rank: Count
    local_rank: Count | None = None
    pid: Count | None = None
    device: str | None = None
    gpu: Gpu | None = None
    energy: Energy | None = None
    clocks: Clocks | None = None
    tokens: Tokens | None = None
    fidelity: Fidelity | None = None


class NcuProfiled(_Record):
    """The rank ncu profiled: its pid and GPU in the nsys run, the processes and devices ncu names."""

    rank: Count
    world_size: Count | None = None
    nsys_pid: Count | None = None
    gpu: Gpu | None = None
    ncu_pids: list[Count] | None = None
    ncu_devices: list[Count] | None = None
    collectives_replayed: bool | None = None


class Collection(_Record):
    metrics: list[str] | None = None
    sections: list[str] | None = None


class Tool(_Record):
    path: str | None = None
    version: str | None = None


class Stage(_Record):
    name: Annotated[str, Field(min_length=1)]


class Phase(_Record):
    name: str | None = None
    status: str | None = None
    seconds: Amount | None = None


class Manifest(_Record):
    """The records of a capture manifest that the generator reads."""

    schema_: str | None = Field(default=None, alias="schema")
    status: str | None = None
    phases: list[Phase] | None = None
    failed_phases: list[Any] | None = None
    created: Annotated[str, AfterValidator(_iso_time)] | None = None
    workload: str | None = None
    params: dict[str, Scalar | list[Scalar]] | None = None
    argv: list[str] | None = None
    stages: list[Annotated[str, Field(min_length=1)] | Stage] | None = None
    top_n_requested: Count | None = None
    notes: list[str] | None = None
    environment: Environment | None = None
    tools: dict[str, Tool] | None = None
    module_ranges: ModuleRanges | None = None
    module_overhead: ModuleOverhead | None = None
    operator_calls_marked: Count | None = None
    tokens: Tokens | None = None
    energy: Energy | None = None
    clocks: Clocks | None = None
    fidelity: Fidelity | None = None
    ncu_collection: Collection | None = None
    coverage: Coverage | None = None
    ranks: list[Rank] | None = None
    ncu_rank: Count | None = None
    ncu_profiled: NcuProfiled | None = None


#: params that are sizes or counts: a whole number from 0 where given
COUNT_PARAMS = ("batch", "layers", "image_size", "prompt_len", "new_tokens", "m", "n", "k", "warmup", "steps",
                "module_depth")


def read_manifest(path: Path) -> dict[str, Any]:
    """The manifest at ``path`` as written (a dict), after every check above; InputError otherwise."""
    data = load_json(path, "manifest")
    if not isinstance(data, dict):
        raise InputError(path, "expected a JSON object")
    validated(path, Manifest, data)
    for key, value in (data.get("params") or {}).items():
        if key in COUNT_PARAMS and value is not None and (type(value) is not int or value < 0):
            raise InputError(path, f"params.{key}: {value!r} is not a whole number from 0")
    return data
