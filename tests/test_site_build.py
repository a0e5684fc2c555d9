"""The versioned site build of the bundled example: layout, languages, versions.json, determinism,
committed sources up to date, and atomicity (a failing build leaves the previous site untouched)."""
from __future__ import annotations

import functools
import gzip
import hashlib
import http.server
import json
import lzma
import math
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml
from conftest import DATA, ROOT, BuiltSite
from mkdocs.config import load_config
from pandas.testing import assert_frame_equal

from generator.cli import main
from generator.commands.build import EXAMPLE
from generator.errors import InputError
from generator.pipeline.config import load_report
from generator.pipeline.inputs import InputCache, version_inputs
from generator.resources import TEMPLATES

pytestmark = pytest.mark.slow


def tree(root: Path, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.relative_to(root).as_posix().startswith(skip)
    }


def test_versions_json_and_redirect(example_site: BuiltSite) -> None:
    config = load_report(example_site.report)
    versions = json.loads((example_site.site / "versions.json").read_text(encoding="utf-8"))
    ids = [v.id for v in config.versions]
    assert [v["version"] for v in versions] == ids[::-1]  # newest first
    assert versions[0]["aliases"] == ["latest"] and all(v["aliases"] == [] for v in versions[1:])
    assert [v["title"] for v in versions] == [v.title.en for v in config.versions][::-1]
    index = (example_site.site / "index.html").read_text(encoding="utf-8")
    assert f'url={ids[-1]}/index.html"' in index and "://" not in index
    assert sorted(p.name for p in example_site.site.iterdir() if p.is_dir()) == sorted([*ids, "latest"])
    # latest/ holds a relative redirect for every page of the newest version, e.g. latest/zh/roofline.html
    newest = example_site.site / ids[-1]
    pages = sorted(p.relative_to(newest).as_posix() for p in newest.rglob("*.html"))
    stubs = sorted(p.relative_to(example_site.site / "latest").as_posix()
                   for p in (example_site.site / "latest").rglob("*") if p.is_file())
    assert stubs == pages and "zh/roofline.html" in stubs and len(stubs) >= 20
    stub = (example_site.site / "latest" / "zh" / "roofline.html").read_text(encoding="utf-8")
    assert f'content="0; url=../../{ids[-1]}/zh/roofline.html"' in stub and "://" not in stub


def test_every_page_in_both_languages(example_site: BuiltSite) -> None:
    config = load_report(example_site.report)
    for version in config.versions:
        docs = example_site.src / config.id / version.id / "docs"
        english = sorted(p.relative_to(docs) for p in docs.rglob("*.md") if not p.name.endswith(".zh.md"))
        assert english, f"no pages for {version.id}"
        for page in english:
            assert (docs / page).with_suffix(".zh.md").is_file(), page
        built = example_site.site / version.id
        en_html = {p.relative_to(built).as_posix() for p in built.rglob("*.html")
                   if not p.relative_to(built).as_posix().startswith("zh/")}
        zh_html = {p.relative_to(built / "zh").as_posix() for p in (built / "zh").rglob("*.html")}
        assert en_html == zh_html and len(en_html) == len(english)
        for page in sorted(en_html):
            assert '<html lang="en"' in (built / page).read_text(encoding="utf-8")
            zh = (built / "zh" / page).read_text(encoding="utf-8")
            assert '<html lang="zh"' in zh and 'hreflang="en"' in zh


def test_search_index_segments_chinese(example_site: BuiltSite) -> None:
    config = load_report(example_site.report)
    search = example_site.site / config.versions[-1].id / "search"
    index = json.loads((search / "search_index.json").read_text())
    assert index["config"]["lang"] == ["en", "zh"] and "\\u200b" in index["config"]["separator"]
    # one index per language: the default one holds the EN pages, search_index.zh.json the ZH ones
    assert index["docs"] and not [doc for doc in index["docs"] if doc["location"].startswith("zh/")]
    zh_index = json.loads((search / "search_index.zh.json").read_text())
    assert zh_index["config"] == index["config"]
    zh = zh_index["docs"]
    assert all(doc["location"].startswith("zh/") for doc in zh)
    assert zh and any("\u200b" in doc["text"] for doc in zh)  # jieba-segmented words
    assert any(re.search(r"#.*[\u4e00-\u9fff]", doc["location"]) for doc in zh)  # Chinese anchors kept


def test_charts_still_drawn_are_copied_after_every_language_is_built(tmp_path: Path) -> None:
    """A version's chart SVGs may still be being drawn while MkDocs builds (empty files stand
    there): they are copied as MkDocs would copy them, once every language's pages are built, so
    no language's build waits for the chart worker. Built from the committed Markdown of v2."""
    from generator.pipeline.mkdocs_site import build_version_site  # here: importing it starts loading jieba

    src = tmp_path / "v2"
    shutil.copytree(ROOT / "site_src" / "ocr-vlm-h200" / "v2", src)
    charts = sorted((src / "docs" / "assets" / "charts").glob("*.svg"))
    drawn = {path: path.read_bytes() for path in charts}
    for path in charts:
        path.write_bytes(b"")
    site = tmp_path / "site"
    seen: list[bool] = []

    def draw() -> None:
        seen.append((site / "zh" / "index.html").exists() and not (site / "assets" / "charts").exists())
        for path, content in drawn.items():
            path.write_bytes(content)

    build_version_site(src / "mkdocs.yml", site, load_report(EXAMPLE).versions[1].date, late=charts, before_late=draw)
    assert len(charts) == 60 and seen == [True]  # 29 charts (the stage-floor one among them) x EN, ZH
    assert {p.name: p.read_bytes() for p in (site / "assets" / "charts").glob("*.svg")} == {p.name: c for p, c in drawn.items()}


#: forks right after importing mkdocs_site (whose thread is then loading jieba's dictionary) and
#: segments Chinese in the copy, as a version's forked render-and-build task does
FORK_AFTER_IMPORT = """
import os, signal, sys, jieba
import generator.pipeline.mkdocs_site
pid = os.fork()
if pid == 0:
    signal.alarm(30)  # a copy stuck on jieba's lock ends itself
    os._exit(0 if "/".join(jieba.cut("内核耗时分析")) == "内核/耗时/分析" else 3)
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


def test_a_copy_forked_while_jieba_loads_can_segment() -> None:
    run = subprocess.run([sys.executable, "-c", FORK_AFTER_IMPORT], cwd=ROOT, capture_output=True)
    assert run.returncode == 0, run.stderr.decode()


def test_version_config(example_site: BuiltSite) -> None:
    config = load_report(example_site.report)
    for version in config.versions:
        mkdocs_yml = example_site.src / config.id / version.id / "mkdocs.yml"
        loaded = load_config(config_file=str(mkdocs_yml))
        assert loaded.theme["font"] is False and loaded.extra["version"]["provider"] == "mike"
        assert loaded.site_url is None  # the example is built without --site-url
        i18n = loaded.plugins["i18n"].config
        assert i18n.docs_structure == "suffix"
        assert [(lang.locale, lang.name) for lang in i18n.languages] == [("en", "English"), ("zh", "简体中文")]
        assert loaded.mdx_configs["toc"]["slugify"]("内核 Top 20", "-") == "内核-top-20"
        # classic scripts: browsers run no ES module on a page opened from disk
        assert [str(js) for js in loaded.extra_javascript] == [
            "assets/js/vega-bundle.js", "assets/js/kr-charts.js", "assets/js/kr-tables.js"]
        assert loaded.extra["kr"]["latest"] == config.versions[-1].id
        assert bool(loaded.extra["kr"]["outdated"]) == (version is not config.versions[-1])
        assert loaded.extra_css == ["assets/css/kr-tables.css"]
        assets = example_site.site / version.id / "assets"
        for built, source in (("js/kr-tables.js", "kr-tables.js"), ("css/kr-tables.css", "kr-tables.css")):
            assert (assets / built).read_bytes() == (TEMPLATES / "site" / source).read_bytes()
        # no address to list without a site URL: no sitemap, and pages hand Material an empty one
        assert [p.name for p in (example_site.site / version.id).rglob("sitemap.xml*")] == []
        page = (example_site.site / version.id / "zh" / "index.html").read_text(encoding="utf-8")
        assert page.count('"data:text/xml,<urlset></urlset>"') == 1


def test_site_url_reaches_each_version(example_site: BuiltSite, tmp_path: Path) -> None:
    """With a site URL, a version's config, canonical links and sitemap (dated by the version) use it."""
    from generator.pipeline.config import report_meta
    from generator.pipeline.mkdocs_site import build_version_site
    from generator.render.pages import latest_page_names
    from generator.render.site import write_mkdocs_config

    config = load_report(example_site.report)
    version = config.versions[0]
    built = example_site.src / config.id / version.id
    shutil.copytree(built / "docs", tmp_path / "v" / "docs")
    meta = report_meta(config, "https://org.github.io/repo/", ["en", "zh"])
    nav = yaml.load((built / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)["nav"]
    mkdocs_yml = write_mkdocs_config(Path("report.yaml"), meta, meta.version(version.id), tmp_path / "v", nav,
                                     latest_page_names(meta))
    assert f'site_url: "https://org.github.io/repo/{version.id}/"' in mkdocs_yml.read_text(encoding="utf-8")
    build_version_site(mkdocs_yml, tmp_path / "site", version.date)
    base = f"https://org.github.io/repo/{version.id}/"
    for sitemap in ("sitemap.xml.gz", "zh/sitemap.xml.gz"):
        text = gzip.decompress((tmp_path / "site" / sitemap).read_bytes()).decode()
        locs = re.findall(r"<loc>(.*?)</loc>", text)
        # every page in both languages, and the version root (Material's version selector needs it)
        assert locs[0] == base and len(locs) == 1 + 2 * len(nav) and all(loc.startswith(base) for loc in locs)
        assert set(re.findall(r"<lastmod>(.*?)</lastmod>", text)) == {version.date.isoformat()}
    zh_index = (tmp_path / "site" / "zh" / "index.html").read_text(encoding="utf-8")
    assert f'<link rel="canonical" href="{base}zh/index.html">' in zh_index
    assert "data:text/xml" not in zh_index  # Material fetches the real sitemaps


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_site_without_site_url_requests_nothing_missing(example_site: BuiltSite, lang: str) -> None:
    """Served over HTTP without a site URL (so without sitemaps), a page and a switch of version
    (to the other version's home: no sitemap to find the page in) and of language make no request
    that fails and no console error."""
    sync_api = pytest.importorskip("playwright.sync_api")
    handler = functools.partial(QuietHandler, directory=str(example_site.site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    versions = [v.id for v in load_report(example_site.report).versions]
    lang_dir = "" if lang == "en" else f"{lang}/"
    problems: list[str] = []
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox"])
            page = browser.new_page()
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("response", lambda r: problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
            page.goto(f"{base}{versions[-1]}/{lang_dir}findings.html")
            page.wait_for_load_state("networkidle")
            page.wait_for_selector(".md-version__link", state="attached")
            page.eval_on_selector_all(".md-version__link",
                                      f"els => els.find(a => a.href.includes('/{versions[0]}/')).click()")
            page.wait_for_url(f"{base}{versions[0]}/")
            page.wait_for_load_state("networkidle")
            page.eval_on_selector('a.md-select__link[hreflang="zh"]', "a => a.click()")
            page.wait_for_url(f"{base}{versions[0]}/zh/index.html")
            page.wait_for_load_state("networkidle")
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    assert problems == []


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def test_build_is_deterministic(example_site: BuiltSite, tmp_path: Path) -> None:
    assert main(["build", "--out", str(tmp_path / "site"), "--src", str(tmp_path / "src")]) == 0
    first, second = tree(example_site.site), tree(tmp_path / "site")
    assert first.keys() == second.keys()
    assert [name for name in first if first[name] != second[name]] == []
    assert tree(example_site.src) == tree(tmp_path / "src")


def test_committed_site_src_is_up_to_date(example_site: BuiltSite) -> None:
    """site_src/ of the bundled example is committed so `mkdocs serve` works right after clone."""
    report_id = load_report(example_site.report).id
    committed = ROOT / "site_src" / report_id
    generated = tree(example_site.src / report_id)
    assert tree(committed, skip=tuple(f"{v}/site/" for v in {p.split("/")[0] for p in generated})) == generated, (
        "run `python -m generator build` and commit site_src/"
    )


def test_root_mkdocs_yml_serves_the_latest_version() -> None:
    config = load_report(EXAMPLE)
    latest = ROOT / "site_src" / config.id / config.versions[-1].id
    raw = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert (ROOT / raw["INHERIT"]).resolve() == latest / "mkdocs.yml"
    loaded = load_config(config_file=str(ROOT / "mkdocs.yml"))
    assert Path(loaded.docs_dir).resolve() == latest / "docs"
    assert [lang.locale for lang in loaded.plugins["i18n"].config.languages] == ["en", "zh"]


def test_failed_build_leaves_previous_site_untouched(example_site: BuiltSite, tmp_path: Path) -> None:
    out, src = tmp_path / "site", tmp_path / "site_src"
    shutil.copytree(example_site.site, out)
    shutil.copytree(example_site.src, src)
    before, before_src = tree(out), tree(src)
    truncated = tmp_path / "decode_ncu_raw.csv.xz"
    raw = (DATA / "h200-small" / "small_vlm_decode_ncu_raw.csv.xz").read_bytes()
    truncated.write_bytes(raw[: len(raw) // 2])
    h200 = DATA / "h200-small"
    path = tmp_path / "report.yaml"
    path.write_text(f"""
id: broken-second-version
title: {{en: Broken, zh: 损坏}}
versions:
  - id: v1
    title: {{en: V1, zh: 第一版}}
    date: 2026-11-20
    inputs: {{nsys: ["{h200}/small_vlm.nsys.sqlite.xz"], ncu: ["{h200}/small_vlm_prefill.ncu-rep.xz"]}}
  - id: v2
    title: {{en: V2, zh: 第二版}}
    date: 2026-11-21
    inputs: {{nsys: ["{h200}/small_vlm.nsys.sqlite.xz"], ncu: ["{truncated}"]}}
""", encoding="utf-8")
    assert main(["build", str(path), "--out", str(out), "--src", str(src)]) == 2
    assert tree(out) == before and tree(src) == before_src
    assert sorted(p.name for p in tmp_path.iterdir()) == ["decode_ncu_raw.csv.xz", "report.yaml", "site", "site_src"]


# --- inputs: explicit files and capture run directories → VersionInputs ---------------------------

def run_dir(tmp_path: Path, stages: list[str]) -> Path:
    """A capture run directory (the capture contract) made of the real H200 fixture files."""
    run = tmp_path / "runs" / "h200"
    (run / "nsys").mkdir(parents=True)
    (run / "ncu").mkdir()
    h200 = DATA / "h200-small"
    shutil.copy(h200 / "small_vlm.nsys.sqlite.xz", run / "nsys" / "report.sqlite.xz")
    shutil.copy(h200 / "small_vlm_prefill.ncu-rep.xz", run / "ncu" / "report.ncu-rep.xz")
    shutil.copy(h200 / "small_vlm_decode_ncu_raw.csv.xz", run / "ncu" / "raw.csv.xz")
    (run / "manifest.json").write_text(json.dumps({"stages": stages, "top_n": 20}), encoding="utf-8")
    return run


def test_explicit_inputs_of_the_example() -> None:
    report = ROOT / "examples" / "small-vlm-h200" / "report.yaml"
    config = load_report(report)
    with InputCache() as cache:
        inputs = version_inputs(config.versions[0], cache, report, 0)
        again = cache.read(DATA / "h200-small" / "small_vlm_prefill.ncu-rep.xz")
    summary = inputs.kernel_summary
    assert list(dict.fromkeys(summary["stage"])) == ["all", "vision", "projector", "prefill", "decode"]
    assert not summary.duplicated(["stage", "name"]).any()
    for stage, rows in summary.groupby("stage"):
        assert rows["time_pct"].sum() == pytest.approx(100.0), stage
    metrics = inputs.kernel_metrics
    assert metrics["stage"].value_counts().to_dict() == {"decode": 40, "prefill": 30}
    # the .ncu-rep keeps its own launch ids; the raw CSV's (also 0…) move past them
    assert list(metrics["launch_id"]) == list(range(70))
    assert again.kernel_metrics is not None and list(again.kernel_metrics["launch_id"]) == list(range(30))
    paths = [p.path for p in inputs.provenance]
    assert paths == [
        "../../tests/data/h200-small/small_vlm.nsys.sqlite.xz",
        "../../tests/data/h200-small/small_vlm_prefill.ncu-rep.xz",
        "../../tests/data/h200-small/small_vlm_decode_ncu_raw.csv.xz",
        "../../tests/data/h200-small/small_vlm_torch_trace.json.gz",
    ]
    for provenance in inputs.provenance:
        assert provenance.sha256 == hashlib.sha256((report.parent / provenance.path).read_bytes()).hexdigest()
    assert inputs.gpus[0].name == "NVIDIA H200" and inputs.gpus[0].sm_count == 132
    assert inputs.manifest is None


def test_run_directory_matches_explicit_inputs(tmp_path: Path) -> None:
    stages = ["vision", "projector", "prefill", "decode"]
    run_dir(tmp_path, stages)
    report = tmp_path / "report.yaml"
    report.write_text("""
id: run
title: {en: Run, zh: 运行}
versions:
  - {id: v1, title: {en: V1, zh: 一}, date: 2026-11-21, runs: [runs/h200]}
""", encoding="utf-8")
    example = ROOT / "examples" / "small-vlm-h200" / "report.yaml"
    with InputCache() as cache:
        from_run = version_inputs(load_report(report).versions[0], cache, report, 0)
        explicit = version_inputs(load_report(example).versions[0], cache, example, 0)
    assert from_run.manifest == {"stages": stages, "top_n": 20}
    staged = from_run.kernel_summary[from_run.kernel_summary["stage"] != "all"].reset_index(drop=True)
    assert_frame_equal(staged, explicit.kernel_summary[explicit.kernel_summary["stage"] != "all"].reset_index(drop=True))
    # the .ncu-rep is preferred over raw.csv: prefill launches only
    assert set(from_run.kernel_metrics["stage"]) == {"prefill"} and len(from_run.kernel_metrics) == 30
    assert [p.path for p in from_run.provenance] == ["runs/h200/nsys/report.sqlite.xz", "runs/h200/ncu/report.ncu-rep.xz"]

    # "all" of a run = its measured stages together (not the warm-ups around them), checked
    # against the launches themselves, selected by an independent SQL query
    union = from_run.kernel_summary[from_run.kernel_summary["stage"] == "all"].set_index("name")
    plain = tmp_path / "plain.sqlite"
    plain.write_bytes(lzma.decompress((DATA / "h200-small" / "small_vlm.nsys.sqlite.xz").read_bytes()))
    con = sqlite3.connect(plain)
    rows = con.execute(f"""
        SELECT s.value, k.end - k.start, (SELECT min(coalesce(n.text, t.value)) FROM NVTX_EVENTS AS n
                 LEFT JOIN StringIds AS t ON t.id = n.textId
                 WHERE n.eventType IN (59, 60) AND n.globalTid = r.globalTid AND r.start BETWEEN n.start AND n.end
                   AND coalesce(n.text, t.value) IN ({",".join("?" * len(stages))}))
        FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS r ON r.correlationId = k.correlationId
        JOIN StringIds AS s ON s.id = k.demangledName""", stages).fetchall()
    launches: dict[str, list[int]] = {}
    in_stages: dict[str, set[str]] = {}
    for name, duration, stage in rows:
        if stage is not None:
            launches.setdefault(name, []).append(duration)
            in_stages.setdefault(name, set()).add(stage)
    assert set(union.index) == set(launches) and sum(map(len, launches.values())) == 165 + 9 + 783 + 6600
    assert sum(map(len, launches.values())) < len(rows)  # warm-up launches are left out
    for name, durations in launches.items():
        row = union.loc[name]
        assert (row["count"], row["total_ns"], row["min_ns"], row["max_ns"]) == (
            len(durations), sum(durations), min(durations), max(durations))
        assert row["stddev_ns"] == pytest.approx(statistics.stdev(durations) if len(durations) > 1 else 0.0)
        if len(in_stages[name]) == 1:
            assert row["med_ns"] == statistics.median(durations)
        else:
            assert math.isnan(row["med_ns"])  # medians of several stages do not combine
    assert union["time_pct"].sum() == pytest.approx(100.0)


def test_bad_inputs_name_the_file(tmp_path: Path) -> None:
    run = run_dir(tmp_path, ["prefill", "no-such-range"])
    report = tmp_path / "report.yaml"
    report.write_text("""
id: run
title: {en: Run, zh: 运行}
versions:
  - {id: v1, title: {en: V1, zh: 一}, date: 2026-11-21, runs: [runs/h200]}
  - {id: v2, title: {en: V2, zh: 二}, date: 2026-11-22, inputs: {ncu: [cut.ncu-rep.xz]}}
""", encoding="utf-8")
    raw = (DATA / "h200-small" / "small_vlm_prefill.ncu-rep.xz").read_bytes()
    (tmp_path / "cut.ncu-rep.xz").write_bytes(raw[:1000])
    config = load_report(report)
    with InputCache() as cache:
        with pytest.raises(InputError, match=r"report\.sqlite\.xz: NVTX range 'no-such-range'"):
            version_inputs(config.versions[0], cache, report, 0)
        with pytest.raises(InputError, match=r"cut\.ncu-rep\.xz: corrupt or truncated xz"):
            version_inputs(config.versions[1], cache, report, 1)
    (run / "manifest.json").write_text('{"stages": []}', encoding="utf-8")  # no stages: the whole capture
    with InputCache() as cache:
        whole = version_inputs(config.versions[0], cache, report, 0).kernel_summary
    plain = tmp_path / "plain.sqlite"
    plain.write_bytes(lzma.decompress((DATA / "h200-small" / "small_vlm.nsys.sqlite.xz").read_bytes()))
    launches, busy = sqlite3.connect(plain).execute(
        "SELECT count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    assert set(whole["stage"]) == {"all"} and (whole["count"].sum(), whole["total_ns"].sum()) == (launches, busy)
    (run / "manifest.json").write_text('{"stages": "prefill"}', encoding="utf-8")
    with InputCache() as cache, pytest.raises(InputError, match="manifest.json: stages: Input should be a valid list \\(got 'prefill'\\)"):
        version_inputs(config.versions[0], cache, report, 0)


def test_strict_build_failure_names_the_warning(example_site: BuiltSite, tmp_path: Path) -> None:
    """A page linking to a missing page fails `mkdocs build --strict`: one InputError with the warning."""
    from generator.pipeline.mkdocs_site import build_version_site

    config = load_report(example_site.report)
    version = config.versions[0]
    built = example_site.src / config.id / version.id
    shutil.copytree(built, tmp_path / "v")
    page = tmp_path / "v" / "docs" / "findings.md"
    page.write_text(page.read_text(encoding="utf-8") + "\n[gone](no-such-page.md)\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"mkdocs build --strict failed: .*no-such-page\.md") as caught:
        build_version_site(tmp_path / "v" / "mkdocs.yml", tmp_path / "site", version.date)
    assert "\n" not in str(caught.value)
