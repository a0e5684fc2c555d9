"""The committed H200 captures: the manifest's top-N, mangled names and coverage recompute from
the run's own files, nsys' per-stage CSVs agree with our reader, and the GEMM counts 2·M·N·K."""
from __future__ import annotations

import csv
import importlib.util
import json
import lzma
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers_runs import committed, content

from capture.run import coverage, profiled_launches
from capture.targets import describe, launch_count, ncu_params, targets, windows_plan
from capture.topn import mangled_names, select, stage_summaries
from capture.workloads.params import Params
from capture.workloads.windows import Plan
from generator.errors import InputError
from generator.readers import read
from generator.readers.base import plain_file
from generator.readers.nsys_sqlite import stage_instances
from generator.run_layout import NCU_PASSES

ROOT = Path(__file__).parent.parent
VIT = ROOT / "examples" / "runs" / "vit-sweep"
#: Runs whose ncu pass profiled one launch per (kernel, stage) through profile windows.
STAGE_TRUE = [ROOT / "examples" / "runs" / n for n in ("ocr-vlm-eager-v2", "ocr-vlm-sdpa-h200", "ocr-vlm-sdpa-v2",
                                                      "llm-decode-eager", "llm-decode-graph", "llm-decode-eager-ops")]
RUNS = [ROOT / "examples" / "runs" / "ocr-vlm-eager", ROOT / "examples" / "runs" / "ocr-vlm-sdpa",
        ROOT / "examples" / "runs" / "llm-decode-small",
        *sorted(p.parent for p in VIT.glob("*/manifest.json")), ROOT / "tests" / "data" / "gemm", *STAGE_TRUE]


def manifest(run: Path) -> dict:
    return json.loads((run / "manifest.json").read_text())


def names_csvs(run: Path) -> list[Path]:
    """The mangled-name exports of every ncu pass the run made."""
    found = []
    for suffix in NCU_PASSES:
        plain = run / "logs" / f"ncu_kernels_mangled{suffix}.csv"
        found += [p for p in (plain, plain.with_suffix(".csv.xz")) if p.is_file()]
    return found


def kernels(items: list[dict]) -> list[tuple]:
    return [(k["name"], k["short_name"], k["count"], k["total_ns"], pytest.approx(k["time_pct"])) for k in items]


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_manifest_top_n_and_coverage_recompute(run: Path) -> None:
    man = manifest(run)
    assert man["status"] == "ok" and man["failed_phases"] == []
    assert man["environment"]["gpus"][0]["name"] == ("NVIDIA H100 80GB HBM3" if run.name == "ocr-vlm-sdpa-v2" else "NVIDIA H200")
    sqlite = committed(run, "nsys/report.sqlite")
    top = select(stage_summaries(sqlite, man["stages"]), man["top_n"]["n"])
    ours = json.loads(json.dumps(top.as_dict()))
    assert kernels(man["top_n"]["all"]) == kernels(ours["all"])
    assert list(man["top_n"]["stages"]) == man["stages"]
    for stage in man["stages"]:
        assert kernels(man["top_n"]["stages"][stage]) == kernels(ours["stages"][stage])
    names = [k.name for k in top.selected()]
    assert mangled_names(sqlite, names) == man["mangled_names"]
    launches = [launch for path in names_csvs(run) for launch in profiled_launches(path, man["stages"])]
    pairs = [(t["stage"], t["kernel"]) for t in man.get("ncu_targets", [])]
    recomputed = coverage(top, man["mangled_names"], launches, pairs)
    assert {k: recomputed[k] for k in man["coverage"] if k != "first_pass"} == \
        {k: v for k, v in man["coverage"].items() if k != "first_pass"}
    assert man["coverage"]["profiled"] == man["coverage"]["top_n"] == len(top.overall)
    assert man["coverage"]["selected_missing"] == []


@pytest.mark.parametrize("run", STAGE_TRUE, ids=lambda p: p.name)
def test_stage_true_targets_and_windows_recompute(run: Path) -> None:
    """The (kernel, stage) targets, their windows and the stage of every profiled launch follow from
    the run's own files; every target has a profiled launch from its own stage."""
    man = manifest(run)
    sqlite = committed(run, "nsys/report.sqlite")
    top = select(stage_summaries(sqlite, man["stages"]), man["top_n"]["n"])
    table = targets(sqlite, top)
    assert describe(table) == man["ncu_targets"]
    assert windows_plan(table).to_json() == json.loads((run / "logs" / "ncu_plan.json").read_text())
    passes = [profiled_launches(path, man["stages"]) for path in names_csvs(run)]
    assert man["ncu_launches"] == [{"kernel": m, "stage": s, "pass": i} for i, p in enumerate(passes, 1) for m, s in p]
    assert man["coverage"]["stage_pairs"] == man["coverage"]["stage_pairs_profiled"] == len(table)
    assert all(launch["stage"] in man["stages"] for launch in man["ncu_launches"])


def test_operator_windows_profile_one_launch_per_target_in_one_ncu_run() -> None:
    """The H200 capture whose nsys run marked its last warm-up's operator calls: every (kernel, stage)
    target is found by the operator call that made it, and ncu profiled its 42 targets with 43
    launches in one run (no retry pass: a configuration targeted in two stages is allowed twice).
    The landed windows of llm-decode-eager (module calls) had taken 46 launches and a second run
    for 4 more."""
    run = ROOT / "examples" / "runs" / "llm-decode-eager-ops"
    man = manifest(run)
    plan = json.loads((run / "logs" / "ncu_plan.json").read_text())
    assert man["operator_calls_marked"] == 29599
    assert all("operator_call" in t["window"] for t in man["ncu_targets"]) and len(man["ncu_targets"]) == 42
    assert plan["modules"] == plan["gaps"] == {} and len(plan["operators"]) == 41  # two targets share one call
    assert [p["name"] for p in man["phases"]][-2:] == ["ncu_profile", "ncu_export"]
    assert man["phases"][-2]["launches_profiled"] == len(man["ncu_launches"]) == 43
    assert man["coverage"]["stage_pairs_profiled"] == 42
    command = man["phases"][-2]["commands"][0]  # a configuration that is a target in prefill and in decode
    assert command[command.index("--launch-count") + 1] == "2"
    old = manifest(ROOT / "examples" / "runs" / "llm-decode-eager")
    assert [p.get("launches_profiled") for p in old["phases"] if p["name"].startswith("ncu_profile")] == [46, 4]


@pytest.mark.parametrize(("name", "count", "warmup", "depth"),
                         [("llm-decode-eager-ops", 2, 1, 0), ("llm-decode-eager", 1, 2, None),
                          ("ocr-vlm-sdpa-h200", 1, 2, None)])
def test_launch_count_and_ncu_run_follow_operator_windows(name: str, count: int, warmup: int, depth: int | None) -> None:
    """Each of these runs has a configuration that two targets share (a kernel run alike in prefill and
    decode); ncu may profile it twice only when every window is one operator call, since a module
    call's window holds further launches of the configurations it targets. With operator windows
    (marked warm-up and measured iteration launched alike) the ncu run warms up once less, and
    with operator windows only it installs no module ranges; module windows keep both."""
    run = ROOT / "examples" / "runs" / name
    man = manifest(run)
    sqlite = committed(run, "nsys/report.sqlite")
    table = targets(sqlite, select(stage_summaries(sqlite, man["stages"]), man["top_n"]["n"]))
    plan = windows_plan(table)
    assert int(table.groupby(["name", "grid", "block", "shared_mem_bytes"]).size().max()) == 2
    assert launch_count(table, plan) == count
    params = ncu_params(Params(), plan)
    assert (params.warmup, params.module_depth) == (warmup, depth)
    assert ncu_params(Params(warmup=3, module_depth=2), plan).warmup == warmup + 1
    # a module window counts its module's calls from the process's start, warm-ups included, and a
    # gap window counts module calls: beside either, operator windows change nothing
    assert ncu_params(Params(), Plan({"model [M]": {9}}, {}, {4})) == Params()
    assert ncu_params(Params(), Plan({}, {"decode": {(1, 0)}}, {4})) == Params()


def _plain_export(run: Path, folder: Path) -> Path:
    """A decompressed copy of the run's nsys export, in ``folder``."""
    plain = folder / "report.sqlite"
    plain.write_bytes(content(committed(run, "nsys/report.sqlite")))
    return plain


def _drop_a_marked_launch(plain: Path, marks: str) -> None:
    """Delete the 101st kernel launched inside the operator ranges named ``marks`` of an export copy."""
    with sqlite3.connect(plain) as conn:
        first, last = conn.execute(
            "SELECT min(e.start), max(e.end) FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId "
            "WHERE s.value = ?", (marks,)).fetchone()
        dropped = conn.execute(
            "DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid = (SELECT k.rowid FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId "
            "WHERE r.start BETWEEN ? AND ? ORDER BY r.start LIMIT 1 OFFSET 100)", (first, last)).rowcount
    assert dropped == 1


def test_operator_windows_need_the_marked_iteration_to_launch_alike(tmp_path: Path) -> None:
    """A launch is placed by its operator call only while the marked warm-up launched the same kernels,
    alike and in the same order, as the measured iteration: with one launch of the marked iteration
    taken out of a copy of the export, every target falls back to its module call."""
    run = ROOT / "examples" / "runs" / "llm-decode-eager-ops"
    man = manifest(run)
    plain = _plain_export(run, tmp_path)
    top = select(stage_summaries(plain, man["stages"]), man["top_n"]["n"])
    assert windows_plan(targets(plain, top)).to_json() == json.loads((run / "logs" / "ncu_plan.json").read_text())
    _drop_a_marked_launch(plain, "op")
    table = targets(plain, top)
    plan = windows_plan(table)
    assert len(table) == 42 and table["operator"].isna().all() and not plan.operators
    assert ncu_params(Params(), plan) == Params()  # the ncu run warms up as the nsys run did, with module ranges
    assert sum(map(len, plan.modules.values())) + sum(map(len, plan.gaps.values())) == len(plan) > 0


FIRST = ROOT / "tests" / "data" / "capture-first-iteration"


def test_ncu_run_measures_its_first_iteration_where_the_nsys_run_first_launched_alike(tmp_path: Path) -> None:
    """The H100 capture of llm-decode by the code that marks the first iteration too: its first
    iteration launched as the measured one, so every window is the operator call numbered by it and
    the ncu run measured its own first iteration (no warm-up, no module ranges), all 20 targets in
    one pass. With one launch of the first iteration taken out of a copy of the export, the last
    warm-up (marked too, and alike) numbers the same calls and the ncu run warms up once."""
    run = FIRST / "llm-decode-first"
    man = manifest(run)
    assert man["environment"]["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3" and man["params"]["warmup"] == 2
    plain = _plain_export(run, tmp_path)
    top = select(stage_summaries(plain, man["stages"]), man["top_n"]["n"])
    table = targets(plain, top)
    plan = windows_plan(table)
    assert plan.to_json() == json.loads((run / "logs" / "ncu_plan.json").read_text())
    assert plan.first and plan.operators_only and len(table) == 20 and set(table["marked"]) == {"op-first"}
    assert (ncu_params(Params(), plan).warmup, ncu_params(Params(), plan).module_depth) == (0, 0)
    command = next(p for p in man["phases"] if p["name"] == "ncu_profile")["commands"][0]
    assert command[command.index("--warmup"):command.index("--profile-plan")] == ["--warmup", "0", "--module-depth", "0"]
    assert man["coverage"]["stage_pairs"] == man["coverage"]["stage_pairs_profiled"] == len(man["ncu_launches"]) == 20
    _drop_a_marked_launch(plain, "op-first")
    fallback = targets(plain, top)
    again = windows_plan(fallback)
    assert set(fallback["marked"]) == {"op"} and again.operators == plan.operators and not again.first
    assert (ncu_params(Params(), again).warmup, ncu_params(Params(), again).module_depth) == (1, 0)


def test_cuda_graph_capture_keeps_the_last_warm_up() -> None:
    """The H100 capture of ``llm-decode --cuda-graph`` by the same code: its first iteration captures
    the decode graph, so it launched otherwise than the measured one and the last warm-up numbers
    the operator windows of the 21 eager targets; the 20 graph replays' targets are reached by the
    decode stage's gap window, so the ncu run warms up and installs module ranges as the nsys run
    did (its worker command carries no flag of its own). All 41 targets profiled, 3 of them by the
    second pass."""
    run = FIRST / "llm-decode-graph-first"
    man = manifest(run)
    sqlite = committed(run, "nsys/report.sqlite")
    table = targets(sqlite, select(stage_summaries(sqlite, man["stages"]), man["top_n"]["n"]))
    plan = windows_plan(table)
    assert plan.to_json() == json.loads((run / "logs" / "ncu_plan.json").read_text())
    assert table["marked"].value_counts().to_dict() == {"op": 21} and table["graph_node"].notna().sum() == 20
    assert not plan.first and not plan.operators_only and plan.gaps == {"decode": {(1, 0)}}
    assert ncu_params(Params(cuda_graph=True), plan) == Params(cuda_graph=True)
    command = next(p for p in man["phases"] if p["name"] == "ncu_profile")["commands"][0]
    assert command[command.index("capture.worker"):command.index("--profile-plan")] == [
        "capture.worker", "--workload", "llm-decode", "--cuda-graph"]
    assert man["coverage"]["stage_pairs"] == man["coverage"]["stage_pairs_profiled"] == 41
    assert [launch["pass"] for launch in man["ncu_launches"]].count(2) == 3


def test_h100_captures_back_to_back_last_warm_up_and_first_iteration() -> None:
    """The README's ocr-vlm capture on one H100, back to back: the landed code (its ncu run measures
    the iteration after one warm-up) and the code whose ncu run measures its first iteration, before
    the later decode steps load their runtime-compiled attention kernels. The same 86 launches for
    the same 78 targets; the ncu pass took 159.2 s, then 62.5 s (the whole capture 228.4 s → 118.8 s
    by the device job's clock)."""
    landed, new = (json.loads(lzma.decompress((FIRST / f"ocr-vlm-{n}.manifest.json.xz").read_bytes()))
                   for n in ("landed", "new"))
    phases = [{p["name"]: p for p in man["phases"]} for man in (landed, new)]
    assert phases[0]["ncu_export"]["end"] < new["created"]  # one after the other
    for man in (landed, new):
        assert man["environment"]["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3" and man["status"] == "ok"
        assert man["coverage"]["stage_pairs"] == man["coverage"]["stage_pairs_profiled"] == 78
        assert len(man["ncu_launches"]) == 86 and all(t["window"].get("operator_call") for t in man["ncu_targets"])
    # the same (kernel, stage) targets; all but one the same launch, found by the same operator call
    # (the decode configuration with most of one element-wise kernel's time differed between the nsys runs)
    pairs = [{(t["stage"], t["kernel"]) for t in man["ncu_targets"]} for man in (landed, new)]
    assert pairs[0] == pairs[1]
    launches = [{(t["stage"], t["kernel"], t["grid"], t["window"]["operator_call"]) for t in man["ncu_targets"]}
                for man in (landed, new)]
    assert len(launches[0] & launches[1]) == 77 and [x[2:] for x in launches[0] - launches[1]] == [("(833, 1, 1)", 19368)]
    workers = [p["ncu_profile"]["commands"][0] for p in phases]
    assert [w[w.index("--warmup"):w.index("--profile-plan")] for w in workers] == [
        ["--warmup", "1", "--module-depth", "0"], ["--warmup", "0", "--module-depth", "0"]]
    assert [p["ncu_profile"]["seconds"] for p in phases] == [159.189, 62.534]
    # the same code on a third and a fourth H100 that hour: the ncu run as long, the whole capture
    # 148.1 s on the fourth (its nsys pass 45.7 s), whose top-20 held one (kernel, stage) more; and
    # 2cfa9a3 on a fifth that evening (146.1 s, the nsys pass 40.0 s)
    for name, seconds, pairs, launches in [("new-2", 63.819, 78, 86), ("new-3", 68.524, 79, 87),
                                           ("new-4", 69.769, 79, 87)]:
        again = json.loads(lzma.decompress((FIRST / f"ocr-vlm-{name}.manifest.json.xz").read_bytes()))
        phase = next(p for p in again["phases"] if p["name"] == "ncu_profile")
        worker = phase["commands"][0]
        assert phase["seconds"] == seconds and again["environment"]["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3"
        assert worker[worker.index("--warmup"):worker.index("--profile-plan")] == ["--warmup", "0", "--module-depth", "0"]
        assert again["coverage"]["stage_pairs"] == again["coverage"]["stage_pairs_profiled"] == pairs
        assert len(again["ncu_launches"]) == launches and again["coverage"]["top_n"] == again["coverage"]["profiled"] == 20


def test_ncu_measures_the_first_iteration_as_it_measured_the_warm_one() -> None:
    """The launches the new capture's ncu run measured in its first iteration (H100, ocr-vlm-new)
    against those the landed code's measured after a warm-up (ocr-vlm-landed-2: the same command
    on another H100 that hour), paired by stage, kernel, grid, block and order: 83 of the 86 pair
    up (the rest: the decode configuration the two nsys runs chose differently, and launches beyond
    the targets). Their tensor FLOP counts agree exactly, their FP32 ones but for 48 operations of
    one attention launch, their DRAM bytes within 0.01 % at the median and 7 % at most, their
    durations within 1.4 % at the median and 10 % at most (a 3-µs kernel), 2,618.5 µs against
    2,616.8 µs in all."""
    metrics = [read(FIRST / f"ocr-vlm-{n}.raw.csv.xz").kernel_metrics for n in ("landed-2", "new")]
    key = ["stage", "name", "grid", "block"]
    landed, new = (m.assign(order=m.groupby(key).cumcount()) for m in metrics)
    assert len(landed) == len(new) == 86
    both = landed.merge(new, on=[*key, "order"], suffixes=("_landed", "_new"))
    assert len(both) == 83
    tensor = both[["flop_tensor_landed", "flop_tensor_new"]].dropna()
    assert (tensor["flop_tensor_landed"] > 0).sum() == 26 and (tensor["flop_tensor_landed"] == tensor["flop_tensor_new"]).all()
    fp32 = both[["flop_fp32_landed", "flop_fp32_new"]].dropna()
    differ = fp32[fp32["flop_fp32_landed"] != fp32["flop_fp32_new"]]
    # one decode attention launch's softmax work differs by 48 of 615,376 FP32 operations: the data
    # it ran on (the tokens decoded so far) need not repeat from one iteration to the next
    assert len(fp32) == 83 and differ.values.tolist() == [[615376.0, 615424.0]]
    dram = (both["dram_bytes_new"] / both["dram_bytes_landed"] - 1).abs()
    assert dram.median() < 0.0001 and dram.max() < 0.07
    drift = (both["duration_ns_new"] / both["duration_ns_landed"] - 1).abs()
    assert drift.median() < 0.014 and drift.max() < 0.10
    assert (both["duration_ns_landed"].sum(), both["duration_ns_new"].sum()) == (2618528.0, 2616832.0)


def test_capture_domains_are_no_stages_by_bare_name() -> None:
    """The operator marks (kr.ops: 29,599 ranges "op", one "measured") are stages only by their full
    ``domain:name``: a workload's own stage called "op" or "measured" is not confused with them."""
    run = ROOT / "examples" / "runs" / "llm-decode-eager-ops"
    with plain_file(committed(run, "nsys/report.sqlite")) as sqlite:
        for bare in ("op", "measured"):
            with pytest.raises(InputError, match=f"NVTX range '{bare}' not found"):
                stage_instances(sqlite, [bare])
        found = stage_instances(sqlite, ["kr.ops:op", "kr.ops:measured", "decode"])
    assert {s: v["total"] for s, v in found.items()} == {"kr.ops:op": 29599, "kr.ops:measured": 1, "decode": 1}


# What `nsys stats --filter-nvtx STAGE` counts: kernels whose GPU execution overlaps the range's
# (CPU-side) time span, wherever they were launched.
GPU_TIME_SQL = """
SELECT d.value, COUNT(*), SUM(k."end" - k.start)
FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds d ON d.id = k.demangledName
JOIN NVTX_EVENTS e ON e.text = :stage AND k."end" >= e.start AND k.start <= e."end"
GROUP BY d.value
"""


@pytest.mark.parametrize("run", [RUNS[0], ROOT / "tests" / "data" / "gemm"], ids=lambda p: p.name)
def test_nsys_stage_csvs_count_gpu_time_not_launches(run: Path, tmp_path: Path) -> None:
    man = manifest(run)
    plain = _plain_export(run, tmp_path)
    db = sqlite3.connect(plain)
    launched = stage_summaries(committed(run, "nsys/report.sqlite"), man["stages"])
    differ = 0
    for stage in man["stages"]:
        with open(run / "nsys" / "stats" / f"{stage}_cuda_gpu_kern_sum.csv", newline="") as fh:
            printed = {r["Name"]: (int(r["Instances"]), int(r["Total Time (ns)"])) for r in csv.DictReader(fh)}
        assert printed == {n: (c, t) for n, c, t in db.execute(GPU_TIME_SQL, {"stage": stage})}
        ours = launched[stage]
        differ += printed != dict(zip(ours["name"], zip(ours["count"], ours["total_ns"].astype(int))))
    # asynchronous stages (ocr-vlm) shift kernels into the next range under nsys' rule
    assert differ == (4 if run.name == "ocr-vlm-eager" else 0)


def test_ocr_vlm_eager_vs_sdpa() -> None:
    eager, sdpa = (manifest(ROOT / "examples" / "runs" / f"ocr-vlm-{v}") for v in ("eager", "sdpa"))
    for man, impl in ((eager, "eager"), (sdpa, "sdpa")):
        assert man["stages"] == ["sam", "clip", "projector", "prefill", "decode"]
        assert man["params"]["attn_impl"] == impl and man["top_n"]["n"] == 20
        assert man["coverage"]["profiled"] == 20
        assert [p["name"] for p in man["phases"]] == ["nsys_profile", "nsys_export", "nsys_stats", "top_n",
                                                       "ncu_profile", "ncu_export"]  # one ncu model run
    # eager attention materialises the score matrix: a float softmax kernel runs in SAM; sdpa has none
    def sam(man: dict) -> set[str]:
        return {k["short_name"] for k in man["top_n"]["stages"]["sam"]}
    assert "cunn_SoftMaxForwardReg" in sam(eager)
    assert "cunn_SoftMaxForwardReg" not in sam(sdpa)


def test_vit_sweep_report_lists_every_run() -> None:
    doc = yaml.safe_load((VIT / "report.yaml").read_text())
    (version,) = doc["versions"]
    assert version["id"] == "sweep"
    assert [c["params"] for c in version["sweep"]] == [
        {"image_size": s, "batch": b} for s in (224, 448) for b in (1, 4)]
    for config in version["sweep"]:
        (run,) = config["runs"]
        man = manifest(VIT / run)
        assert {k: man["params"][k] for k in config["params"]} == config["params"]


def test_gemm_tensor_flop_is_2mnk() -> None:
    run = ROOT / "tests" / "data" / "gemm"
    man = manifest(run)
    assert (man["params"]["m"], man["params"]["n"], man["params"]["k"]) == (4096, 4096, 4096)
    with lzma.open(run / "ncu" / "raw.csv.xz", "rt", newline="") as fh:
        header, units, *rows = list(csv.reader(fh))
    (row,) = rows  # one launch of one kernel
    value = dict(zip(header, row))
    assert value["Kernel Name"] == man["top_n"]["all"][0]["name"]
    assert int(value["sm__ops_path_tensor_src_bf16_dst_fp32.sum"].replace(",", "")) == 2 * 4096**3


def test_generator_reads_every_ncu_pass_of_a_run(tmp_path: Path) -> None:
    """The retry pass (ncu/report-retry.ncu-rep) is read with the first: every profiled launch of the
    manifest is among the version's kernel metrics, with the stage the capture recorded."""
    from generator.pipeline.config import load_report
    from generator.pipeline.inputs import InputCache, version_inputs

    run = ROOT / "examples" / "runs" / "ocr-vlm-eager-v2"
    report = tmp_path / "report.yaml"
    report.write_text(yaml.safe_dump({"id": "r", "title": {"en": "r", "zh": "r"}, "versions": [
        {"id": "v1", "title": {"en": "v1", "zh": "v1"}, "date": "2026-11-22", "runs": [str(run)]}]}))
    with InputCache() as cache:
        metrics = version_inputs(load_report(report).versions[0], cache, report, 0).kernel_metrics
    man = manifest(run)
    assert len(metrics) == man["coverage"]["profiled_launches"] == 146
    assert [launch["pass"] for launch in man["ncu_launches"]].count(2) == 2
    assert sorted(metrics["stage"]) == sorted(launch["stage"] for launch in man["ncu_launches"])


def test_h100_captures_back_to_back_landed_and_new_ncu_run() -> None:
    """Two captures of the README's command on one H100, back to back: the landed code (2d2e93f) and
    the ncu run as capture.targets.ncu_params has it with operator windows only (one warm-up fewer,
    no module ranges), nsys stats beside top-N. Both profiled every target in one ncu run; the new
    ncu pass took 30.7 s less, the whole capture 37.6 s less (252.6 s → 215.0 s by the device job's
    clock, which starts before the manifest is created)."""
    data = ROOT / "tests" / "data" / "capture-h100-ab"
    landed, new = (json.loads(lzma.decompress((data / f"{n}.manifest.json.xz").read_bytes())) for n in ("landed", "new"))
    for man in (landed, new):
        assert man["environment"]["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3" and man["status"] == "ok"
        assert man["coverage"]["stage_pairs"] == man["coverage"]["stage_pairs_profiled"] == 79
        assert len(man["ncu_launches"]) == 87 and all(t["window"].get("operator_call") for t in man["ncu_targets"])
    phases = [{p["name"]: p for p in man["phases"]} for man in (landed, new)]
    assert phases[0]["ncu_export"]["end"] < new["created"]  # one after the other
    workers = [p["ncu_profile"]["commands"][0] for p in phases]
    assert [w[w.index("capture.worker"):w.index("--profile-plan")] for w in workers] == [
        ["capture.worker", "--workload", "ocr-vlm"],
        ["capture.worker", "--workload", "ocr-vlm", "--warmup", "1", "--module-depth", "0"]]
    assert [p["ncu_profile"]["seconds"] for p in phases] == [175.327, 144.671]
    old, now = phases
    assert old["nsys_stats"]["end"] < old["top_n"]["start"]  # one after the other, then side by side
    assert now["nsys_stats"]["start"] <= now["top_n"]["start"] < now["nsys_stats"]["end"]


def test_h100_captures_back_to_back_three_and_six_overhead_runs() -> None:
    """The README's command on one H100, back to back, with the default 3 overhead runs and with
    ``--overhead-runs 6``: the traced overhead iterations are what the nsys pass, its export and its
    stats shrank by (the whole capture 225.5 s → 209.7 s by the device job's clock); the ncu pass is
    the same run of the same code, and it differs only by the host's noise."""
    data = ROOT / "tests" / "data" / "capture-h100-ab"
    three, six = (json.loads(lzma.decompress((data / f"overhead-runs-{n}.manifest.json.xz").read_bytes()))
                  for n in (3, 6))
    phases = [{p["name"]: p for p in man["phases"]} for man in (three, six)]
    assert phases[0]["ncu_export"]["end"] < six["created"]  # one after the other
    nsys = [p["nsys_profile"]["commands"][0] for p in phases]
    assert [w[w.index("--overhead-runs") + 1] for w in nsys] == ["3", "6"]
    assert [man["module_overhead"]["runs"] for man in (three, six)] == [3, 6]
    for man in (three, six):
        assert man["status"] == "ok" and man["environment"]["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3"
        assert man["coverage"]["stage_pairs"] == man["coverage"]["stage_pairs_profiled"]
        assert man["coverage"]["profiled"] == man["coverage"]["top_n"] == 20
        assert set(man["module_overhead"]["stages"]) == {"sam", "clip", "projector", "prefill", "decode"}
    seconds = {name: [p[name]["seconds"] for p in phases] for name in ("nsys_profile", "nsys_export", "nsys_stats")}
    assert seconds == {"nsys_profile": [34.177, 41.9], "nsys_export": [2.632, 4.942], "nsys_stats": [3.438, 5.034]}


def test_h100_captures_back_to_back_landed_96c7eb3_and_f261419() -> None:
    """The README's command on one H100, back to back: the code landed at 96c7eb3 and f261419 (3
    overhead runs; the workload's import, the environment probe and the tools' versions side by
    side). The whole capture took 249.98 s and 219.85 s by the device job's clock."""
    data = ROOT / "tests" / "data" / "capture-h100-ab"
    landed, new = (json.loads(lzma.decompress((data / f"session-{n}.manifest.json.xz").read_bytes()))
                   for n in ("landed", "new"))
    phases = [{p["name"]: p for p in man["phases"]} for man in (landed, new)]
    assert phases[0]["ncu_export"]["end"] < new["created"]  # one after the other
    for man in (landed, new):
        assert man["status"] == "ok" and man["environment"]["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3"
        assert man["coverage"]["stage_pairs"] == man["coverage"]["stage_pairs_profiled"] == 79
        assert man["coverage"]["profiled_launches"] == 87 and man["tools"]["ncu"]["version"].startswith("Version 2025.3.1")
    assert [man["module_overhead"]["runs"] for man in (landed, new)] == [6, 3]
    seconds = {name: [p[name]["seconds"] for p in phases] for name in ("nsys_profile", "nsys_export", "ncu_profile")}
    assert seconds == {"nsys_profile": [53.918, 35.77], "nsys_export": [6.989, 4.03], "ncu_profile": [169.572, 163.373]}


def test_timed_module_overhead_can_exceed_the_direct_figure() -> None:
    """The ocr-vlm capture of 96c7eb3 on an H100 (6 overhead runs): in sam, clip and projector the
    timed difference is several spreads above the direct figure, so the direct one is no bound."""
    man = json.loads(lzma.decompress((ROOT / "tests/data/capture-h100-ab/timed-overhead.manifest.json.xz").read_bytes()))
    stages = man["module_overhead"]["stages"]
    assert man["module_overhead"]["runs"] == 6
    for stage in ("sam", "clip", "projector"):
        figure = stages[stage]
        assert figure["timed_pct"] - figure["direct_pct"] > 2 * figure["spread_pct"]
    assert [round(stages[s]["timed_pct"], 1) for s in ("sam", "clip", "projector")] == [15.3, 25.1, 15.9]
    assert [round(stages[s]["direct_pct"], 1) for s in ("sam", "clip", "projector")] == [0.3, 2.2, 0.8]


def test_ncu_pass_time_is_one_replay_step_per_launch() -> None:
    """The capture's own ncu command on an H100, its output timestamped as it came: each of the 86
    launches spends one step of its 14 passes, always between the same two progress marks, for
    1.0–1.7 s (112.6 s of 135.7 s), and the rest of its passes for 0.22–0.66 s (bench/CAPTURE.md)."""
    data = ROOT / "tests/data/ncu-replay-h100"
    spec = importlib.util.spec_from_file_location("ncu_replay_trace", data / "trace.py")
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)  # the runner that printed states.txt reads the trace as it read ncu's output
    trace = json.loads(lzma.decompress((data / "progress.json.xz").read_bytes()))
    launches = runner.launch_marks(trace["events"])
    assert trace["rc"] == 0 and len(launches) == 86
    steps = [[b - a for a, b in zip(marks, marks[1:])] for marks in launches]
    assert {len(s) for s in steps} == {11} and {s.index(max(s)) for s in steps} == {3}
    slowest = [max(s) for s in steps]
    rest = [sum(s) - max(s) for s in steps]
    assert min(slowest) >= 1.0 and max(slowest) <= 1.7 and min(rest) >= 0.22 and max(rest) <= 0.66
    assert round(sum(slowest), 1) == 112.6 and round(sum(map(sum, steps)), 1) == 135.7
    assert sum("100% - 14 passes" in text for _, text in trace["events"]) == 86


def test_capture_imports_without_the_zstd_backport() -> None:
    """GPU hosts run the capture without the generator's dependencies: importing it reads no .zst
    file and needs no zstd module (generator.readers.inflate imports one at the first .zst)."""
    code = "import sys; sys.modules['backports'] = None; import capture.run, capture.targets, capture.topn, capture.cli"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
