"""Several ranks: collectives split into transfer and waiting, each rank's time, the late rank's host.

A version with several ranks (model.VersionInputs.ranks, index = rank) gets, per rank and stage, its
own figures; nothing is summed over ranks. The work is split as a map and a merge: :func:`reduce_rank`
turns one rank's kernels and NVTX ranges (readers.nsys_ranks.read_rank, where the rank's file is)
into a model.RankReduction — its own per-stage figures, its collective kernels, its instance spans and
merged busy intervals — and the analyses below merge those; :class:`BusyUnion` folds the busy
intervals over ranks one rank at a time, and the late rank's host calls are read afterwards, in the
windows :func:`cause_windows` names only (readers.nsys_ranks.window_calls). Collectives are
recognized by role: a kernel launched inside an NCCL NVTX range (``ncclAllReduce`` …), or one whose
name is of a collective family (generator/templates/collective_kernels.yaml). Instances are matched
across ranks by kind and order (the i-th all-reduce of each rank is one instance), and per instance
(as TraceLens' NcclAnalyser): transfer = the shortest duration across ranks, each rank's wait = its
duration − transfer, skew = latest start − earliest start, the late rank = the one that started
last. Exposed = collective time not overlapped by the rank's other kernels on its GPU (interval
arithmetic). A stage's kernels on a rank: those whose launching call lies in one of that rank's
instances of the stage's NVTX range on the same thread. Single-GPU versions get None.
"""
from __future__ import annotations

import collections
import dataclasses
import re
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import numpy as np
import pandas as pd

from generator.analyses.registry import Analysis
from generator.model import ALL_STAGES, RankReduction, VersionInputs
from generator.readers.nsys_ranks import NO_CALL, RankRows
from generator.readers.nsys_sqlite import stage_spec
from generator.resources import TEMPLATES, read_yaml

#: data/collectives.csv: per stage, rank and collective kind (ns; ``bytes`` empty where unknown, and
#: with it algbw = bytes / transfer time and busbw = algbw × nccl-tests' factor, GB/s).
COLLECTIVE_COLUMNS = ["stage", "rank", "collective", "count", "bytes", "time_ns", "transfer_ns", "wait_ns",
                      "exposed_ns", "matched", "skew_ns", "late", "algbw_gbps", "busbw_gbps"]
#: data/ranks.csv: per rank and stage (ns); ``exposed_transfer_ns``: per instance the part of its
#: exposed time up to its transfer (what perfect overlap could hide), summed.
RANK_COLUMNS = ["rank", "pid", "gpu", "stage", "span_ns", "kernel_ns", "idle_ns", "launches", "busy_ns",
                "compute_ns", "comm_ns", "transfer_ns", "wait_ns", "exposed_ns", "exposed_transfer_ns"]
#: One row per (matched instance, rank): :func:`collective_instances`.
INSTANCE_COLUMNS = ["instance", "collective", "ordinal", "rank", "start", "end", "call_start", "duration_ns", "transfer_ns",
                    "wait_ns", "skew_ns", "late_rank", "exposed_ns", "bytes", "stage"]
#: The late rank's host before the instances that waited most: :func:`late_rank_causes`;
#: ``since_sync_ns``: the late rank's host time from launching its previous collective to launching
#: this one, ``first_since_sync_ns`` the same for the rank that arrived first.
CAUSE_COLUMNS = ["stage", "instance", "collective", "late_rank", "wait_ns", "skew_ns", "gpu_idle_ns",
                 "since_sync_ns", "first_since_sync_ns", "host_window_ns", "call", "calls", "call_ns"]
#: How many instances (largest wait first) the late rank's cause is looked up for.
CAUSE_INSTANCES = 10
#: What a host window holds when no CUDA call ran in it, and what it holds besides the calls.
IDLE_CALL = "(no CUDA call)"
#: model.RankReduction.stages: per stage, one rank's figures summed over the stage's instances (ns;
#: ``exposed_ns``: its collectives' time no other kernel of the same instance covers).
STAGE_FIGURES = ["span_ns", "kernel_ns", "idle_ns", "launches", "busy_ns", "compute_ns", "comm_ns", "exposed_ns"]
#: model.RankReduction.collectives, before its per-stage columns: each collective kernel's kind,
#: times, launching call (NO_CALL: unknown), time no other kernel of the rank covers, and the kernel
#: that ended last before it started (its end and launching call; NO_CALL: none, or unknown).
COLLECTIVE_KERNEL_COLUMNS = ["collective", "start", "end", "call_start", "call_tid", "exposed_ns", "prev_end",
                             "prev_call_start"]


@cache
def collective_words() -> dict[str, Any]:
    """generator/templates/collective_kernels.yaml, loaded once."""
    return read_yaml(TEMPLATES / "collective_kernels.yaml")


@cache
def kernel_collective(name: str) -> str | None:
    """The collective a kernel name does by its family (collective_kernels.yaml), else None."""
    for family in collective_words()["families"]:
        match = re.search(family["pattern"], str(name))
        if match:
            return match.groupdict().get("coll") or family.get("collective")
    return None


def busbw_factor(collective: str, ranks: int) -> float | None:
    """nccl-tests' bus-bandwidth factor of ``collective`` over ``ranks`` (None: not one it states)."""
    spec = collective_words()["busbw_factor"].get(collective)
    if spec is None or ranks < 1:
        return None
    return float(spec["scale"]) * ((ranks - 1) / ranks if spec["per_peer"] else 1.0)


def union_length(starts: np.ndarray, ends: np.ndarray, own: bool = False) -> int:
    """Length of the union of the intervals [start, end) (``own``: as :func:`_merge`)."""
    if not len(starts):
        return 0
    s, e, new, last = _sorted_apart(starts, ends, own)
    return int(e.sum(where=last) - s.sum(where=new))


def _merge(starts: np.ndarray, ends: np.ndarray, own: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The union of the intervals [start, end) as disjoint sorted intervals (touching ones joined);
    ``own``: the arrays are this call's to sort in place."""
    if not len(starts):
        return np.array([], dtype="int64"), np.array([], dtype="int64")
    s, e, new, last = _sorted_apart(starts, ends, own)
    return s[new], e[last]


def _sorted_apart(starts: np.ndarray, ends: np.ndarray, own: bool) -> tuple[np.ndarray, ...]:
    """Starts and ends sorted apart, and which starts open and which ends close a merged interval:
    the i-th start opens one where it lies past the (i−1)-th end (as many intervals have ended as
    have started), so no index array is made."""
    s, e = (np.asarray(x, dtype="int64") if own else np.array(x, dtype="int64") for x in (starts, ends))
    s.sort(kind="stable")  # timsort: linear on the sorted runs kernels and folded unions come in
    e.sort(kind="stable")
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    np.greater(s[1:], e[:-1], out=new[1:])
    last = np.empty(len(s), dtype=bool)  # the end of a merged interval: the next one is new
    last[:-1], last[-1] = new[1:], True
    return s, e, new, last


def covered(starts: np.ndarray, ends: np.ndarray, by_starts: np.ndarray, by_ends: np.ndarray) -> np.ndarray:
    """Per interval [start, end), how much of it the union of the ``by`` intervals covers."""
    ms, me = _merge(by_starts, by_ends)
    if not len(ms):
        return np.zeros(len(starts), dtype="int64")
    cum = np.concatenate([[0], np.cumsum(me - ms)])

    def below(t: np.ndarray) -> np.ndarray:  # union length before time t
        i = np.searchsorted(ms, t, side="right")  # intervals starting at or before t
        partial = np.where(i > 0, np.minimum(t, me[np.maximum(i - 1, 0)]) - ms[np.maximum(i - 1, 0)], 0)
        return cum[np.maximum(i - 1, 0)] * (i > 0) + np.maximum(partial, 0)

    return (below(np.asarray(ends, dtype="int64")) - below(np.asarray(starts, dtype="int64"))).astype("int64")


def stage_names(inputs: VersionInputs) -> list[str]:
    """The version's stages: ALL_STAGES, then its named stages in kernel-summary order."""
    named = [s for s in dict.fromkeys(inputs.kernel_summary["stage"]) if s != ALL_STAGES]
    return [ALL_STAGES, *named]


def range_filter(stages: Sequence[str]) -> Callable[[str], bool]:
    """Which NVTX range names the rank analyses of ``stages`` read: NCCL's and the stages' own."""
    pattern = re.compile(collective_words()["nvtx_ranges"])
    names = {stage_spec(s)[0] for s in stages if s != ALL_STAGES}
    return lambda name: name in names or pattern.match(name) is not None


def reduce_rank(rows: RankRows, stages: Sequence[str], busy_stages: Sequence[str], path: str, global_pid: int,
                gpu: int) -> RankReduction:
    """One rank's part of the rank analyses (model.RankReduction) from its kernels and NVTX ranges:
    which kernels are collectives (kind by NCCL NVTX range, else by name family), which range instance
    of each of ``stages`` each lies in (by its launching call), per stage its figures and instance
    spans, the merged busy intervals of ``busy_stages``, and its collective kernels."""
    start, end, n = rows.start, rows.end, len(rows.start)
    known = rows.call_start != NO_CALL
    t = np.where(known, rows.call_start, start)  # where a kernel was launched (its start: no call known)
    pattern = re.compile(collective_words()["nvtx_ranges"])
    by_name = [kernel_collective(name) for name in rows.names]
    roles = [m["coll"] if (m := pattern.match(str(name))) else None for name in rows.range_names]
    kinds = list(dict.fromkeys(k for k in [*by_name, *roles] if k is not None))
    code = {k: i for i, k in enumerate(kinds)}
    kind = np.array([code.get(k, -1) for k in by_name], dtype="int16")[rows.name] if n else np.empty(0, "int16")
    nccl = np.flatnonzero(np.array([pattern.match(str(x)) is not None for x in rows.range_names], dtype=bool)
                          [rows.range_name]) if len(rows.range_names) else np.empty(0, "int64")
    if len(nccl):
        hit = _in_ranges(t, known, rows.call_tid, rows, nccl)
        inside = hit >= 0
        role_codes = np.array([code.get(r, -1) for r in roles], dtype="int16")
        kind[inside] = role_codes[rows.range_name[nccl[hit[inside]]]]
        del hit, inside
    comm = kind >= 0
    coll = np.flatnonzero(comm)
    range_code = {name: i for i, name in enumerate(rows.range_names)}
    figures, spans, busy, per_stage = [], {}, {}, {}
    for stage in stages:
        if stage == ALL_STAGES:
            inst = np.zeros(n, dtype="int32")
        else:
            name, first, count = stage_spec(stage)
            own = np.flatnonzero(rows.range_name == range_code[name]) if name in range_code else np.empty(0, "int64")
            at = (first or 1) - 1
            own = own[at:at + count if count else None]
            inst = (_in_ranges(t, known, rows.call_tid, rows, own) + 1).astype("int32")
            inst[inst == 0] = -1
        total, bounds, exposed_local = _stage_figures(start, end, comm, coll, inst)
        figures.append({"stage": stage, **total})
        spans[stage] = bounds
        if stage in busy_stages:
            inside = inst >= 0
            busy[stage] = _merge(start[inside], end[inside], own=True)
        per_stage[f"stage:{stage}"] = inst[coll]
        per_stage[f"exposed:{stage}"] = exposed_local
    other = ~comm
    previous, before = _previous(start, end, coll)
    table = pd.DataFrame({
        "collective": pd.Categorical.from_codes(kind[coll], categories=kinds) if kinds else
        pd.Categorical([], categories=[]),
        "start": start[coll], "end": end[coll], "call_start": rows.call_start[coll], "call_tid": rows.call_tid[coll],
        "exposed_ns": (end[coll] - start[coll]) - covered(start[coll], end[coll], start[other], end[other]),
        "prev_end": np.where(before, end[previous], NO_CALL),
        "prev_call_start": np.where(before, rows.call_start[previous], NO_CALL), **per_stage})
    return RankReduction(path, int(global_pid), int(global_pid) >> 24 & 0xFFFFFF, int(gpu), n,
                         pd.DataFrame(figures, columns=["stage", *STAGE_FIGURES]), table, spans, busy)


def _previous(start: np.ndarray, end: np.ndarray, chosen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per kernel of ``chosen`` (positions), the kernel that ended last at or before its start (the
    first such in kernel order), and whether there is one."""
    if not len(chosen):
        return chosen, np.zeros(0, dtype=bool)
    by_end = np.argsort(end, kind="stable")  # by end, then position: the first of equal ends
    ends = end[by_end]
    at = np.searchsorted(ends, start[chosen], side="right") - 1  # the last end at or before each start
    return by_end[np.searchsorted(ends, ends[np.maximum(at, 0)], side="left")], at >= 0


def _stage_figures(start: np.ndarray, end: np.ndarray, comm: np.ndarray, coll: np.ndarray,
                   inst: np.ndarray) -> tuple[dict[str, int], np.ndarray, np.ndarray]:
    """STAGE_FIGURES of one rank's kernels in a stage (``inst``: each kernel's instance, -1 outside),
    summed over instances; each instance's (first start, last end) as a (2, n) array; and per
    collective kernel (``coll``: their positions) its time no other kernel of its instance covers."""
    total = dict.fromkeys(STAGE_FIGURES, 0)
    exposed_local = np.zeros(len(coll), dtype="int64")
    parts: list[Any]
    if len(inst) and inst[0] >= 0 and (inst == inst[0]).all():  # one instance of every kernel: no copies
        parts = [slice(None)]
    else:
        inside = np.flatnonzero(inst >= 0)
        order = inside[np.argsort(inst[inside], kind="stable")]
        parts = np.split(order, np.flatnonzero(np.diff(inst[order])) + 1) if len(order) else []
    bounds = np.empty((2, len(parts)), dtype="int64")
    for i, part in enumerate(parts):
        s, e, c = start[part], end[part], comm[part]
        span, busy = int(e.max() - s.min()), union_length(s, e)
        exposed = (e[c] - s[c]) - covered(s[c], e[c], s[~c], e[~c])
        exposed_local[slice(None) if isinstance(part, slice) else np.searchsorted(coll, part[c])] = exposed
        bounds[:, i] = s.min(), e.max()
        for key, value in (("span_ns", span), ("kernel_ns", int((e - s).sum())), ("idle_ns", span - busy),
                           ("launches", len(s)), ("busy_ns", busy), ("compute_ns", union_length(s[~c], e[~c], own=True)),
                           ("comm_ns", int((e[c] - s[c]).sum())), ("exposed_ns", int(exposed.sum()))):
            total[key] += value
    return total, bounds, exposed_local


def _in_ranges(t: np.ndarray, known: np.ndarray, tids: np.ndarray, rows: RankRows, chosen: np.ndarray) -> np.ndarray:
    """Per kernel (``t``: where it was launched; ``known``: its launching call is; ``tids``: that
    call's thread), the position in ``chosen`` (ranges of ``rows``) of the range on its launching
    thread that holds its launching call (its start, on any thread, where no call is known), else -1.
    The chosen ranges are of one name or one role, not nested in each other: the latest-starting range
    before the call is the one."""
    hit = np.full(len(t), -1, dtype="int64")
    if not len(chosen) or not len(t):
        return hit
    starts, ends = rows.range_start[chosen], rows.range_end[chosen]
    range_tids = rows.range_tid[chosen]
    for tid in [None, *dict.fromkeys(range_tids.tolist())]:
        own = np.flatnonzero(range_tids == tid) if tid is not None else np.arange(len(chosen))
        order = own[np.argsort(starts[own], kind="stable")]
        mine = np.flatnonzero(~known) if tid is None else np.flatnonzero(known & (tids == tid))
        if not len(mine) or not len(order):
            continue
        at = np.searchsorted(starts[order], t[mine], side="right") - 1
        valid = at >= 0
        picked = order[np.maximum(at, 0)]
        inside = valid & (t[mine] <= ends[picked])
        hit[mine[inside]] = picked[inside]
    return hit


class BusyUnion:
    """Per stage, over all ranks together: the intervals any rank's GPU ran a kernel in, folded in one
    rank at a time as its reduction arrives (:meth:`add`), so no more than one rank's intervals are held
    beside the union. With ``named``, ALL_STAGES is the union of those stages rather than the whole
    capture."""

    def __init__(self, stages: Sequence[str], named: Sequence[str] | None = None) -> None:
        self.stages, self.named = list(stages), None if named is None else list(named)
        self.busy: dict[str, tuple[np.ndarray, np.ndarray] | None] = dict.fromkeys(self.stages)

    def parts(self, stage: str) -> list[str]:
        """The stages whose intervals make ``stage``'s."""
        return self.named if stage == ALL_STAGES and self.named is not None else [stage]

    def busy_stages(self) -> list[str]:
        """The stages whose busy intervals each rank must send."""
        return list(dict.fromkeys(p for s in self.stages for p in self.parts(s)))

    def add(self, rank: RankReduction) -> RankReduction:
        """``rank``'s busy intervals folded into the union; ``rank`` without them (they are taken out
        of its ``busy`` as soon as no stage left needs them, so each is freed before the next merge)."""
        assert rank.busy is not None
        uses = collections.Counter(p for stage in self.stages for p in self.parts(stage))
        for stage in self.stages:
            parts = [rank.busy[p] for p in self.parts(stage)]
            for p in self.parts(stage):
                uses[p] -= 1
                if not uses[p]:
                    del rank.busy[p]
            if self.busy[stage] is None and len(parts) == 1:
                self.busy[stage] = parts[0]  # merged already
                continue
            parts += [self.busy[stage]] if self.busy[stage] is not None else []
            self.busy[stage] = None
            starts, ends = (np.concatenate([p[i] for p in parts]) for i in (0, 1))
            del parts  # the union so far and the rank's intervals are freed before the merge
            self.busy[stage] = _merge(starts, ends, own=True)
        return dataclasses.replace(rank, busy=None)

    def table(self, ranks: Sequence[RankReduction]) -> pd.DataFrame:
        """Per stage: ``span_ns`` the union of each rank's instance spans (first kernel start to last
        kernel end), ``busy_ns`` the time any rank's GPU ran a kernel in it, ``idle_ns`` = span − busy
        (no GPU running anything); ``ranks``: those folded in."""
        rows = []
        for stage in self.stages:
            spans = np.concatenate([r.spans[p] for r in ranks for p in self.parts(stage)], axis=1)
            span = union_length(spans[0], spans[1])
            run = int((self.busy[stage][1] - self.busy[stage][0]).sum()) if self.busy[stage] is not None else 0
            rows.append({"stage": stage, "span_ns": span, "busy_ns": run, "idle_ns": span - run})
        return pd.DataFrame(rows, columns=["stage", "span_ns", "busy_ns", "idle_ns"])


def _collective_kernels(rank: RankReduction) -> pd.DataFrame:
    """``rank``'s collective kernels with ``collective`` as text and ``duration_ns``."""
    table = rank.collectives.copy()
    table["collective"] = table["collective"].astype(object)
    table["duration_ns"] = table["end"] - table["start"]
    return table


def collective_instances(inputs: VersionInputs) -> pd.DataFrame | None:
    """INSTANCE_COLUMNS: every collective instance matched across all ranks (None: one rank)."""
    return matched_instances(inputs.ranks, stage_names(inputs)[1:])


def matched_instances(ranks: Sequence[RankReduction], named: list[str]) -> pd.DataFrame | None:
    """INSTANCE_COLUMNS of ``ranks`` (an instance's stage: the first of ``named`` it lies in on that
    rank, else ALL_STAGES); None for one rank."""
    if len(ranks) < 2:
        return None
    frames = []
    for rank, reduction in enumerate(ranks):
        coll = _collective_kernels(reduction)
        coll["stage"] = ALL_STAGES
        for stage in reversed(named):
            coll.loc[coll[f"stage:{stage}"] >= 0, "stage"] = stage
        unknown = coll["call_start"] == NO_CALL
        if unknown.any():
            coll["call_start"] = coll["call_start"].astype("float64").where(~unknown)
        coll["ordinal"] = coll.groupby("collective").cumcount()
        coll["rank"] = rank
        frames.append(coll[["collective", "ordinal", "rank", "start", "end", "call_start", "duration_ns", "exposed_ns",
                            "stage"]])
    table = pd.concat(frames, ignore_index=True)
    world = len(ranks)
    present = table.groupby(["collective", "ordinal"])["rank"].transform("nunique")
    table = table[present == world].copy()
    group = table.groupby(["collective", "ordinal"])
    table["transfer_ns"] = group["duration_ns"].transform("min")
    table["wait_ns"] = table["duration_ns"] - table["transfer_ns"]
    table["skew_ns"] = group["start"].transform("max") - group["start"].transform("min")
    late = table.loc[table.sort_values(["start", "rank"]).groupby(["collective", "ordinal"]).tail(1).index]
    table["late_rank"] = table.set_index(["collective", "ordinal"]).index.map(
        late.set_index(["collective", "ordinal"])["rank"]).to_numpy()
    first = group["start"].transform("min")
    table["bytes"] = np.nan  # NCCL NVTX payload values are not in nsys' SQLite export
    table = table.assign(first=first).sort_values(["first", "collective", "ordinal", "rank"], kind="stable")
    keys = table[["collective", "ordinal"]].drop_duplicates()
    numbers = {k: i for i, k in enumerate(zip(keys["collective"], keys["ordinal"], strict=True))}
    table["instance"] = [numbers[k] for k in zip(table["collective"], table["ordinal"], strict=True)]
    return table[INSTANCE_COLUMNS].reset_index(drop=True)


def collectives(inputs: VersionInputs, collective_instances: pd.DataFrame | None) -> pd.DataFrame | None:
    """COLLECTIVE_COLUMNS per stage, rank and collective kind (None: one rank)."""
    if collective_instances is None:
        return None
    stages = stage_names(inputs)
    matched = collective_instances.set_index(["rank", "start", "end"])
    world = len(inputs.ranks)
    rows = []
    for rank, reduction in enumerate(inputs.ranks):
        coll = _collective_kernels(reduction)
        keys = pd.MultiIndex.from_arrays([np.full(len(coll), rank), coll["start"], coll["end"]])
        found = matched.reindex(keys)
        for col in ("transfer_ns", "wait_ns", "skew_ns", "late_rank", "bytes"):
            coll[col] = found[col].to_numpy()
        for stage in stages:
            inside = coll[coll[f"stage:{stage}"] >= 0]
            for kind, part in inside.groupby("collective", sort=True):
                known = part["transfer_ns"].notna()
                moved = part["bytes"].sum() if part["bytes"].notna().all() else np.nan
                transfer = int(part.loc[known, "transfer_ns"].sum())
                algbw = moved / transfer if transfer and known.all() else np.nan  # bytes/ns = GB/s
                factor = busbw_factor(kind, world)
                rows.append({
                    "stage": stage, "rank": rank, "collective": kind, "count": len(part),
                    "bytes": moved, "time_ns": int(part["duration_ns"].sum()), "transfer_ns": transfer,
                    "wait_ns": int(part.loc[known, "wait_ns"].sum()), "exposed_ns": int(part["exposed_ns"].sum()),
                    "matched": int(known.sum()), "skew_ns": int(part.loc[known, "skew_ns"].sum()),
                    "late": int((part.loc[known, "late_rank"] == rank).sum()),
                    "algbw_gbps": algbw, "busbw_gbps": algbw * factor if factor is not None else np.nan,
                })
    return pd.DataFrame(rows, columns=COLLECTIVE_COLUMNS)


def ranks(inputs: VersionInputs, collective_instances: pd.DataFrame | None) -> pd.DataFrame | None:
    """RANK_COLUMNS: each rank's span, kernel, idle, compute and communication time per stage (its
    own figures from its reduction; transfer and waiting from the matched instances)."""
    if collective_instances is None:
        return None
    stages = stage_names(inputs)
    matched = collective_instances.set_index(["rank", "start", "end"])
    rows = []
    for rank, reduction in enumerate(inputs.ranks):
        coll = reduction.collectives
        keys = pd.MultiIndex.from_arrays([np.full(len(coll), rank), coll["start"], coll["end"]])
        found = matched.reindex(keys)
        transfer, wait = found["transfer_ns"].to_numpy(dtype="float64"), found["wait_ns"].to_numpy(dtype="float64")
        own = reduction.stages.set_index("stage")
        for stage in stages:
            inside = coll[f"stage:{stage}"].to_numpy() >= 0
            exposed = coll[f"exposed:{stage}"].to_numpy()[inside]
            figures = {k: int(v) for k, v in own.loc[stage, STAGE_FIGURES].items()}
            figures.update(transfer_ns=int(np.nansum(transfer[inside])), wait_ns=int(np.nansum(wait[inside])),
                           exposed_transfer_ns=int(np.nansum(np.minimum(exposed, transfer[inside]))))
            rows.append({"rank": rank, "pid": reduction.pid, "gpu": reduction.gpu, "stage": stage,
                         **{k: figures[k] for k in RANK_COLUMNS[4:]}})
    return pd.DataFrame(rows, columns=RANK_COLUMNS)


def late_rank_causes(inputs: VersionInputs, collective_instances: pd.DataFrame | None) -> pd.DataFrame | None:
    """CAUSE_COLUMNS: per measured stage (the whole capture where none is named; an instance is in the
    stage its late rank ran it in), for the :data:`CAUSE_INSTANCES` instances with the largest wait,
    the CUDA calls the late rank's launching thread made between the launch of its previous kernel
    and the launch of its collective (by name, time inside the window), and the window's time in no
    call."""
    if collective_instances is None:
        return None
    rows = []
    for stage, top in _top_instances(collective_instances, stage_names(inputs)[1:]):
        rows += _causes(inputs.ranks, collective_instances, top, stage)
    return pd.DataFrame(rows, columns=CAUSE_COLUMNS)


def _top_instances(instances: pd.DataFrame, named: list[str]) -> list[tuple[str, pd.DataFrame]]:
    """Per stage of ``named`` (ALL_STAGES where none), the :data:`CAUSE_INSTANCES` instances (index)
    with the largest wait: wait, skew, late rank and kind of each."""
    late_rows = instances[instances["rank"] == instances["late_rank"]]
    per = instances.groupby("instance").agg(wait_ns=("wait_ns", "max"), skew_ns=("skew_ns", "first"),
                                            late_rank=("late_rank", "first"), collective=("collective", "first"))
    per["stage"] = late_rows.set_index("instance")["stage"]
    found = []
    for stage in named or [ALL_STAGES]:
        own = per if stage == ALL_STAGES else per[per["stage"] == stage]
        found.append((stage, own[own["wait_ns"] > 0].sort_values(["wait_ns"], ascending=False, kind="stable")
                      .head(CAUSE_INSTANCES)))
    return found


def cause_windows(ranks: Sequence[RankReduction], named: list[str]) -> list[list[tuple[int, int, int]]]:
    """Per rank, the host windows (thread, from, to) :func:`late_rank_causes` reads its CUDA calls
    in: from launching the kernel before a top instance's collective to launching the collective."""
    windows: list[list[tuple[int, int, int]]] = [[] for _ in ranks]
    instances = matched_instances(ranks, named)
    if instances is None:
        return windows
    for _, top in _top_instances(instances, named):
        for instance, row in top.iterrows():
            late = int(row["late_rank"])
            kernel = _late_kernel(ranks[late], instances, instance, late)
            if _window(kernel) is not None:
                windows[late].append(_window(kernel))
    return [list(dict.fromkeys(w)) for w in windows]


def _late_kernel(rank: RankReduction, instances: pd.DataFrame, instance: int, late: int) -> pd.Series:
    """The late rank's collective kernel of ``instance`` (its row of RankReduction.collectives)."""
    own = instances[(instances["instance"] == instance) & (instances["rank"] == late)].iloc[0]
    coll = rank.collectives
    return coll.iloc[np.flatnonzero((coll["start"] == own["start"]) & (coll["end"] == own["end"]))[0]]


def _window(kernel: pd.Series) -> tuple[int, int, int] | None:
    """(thread, previous kernel's launch, this launch) of a collective kernel; None where unknown."""
    if NO_CALL in (kernel["call_start"], kernel["prev_end"], kernel["prev_call_start"]):
        return None
    return int(kernel["call_tid"]), int(kernel["prev_call_start"]), int(kernel["call_start"])


def _since_sync(instances: pd.DataFrame, own: pd.Series) -> float:
    """Host time of ``own``'s rank from launching its previous collective to launching ``own``'s."""
    mine = instances[(instances["rank"] == own["rank"]) & (instances["start"] < own["start"])]
    if not len(mine) or pd.isna(own["call_start"]):
        return np.nan
    previous = mine.loc[mine["start"].idxmax(), "call_start"]
    return float(own["call_start"] - previous) if pd.notna(previous) else np.nan


def _causes(ranks: Sequence[RankReduction], instances: pd.DataFrame, top: pd.DataFrame, stage: str) -> list[dict]:
    """:func:`late_rank_causes` rows of the instances ``top`` (index: instance) of ``stage``."""
    rows = []
    for instance, row in top.iterrows():
        late = int(row["late_rank"])
        own = instances[(instances["instance"] == instance) & (instances["rank"] == late)].iloc[0]
        kernel = _late_kernel(ranks[late], instances, instance, late)
        gpu_idle = int(kernel["start"] - kernel["prev_end"]) if kernel["prev_end"] != NO_CALL else np.nan
        first = instances[instances["instance"] == instance].sort_values(["start", "rank"]).iloc[0]
        base = {"stage": stage, "instance": int(instance), "collective": row["collective"], "late_rank": late,
                "wait_ns": int(row["wait_ns"]), "skew_ns": int(row["skew_ns"]), "gpu_idle_ns": gpu_idle,
                "since_sync_ns": _since_sync(instances, own),
                "first_since_sync_ns": _since_sync(instances, first)}
        window = _window(kernel)
        if window is None:
            rows.append({**base, "host_window_ns": np.nan, "call": None, "calls": 0, "call_ns": np.nan})
            continue
        tid, lo, hi = window
        read = ranks[late].calls
        if read is None:
            raise ValueError(f"rank {late}: its host windows were not read (readers.nsys_ranks.window_calls)")
        calls = read[(read["tid"] == tid) & (read["lo"] == lo) & (read["hi"] == hi)
                     & (read["end"] > lo) & (read["start"] < hi)].copy()
        calls["start"], calls["end"] = calls["start"].clip(lower=lo), calls["end"].clip(upper=hi)
        span = hi - lo
        in_calls = union_length(calls["start"].to_numpy(), calls["end"].to_numpy())
        named = calls.assign(d=calls["end"] - calls["start"]).groupby("name")["d"].agg(["count", "sum"])
        for name, figures in named.sort_values("sum", ascending=False, kind="stable").iterrows():
            rows.append({**base, "host_window_ns": span, "call": name, "calls": int(figures["count"]),
                         "call_ns": int(figures["sum"])})
        rows.append({**base, "host_window_ns": span, "call": IDLE_CALL, "calls": 0, "call_ns": span - in_calls})
    return rows


def rank_overview(inputs: VersionInputs, ranks: pd.DataFrame | None, collectives: pd.DataFrame | None,
                  late_rank_causes: pd.DataFrame | None) -> dict[str, Any] | None:
    """What the Overview says of a multi-rank version (None: one rank): the ranks in order, how
    they were ordered, the interconnect the export states, per measured stage each rank's span,
    compute, collective transfer, wait and idle time and the rank that waits most, and what the
    late rank's host did before the instances that waited most (:func:`late_rank_causes`)."""
    if ranks is None or collectives is None:
        return None
    named = [s for s in dict.fromkeys(ranks["stage"]) if s != ALL_STAGES] or [ALL_STAGES]
    stages = []
    for stage in named:
        rows = ranks[ranks["stage"] == stage]
        own = collectives[collectives["stage"] == stage]
        waits = rows.set_index("rank")["wait_ns"]
        causes = late_rank_causes[late_rank_causes["stage"] == stage] if late_rank_causes is not None else None
        stages.append({"stage": stage, "ranks": rows.to_dict("records"),
                       "kinds": own.to_dict("records"),
                       "waits_most": int(waits.idxmax()) if len(waits) and waits.max() > 0 else None,
                       "late": _late(causes) if causes is not None and len(causes) else None})
    return {"world": len(inputs.ranks), "order": inputs.rank_order,
            "gpus": [{"rank": i, "pid": t.pid, "gpu": t.gpu} for i, t in enumerate(inputs.ranks)],
            "stages": stages}


def _late(causes: pd.DataFrame) -> dict[str, Any]:
    """The rank late most often among ``causes`` (one stage's rows), its instances and calls."""
    per = causes.drop_duplicates("instance")
    rank = int(per["late_rank"].mode().min())
    mine = causes[causes["late_rank"] == rank]
    calls = mine.groupby("call", sort=False)["call_ns"].sum().sort_values(ascending=False, kind="stable")
    shown = per[per["late_rank"] == rank]
    return {"rank": rank, "instances": len(shown), "of": len(per),
            "wait_ns": int(shown["wait_ns"].sum()), "window_ns": float(shown["host_window_ns"].sum()),
            "gpu_idle_ns": float(shown["gpu_idle_ns"].sum()),
            "since_sync_ns": float(shown["since_sync_ns"].sum()),
            "first_since_sync_ns": float(shown["first_since_sync_ns"].sum()),
            "calls": [{"call": c, "ns": int(v), "idle": c == IDLE_CALL} for c, v in calls.head(4).items()]}


ANALYSES = [
    Analysis("collective_instances", collective_instances),
    Analysis("collectives", collectives, publish=True),
    Analysis("ranks", ranks, publish=True),
    Analysis("late_rank_causes", late_rank_causes, publish=True),
    Analysis("rank_overview", rank_overview),
]
