"""Stages without a report.yaml: `build FILE…` reads the workload's own top-level NVTX ranges that
hold kernels; --stages names others or `all`; the Overview says where they came from and the
Findings measure the same stages (checked against plain SQL over the exports)."""
from __future__ import annotations

import lzma
import shutil
import sqlite3
from pathlib import Path

import pytest

from generator.analyses.version import AnalysisSettings, analyze_version
from generator.cli import main
from generator.errors import InputError
from generator.pipeline.config import files_report, report_meta
from generator.pipeline.inputs import InputCache, version_inputs
from generator.readers.nvtx_stages import workload_stages
from generator.render.pages import render_page

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
SMALL = DATA / "h200-small"
#: the read-only shared fixtures beside the checkout (../shared in CI; a worktree's is two folders up)
SHARED = next((p / "fixtures" for p in (ROOT.parent / "shared", ROOT.parents[1] / "shared") if p.is_dir()), None)
TP2 = SHARED / "h200x2-tp" / "tp2_llama_tpplan.nsys.sqlite.xz" if SHARED else None
SMALL_STAGES = ["vision", "projector", "prefill", "decode"]

#: Kernel launches and GPU time per range name, plain SQL: kernels whose launch call starts inside a
#: default-domain push/pop range on the call's thread (the exports' ranges are all unnested).
PLAIN = """
WITH r AS (SELECT ne.globalTid AS tid, ne.start AS s, ne.end AS e, coalesce(ne.text, si.value) AS n
           FROM NVTX_EVENTS AS ne LEFT JOIN StringIds AS si ON si.id = ne.textId
           WHERE ne.eventType = 59 AND coalesce(ne.domainId, 0) = 0)
SELECT r.n, count(*), sum(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS c ON c.correlationId = k.correlationId AND c.globalTid >> 24 = k.globalPid >> 24
JOIN r ON r.tid = c.globalTid AND c.start BETWEEN r.s AND r.e GROUP BY r.n
"""


def _plain(xz: Path, tmp: Path) -> Path:
    plain = tmp / xz.stem
    with lzma.open(xz) as src, plain.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return plain


def _sql(path: Path, query: str) -> list[tuple]:
    with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True) as conn:
        return conn.execute(query).fetchall()


def _analyzed(paths: list[Path], stages: list[str] | None = None):
    config = files_report(paths, stages=stages)
    version = config.versions[0]
    with InputCache() as cache:
        inputs = version_inputs(version, cache, paths[0], 0)
    return inputs, analyze_version(version.id, inputs, AnalysisSettings()), report_meta(config, None, ["en", "zh"])


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return _analyzed([SMALL / "small_vlm.nsys.sqlite.xz", SMALL / "small_vlm_prefill.ncu-rep.xz"])


def test_workload_ranges_are_the_stages(tmp_path):
    # h200-small: the workload's four ranges; autograd-nvtx: its own ranges, not the aten:: operator
    # ranges of emit_nvtx; cudf: its ranges and libcudf's top-level ones (the libcudf domain is no library
    # we know), nested ones never
    assert workload_stages(_plain(SMALL / "small_vlm.nsys.sqlite.xz", tmp_path)) == SMALL_STAGES
    autograd = _plain(DATA / "autograd-nvtx" / "report.sqlite.xz", tmp_path)
    assert workload_stages(autograd) == ["warmup", "prefill", "decode"]
    assert _sql(autograd, "SELECT count(*) FROM NVTX_EVENTS WHERE text LIKE 'aten::%'")[0][0] > 0


@pytest.mark.skipif(TP2 is None or not TP2.is_file(), reason="the shared fixtures are not beside the checkout")
def test_nccl_ranges_are_no_stages(tmp_path):
    plain = _plain(TP2, tmp_path)
    # NCCL's own ranges hold kernels (its collectives) but are the library's, not the workload's
    nccl = _sql(plain, "SELECT count(*) FROM NVTX_EVENTS AS ne JOIN StringIds AS s ON s.id = ne.textId "
                       "WHERE ne.domainId <> 0 AND s.value = 'ncclAllReduce'")[0][0]
    assert nccl == 1284
    assert workload_stages(plain) == ["measured"]
    inputs, result, meta = _analyzed([TP2])
    launches, total = {n: (c, t) for n, c, t in _sql(plain, PLAIN)}["measured"]
    stage = inputs.kernel_summary[inputs.kernel_summary["stage"] == "measured"]
    assert int(stage["count"].sum()) == launches == 25072
    assert float(stage["total_ns"].sum()) == pytest.approx(total)
    assert result.values["stage_origin"]["source"] == "nvtx"
    assert {f.stage for f in result.findings if f.id == "launch_overhead"} == {"measured"}
    index = render_page("index", result, meta, "en", {})
    assert "- **measured**: span" in index and "NVTX ranges found in the nsys export (measured)" in index


def test_small_build_reads_its_nvtx_stages(small, tmp_path):
    inputs, result, _ = small
    plain = {n: (c, t) for n, c, t in _sql(_plain(SMALL / "small_vlm.nsys.sqlite.xz", tmp_path), PLAIN)}
    assert result.stages == ["all", *SMALL_STAGES]
    for stage in SMALL_STAGES:
        rows = inputs.kernel_summary[inputs.kernel_summary["stage"] == stage]
        assert int(rows["count"].sum()) == plain[stage][0]
        assert float(rows["total_ns"].sum()) == pytest.approx(plain[stage][1])
    assert plain["decode"] == (6600, 13873072)
    assert result.values["stage_origin"] == {"source": "nvtx", "stages": SMALL_STAGES, "found": SMALL_STAGES,
                                             "most": 16}


def test_findings_and_overview_agree(small):
    _, result, meta = small
    ids = {f.id for f in result.findings}
    # the split across stages and the idle gaps are measured, as the Overview measures them
    assert "stage_split" in ids and not ids & {"stage_split_abstain", "launch_overhead_abstain"}
    idle = {f.stage: f.evidence["idle_ms"] for f in result.findings if f.id == "launch_overhead"}
    decomposition = result.values["stage_decomposition"]
    overview = dict(zip(decomposition["stage"], decomposition["idle_ns"], strict=True))
    assert set(idle) == {"vision", "prefill", "decode"}  # projector: 0.2 % of the time, below a finding's minimum
    for stage, ms in idle.items():
        assert ms == pytest.approx(overview[stage] / 1e6, abs=0.01)
    for lang, words in (("en", "NVTX ranges found in the nsys export (vision, projector, prefill, decode)"),
                        ("zh", "工作负载 NVTX 区间（vision、projector、prefill、decode）")):
        index = render_page("index", result, meta, lang, {})
        assert words in index.replace("\n", " ") or words in index
        findings = render_page("findings", result, meta, lang, {})
        assert "0 stages" not in findings and "0 个阶段" not in findings


def test_stages_all_is_one_stage_and_findings_say_so():
    _, result, meta = _analyzed([SMALL / "small_vlm.nsys.sqlite.xz"], ["all"])
    assert result.stages == ["all"]
    assert result.values["stage_origin"]["source"] == "whole"
    split = next(f for f in result.findings if f.id == "stage_split_abstain")
    assert split.evidence["whole"] is True and split.evidence["total_ms"] == pytest.approx(18.32, abs=0.01)
    overhead = next(f for f in result.findings if f.id == "launch_overhead")
    assert overhead.stage == "all" and overhead.evidence["span_ms"] == pytest.approx(1736.52, abs=0.01)
    assert "one, the whole capture (`--stages all`)" in render_page("index", result, meta, "en", {})


def test_named_stages_override():
    config = files_report([SMALL / "small_vlm.nsys.sqlite.xz"], stages=["decode"])
    assert config.versions[0].stages_from == "option"
    assert [e.stage for e in config.versions[0].inputs.nsys] == ["decode"]


@pytest.mark.parametrize(("option", "words"), [(",", "names no range"), (" , ,", "names no range"),
                                               ("all,decode", "give it alone")])
def test_bad_stages_option_is_one_line(option, words, tmp_path, capsys):
    assert main(["build", str(SMALL / "small_vlm.nsys.sqlite.xz"), "--stages", option,
                 "--out", str(tmp_path / "site")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: --stages: ") and words in err
    assert not (tmp_path / "site").exists()


def test_report_yaml_cannot_set_where_stages_come_from(tmp_path):
    from generator.pipeline.config import load_report
    report = tmp_path / "report.yaml"
    report.write_text(f"id: r\ntitle: r\nversions:\n  - {{id: v1, title: v1, date: 2026-01-01, stages_from: nvtx, "
                      f"inputs: {{nsys: [{SMALL / 'small_vlm.nsys.sqlite.xz'}]}}}}\n", encoding="utf-8")
    with pytest.raises(InputError, match="stages_from"):
        load_report(report)


def test_found_stages_are_kept_in_the_build_cache(tmp_path):
    from generator.pipeline.build_cache import BuildCache

    store = BuildCache(tmp_path / "cache")
    with InputCache(store) as cache:
        assert cache.workload_stages(SMALL / "small_vlm.nsys.sqlite.xz") == SMALL_STAGES
    assert (store.hits, store.misses) == (0, 1)
    with InputCache(store) as cache:
        assert cache.workload_stages(SMALL / "small_vlm.nsys.sqlite.xz") == SMALL_STAGES
    assert (store.hits, store.misses) == (1, 1)
