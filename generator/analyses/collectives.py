"""Several ranks: collectives split into transfer and waiting, each rank's time, the late rank's host.

A version with several ranks (model.VersionInputs.ranks: readers.nsys_ranks.RankTables, index =
rank) gets, per rank and stage, its own figures; nothing is summed over ranks. Collectives are
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

import re
from functools import cache
from typing import Any

import numpy as np
import pandas as pd

from generator.analyses.registry import Analysis
from generator.model import ALL_STAGES, RankTables, VersionInputs
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


def union_length(starts: np.ndarray, ends: np.ndarray) -> int:
    """Length of the union of the intervals [start, end)."""
    merged = _merge(starts, ends)
    return int((merged[1] - merged[0]).sum())


def _merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if not len(starts):
        return np.array([], dtype="int64"), np.array([], dtype="int64")
    order = np.argsort(starts, kind="stable")
    s, e = np.asarray(starts, dtype="int64")[order], np.asarray(ends, dtype="int64")[order]
    reach = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > reach[:-1]
    last = np.append(np.flatnonzero(new)[1:] - 1, len(s) - 1)
    return s[new], reach[last]


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


def rank_kernels(tables: RankTables, stages: list[str]) -> pd.DataFrame:
    """One rank's kernels with ``collective`` (kind or None) and, per stage, the range instance it
    lies in (column ``stage:<name>``: 0 the whole capture, 1… an instance, -1 outside)."""
    kernels = tables.kernels.copy()
    pattern = re.compile(collective_words()["nvtx_ranges"])
    ranges = tables.ranges
    kinds = kernels["name"].map(kernel_collective)
    if len(ranges):
        nccl = ranges[ranges["name"].astype(str).str.match(pattern)]
        by_range = _in_ranges(kernels, nccl)
        roles = pd.Series([pattern.match(str(n))["coll"] for n in nccl["name"]], dtype=object)
        inside = by_range >= 0
        kinds = kinds.where(~inside, roles.reindex(by_range[inside]).set_axis(kernels.index[inside]))
    kernels["collective"] = kinds.astype(object).where(kinds.notna(), None)
    for stage in stages:
        if stage == ALL_STAGES:
            kernels[f"stage:{stage}"] = 0
            continue
        name, first, count = stage_spec(stage)
        own = ranges[ranges["name"] == name].reset_index(drop=True)
        start = (first or 1) - 1
        own = own.iloc[start:start + count if count else None].reset_index(drop=True)
        hit = _in_ranges(kernels, own)
        kernels[f"stage:{stage}"] = np.where(hit >= 0, hit + 1, -1)
    return kernels


def _in_ranges(kernels: pd.DataFrame, ranges: pd.DataFrame) -> np.ndarray:
    """Per kernel, the position in ``ranges`` of the range on its launching thread that holds its
    launching call (its start, on any thread, where no call is known), else -1. ``ranges`` are of one
    name or one role, not nested in each other: the latest-starting range before the call is the one."""
    hit = np.full(len(kernels), -1, dtype="int64")
    if not len(ranges) or not len(kernels):
        return hit
    t = kernels["call_start"].fillna(kernels["start"]).to_numpy(dtype="int64")
    known = kernels["call_tid"].notna().to_numpy()
    tids = kernels["call_tid"].to_numpy(dtype=object)
    starts, ends = ranges["start"].to_numpy(dtype="int64"), ranges["end"].to_numpy(dtype="int64")
    for tid in [None, *dict.fromkeys(ranges["tid"])]:
        own = np.flatnonzero(ranges["tid"].to_numpy() == tid) if tid is not None else np.arange(len(ranges))
        order = own[np.argsort(starts[own], kind="stable")]
        mine = np.flatnonzero(~known) if tid is None else np.flatnonzero(known & (tids == tid))
        if not len(mine) or not len(order):
            continue
        at = np.searchsorted(starts[order], t[mine], side="right") - 1
        valid = at >= 0
        chosen = order[np.maximum(at, 0)]
        inside = valid & (t[mine] <= ends[chosen])
        hit[mine[inside]] = chosen[inside]
    return hit


def rank_stage_spans(ranks: tuple[RankTables, ...], stages: list[str], whole: bool = True) -> pd.DataFrame:
    """Per stage, over all ranks together: ``span_ns`` the union of each rank's instance spans (first
    kernel start to last kernel end), ``busy_ns`` the time any rank's GPU ran a kernel in it,
    ``idle_ns`` = span − busy (no GPU running anything). Without ``whole``, ALL_STAGES is the union
    of the named stages rather than the whole capture."""
    spans: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {s: [] for s in stages}
    busy: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {s: [] for s in stages}
    for tables in ranks:
        kernels = rank_kernels(tables, stages)
        for stage in stages:
            inst = kernels[f"stage:{stage}"]
            part = kernels[inst >= 0]
            grouped = part.groupby(inst[inst >= 0])
            spans[stage].append((grouped["start"].min().to_numpy(), grouped["end"].max().to_numpy()))
            busy[stage].append((part["start"].to_numpy(), part["end"].to_numpy()))
    if not whole and ALL_STAGES in stages:
        named = [s for s in stages if s != ALL_STAGES]
        spans[ALL_STAGES] = [x for s in named for x in spans[s]]
        busy[ALL_STAGES] = [x for s in named for x in busy[s]]
    rows = []
    for stage in stages:
        span = union_length(*(np.concatenate(x) for x in zip(*spans[stage], strict=True)))
        run = union_length(*(np.concatenate(x) for x in zip(*busy[stage], strict=True)))
        rows.append({"stage": stage, "span_ns": span, "busy_ns": run, "idle_ns": span - run})
    return pd.DataFrame(rows, columns=["stage", "span_ns", "busy_ns", "idle_ns"])


def collective_instances(inputs: VersionInputs) -> pd.DataFrame | None:
    """INSTANCE_COLUMNS: every collective instance matched across all ranks (None: one rank)."""
    if len(inputs.ranks) < 2:
        return None
    frames = []
    named = stage_names(inputs)[1:]
    for rank, tables in enumerate(inputs.ranks):
        kernels = rank_kernels(tables, [ALL_STAGES, *named])
        kernels["stage"] = ALL_STAGES
        for stage in reversed(named):
            kernels.loc[kernels[f"stage:{stage}"] >= 0, "stage"] = stage
        other = kernels[kernels["collective"].isna()]
        coll = kernels[kernels["collective"].notna()].sort_values(["start", "end"], kind="stable").copy()
        coll["ordinal"] = coll.groupby("collective").cumcount()
        coll["rank"] = rank
        coll["duration_ns"] = coll["end"] - coll["start"]
        coll["exposed_ns"] = coll["duration_ns"] - covered(coll["start"].to_numpy(), coll["end"].to_numpy(),
                                                           other["start"].to_numpy(), other["end"].to_numpy())
        frames.append(coll[["collective", "ordinal", "rank", "start", "end", "call_start", "duration_ns", "exposed_ns",
                            "stage"]])
    table = pd.concat(frames, ignore_index=True)
    world = len(inputs.ranks)
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
    for rank, tables in enumerate(inputs.ranks):
        kernels = rank_kernels(tables, stages)
        other = kernels[kernels["collective"].isna()]
        coll = kernels[kernels["collective"].notna()].copy()
        coll["duration_ns"] = coll["end"] - coll["start"]
        coll["exposed_ns"] = coll["duration_ns"] - covered(coll["start"].to_numpy(), coll["end"].to_numpy(),
                                                           other["start"].to_numpy(), other["end"].to_numpy())
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
    """RANK_COLUMNS: each rank's span, kernel, idle, compute and communication time per stage."""
    if collective_instances is None:
        return None
    stages = stage_names(inputs)
    matched = collective_instances.set_index(["rank", "start", "end"])
    rows = []
    for rank, tables in enumerate(inputs.ranks):
        kernels = rank_kernels(tables, stages)
        keys = pd.MultiIndex.from_arrays([np.full(len(kernels), rank), kernels["start"], kernels["end"]])
        found = matched.reindex(keys)
        kernels["transfer_ns"] = np.where(kernels["collective"].notna(), found["transfer_ns"].to_numpy(), np.nan)
        kernels["wait_ns"] = np.where(kernels["collective"].notna(), found["wait_ns"].to_numpy(), np.nan)
        for stage in stages:
            inst = kernels[f"stage:{stage}"]
            figures = dict.fromkeys(RANK_COLUMNS[4:], 0)
            for _, part in kernels[inst >= 0].groupby(inst[inst >= 0]):
                s, e = part["start"].to_numpy(), part["end"].to_numpy()
                comm = part["collective"].notna().to_numpy()
                span = int(e.max() - s.min())
                busy = union_length(s, e)
                exposed = (e[comm] - s[comm]) - covered(s[comm], e[comm], s[~comm], e[~comm])
                transfer = part["transfer_ns"].to_numpy()[comm]
                exposed_transfer = np.nansum(np.minimum(exposed, transfer))
                for key, value in (("span_ns", span), ("kernel_ns", int((e - s).sum())), ("idle_ns", span - busy),
                                   ("launches", len(part)), ("busy_ns", busy),
                                   ("compute_ns", union_length(s[~comm], e[~comm])),
                                   ("comm_ns", int((e[comm] - s[comm]).sum())),
                                   ("transfer_ns", int(np.nansum(part["transfer_ns"]))),
                                   ("wait_ns", int(np.nansum(part["wait_ns"]))), ("exposed_ns", int(exposed.sum())),
                                   ("exposed_transfer_ns", int(exposed_transfer))):
                    figures[key] += value
            rows.append({"rank": rank, "pid": tables.pid, "gpu": tables.gpu, "stage": stage, **figures})
    return pd.DataFrame(rows, columns=RANK_COLUMNS)


def late_rank_causes(inputs: VersionInputs, collective_instances: pd.DataFrame | None) -> pd.DataFrame | None:
    """CAUSE_COLUMNS: per measured stage (the whole capture where none is named; an instance is in the
    stage its late rank ran it in), for the :data:`CAUSE_INSTANCES` instances with the largest wait,
    the CUDA calls the late rank's launching thread made between the launch of its previous kernel
    and the launch of its collective (by name, time inside the window), and the window's time in no
    call."""
    if collective_instances is None:
        return None
    late_rows = collective_instances[collective_instances["rank"] == collective_instances["late_rank"]]
    per = collective_instances.groupby("instance").agg(wait_ns=("wait_ns", "max"), skew_ns=("skew_ns", "first"),
                                                       late_rank=("late_rank", "first"),
                                                       collective=("collective", "first"))
    per["stage"] = late_rows.set_index("instance")["stage"]
    named = stage_names(inputs)[1:] or [ALL_STAGES]
    rows = []
    for stage in named:
        own = per if stage == ALL_STAGES else per[per["stage"] == stage]
        top = own[own["wait_ns"] > 0].sort_values(["wait_ns"], ascending=False, kind="stable").head(CAUSE_INSTANCES)
        rows += _causes(inputs, collective_instances, top, stage)
    return pd.DataFrame(rows, columns=CAUSE_COLUMNS)


def _since_sync(instances: pd.DataFrame, own: pd.Series) -> float:
    """Host time of ``own``'s rank from launching its previous collective to launching ``own``'s."""
    mine = instances[(instances["rank"] == own["rank"]) & (instances["start"] < own["start"])]
    if not len(mine) or pd.isna(own["call_start"]):
        return np.nan
    previous = mine.loc[mine["start"].idxmax(), "call_start"]
    return float(own["call_start"] - previous) if pd.notna(previous) else np.nan


def _causes(inputs: VersionInputs, instances: pd.DataFrame, top: pd.DataFrame, stage: str) -> list[dict]:
    """:func:`late_rank_causes` rows of the instances ``top`` (index: instance) of ``stage``."""
    collective_instances = instances
    rows = []
    for instance, row in top.iterrows():
        late = int(row["late_rank"])
        tables = inputs.ranks[late]
        own = collective_instances[(collective_instances["instance"] == instance)
                                   & (collective_instances["rank"] == late)].iloc[0]
        kernels = tables.kernels
        at = kernels.index[(kernels["start"] == own["start"]) & (kernels["end"] == own["end"])][0]
        kernel = kernels.loc[at]
        before = kernels[kernels["end"] <= kernel["start"]]
        previous = before.loc[before["end"].idxmax()] if len(before) else None
        gpu_idle = int(kernel["start"] - previous["end"]) if previous is not None else np.nan
        first = collective_instances[collective_instances["instance"] == instance].sort_values(["start", "rank"]).iloc[0]
        base = {"stage": stage, "instance": int(instance), "collective": row["collective"], "late_rank": late,
                "wait_ns": int(row["wait_ns"]), "skew_ns": int(row["skew_ns"]), "gpu_idle_ns": gpu_idle,
                "since_sync_ns": _since_sync(collective_instances, own),
                "first_since_sync_ns": _since_sync(collective_instances, first)}
        if pd.isna(kernel["call_start"]) or previous is None or pd.isna(previous["call_start"]):
            rows.append({**base, "host_window_ns": np.nan, "call": None, "calls": 0, "call_ns": np.nan})
            continue
        lo, hi = int(previous["call_start"]), int(kernel["call_start"])
        calls = tables.calls[(tables.calls["tid"] == kernel["call_tid"]) & (tables.calls["end"] > lo)
                             & (tables.calls["start"] < hi)].copy()
        calls["start"], calls["end"] = calls["start"].clip(lower=lo), calls["end"].clip(upper=hi)
        window = hi - lo
        in_calls = union_length(calls["start"].to_numpy(), calls["end"].to_numpy())
        named = calls.assign(d=calls["end"] - calls["start"]).groupby("name")["d"].agg(["count", "sum"])
        for name, figures in named.sort_values("sum", ascending=False, kind="stable").iterrows():
            rows.append({**base, "host_window_ns": window, "call": name, "calls": int(figures["count"]),
                         "call_ns": int(figures["sum"])})
        rows.append({**base, "host_window_ns": window, "call": IDLE_CALL, "calls": 0, "call_ns": window - in_calls})
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
