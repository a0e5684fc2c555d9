"""Kernel → nn.Module attribution: a module tree per stage, repeated blocks folded, compared by version.

Input: the reader's per (stage, module path, class, kernel) launches and GPU time
(readers.nsys_sqlite.module_kernels: each launch to the innermost recognised module range open at
its launch call). A module's time is inclusive: its own launches and its descendants' (by qualified
name, ``a.b`` under ``a``). Launches outside every module range form one explicit row, so each
stage's rows at depth 0 sum to the stage's kernel time.

Folding: the numbered children of one module (``layers.0`` … ``layers.N``, all of one class) are one
row ``layers.*`` with per-instance statistics (median, min, max of each instance's GPU time) and
the outliers: instances at least OUTLIER_RATIO × the median or at most its inverse.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pandas as pd

from generator.analyses.registry import Analysis
from generator.model import ALL_STAGES, VersionInputs

if TYPE_CHECKING:
    from generator.analyses.result import VersionResult

#: The path of the row holding launches outside every module range.
OUTSIDE = "(outside any module)"
#: Forms whose paths are dotted qualified names (a tree); other forms (aten ops) are flat.
DOTTED_FORMS = ("kr.modules", "sglang-layerwise")
FOLD = "*"
OUTLIER_RATIO = 1.5
TOP_KERNELS = 5

#: data/modules.csv, one row per module (unfolded) and stage.
MODULE_COLUMNS = ["stage", "path", "cls", "depth", "launches", "gpu_ns", "share_pct"]
#: Display rows (folded), in tree order: ``key`` is the folded path, ``parent`` its parent's key.
TREE_COLUMNS = ["stage", "key", "parent", "name", "cls", "depth", "launches", "gpu_ns", "share_pct",
                "instances", "inst_median_ns", "inst_min_ns", "inst_max_ns", "outliers"]
#: Top kernels per display row: GPU time and launches within the module, share of the module's time.
KERNEL_COLUMNS = ["stage", "key", "name", "launches", "gpu_ns", "module_pct"]


@dataclass
class ModulesResult:
    """What the Modules page, data/modules.csv and findings read. ``form`` None: no module ranges."""

    form: str | None
    modules: pd.DataFrame  # MODULE_COLUMNS
    tree: pd.DataFrame  # TREE_COLUMNS; ``outliers``: [(instance label, ratio to the median)]
    kernels: pd.DataFrame  # KERNEL_COLUMNS
    stage_ns: dict[str, int] = field(default_factory=dict)  # stage → its kernel time (all launches)

    @property
    def attributed(self) -> bool:
        return self.form is not None


def _parts(path: str, dotted: bool) -> list[str]:
    return path.split(".") if dotted else [path]


def _ancestors(path: str, dotted: bool) -> list[str]:
    """``a.b.c`` → [a, a.b, a.b.c]; a flat path → [path]."""
    parts = _parts(path, dotted)
    return [".".join(parts[:i + 1]) for i in range(len(parts))]


def _parent(path: str, dotted: bool) -> str | None:
    return path.rsplit(".", 1)[0] if dotted and "." in path else None


def _fold_map(paths: list[str], classes: dict[str, str], dotted: bool) -> dict[str, str]:
    """path → folded key: a numbered child of a module whose numbered children (two or more) share
    one class becomes ``*`` (applied at every level)."""
    numbered: dict[str, list[str]] = {}
    for path in paths:
        parent = _parent(path, dotted)
        if parent is not None and path.rsplit(".", 1)[1].isdigit():
            numbered.setdefault(parent, []).append(path)
    foldable = {p for p, kids in numbered.items() if len(kids) > 1 and len({classes.get(k, "") for k in kids}) == 1}
    folded: dict[str, str] = {}
    for path in paths:
        if not dotted:
            folded[path] = path
            continue
        parts = path.split(".")
        keys = [p if not (i and p.isdigit() and ".".join(parts[:i]) in foldable) else FOLD
                for i, p in enumerate(parts)]
        folded[path] = ".".join(keys)
    return folded


def _instance_label(path: str, key: str) -> str:
    """The indices a folded key hides in ``path``: ``layers.5`` under ``layers.*`` → ``5``."""
    return ".".join(p for p, k in zip(path.split("."), key.split(".")) if k == FOLD and p != k)


def _stage_modules(stage: str, rows: pd.DataFrame, classes: dict[str, str], dotted: bool,
                   stage_ns: int) -> tuple[list[dict], list[dict], list[dict]]:
    """(module rows, tree rows, kernel rows) of one stage."""
    inside = rows[rows["path"].notna()]
    own = inside.groupby("path")[["launches", "gpu_ns"]].sum()
    paths = sorted({a for p in own.index for a in _ancestors(p, dotted)})
    total = {p: [0, 0] for p in paths}
    for path, (launches, ns) in own.iterrows():
        for a in _ancestors(path, dotted):
            total[a][0] += int(launches)
            total[a][1] += int(ns)

    def share(ns: int) -> float:
        return ns * 100.0 / stage_ns if stage_ns else float("nan")

    modules = [{"stage": stage, "path": p, "cls": classes.get(p, ""), "depth": len(_parts(p, dotted)) - 1,
                "launches": total[p][0], "gpu_ns": total[p][1], "share_pct": share(total[p][1])} for p in paths]
    outside = rows[rows["path"].isna()]
    out_launches, out_ns = int(outside["launches"].sum()), int(outside["gpu_ns"].sum())
    if len(outside):
        modules.append({"stage": stage, "path": OUTSIDE, "cls": "", "depth": 0, "launches": out_launches,
                        "gpu_ns": out_ns, "share_pct": share(out_ns)})

    folded = _fold_map(paths, classes, dotted)
    groups: dict[str, list[str]] = {}
    for p in paths:
        groups.setdefault(folded[p], []).append(p)
    tree_rows: dict[str, dict] = {}
    for key, members in groups.items():
        ns = [total[p][1] for p in members]
        median = statistics.median(ns)
        outliers = [(_instance_label(p, key), v / median) for p, v in zip(members, ns)
                    if median > 0 and len(members) > 1 and (v >= OUTLIER_RATIO * median or v * OUTLIER_RATIO <= median)]
        outliers.sort(key=lambda o: (-o[1], o[0]))
        gpu = sum(ns)
        parent = _parent(key, dotted)
        tree_rows[key] = {"stage": stage, "key": key, "parent": parent,
                          "name": key.rsplit(".", 1)[1] if parent is not None else key,
                          "cls": classes.get(members[0], ""), "depth": len(_parts(key, dotted)) - 1,
                          "launches": sum(total[p][0] for p in members), "gpu_ns": gpu, "share_pct": share(gpu),
                          "instances": len(members), "inst_median_ns": float(median),
                          "inst_min_ns": float(min(ns)), "inst_max_ns": float(max(ns)), "outliers": outliers}
    children: dict[str | None, list[str]] = {}
    for key, row in tree_rows.items():
        children.setdefault(row["parent"], []).append(key)
    ordered: list[dict] = []

    def visit(key: str) -> None:
        ordered.append(tree_rows[key])
        for kid in sorted(children.get(key, []), key=lambda k: (-tree_rows[k]["gpu_ns"], k)):
            visit(kid)

    for root in sorted(children.get(None, []), key=lambda k: (-tree_rows[k]["gpu_ns"], k)):
        visit(root)
    if len(outside):
        ordered.append({"stage": stage, "key": OUTSIDE, "parent": None, "name": OUTSIDE, "cls": "", "depth": 0,
                        "launches": out_launches, "gpu_ns": out_ns, "share_pct": share(out_ns), "instances": 1,
                        "inst_median_ns": float(out_ns), "inst_min_ns": float(out_ns),
                        "inst_max_ns": float(out_ns), "outliers": []})

    # top kernels of each display row: its own and its descendants' launches, all instances together
    keyed = rows.assign(key=[OUTSIDE if pd.isna(p) else folded[p] for p in rows["path"]])
    sums = keyed.groupby(["key", "name"])[["launches", "gpu_ns"]].sum()
    by_key: dict[str, dict[str, list[int]]] = {}  # display row → kernel → [launches, gpu_ns]
    for (key, name), launches, ns in zip(sums.index, sums["launches"], sums["gpu_ns"]):
        for a in [key] if key == OUTSIDE else _ancestors(key, dotted):
            total_of = by_key.setdefault(a, {}).setdefault(name, [0, 0])
            total_of[0] += int(launches)
            total_of[1] += int(ns)
    kernel_rows: list[dict] = []
    for row in ordered:
        per = sorted(by_key[row["key"]].items(), key=lambda item: (-item[1][1], item[0]))[:TOP_KERNELS]
        for name, (launches, ns) in per:
            kernel_rows.append({"stage": stage, "key": row["key"], "name": name, "launches": launches, "gpu_ns": ns,
                                "module_pct": ns * 100.0 / row["gpu_ns"] if row["gpu_ns"] else float("nan")})
    return modules, ordered, kernel_rows


def module_tree(form: str | None, attributed: pd.DataFrame, classes: dict[str, str],
                stages: list[str]) -> ModulesResult:
    """The module tree of each stage of ``stages`` present in ``attributed`` (MODULE_KERNEL_COLUMNS);
    ALL_STAGES is the stages together. ``classes``: module path → class (from the ranges)."""
    dotted = form in DOTTED_FORMS
    frames = {s: attributed[attributed["stage"] == s] for s in stages if s != ALL_STAGES}
    frames = {s: f for s, f in frames.items() if len(f)}
    if len(frames) > 1 or (frames and ALL_STAGES in stages):
        frames = {ALL_STAGES: attributed[attributed["stage"].isin(list(frames))], **frames}
    modules: list[dict] = []
    tree: list[dict] = []
    kernels: list[dict] = []
    stage_ns: dict[str, int] = {}
    for stage, rows in frames.items():
        stage_ns[stage] = int(rows["gpu_ns"].sum())
        m, t, k = _stage_modules(stage, rows, classes, dotted, stage_ns[stage])
        modules += m
        tree += t
        kernels += k
    return ModulesResult(form=form if frames else None,
                         modules=pd.DataFrame(modules, columns=MODULE_COLUMNS),
                         tree=pd.DataFrame(tree, columns=TREE_COLUMNS),
                         kernels=pd.DataFrame(kernels, columns=KERNEL_COLUMNS), stage_ns=stage_ns)


def empty_modules() -> ModulesResult:
    """No module attribution (no nsys SQLite export among the inputs)."""
    return module_tree(None, pd.DataFrame(columns=["stage", "path", "cls", "name", "launches", "gpu_ns"]), {}, [])


#: A module's change counts as carried by one submodule when that submodule's change is this share of it.
CARRIED_SHARE = 0.9
#: Per folded module and stage of both versions: GPU time before and after.
COMPARISON_COLUMNS = ["stage", "key", "cls", "previous_ns", "current_ns", "delta_ns", "rel_pct"]


def compare_modules(previous: ModulesResult, current: ModulesResult) -> pd.DataFrame:
    """Modules (folded keys) of the measured stages both versions have ("all stages" only when they
    share no other), most changed GPU time first; a module whose change one submodule carries
    (CARRIED_SHARE of it, same sign) is left out, the submodule's row says it."""
    a = previous.tree.set_index(["stage", "key"])
    b = current.tree.set_index(["stage", "key"])
    stages = set(a.index.get_level_values(0)) & set(b.index.get_level_values(0))
    stages = stages - {ALL_STAGES} or stages
    keys = sorted({k for k in (*a.index, *b.index) if k[0] in stages})
    rows = []
    for stage, key in keys:
        before = int(a.at[(stage, key), "gpu_ns"]) if (stage, key) in a.index else 0
        after = int(b.at[(stage, key), "gpu_ns"]) if (stage, key) in b.index else 0
        cls = b.at[(stage, key), "cls"] if (stage, key) in b.index else a.at[(stage, key), "cls"]
        rows.append({"stage": stage, "key": key, "cls": cls, "previous_ns": before, "current_ns": after,
                     "delta_ns": after - before, "rel_pct": (after - before) * 100.0 / before if before else None})
    frame = pd.DataFrame(rows, columns=COMPARISON_COLUMNS)
    parents = {**a["parent"].to_dict(), **b["parent"].to_dict()}
    delta = dict(zip(zip(frame["stage"], frame["key"]), frame["delta_ns"]))
    carried: set[tuple[str, str]] = set()
    for (stage, key), change in delta.items():
        parent = (stage, parents.get((stage, key)))
        whole = delta.get(parent, 0)
        if whole and change * whole > 0 and abs(change) >= CARRIED_SHARE * abs(whole):
            carried.add(parent)
    frame = frame.loc[[(s, k) not in carried for s, k in zip(frame["stage"], frame["key"])]]
    order = frame["delta_ns"].abs()
    return frame.assign(_o=-order).sort_values(["_o", "stage", "key"]).drop(columns="_o").reset_index(drop=True)


def version_module_tree(inputs: VersionInputs, stages: list[str]) -> ModulesResult:
    """The version's module tree per stage (empty without a staged nsys SQLite export)."""
    if inputs.module_kernels is None:
        return empty_modules()
    return module_tree(inputs.module_form, inputs.module_kernels, inputs.module_classes, stages)


def version_modules(module_tree: ModulesResult) -> pd.DataFrame:
    """data/modules.csv: per stage and module (unfolded; launches outside any module as one row):
    class, depth, launches, GPU time (ns, its submodules included) and share of the stage (%)."""
    return module_tree.modules.rename(columns={"path": "module", "cls": "class"})


def version_module_changes(previous: VersionResult | None, module_tree: ModulesResult) -> pd.DataFrame | None:
    """Per folded module, GPU time against the previous version (None for the first version)."""
    return None if previous is None else compare_modules(previous.module_tree, module_tree)


ANALYSES = [Analysis("module_tree", version_module_tree), Analysis("modules", version_modules, publish=True),
            Analysis("module_changes", version_module_changes, previous=("module_tree",))]
