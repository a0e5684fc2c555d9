"""The facts the H200 captures of 2026-11-29 record for the Hardware / NPU section and the Overview
(L2 capacity, NVML energy per stage, why no instrumentation cost), on one site of three versions:
ocr-vlm-sdpa-h200-a and compiled-block-h200 (new manifests) and ocr-vlm-sdpa-h200 (captured before
energy existed). Each figure is checked against the manifest's own numbers or ncu's raw CSV."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from capture.workloads.energy import Energy
from generator.cli import main

RUNS = Path(__file__).parent.parent / "examples" / "runs"
VERSIONS = {"new": "ocr-vlm-sdpa-h200-a", "old": "ocr-vlm-sdpa-h200", "compiled": "compiled-block-h200"}
#: ncu's per-launch NVTX column: the default domain's range is the stage.
NVTX_COLUMN = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """version → its Markdown sources, from one build."""
    tmp = tmp_path_factory.mktemp("h200-facts")
    versions = "\n".join(f"  - {{id: {v}, title: {{en: {v}, zh: {v}}}, date: 2026-11-29, runs: [{RUNS / run}]}}"
                         for v, run in VERSIONS.items())
    report = tmp / "report.yaml"
    report.write_text(f"id: facts\ntitle: {{en: Facts, zh: 事实}}\nversions:\n{versions}\n", encoding="utf-8")
    assert main(["build", str(report), "--out", str(tmp / "site"), "--src", str(tmp / "src")]) == 0
    return {v: tmp / "src" / "facts" / v / "docs" for v in VERSIONS}


def manifest(version: str) -> dict:
    return json.loads((RUNS / VERSIONS[version] / "manifest.json").read_text(encoding="utf-8"))


def line(page: Path, start: str) -> str:
    [found] = [x for x in page.read_text(encoding="utf-8").splitlines() if start in x]
    return found


def test_l2_sizing_against_the_recorded_capacity(docs: dict[str, Path]) -> None:
    """60 MiB of L2 (62,914,560 bytes, torch's device attribute); ncu's raw CSV, per (stage, kernel)
    the mean DRAM bytes of its profiled launches: 75 kernels, 5 above the capacity."""
    l2 = manifest("new")["environment"]["gpus"][0]["l2_cache_bytes"]
    assert l2 == 62914560 == 60 * 2**20
    raw = pd.read_csv(RUNS / VERSIONS["new"] / "ncu" / "raw.csv.xz", low_memory=False).iloc[1:]  # row 1: units
    launches = pd.DataFrame({"stage": raw[NVTX_COLUMN].str.extract(r"<default domain>:([^:]+):")[0],
                             "kernel": raw["Kernel Name"],
                             "bytes": pd.to_numeric(raw["dram__bytes.sum"].str.replace(",", ""))})
    mean = launches.groupby(["stage", "kernel"])["bytes"].mean()
    over = int((mean > l2).sum())
    assert (len(mean), over) == (75, 5)
    text = line(docs["new"] / "findings.md", "**L1 / L2 sizing.**")
    assert f"The largest DRAM traffic per launch of a profiled kernel (the mean of its profiled launches) is " \
           f"{round(mean.max() / 2**20, 2)} MiB" in text
    assert (f"The L2 holds 60.0 MiB (62,914,560 bytes, the capture's device attribute). Of the {len(mean)} profiled "
            f"kernels with a DRAM count, those moving more than that per launch: {over} (") in text
    assert f"whose working sets exceed the L2; those moving at most that: {len(mean) - over} (" in text
    assert "Formula: DRAM bytes per launch > L2 capacity implies working set > L2." in text
    assert "L2 容量为 60.0 MiB（62,914,560 字节" in line(docs["new"] / "findings.zh.md", "**L1 / L2 容量。**")


def test_power_per_stage_from_nvml(docs: dict[str, Path]) -> None:
    """decode: 100.135 J in 0.713 s (J / s = 140.4 W), 32 tokens generated: 3.13 J per token; the
    other four stages under 0.1 s, named as not resolved with their seconds."""
    energy, tokens = manifest("new")["energy"], manifest("new")["tokens"]["generated"]
    decode = energy["stages"]["decode"]
    assert (decode["joules"], round(decode["seconds"], 3), tokens) == (100.135, 0.713, 32)
    watts = round(decode["joules"] / decode["seconds"], 1)
    assert watts == round(decode["watts"], 1) == 140.4
    per_token = round(decode["joules"] / tokens, 2)
    assert per_token == 3.13
    text = line(docs["new"] / "findings.md", "**Power (hardware).**")
    assert f"decode 100.1 J in 0.713 s, {watts} W average (J / s); {per_token} J per generated token " \
           f"(decode's joules / {tokens} tokens generated)." in text
    unresolved = [f"{s} ({round(v['seconds'], 3)} s)" for s, v in energy["stages"].items() if not v["resolved"]]
    assert unresolved == ["sam (0.019 s)", "clip (0.012 s)", "projector (0.003 s)", "prefill (0.025 s)"]
    assert f"Not resolved (shorter than the counter's refresh, about 0.1 s): {', '.join(unresolved)}." in text
    assert text.endswith("the energy of this program as run by its harness, not of its kernels alone.")
    zh = line(docs["new"] / "findings.zh.md", "**功耗（硬件）。**")
    assert "decode 在 0.713 s 内消耗 100.1 J，平均 140.4 W（J / s）；每个生成的 token 3.13 J" in zh
    # a workload that generates no tokens quotes no joules per token; its only stage lasted 5 ms
    compiled = line(docs["compiled"] / "findings.md", "**Power (hardware).**")
    assert manifest("compiled")["tokens"]["generated"] is None and "token" not in compiled
    assert "no stage lasted long enough to be resolved. Not resolved" in compiled and "block (0.005 s)" in compiled


def test_old_manifest_builds_with_not_recorded(docs: dict[str, Path]) -> None:
    """ocr-vlm-sdpa-h200 predates energy, fidelity and the L2 attribute: the page says so."""
    old = manifest("old")
    assert not {"energy", "fidelity", "tokens"} & set(old) and "l2_cache_bytes" not in old["environment"]["gpus"][0]
    findings = (docs["old"] / "findings.md").read_text(encoding="utf-8")
    assert "**Power: not recorded.** The inputs hold no energy record" in findings
    assert "The L2 capacity is not in this capture: compare these working sets with it." in findings
    assert "**功耗：未记录。**" in (docs["old"] / "findings.zh.md").read_text(encoding="utf-8")
    index = (docs["old"] / "index.md").read_text(encoding="utf-8")
    assert re.search(r"^\| Energy per stage \| not recorded \|$", index, re.M)
    assert re.search(r"^\| Fidelity check \| not recorded \|$", index, re.M)


def test_why_no_instrumentation_cost(docs: dict[str, Path]) -> None:
    """The new runs had module ranges (depth 5) and were captured with --overhead-runs 0; the
    compiled block had none (depth 0); the old run timed them (6 runs): its table is shown."""
    new, compiled = manifest("new"), manifest("compiled")
    assert new["module_overhead"] is None and new["module_ranges"]["depth"] == 5
    assert new["argv"][new["argv"].index("--overhead-runs") + 1] == "0"
    assert line(docs["new"] / "index.md", "instrumentation cost") == (
        "The instrumentation cost was not measured; the run had module ranges (depth 5) but was captured with "
        "--overhead-runs 0, which skips timing the stages with and without them.")
    assert "采集时使用了 --overhead-runs 0" in (docs["new"] / "index.zh.md").read_text(encoding="utf-8")
    assert compiled["module_ranges"]["depth"] == 0 and compiled["module_overhead"] is None
    assert line(docs["compiled"] / "index.md", "instrumentation cost") == \
        "No instrumentation cost to measure; the run had no module ranges (depth 0)."
    assert manifest("old")["module_overhead"]["runs"] == 6
    old = (docs["old"] / "index.md").read_text(encoding="utf-8")
    assert "The capture timed each stage 6 times with and without them" in old
    assert "No instrumentation cost" not in old and "instrumentation cost was not" not in old


def test_projection_reads_unresolved_stages(tmp_path: Path) -> None:
    """`project` on a manifest whose short stages have null joules: those stay unknown, decode's
    joules per token is the manifest's 100.135 J / 32 tokens."""
    out = tmp_path / "what-if.json"
    assert main(["project", "--chip", "b200", "--json", str(out), str(RUNS / VERSIONS["new"])]) == 0
    rows = {row["stage"]: row for row in json.loads(out.read_text(encoding="utf-8"))["energy"]}
    assert [s for s, row in rows.items() if row["joules"] is None] == ["sam", "clip", "projector", "prefill"]
    assert (rows["decode"]["joules"], rows["decode"]["tokens"]) == (100.135, 32)
    assert rows["decode"]["joules_per_token"] == pytest.approx(100.135 / 32)


def test_a_capture_without_nvml_says_so_in_one_line(tmp_path: Path) -> None:
    """A copy of compiled-block-h200 whose energy record is what the capture writes without NVML's
    counter (capture.workloads.energy on a CPU device): the page says "not measured", once."""
    record = Energy("cpu", lambda: None)
    record.enter("block")
    record.exit("block")
    energy = record.record()
    assert energy["source"] is None and energy["note"].startswith("no energy per stage: ")
    run = tmp_path / "compiled-no-nvml"
    shutil.copytree(RUNS / VERSIONS["compiled"], run)
    data = {**manifest("compiled"), "energy": energy}
    (run / "manifest.json").write_text(json.dumps(data), encoding="utf-8")
    assert main(["build", str(run), "--out", str(tmp_path / "site")]) == 0
    [docs] = (tmp_path / "site_src").glob("*/v1/docs")
    findings = (docs / "findings.md").read_text(encoding="utf-8")
    assert line(docs / "findings.md", "**Power").endswith(
        "**Power: not measured.** The capture could not read the GPU's NVML energy counter (the manifest's energy "
        "note says why), so this capture has no power figure.")
    assert findings.count("Power") == 1
    assert re.search(r"^\| Energy per stage \| not measured: the capture could not read NVML's energy counter ",
                     (docs / "index.md").read_text(encoding="utf-8"), re.M)
