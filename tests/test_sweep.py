"""Sweep pages: every per-config number recomputed from the inputs (SQL on the nsys export, ncu's
own report API and the raw CSV), deltas, launch-overhead findings and the built EN/ZH page."""
from __future__ import annotations

import csv
import json
import lzma
import math
import shutil
import sqlite3
import statistics
from dataclasses import dataclass, replace
from pathlib import Path

import ncu_report
import pytest
import yaml

from generator.analyses.sweep import BREAK_EVEN_MIN_EXTRA_PCT, LAUNCH_BOUND_IDLE_PCT, SHORT_KERNEL_NS
from generator.cli import main
from generator.errors import InputError
from generator.pipeline.config import load_report
from generator.pipeline.inputs import InputCache
from generator.pipeline.sweep_inputs import sweep_version

H200 = Path(__file__).parent / "data" / "h200-small"
SQLITE = H200 / "small_vlm.nsys.sqlite.xz"
#: ncu metric behind each mean column of the configuration table
NCU_COLUMNS = {
    "sm_throughput_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "memory_throughput_pct": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "achieved_occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "l1_hit_rate_pct": "l1tex__t_sector_hit_rate.pct",
    "l2_hit_rate_pct": "lts__t_sector_hit_rate.pct",
}


@dataclass(frozen=True)
class Point:
    """One sweep config: its label, the NVTX stage of the nsys export it measures and its ncu file."""

    label: str
    sqlite: Path
    stage: str
    ncu: Path


#: The H200 capture's prefill and decode stages as a two-config sweep (prefill is the baseline).
H200_POINTS = (Point("prefill", SQLITE, "prefill", H200 / "small_vlm_prefill.ncu-rep.xz"),
               Point("decode", SQLITE, "decode", H200 / "small_vlm_decode_ncu_raw.csv.xz"))


ROOT = Path(__file__).parent.parent
VIT_REPORT = ROOT / "examples" / "vit-sweep" / "report.yaml"
VIT_RUNS = ROOT / "examples" / "runs" / "vit-sweep"
#: The committed vit sweep (H200): image size 224/448 × batch 1/4, stage "vit", one run each.
VIT_POINTS = tuple(Point(f"{size} px, batch {batch}", run / "nsys" / "report.sqlite.xz", "vit",
                         run / "ncu" / "report.ncu-rep.xz")
                   for size in (224, 448) for batch in (1, 4) for run in [VIT_RUNS / f"image-size{size}_batch{batch}"])


def _plain(path: Path, tmp: Path) -> Path:
    if path.suffix != ".xz":
        return path
    out = tmp / f"{abs(hash(str(path)))}-{path.stem}"
    if not out.exists():
        with lzma.open(path) as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst)
    return out


def nsys_figures(sqlite: Path, stage: str) -> dict[str, float]:
    """Launches of ``stage`` (kernels whose runtime call starts in one of its NVTX ranges, same
    thread), their time, names, per-name medians and the idle gaps per range instance, in plain SQL
    + Python."""
    con = sqlite3.connect(sqlite)
    ranges = con.execute("SELECT start, end, globalTid FROM NVTX_EVENTS WHERE eventType = 59 AND text = ?",
                         (stage,)).fetchall()
    durations: dict[str, list[int]] = {}
    gaps: list[int] = []
    span = 0
    for start, end, tid in ranges:
        kernels = sorted(con.execute(
            """SELECT k.start, k.end, s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r
               JOIN CUPTI_ACTIVITY_KIND_KERNEL AS k
                 ON k.correlationId = r.correlationId AND k.globalPid >> 24 = r.globalTid >> 24
               JOIN StringIds AS s ON s.id = k.demangledName
               WHERE r.globalTid = ? AND r.start BETWEEN ? AND ?""", (tid, start, end)).fetchall())
        if not kernels:
            continue
        reach = kernels[0][1]
        for k_start, k_end, name in kernels:
            durations.setdefault(name, []).append(k_end - k_start)
            if k_start > reach:
                gaps.append(k_start - reach)
            reach = max(reach, k_end)
        span += max(k[1] for k in kernels) - kernels[0][0]
    con.close()
    short = {n: d for n, d in durations.items() if statistics.median(d) < SHORT_KERNEL_NS}
    launches = sum(len(d) for d in durations.values())
    short_launches = sum(len(d) for d in short.values())
    gpu_time = sum(sum(d) for d in durations.values())
    return {
        "gpu_time_ns": gpu_time, "launches": launches, "kernels": len(durations),
        "span_ns": span, "idle_ns": sum(gaps), "idle_count": len(gaps), "idle_med_ns": statistics.median(gaps),
        "short_kernels": len(short), "short_launches": short_launches,
        "short_time_ns": sum(sum(d) for d in short.values()),
        "short_mean_ns": sum(sum(d) for d in short.values()) / short_launches,
    }


def ncu_means(path: Path, tmp: Path) -> dict[str, float]:
    """Mean of each NCU_COLUMNS metric over the file's launches: ncu_report for reports, csv for raw CSVs."""
    values: dict[str, list[float]] = {k: [] for k in NCU_COLUMNS}
    if ".ncu-rep" in path.name:
        report = ncu_report.load_report(str(_plain(path, tmp)))
        for r in range(report.num_ranges()):
            rng = report.range_by_idx(r)
            for a in range(rng.num_actions()):
                action = rng.action_by_idx(a)
                for key, metric in NCU_COLUMNS.items():
                    values[key].append(action.metric_by_name(metric).as_double())
    else:
        with lzma.open(path, "rt", newline="") as fh:
            rows = list(csv.reader(fh))
        header = rows[0]
        for row in rows[2:]:
            for key, metric in NCU_COLUMNS.items():
                values[key].append(float(row[header.index(metric)]))
    return {k: statistics.mean(v) for k, v in values.items()} | {"profiled_launches": len(values["sm_throughput_pct"])}


def expected(points: tuple[Point, ...], tmp: Path) -> dict[str, dict[str, float]]:
    out = {}
    for p in points:
        row = nsys_figures(_plain(p.sqlite, tmp), p.stage) | ncu_means(p.ncu, tmp)
        row["idle_pct"] = row["idle_ns"] * 100 / row["span_ns"]
        row["launches_per_ms"] = row["launches"] * 1e6 / row["span_ns"]
        row["short_launch_pct"] = row["short_launches"] * 100 / row["launches"]
        row["short_time_pct"] = row["short_time_ns"] * 100 / row["gpu_time_ns"]
        row["launch_cost_ns"] = row["idle_med_ns"] + row["short_mean_ns"]
        out[p.label] = row
    return out


def write_report(folder: Path, points: tuple[Point, ...], baseline: str | None = None) -> Path:
    """A report.yaml whose one version is a sweep over ``points`` (explicit nsys + ncu inputs)."""
    sweep = [{"label": p.label, "params": {"stage": p.stage}, **({"baseline": True} if p.label == baseline else {}),
              "inputs": {"nsys": [{"path": str(p.sqlite), "stage": p.stage}], "ncu": [str(p.ncu)]}}
             for p in points]
    report = {"id": "sweep-test", "title": {"en": "Sweep", "zh": "扫描"},
              "versions": [{"id": "v1", "title": {"en": "V1", "zh": "第一版"}, "date": "2026-11-21",
                            "sweep": sweep}]}
    path = folder / "report.yaml"
    path.write_text(yaml.safe_dump(report, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def analyzed(report: Path):
    config = load_report(report)
    with InputCache() as cache:
        return sweep_version(config.versions[0], cache, report, 0)


@pytest.fixture(scope="module")
def h200(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sweep")
    report = write_report(tmp, H200_POINTS)
    inputs, sweep = analyzed(report)
    return report, inputs, sweep, expected(H200_POINTS, tmp)


def test_config_table_matches_the_inputs(h200):
    _, _, sweep, want = h200
    table = sweep.configs.set_index("label")
    assert list(table.index) == ["prefill", "decode"] and sweep.baseline == "prefill"
    assert table["baseline"].tolist() == [True, False]
    for label, row in want.items():
        got = table.loc[label]
        for key, value in row.items():
            assert got[key] == pytest.approx(value), (label, key)
    # the real numbers, for the record: decode runs 6600 launches, 13.87 ms of kernels, 99 % idle
    assert table.at["decode", "launches"] == 6600 and table.at["prefill", "launches"] == 783
    assert table.at["decode", "gpu_time_ns"] == 13_873_072 and table.at["prefill", "profiled_launches"] == 30


def test_deltas_against_the_baseline(h200):
    _, _, sweep, want = h200
    deltas = sweep.deltas.set_index("metric")
    assert set(sweep.deltas["label"]) == {"decode"}
    for metric, d in deltas.iterrows():
        before, after = want["prefill"][metric], want["decode"][metric]
        assert (d["baseline"], d["value"], d["abs"]) == pytest.approx((before, after, after - before)), metric
        assert d["rel_pct"] == pytest.approx((after - before) * 100 / before), metric


def test_launch_overhead_findings(h200):
    _, _, sweep, want = h200
    bound = {f.evidence["label"]: f.evidence for f in sweep.findings if f.id == "sweep_launch_bound"}
    assert set(bound) == {label for label, row in want.items() if row["idle_pct"] >= LAUNCH_BOUND_IDLE_PCT}
    assert set(bound) == {"prefill", "decode"}  # the GPU idles > 98 % of both stages' spans
    assert bound["decode"]["idle_med_ns"] == pytest.approx(want["decode"]["idle_med_ns"])
    assert bound["decode"]["threshold_pct"] == LAUNCH_BOUND_IDLE_PCT
    # decode launches more kernels AND spends more GPU time on them: no trade-off, no break-even
    assert want["decode"]["launches"] > want["prefill"]["launches"]
    assert want["decode"]["gpu_time_ns"] > want["prefill"]["gpu_time_ns"]
    assert not [f for f in sweep.findings if f.id == "sweep_break_even"]


def test_sweep_only_version_shows_its_baseline(tmp_path, h200):
    _, inputs, _, _ = h200
    # the other pages: the baseline config; its one stage is also "all stages" (no whole-capture summary)
    summary = inputs.kernel_summary
    assert set(summary["stage"]) == {"all", "prefill"}
    whole, prefill = (summary[summary["stage"] == s].drop(columns="stage").reset_index(drop=True)
                      for s in ("all", "prefill"))
    assert whole[["name", "count", "total_ns"]].equals(prefill[["name", "count", "total_ns"]])
    report = write_report(tmp_path, H200_POINTS, baseline="decode")
    inputs, sweep = analyzed(report)
    assert sweep.baseline == "decode" and set(inputs.kernel_summary["stage"]) == {"all", "decode"}
    assert set(sweep.deltas["label"]) == {"prefill"}
    assert sweep.deltas.set_index("metric").at["launches", "abs"] == 783 - 6600


@pytest.mark.parametrize(("edit", "problem"), [
    (lambda v: v["sweep"][1].update(label="prefill"), "sweep labels must be unique"),
    (lambda v: [p.update(baseline=True) for p in v["sweep"]], "at most one sweep config can be the baseline"),
    (lambda v: v["sweep"][1]["inputs"]["nsys"][0].update(stage="nowhere"), "NVTX range 'nowhere' not found"),
])
def test_bad_sweeps_are_input_errors(tmp_path, capsys, edit, problem):
    report = write_report(tmp_path, H200_POINTS)
    data = yaml.safe_load(report.read_text())
    edit(data["versions"][0])
    report.write_text(yaml.safe_dump(data, allow_unicode=True))
    with pytest.raises(InputError, match=problem):
        analyzed(report)
    assert main(["build", str(report), "--out", str(tmp_path / "site"), "--src", str(tmp_path / "src")]) == 2
    assert "Traceback" not in capsys.readouterr().err and not (tmp_path / "site").exists()


@pytest.fixture(scope="module")
def built(h200, tmp_path_factory):
    report, _, _, want = h200
    root = tmp_path_factory.mktemp("sweep-site")
    assert main(["build", str(report), "--out", str(root / "site"), "--src", str(root / "src")]) == 0
    return root / "site" / "v1", root / "src" / "sweep-test" / "v1", want


def assert_page(src: Path, want: dict[str, dict[str, float]], baseline: str, params: dict[str, str]) -> None:
    """The built sweep page (EN + ZH sources) shows ``want``'s numbers as the page formats them."""
    nav = yaml.safe_load((src / "mkdocs.yml").read_text(encoding="utf-8").split("\ntheme:")[0])["nav"]
    assert nav[:2] == ["index.md", "sweep.md"]
    docs = src / "docs"
    for lang, mark, bound in (("en", " (baseline)", "launch-bound"), ("zh", "（基线）", "受启动开销限制")):
        page = (docs / ("sweep.md" if lang == "en" else "sweep.zh.md")).read_text(encoding="utf-8")
        assert (docs / "assets" / "charts" / f"sweep-metrics-{lang}.svg").is_file()
        for label, row in want.items():
            cells = [f"{row['gpu_time_ns'] / 1e6:,.3f}", f"{row['kernels']:,d}", f"{row['launches']:,d}",
                     *(f"{row[k]:,.2f}" for k in ("sm_throughput_pct", "memory_throughput_pct",
                                                  "achieved_occupancy_pct", "l1_hit_rate_pct", "l2_hit_rate_pct")),
                     f"{row['profiled_launches']:,d}"]
            first = f"| {label}{mark if label == baseline else ''} | {params[label]} |"
            assert any(line.startswith(first) and line.endswith(f" | {' | '.join(cells)} |")
                       for line in page.splitlines()), (lang, label)
            overhead = [f"{row['launches_per_ms']:,.2f}", f"{row['short_kernels']:,d}",
                        f"{row['short_launch_pct']:,.2f}",
                        f"{row['short_time_pct']:,.2f}", f"{row['idle_count']:,d}", f"{row['idle_ns'] / 1e6:,.3f}",
                        f"{row['idle_pct']:,.2f}", f"{row['idle_med_ns'] / 1e3:,.2f}",
                        f"{row['short_mean_ns'] / 1e3:,.2f}", f"{row['launch_cost_ns'] / 1e3:,.2f}"]
            assert f"| {label} | {' | '.join(overhead)} |" in page, (lang, label)
            if label != baseline:
                before, after = want[baseline]["gpu_time_ns"], want[label]["gpu_time_ns"]
                change = f"{(after - before) / 1e6:+,.3f} | {(after - before) * 100 / before:+,.2f} |"  # % in the header
                assert f"| {before / 1e6:,.3f} | {after / 1e6:,.3f} | {change}" in page, (lang, label)
        launch_bound = sum(row["idle_pct"] >= LAUNCH_BOUND_IDLE_PCT for row in want.values())
        assert page.count(bound) == launch_bound


def test_sweep_page_in_the_built_site(built):
    site, src, want = built
    assert (site / "sweep.html").is_file() and (site / "zh" / "sweep.html").is_file()
    assert_page(src, want, "prefill", {"prefill": "stage=prefill", "decode": "stage=decode"})


@pytest.fixture(scope="module")
def vit(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vit")
    inputs, sweep = analyzed(VIT_REPORT)
    return inputs, sweep, expected(VIT_POINTS, tmp)


def test_vit_sweep_matches_its_runs(vit):
    inputs, sweep, want = vit
    table = sweep.configs.set_index("label")
    assert list(table.index) == list(want) and sweep.baseline == "224 px, batch 1"
    for label, row in want.items():
        for key, value in row.items():
            assert table.loc[label][key] == pytest.approx(value), (label, key)
    assert table.loc["224 px, batch 1", "params"] == {"image_size": 224, "batch": 1}
    # bigger images and batches: more GPU time for (almost) the same launches
    gpu = table["gpu_time_ns"]
    assert gpu["224 px, batch 1"] < gpu["224 px, batch 4"] < gpu["448 px, batch 4"]
    assert gpu["224 px, batch 1"] < gpu["448 px, batch 1"] < gpu["448 px, batch 4"]
    assert set(inputs.kernel_summary["stage"]) >= {"vit"}  # the other pages: the baseline run


def test_vit_launch_overhead(vit):
    _, sweep, want = vit
    bound = {f.evidence["label"] for f in sweep.findings if f.id == "sweep_launch_bound"}
    assert bound == {label for label, row in want.items() if row["idle_pct"] >= LAUNCH_BOUND_IDLE_PCT}
    assert "224 px, batch 1" in bound  # the GPU idles most of the batch-1 forward pass
    launches = [row["launches"] for row in want.values()]
    assert (max(launches) - min(launches)) * 100 / min(launches) < BREAK_EVEN_MIN_EXTRA_PCT
    assert not [f for f in sweep.findings if f.id == "sweep_break_even"]  # same launches: nothing traded


def test_vit_sweep_page(vit, tmp_path):
    _, _, want = vit
    assert main(["build", str(VIT_REPORT), "--out", str(tmp_path / "site"), "--src", str(tmp_path / "src")]) == 0
    params = {f"{s} px, batch {b}": f"image\\_size={s}, batch={b}" for s in (224, 448) for b in (1, 4)}
    src = tmp_path / "src" / "vit-sweep" / "sweep"
    assert_page(src, want, "224 px, batch 1", params)
    with open(src / "docs" / "data" / "sweep.csv", newline="", encoding="utf-8") as fh:
        rows = {row["label"]: row for row in csv.DictReader(fh)}
    assert list(rows) == list(want)
    for label, row in rows.items():
        size, batch = (int(w.strip(" pxbatch")) for w in label.split(","))
        assert (int(row["param.image_size"]), int(row["param.batch"]), row["stages"]) == (size, batch, "vit")
        for key in ("gpu_time_ns", "launches", "idle_med_ns", "sm_throughput_pct", "launch_cost_ns"):
            assert float(row[key]) == pytest.approx(want[label][key]), (label, key)
    assert "data/sweep.csv" in (src / "docs" / "downloads.zh.md").read_text(encoding="utf-8")


def test_break_even_reproduces_seed_002():
    """Seed 002's nsys numbers at is=224: baseline 6,856 launches / 154.34 ms of GPU time, token
    reduction 7,422 launches / 82.39 ms, at its ~8 µs per launch: 566 × 8 µs = 4.53 ms of overhead
    against 71.95 ms of saved work, so the extra launches pay off (break-even at ~8,994 launches)."""
    from generator.analyses.sweep import break_even

    def row(label: str, launches: int, gpu_ms: float) -> dict:
        return {"label": label, "launches": launches, "gpu_time_ns": gpu_ms * 1e6, "launch_cost_ns": 8000.0,
                "idle_med_ns": 5000.0, "short_mean_ns": 3000.0, "span_ns": float("nan")}

    baseline, tr = row("baseline", 6856, 154.34), row("tr", 7422, 82.39)
    (finding,) = break_even(baseline, tr)
    e = finding.evidence
    assert (e["more"], e["fewer"], e["extra_launches"]) == ("tr", "baseline", 566)
    assert e["extra_pct"] == pytest.approx(566 * 100 / 6856)  # ≥ BREAK_EVEN_MIN_EXTRA_PCT
    assert e["saved_ns"] == pytest.approx(71.95e6) and e["overhead_ns"] == pytest.approx(4.528e6)
    assert e["net_ns"] == pytest.approx(71.95e6 - 4.528e6) and e["pays_off"] is True
    assert e["break_even_launches"] == pytest.approx(71.95e6 / 8000)
    assert e["span_change_ns"] != e["span_change_ns"]  # no timeline given: unknown (NaN)
    assert break_even(tr, baseline)[0].evidence.keys() == e.keys()  # the order of the two configs does not matter
    assert break_even(tr, baseline)[0].evidence["net_ns"] == e["net_ns"]
    # more launches and more GPU time (the H200 decode stage vs prefill): nothing to trade, no finding
    assert break_even(row("prefill", 783, 3.25), row("decode", 6600, 13.87)) == []


def test_break_even_text_in_both_languages(h200):
    """The page quotes a break-even finding's evidence (the seed 002 numbers added to the H200 sweep)."""
    from generator.analyses.sweep import break_even
    from generator.render.pages import build_charts, render_page
    from generator.render.translations import translator
    from tests.helpers_pages import example_result

    _, _, sweep, _ = h200
    rows = {r["label"]: r for r in sweep.configs.to_dict("records")}
    seed = break_even({**rows["prefill"], "launches": 6856, "gpu_time_ns": 154.34e6},
                      {**rows["decode"], "launches": 7422, "gpu_time_ns": 82.39e6})
    result, meta = example_result()
    result = replace(result, sweep=replace(sweep, findings=sweep.findings + seed))
    cost = rows["decode"]["launch_cost_ns"]
    for lang, words in (("en", "the extra launches pay off"), ("zh", "额外启动是值得的")):
        page = render_page("sweep", result, meta, lang, build_charts(result, translator(lang)))
        text = next(line for line in page.splitlines() if words in line)
        assert "566" in text and f"{cost / 1e3:,.2f}" in text and f"{566 * cost / 1e3:,.1f}" in text
        assert f"{71.95e6 / cost:,.0f}" in text  # break-even launches


def test_multi_stage_runs_leave_the_median_gap_unknown(tmp_path):
    """ocr-vlm runs measure five stages: GPU time, launches and gaps add up over them (SQL per stage),
    but a median of five medians is not the median gap, so it and the per-launch cost stay unknown."""
    runs = ROOT / "examples" / "runs"
    sweep = [{"label": impl, "params": {"attn_impl": impl}, "runs": [str(runs / f"ocr-vlm-{impl}")]}
             for impl in ("sdpa", "eager")]
    report = tmp_path / "report.yaml"
    report.write_text(yaml.safe_dump({"id": "ocr", "title": {"en": "O", "zh": "O"}, "versions": [
        {"id": "v1", "title": {"en": "V", "zh": "V"}, "date": "2026-11-22", "sweep": sweep}]}))
    _, result = analyzed(report)
    table = result.configs.set_index("label")
    for impl in ("sdpa", "eager"):
        stages = json.loads((runs / f"ocr-vlm-{impl}" / "manifest.json").read_text())["stages"]
        assert table.at[impl, "stages"] == stages and len(stages) == 5
        sqlite = _plain(runs / f"ocr-vlm-{impl}" / "nsys" / "report.sqlite.xz", tmp_path)
        parts = [nsys_figures(sqlite, stage) for stage in stages]
        for key in ("gpu_time_ns", "launches", "span_ns", "idle_ns", "idle_count", "short_launches"):
            assert table.at[impl, key] == pytest.approx(sum(p[key] for p in parts)), (impl, key)
        assert math.isnan(table.at[impl, "idle_med_ns"]) and math.isnan(table.at[impl, "launch_cost_ns"])
    assert not [f for f in result.findings if f.id == "sweep_break_even"]  # cost unknown (and no trade-off)
    from generator.render.pages import build_charts, render_page
    from generator.render.translations import translator
    from tests.helpers_pages import example_result

    version, meta = example_result()
    version = replace(version, sweep=result)
    page = render_page("sweep", version, meta, "en", build_charts(version, translator("en")))
    assert page.count("median unknown;") == sum(1 for f in result.findings if f.id == "sweep_launch_bound") == 2
