"""Several ranks: how much of each measured stage's collective time is waiting for a late peer, with
two separate bounds that are never added: perfect balance (every wait removed) and perfect overlap
(every exposed transfer hidden behind compute); and what the late rank's host did before."""
from __future__ import annotations

from generator.analyses.findings.context import FindingInputs, make, r, share
from generator.analyses.result import Bound, Finding
from generator.model import ALL_STAGES


def collective_wait(inputs: FindingInputs) -> list[Finding]:
    """Per measured stage of a multi-rank version where a rank waits in collectives: the rank that
    waits most, its waiting and transfer time, both bounds, and the late rank's host calls."""
    ranks, overview = inputs.ranks, inputs.rank_overview
    if ranks is None or overview is None:
        return []
    stages = [s for s in dict.fromkeys(ranks["stage"]) if s != ALL_STAGES] or [ALL_STAGES]
    late_by_stage = {st["stage"]: st.get("late") for st in overview["stages"]}
    found = []
    for stage in stages:
        rows = ranks[ranks["stage"] == stage].set_index("rank")
        if not len(rows) or rows["wait_ns"].max() <= 0:
            continue
        worst = int(rows["wait_ns"].idxmax())
        row = rows.loc[worst]
        span, comm, wait = float(row["span_ns"]), float(row["comm_ns"]), float(row["wait_ns"])
        evidence = {
            "rank": (worst, "rank"), "world": (int(overview["world"]), "ranks"),
            "comm_ms": (r(comm / 1e6), "ms"), "wait_ms": (r(wait / 1e6), "ms"),
            "transfer_ms": (r(float(row["transfer_ns"]) / 1e6), "ms"), "wait_pct": (share(wait, comm), "%"),
            "span_ms": (r(span / 1e6), "ms"), "span_pct": (share(wait, span), "%"),
            "overlap_ms": (r(float(row["exposed_transfer_ns"]) / 1e6), "ms"),
            "others": ([{"rank": int(k), "wait_ms": r(v["wait_ns"] / 1e6), "transfer_ms": r(v["transfer_ns"] / 1e6)}
                        for k, v in rows.iterrows() if k != worst], ""),
        }
        late = late_by_stage.get(stage)
        if late is not None:
            evidence["late_rank"] = (int(late["rank"]), "rank")
            evidence["late_of"] = (f"{late['instances']}/{late['of']}", "instances")
            evidence["late_calls"] = ([{"call": c["call"], "ms": r(c["ns"] / 1e6, 3), "idle": c["idle"]}
                                       for c in late["calls"]], "")
        kernel = float(row["kernel_ns"])  # the rank's own GPU time: waiting is GPU time, not wall time
        bound = Bound(comm, kernel, kernel, wait)
        found.append(make("collective_wait", stage, evidence, None, bound, "high"))
    return found
