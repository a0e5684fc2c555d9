"""Every chart has a note in both languages ("In short: …"), generated from the data: each note's
numbers are recomputed here from the version's data files (stage_time.csv, stage_libraries.csv,
top_kernels.csv, ncu_metrics.csv, modules.csv) on the llm-decode example (real H200 captures), and the English
and Chinese notes quote the same numbers."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from generator.analyses.modules import OUTSIDE
from generator.cli import main
from generator.metric_table import DISPLAY

ROOT = Path(__file__).parent.parent
REPORT = ROOT / "examples" / "llm-decode" / "report.yaml"
NUMBER = re.compile(r"[+-]?\d[\d,]*(?:\.\d+)?")


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("notes")
    assert main(["build", str(REPORT), "--out", str(tmp / "site"), "--src", str(tmp / "src")]) == 0
    return {v: tmp / "src" / "llm-decode-h200" / v / "docs" for v in ("v1", "v2")}


def _pct(v: float) -> str:
    return f"{v:.1f}%"


def expected(docs: Path) -> dict[str, dict]:
    """Each chart's note values, recomputed from the data files alone."""
    stage_time = pd.read_csv(docs / "data" / "stage_time.csv")
    libraries = pd.read_csv(docs / "data" / "stage_libraries.csv")
    top = pd.read_csv(docs / "data" / "top_kernels.csv")
    kernels = pd.read_csv(docs / "data" / "ncu_metrics.csv")
    out: dict[str, dict] = {}
    staged = stage_time[stage_time["stage"] != "all"]
    big = staged.loc[staged["kernel_ns"].idxmax()]
    low = staged.loc[staged["top_n_pct"].idxmin()]
    lib = libraries[libraries["stage"] == big["stage"]].sort_values("kernel_ns", ascending=False).iloc[0]
    out["stage-time"] = {"stage": big["stage"], "share_pct": big["kernel_ns"] * 100 / stage_time["kernel_ns"].iloc[0],
                         "stage_ns": big["kernel_ns"], "library_name": lib["library"], "library_pct": lib["pct"],
                         "low_stage": low["stage"], "top_n_pct": low["top_n_pct"]}
    floors = pd.read_csv(docs / "data" / "stage_decomposition.csv")
    floors = floors[(floors["stage"] != "all") & (floors["floor_ns"] > 0)]
    far = floors.loc[(floors["kernel_ns"] - floors["floor_ns"]).idxmax()]
    out["stage-floor"] = {"stage": far["stage"], "kernel_ns": far["kernel_ns"], "floor_ns": far["floor_ns"],
                          "gap_ns": far["kernel_ns"] - far["floor_ns"], "value_times": far["kernel_ns"] / far["floor_ns"]}
    for index, stage in enumerate(stage_time["stage"]):
        rows = top[top["stage"] == stage].sort_values("rank")
        cumulative = rows["time_pct"].cumsum().reset_index(drop=True)
        half = int((cumulative < 50).sum()) + 1
        out[f"top-{index}"] = {"kernel_name": rows["friendly_name"].iloc[0], "first_pct": rows["time_pct"].iloc[0],
                               "half_count": half, "half_pct": cumulative.iloc[half - 1],
                               "shown_pct": cumulative.iloc[-1]}
    for key, metric in DISPLAY.items():
        if not metric.histogram or metric.source not in kernels or kernels[metric.source].isna().all():
            continue
        values = kernels[metric.source].dropna() * metric.scale
        if metric.unit == "%":
            high = kernels.loc[values[values >= 60].index, "class"]
            out[f"hist-{key}"] = {"n": len(values), "below_count": int((values < 20).sum()),
                                  "above_count": len(high), "median_pct": values.median(),
                                  **({"class_count": int(high.value_counts().iloc[0])} if len(high) else {})}
        else:
            out[f"hist-{key}"] = {"n": len(values), "value_median": values.median(), "value_max": values.max(),
                                  "kernel_name": kernels.loc[values.idxmax(), "friendly_name"]}
    sm, mem = kernels["sm_throughput_pct"], kernels["memory_throughput_pct"]
    out["roofline-normalized"] = {"n": len(kernels), "sm_side_count": int((sm > mem).sum()),
                                  "memory_side_count": int((sm <= mem).sum()), "sm_pct": sm.max()}
    roof = kernels["roof_pct"].dropna()
    for key in ("roofline-physical", "roofline-per-kernel"):
        out[key] = {"n": len(roof), "median_pct": roof.median(), "reach_count": int((roof >= 50).sum())}
    modules = pd.read_csv(docs / "data" / "modules.csv")
    for index, stage in enumerate(s for s in stage_time["stage"] if s in set(modules["stage"])):
        rows = modules[modules["stage"] == stage]
        folded = (rows.assign(key=rows["module"].str.replace(r"\.\d+(?=\.|$)", ".*", regex=True))
                  .groupby("key", as_index=False).agg(share_pct=("share_pct", "sum"), depth=("depth", "first")))
        inside = folded[folded["key"] != OUTSIDE]
        half = inside[inside["share_pct"] >= 50]
        pick = (half.sort_values(["depth", "share_pct"], ascending=False) if len(half)
                else inside.sort_values("share_pct", ascending=False)).iloc[0]
        out[f"modules-{index}"] = {"module_name": pick["key"], "module_pct": pick["share_pct"],
                                   "outside_pct": rows.loc[rows["module"] == OUTSIDE, "share_pct"].sum()}
    return out


def _notes(page: Path, lead: str) -> list[str]:
    return [line for line in page.read_text(encoding="utf-8").splitlines() if line.startswith(f"**{lead}**")]


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_each_note_equals_the_data_files(docs: dict[str, Path], version: str) -> None:
    notes = json.loads((docs[version] / "data" / "chart_notes.json").read_text(encoding="utf-8"))
    want = expected(docs[version])
    assert set(notes) == set(want)
    for key, values in want.items():
        got = notes[key]["values"]
        for name, value in values.items():
            assert got[name] == (pytest.approx(value) if isinstance(value, float) else value), (key, name)
    decode = want["top-2"]  # the decode stage of v2: half of it in its first 6 kernels
    if version == "v2":
        assert (decode["half_count"], round(decode["first_pct"], 1)) == (6, 15.8)
        assert want["stage-time"]["stage"] == "decode" and round(want["stage-time"]["share_pct"], 1) == 96.6


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_every_chart_has_a_note_with_the_same_numbers_in_both_languages(docs: dict[str, Path], version: str) -> None:
    want = expected(docs[version])
    pages = sorted(p for p in docs[version].glob("*.md") if not p.name.endswith(".zh.md"))
    shown = 0
    for page in pages:
        charts = page.read_text(encoding="utf-8").count('id="kr-chart-')
        en, zh = _notes(page, "In short:"), _notes(page.with_name(page.stem + ".zh.md"), "要点：")
        assert len(en) == len(zh) == charts, page.name
        for a, b in zip(en, zh):
            assert sorted(NUMBER.findall(a)) == sorted(NUMBER.findall(b)), (a, b)
        shown += charts
    assert shown == len(want)
    index = "\n".join(_notes(docs[version] / "index.md", "In short:"))
    st = want["stage-time"]
    assert f"{st['stage']} takes {_pct(st['share_pct'])} of the measured GPU time ({st['stage_ns'] / 1e6:,.3f} ms" in index
    top = "\n".join(_notes(docs[version] / "top-kernels.md", "In short:"))
    for key in ("top-0", "top-1", "top-2"):
        t = want[key]
        assert f"takes {_pct(t['first_pct'])} of" in top and f"the first {t['half_count']} kernels" in top
        assert f"({_pct(t['half_pct'])}), and the 20 shown cover {_pct(t['shown_pct'])}" in top
    mods = "\n".join(_notes(docs[version] / "modules.md", "In short:"))
    decode = next(m for m in (want[k] for k in want if k.startswith("modules-")) if "model.layers" in m["module_name"])
    assert f"{decode['module_name'].replace('*', chr(92) + '*')} holds {_pct(decode['module_pct'])} of" in mods
    hist = "\n".join(_notes(docs[version] / "histograms.md", "In short:"))
    for key, h in want.items():
        if key.startswith("hist-") and "below_count" in h:
            assert (f"{h['below_count']} of {h['n']} kernels are below 20.0% and {h['above_count']} at or above 60.0%"
                    in hist)


def test_sweep_chart_note_equals_sweep_csv(tmp_path: Path) -> None:
    """The sweep page's chart (vit-sweep, 4 real H200 captures): least, most and baseline GPU time
    from data/sweep.csv; every chart of the version has its note, same numbers in EN and ZH."""
    report = ROOT / "examples" / "vit-sweep" / "report.yaml"
    assert main(["build", str(report), "--out", str(tmp_path / "site"), "--src", str(tmp_path / "src")]) == 0
    docs = tmp_path / "src" / "vit-sweep" / "sweep" / "docs"
    configs = pd.read_csv(docs / "data" / "sweep.csv")
    least, most = configs.loc[configs["gpu_time_ns"].idxmin()], configs.loc[configs["gpu_time_ns"].idxmax()]
    base = configs[configs["baseline"]].iloc[0]
    (note,) = _notes(docs / "sweep.md", "In short:")
    assert note == (f"**In short:** Over the {len(configs)} configurations GPU time runs from "
                    f"{least['gpu_time_ns'] / 1e6:,.3f} ms ({least['label']}) to {most['gpu_time_ns'] / 1e6:,.3f} ms "
                    f"({most['label']}); the baseline {base['label']} takes {base['gpu_time_ns'] / 1e6:,.3f} ms.")
    assert (least["label"], most["label"]) == ("224 px, batch 1", "448 px, batch 4")
    for page in docs.glob("*.md"):
        if page.name.endswith(".zh.md"):
            continue
        en, zh = _notes(page, "In short:"), _notes(page.with_name(page.stem + ".zh.md"), "要点：")
        assert len(en) == len(zh) == page.read_text(encoding="utf-8").count('id="kr-chart-'), page.name
        for a, b in zip(en, zh):
            assert sorted(NUMBER.findall(a)) == sorted(NUMBER.findall(b)), (a, b)
