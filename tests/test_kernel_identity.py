"""One kernel identity from every name form real profilers print (no hand-made names).

Pairs of forms of one kernel come from the files themselves: nsys SQLite rows carry the demangled,
short and mangled name of each launch; ncu reports carry demangled, function and mangled names of
each launch; the raw CSV (ncu's simplified names) and mangled-name CSV of a capture run list the same
launch IDs as its report.
"""
from __future__ import annotations

import csv
import io
import re
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from helpers_ncu import read_once, report_launches
from helpers_runs import content

from generator.analyses.join import attach_stage_time, coverage
from generator.analyses.kernel_identity import identity
from generator.analyses.kernel_match import candidates, match_kernels
from generator.pipeline.inputs import InputCache, load_manifest, manifest_stages, measured_union
from generator.run_layout import COMPRESSED

ROOT = Path(__file__).parent.parent
DATA = ROOT / "tests" / "data"
RUNS = ROOT / "examples" / "runs"
SQLITES = sorted([*DATA.rglob("*.sqlite*"), *RUNS.rglob("*.sqlite*")])
REPORTS = sorted([*DATA.rglob("*.ncu-rep*"), *RUNS.rglob("*.ncu-rep*")])

#: one kernel as a user's ncu.details.csv printed it (issue 37, "function" names of their ncu) and as
#: nsys printed it: namespaces, casts and the `const::[` before each nested lambda dropped
ISSUE_NCU = ("void vectorized_elementwise_kernel<4, unnamed>::silu_kernel(TensorIteratorBase &)::[lambda() "
             "(instance 1)]::operator ()() lambda() (instance 6)]::operator ()() lambda(BFloat16) (instance 1)], "
             "array<char *, 2>>(int, T2, T3)")
ISSUE_NSYS = ("void at::native::vectorized_elementwise_kernel<(int)4, at::native::<unnamed>::silu_kernel("
              "at::TensorIteratorBase &)::[lambda() (instance 1)]::operator ()() const::[lambda() (instance 6)]::"
              "operator ()() const::[lambda(c10::BFloat16) (instance 1)], std::array<char *, (unsigned long)2>>"
              "(int, T2, T3)")
_CAST = re.compile(r"\([A-Za-z_][\w: ]*\)(?=-?\d)")
_SCOPE = re.compile(r"(?<![\w>)\]])(?:[A-Za-z_]\w*::)+")


def stripped(name: str) -> str:
    """A demangled name in the issue's ncu form (checked on its pair below): casts, namespaces and
    the `const::[` before a nested lambda dropped, `<unnamed>::` cut to `unnamed>::`."""
    text = _CAST.sub("", name).replace(" const::[", " ")
    return _SCOPE.sub("", text).replace("<unnamed>::", "unnamed>::")


def test_the_issue_form_joins_its_kernel():
    assert stripped(ISSUE_NSYS) == ISSUE_NCU
    assert identity(ISSUE_NCU) == identity(ISSUE_NSYS)
    assert identity(ISSUE_NCU).function == "vectorized_elementwise_kernel"


def _plain(path: Path, tmp: Path) -> Path:
    if path.suffix not in COMPRESSED:
        return path
    out = tmp / path.stem
    out.write_bytes(content(path))
    return out


def _csv_rows(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(content(path).decode())))


@pytest.mark.parametrize("path", SQLITES, ids=lambda p: str(p.relative_to(ROOT)))
def test_nsys_demangled_short_and_mangled_agree(path, tmp_path):
    con = sqlite3.connect(_plain(path, tmp_path))
    columns = {row[1] for row in con.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")}
    mangled = "mangledName" in columns
    rows = con.execute(
        "SELECT DISTINCT d.value, s.value, " + ("m.value" if mangled else "NULL")
        + " FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds d ON d.id = k.demangledName"
        + " JOIN StringIds s ON s.id = k.shortName"
        + (" JOIN StringIds m ON m.id = k.mangledName" if mangled else "")).fetchall()
    assert rows
    names = list(dict.fromkeys(row[0] for row in rows))
    for demangled, short, mangled_name in rows:
        full = identity(demangled)
        assert identity(short).function == full.function and identity(short).agrees(full), demangled
        if mangled_name:
            assert identity(mangled_name) == full, demangled
        # the issue's form fits its own kernel, and others only where the full name does too or they
        # print the same in that form (thrust's __unique:: and __copy_if:: InitAgent of cudf-groupby)
        found = candidates(stripped(demangled), names)
        assert identity(stripped(demangled)) == full and demangled in found
        assert all(n in candidates(demangled, names) or stripped(n) == stripped(demangled) for n in found)
        if RUNS in path.parents or "h200-small" in path.parts:  # PyTorch captures: each kernel alone
            # (direct_copy_kernel_cuda and neg_kernel_cuda lambdas in elementwise_kernel<…gpu_kernel_impl_nocast<…>>)
            assert found == [demangled] == candidates(demangled, names)


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_ncu_demangled_function_mangled_and_simplified_agree(path):
    names = report_launches(path)
    for demangled, function, mangled, _ in names:
        full = identity(demangled)
        assert identity(function).function == full.function and identity(function).agrees(full)
        if mangled:
            assert identity(mangled) == full, demangled
    # a capture run's CSVs of the same ncu pass (report<suffix>: raw<suffix>.csv, ncu_kernels_mangled<suffix>.csv)
    # list the report's launches by ID: simplified and mangled names
    suffix = path.name.split(".")[0].removeprefix("report")
    for csv_path in (*path.parent.glob(f"raw{suffix}.csv*"), *path.parent.parent.glob(f"logs/ncu_kernels_mangled{suffix}.csv*")):
        if csv_path.is_file():
            rows = _csv_rows(csv_path)
            header = rows[0]
            for row in rows[2:]:
                demangled = names[int(row[header.index("ID")])][0]
                assert identity(row[header.index("Kernel Name")]) == identity(demangled), csv_path


def test_distinct_instantiations_stay_distinct():
    """The OCR capture's concatenation kernels differ in one template argument (3 vs 4 inputs)."""
    names = read_names(RUNS / "ocr-vlm-eager")
    cats = [n for n in names if identity(n).function == "CatArrayBatchedCopy"]
    assert len(cats) == 2 and identity(cats[0]) != identity(cats[1])
    assert match_kernels(cats[:1], cats[1:]) == []
    # the base name alone fits both: ambiguous, never a guess
    assert candidates("CatArrayBatchedCopy", cats) == cats


def read_names(run: Path) -> list[str]:
    return list(dict.fromkeys(read_once(run / "ncu" / "report.ncu-rep.xz").kernel_metrics["name"]))


@pytest.mark.parametrize("run", ["ocr-vlm-eager", "ocr-vlm-sdpa", "llm-decode-small"])
def test_raw_csv_joins_as_the_report(run):
    """ncu's simplified names in the raw CSV join every launch to the nsys kernel the report's names
    join to: the OCR-VLM top-20 is 20/20 from both (the grouped GEMM, #1, once)."""
    path = RUNS / run
    with InputCache() as cache:
        stages = tuple(manifest_stages(path, load_manifest(path)))
        staged = cache.stages(path / "nsys" / "report.sqlite.xz", stages).summary
        summary = pd.concat([measured_union(staged), staged], ignore_index=True)
        joined = [attach_stage_time(read_once(path / "ncu" / f).kernel_metrics, summary)
                  for f in ("report.ncu-rep.xz", "raw.csv.xz")]
    assert list(joined[0]["summary_name"]) == list(joined[1]["summary_name"])
    assert not joined[1]["ambiguous"].any()
    for stage in ["all", *stages]:
        assert coverage(summary, joined[0], 20, stage) == coverage(summary, joined[1], 20, stage)
    if run.startswith("ocr"):
        assert coverage(summary, joined[1], 20)["profiled"] == 20 and joined[1]["summary_name"].notna().all()


def test_an_ambiguous_join_is_stated_never_guessed():
    """ncu's function names (the report's real NameBase_FUNCTION) carry no template arguments: a base
    name that several nsys kernels of the launch's stage share joins none, and the page says so."""
    from test_version import h200_inputs

    from generator.analyses.version import AnalysisSettings, analyze_version
    from generator.commands.build import EXAMPLE
    from generator.pipeline.config import load_report, report_meta
    from generator.render.chart_table import build_charts
    from generator.render.pages import render_page
    from generator.render.translations import translator

    inputs = h200_inputs("small_vlm_prefill.ncu-rep.xz")
    metrics = inputs.kernel_metrics
    inputs.kernel_metrics = metrics.assign(name=metrics["short_name"])
    result = analyze_version("v1", inputs, AnalysisSettings())
    ambiguous = result.coverage["ambiguous"]
    assert "vectorized_elementwise_kernel" in ambiguous
    prefill = inputs.kernel_summary[inputs.kernel_summary["stage"] == "prefill"]
    for name in ambiguous:  # each really fits several prefill kernels
        assert len(candidates(name, prefill["name"])) > 1
    joined = attach_stage_time(inputs.kernel_metrics, inputs.kernel_summary)
    assert joined.loc[joined["name"].isin(ambiguous), "summary_name"].isna().all()
    meta = report_meta(load_report(EXAMPLE), None, ["en", "zh"])
    for lang, words in (("en", "Ambiguous join"), ("zh", "匹配有歧义")):
        page = render_page("classification", result, meta, lang, build_charts(result, translator(lang)))
        assert words in page and "vectorized\\_elementwise\\_kernel" in page


PAGES = DATA / "ncu-pages-2025.3"


def test_ncu_csv_kernel_bases_of_the_ocr_report_agree():
    """The OCR-VLM report's 224 launches exported by ncu itself with --print-kernel-base demangled,
    function and mangled: per launch ID, one identity (function names: no template arguments)."""
    forms = {form: {row[0]: row[1] for row in _ids_and_names(PAGES / f"ocr_names_{form}.csv{suffix}")}
             for form, suffix in (("demangled", ".xz"), ("function", ""), ("mangled", ".xz"))}
    report = report_launches(RUNS / "ocr-vlm-eager" / "ncu" / "report.ncu-rep.xz")
    assert len(forms["demangled"]) == len(forms["function"]) == len(forms["mangled"]) == len(report) == 224
    for launch_id, demangled in forms["demangled"].items():
        full = identity(demangled)
        assert full == identity(report[int(launch_id)][0])
        assert identity(forms["mangled"][launch_id]) == full
        function = identity(forms["function"][launch_id])
        assert function.args is None and function.agrees(full) and function.function == full.function


def _ids_and_names(path: Path) -> list[tuple[str, str]]:
    rows = _csv_rows(path)
    header = rows[0]
    return [(row[header.index("ID")], row[header.index("Kernel Name")]) for row in rows[2:]]


def test_function_names_join_only_where_unique():
    """Joined from ncu's function names, a launch joins the one nsys kernel of its stage with that
    base name — the same one its demangled name joins — or none, marked ambiguous."""
    path = RUNS / "ocr-vlm-eager"
    with InputCache() as cache:
        stages = tuple(manifest_stages(path, load_manifest(path)))
        staged = cache.stages(path / "nsys" / "report.sqlite.xz", stages).summary
    summary = pd.concat([measured_union(staged), staged], ignore_index=True)
    full = attach_stage_time(read_once(path / "ncu" / "report.ncu-rep.xz").kernel_metrics, summary)
    short = attach_stage_time(full.assign(name=full["short_name"]), summary)
    joined = short["summary_name"].notna()
    assert (short.loc[joined, "summary_name"] == full.loc[joined, "summary_name"]).all()  # never a wrong kernel
    assert short.loc[~joined, "ambiguous"].all() and 0 < (~joined).sum() < len(short)



def _pairs() -> list[tuple[str, Path, Path]]:
    """Every committed ncu report beside the nsys export of its capture: (id, report, run or folder)."""
    runs = [run for run in [*sorted(RUNS.iterdir()), DATA / "gemm"] if any(run.glob("nsys/report.sqlite*"))]
    found = [(str(rep.relative_to(ROOT)), rep, run) for run in runs for rep in sorted(run.glob("ncu/*.ncu-rep*"))]
    return [*found, ("tests/data/h200-small/small_vlm_prefill.ncu-rep.xz",
                     DATA / "h200-small" / "small_vlm_prefill.ncu-rep.xz", DATA / "h200-small")]


#: per report read in ncu's function-name form (NameBase_FUNCTION, ncu 2025.3's `--print-kernel-base
#: function`: base names alone): launches, joined, ambiguous (the demangled form joins every launch)
FUNCTION_FORM = {
    "examples/runs/compiled-block-h200/ncu/report.ncu-rep.xz": (3, 3, 0),
    "examples/runs/llm-decode-eager-attn-h200/ncu/report.ncu-rep.xz": (45, 31, 14),
    "examples/runs/llm-decode-graph-h200/ncu/report-retry.ncu-rep.xz": (4, 1, 3),
    "examples/runs/llm-decode-graph-h200/ncu/report.ncu-rep.xz": (46, 33, 13),
    "examples/runs/llm-decode-h200-a/ncu/report.ncu-rep.xz": (43, 30, 13),
    "examples/runs/llm-decode-h200-b/ncu/report.ncu-rep.xz": (43, 30, 13),
    "examples/runs/llm-decode-h200-probe/ncu/report.ncu-rep.xz": (43, 30, 13),
    "examples/runs/llm-decode-h100-a/ncu/report.ncu-rep.xz": (41, 28, 13),
    "examples/runs/llm-decode-h100-b/ncu/report.ncu-rep.xz": (41, 28, 13),
    "examples/runs/ocr-vlm-sdpa-h100-a/ncu/report.ncu-rep.xz": (86, 68, 18),
    "examples/runs/ocr-vlm-sdpa-h200-a/ncu/report.ncu-rep.xz": (83, 70, 13),
    "examples/runs/ocr-vlm-sdpa-h200-b/ncu/report.ncu-rep.xz": (84, 71, 13),
    "examples/runs/llm-decode-eager/ncu/report-retry.ncu-rep.xz": (4, 1, 3),
    "examples/runs/llm-decode-eager/ncu/report.ncu-rep.xz": (46, 32, 14),
    "examples/runs/llm-decode-eager-ops/ncu/report.ncu-rep.xz": (43, 30, 13),
    "examples/runs/llm-decode-graph/ncu/report-retry.ncu-rep.xz": (4, 1, 3),
    "examples/runs/llm-decode-graph/ncu/report.ncu-rep.xz": (49, 34, 15),
    "examples/runs/llm-decode-small/ncu/report.ncu-rep.xz": (24, 19, 5),
    "examples/runs/ocr-vlm-eager/ncu/report.ncu-rep.xz": (224, 198, 26),
    "examples/runs/ocr-vlm-eager-v2/ncu/report-retry.ncu-rep.zst": (2, 1, 1),
    "examples/runs/ocr-vlm-eager-v2/ncu/report.ncu-rep.zst": (144, 118, 26),
    "examples/runs/ocr-vlm-sdpa/ncu/report.ncu-rep.xz": (198, 178, 20),
    "examples/runs/ocr-vlm-sdpa-h200/ncu/report-retry.ncu-rep.zst": (2, 1, 1),
    "examples/runs/ocr-vlm-sdpa-h200/ncu/report.ncu-rep.zst": (121, 101, 20),
    "examples/runs/ocr-vlm-sdpa-v2/ncu/report-retry.ncu-rep.xz": (3, 1, 2),
    "examples/runs/ocr-vlm-sdpa-v2/ncu/report.ncu-rep.xz": (126, 101, 25),
    "tests/data/gemm/ncu/report.ncu-rep.xz": (1, 1, 0),
    "tests/data/h200-small/small_vlm_prefill.ncu-rep.xz": (30, 15, 15),
}
#: the reports read on every test run (their nsys exports read quickly); the rest are marked slow
QUICK = ("llm-decode-small", "ocr-vlm-eager/", "gemm", "h200-small")


def _stage_reading(run: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The kernel summary (measured stages and their union) and launch configurations of a capture."""
    with InputCache() as cache:
        if run.name == "h200-small":
            reading = cache.stages(run / "small_vlm.nsys.sqlite.xz", ("all", "vision", "projector", "prefill", "decode"))
            return reading.summary, reading.launch_configs
        stages = tuple(manifest_stages(run, load_manifest(run)))
        reading = cache.stages(next(run.glob("nsys/report.sqlite*")), stages or ("all",))
    union = [measured_union(reading.summary)] if stages else []
    return pd.concat([*union, reading.summary], ignore_index=True), reading.launch_configs


@pytest.mark.parametrize("pair", [pytest.param(p, marks=[] if any(q in p[0] for q in QUICK) else [pytest.mark.slow])
                                  for p in _pairs()], ids=lambda p: p[0])
def test_function_names_join_as_far_as_the_launch_decides(pair):
    """Read in ncu's function form (ncu_report's own NameBase_FUNCTION names), a report's launches join
    the nsys kernel their demangled names join — by base name, then grid, block and registers per
    thread — or stay ambiguous: never another kernel (wrong = 0). In the issue's form every launch joins."""
    key, report, run = pair
    summary, configs = _stage_reading(run)
    metrics = read_once(report).kernel_metrics
    names = report_launches(report)
    assert [n[0] for n in names] == list(metrics["name"])
    full = attach_stage_time(metrics, summary, configs)
    assert full["summary_name"].notna().all()
    short = attach_stage_time(metrics.assign(name=[n[1] for n in names]), summary, configs)
    joined = short["summary_name"].notna()
    wrong = int((short.loc[joined, "summary_name"] != full.loc[joined, "summary_name"]).sum())
    print(f"{key}: {len(short)} launches, {int(joined.sum())} joined, {int(short['ambiguous'].sum())} ambiguous, "
          f"{wrong} wrong")
    assert wrong == 0 and (~joined == short["ambiguous"]).all()
    assert (len(short), int(joined.sum()), int(short["ambiguous"].sum())) == FUNCTION_FORM[key]
    issue_form = attach_stage_time(metrics.assign(name=metrics["name"].map(stripped)), summary)
    assert list(issue_form["summary_name"]) == list(full["summary_name"])


def test_every_report_with_an_nsys_export_is_checked():
    assert sorted(FUNCTION_FORM) == sorted(p[0] for p in _pairs())
