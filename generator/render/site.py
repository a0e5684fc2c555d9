"""Build the versioned site: per version read inputs → analyze → render Markdown → `mkdocs build`.

Layout (one report): ``<out>/<version>/`` (one MkDocs Material site per version, EN at its root and
ZH under ``zh/``), ``<out>/versions.json`` (mike's format, newest first, "latest" alias on the newest)
and ``<out>/index.html`` (relative redirect to the latest version). Several reports go to
``<out>/<report-id>/…`` each, and ``<out>/index.html`` lists them. Markdown sources go to
``<src>/<report-id>/<version>/{docs/,mkdocs.yml}``.

Everything is built next to ``out``/``src`` and swapped in at the end (generator.output_dirs: only
directories an earlier build wrote are replaced), so a failed build leaves the previous site untouched. Same inputs → byte-identical files (SOURCE_DATE_EPOCH = version date).
"""
from __future__ import annotations

import contextlib
import datetime
import gzip
import html
import json
import logging
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import jinja2
from mkdocs.commands.build import build as mkdocs_build
from mkdocs.config import load_config
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import MkDocsException
from rich.progress import Progress

from generator import output_dirs
from generator.analyses.result import VersionResult
from generator.analyses.version import AnalysisSettings, analyze_version
from generator.config import ReportConfig, ReportMeta, VersionConfig, load_report, report_meta
from generator.errors import InputError
from generator.inputs import InputCache
from generator.render.assets import BUNDLE as VEGA_BUNDLE
from generator.render.assets import MODULE as CHARTS_MODULE
from generator.render.pages import page_file, page_names, render_version
from generator.sweep_inputs import sweep_version

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
    autoescape=jinja2.select_autoescape(["html.j2"]),
)


@dataclass(frozen=True)
class ReportJob:
    """One report.yaml to build: its file, validated config and where its versions go."""

    path: Path
    config: ReportConfig
    prefix: str  # "" for a single report, else "<report-id>/"


def build_site(
    report_files: list[Path],
    out: Path,
    src: Path,
    *,
    site_url: str | None = None,
    langs: list[str] | None = None,
    progress: Progress | None = None,
    force: bool = False,
) -> None:
    """Build every version of every report into ``out`` (and Markdown into ``src``), atomically.

    Versions are built in order: each version's analysis compares with the one before. (Worker
    processes were tried: on two CPUs their start-up — imports, the vega bundle, jieba's
    dictionary — cost more than they saved.)
    """
    langs = langs or ["en", "zh"]
    jobs = _jobs(report_files)
    inputs = [path for job in jobs for path in (job.path, *job.config.input_paths())]
    out, src = output_dirs.refuse_unsafe(out, "--out", inputs), output_dirs.refuse_unsafe(src, "--src", inputs)
    output_dirs.refuse_overlap(out, src)
    for option, target in [("--out", out), *(("--src", src / job.config.id) for job in jobs)]:
        output_dirs.refuse_unowned(output_dirs.refuse_unsafe(target, option, inputs), option, force=force)
    src.mkdir(parents=True, exist_ok=True)
    versions = sum(len(job.config.versions) for job in jobs)
    task = progress.add_task("build", total=versions * 3) if progress else None

    def step(text: str) -> None:
        if progress is not None and task is not None:
            progress.update(task, advance=1, description=text)

    with contextlib.ExitStack() as stack:
        tmp_out = stack.enter_context(output_dirs.staging(out))
        tmp_src = {job.config.id: stack.enter_context(output_dirs.staging(src / job.config.id)) for job in jobs}
        cache = stack.enter_context(InputCache())
        for job in jobs:
            base_url = f"{site_url.rstrip('/')}/{job.prefix}" if site_url else None
            meta = report_meta(job.config, base_url, langs)
            _build_report(job, meta, cache, tmp_out / job.prefix, tmp_src[job.config.id], step)
        _write_index(tmp_out, jobs, langs[0])
        for job in jobs:
            output_dirs.swap_in(tmp_src[job.config.id], src / job.config.id)
        output_dirs.swap_in(tmp_out, out)


def _jobs(report_files: list[Path]) -> list[ReportJob]:
    configs = [(Path(p), load_report(p)) for p in report_files]
    ids = [config.id for _, config in configs]
    for path, config in configs:
        if ids.count(config.id) > 1:
            raise InputError(path, f"report id {config.id!r} is used by another report of this build")
    prefix = (lambda c: "") if len(configs) == 1 else (lambda c: f"{c.id}/")
    return [ReportJob(path, config, prefix(config)) for path, config in configs]


def _build_report(job: ReportJob, meta: ReportMeta, cache: InputCache, out: Path, src: Path,
                  step: Callable[[str], None]) -> None:
    config = job.config
    settings = AnalysisSettings(top_n=config.top_n, rule=config.classification.rule,
                                margin=config.classification.margin, peaks=config.gpu.as_settings())
    previous = None
    for index, version in enumerate(config.versions):
        step(f"{config.id}/{version.id}: reading inputs")
        inputs, sweep = sweep_version(version, cache, job.path, index)
        step(f"{config.id}/{version.id}: analyzing")
        result = analyze_version(version.id, inputs, settings, previous)
        if sweep is not None:
            result.extra["sweep"] = sweep
        step(f"{config.id}/{version.id}: rendering and building")
        render_and_build(result, meta, job.path, version, src / version.id, out / version.id)
        previous = result
    _write_version_index(meta, out)


def render_and_build(result: VersionResult, meta: ReportMeta, report_file: Path, version: VersionConfig,
                     version_src: Path, site_dir: Path) -> None:
    """Render one version's pages into ``version_src/docs`` and build its site into ``site_dir``."""
    docs = version_src / "docs"
    render_version(result, meta, docs, list(meta.langs))
    nav = [page_file(page, meta.langs[0], meta.langs[0]) for page in page_names(result)]
    build_version_site(write_mkdocs_config(report_file, meta, version, version_src, nav), site_dir, version.date)


def _write_version_index(meta: ReportMeta, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "versions.json").write_text(versions_json(meta), encoding="utf-8")
    (out / "index.html").write_text(
        _ENV.get_template("site/index.html.j2").render(
            lang=meta.langs[0], links=[{"href": f"{meta.latest.id}/index.html", "title": meta.title[meta.langs[0]]}]
        ),
        encoding="utf-8",
    )


def write_mkdocs_config(report_file: Path, meta: ReportMeta, version: VersionConfig, version_dir: Path,
                        nav: list[str]) -> Path:
    """Write ``<version_dir>/mkdocs.yml`` for the pages (``nav``: files in order) in ``<version_dir>/docs``."""
    docs = version_dir / "docs"
    text = _ENV.get_template("mkdocs.yml.j2").render(
        report_file=report_file.name,
        title=meta.title,
        site_url=f"{meta.site_url}{version.id}/" if meta.site_url else None,
        langs=list(meta.langs),
        nav=nav,
        # the offline vega bundle, then the module that draws the charts with it (it imports the
        # bundle too: one URL, so the browser runs it once)
        javascript=[js.as_posix() for js in (VEGA_BUNDLE, CHARTS_MODULE) if (docs / js).is_file()],
    )
    path = version_dir / "mkdocs.yml"
    path.write_text(text, encoding="utf-8")
    return path


def build_version_site(mkdocs_yml: Path, site_dir: Path, date: datetime.date) -> None:
    """`mkdocs build --strict` of one version into ``site_dir`` (less its 404 page); InputError with
    the warnings if it fails."""
    epoch = int(datetime.datetime.combine(date, datetime.time(), datetime.timezone.utc).timestamp())
    collected = _WarningCollector()
    logger = logging.getLogger("mkdocs")
    logger.addHandler(collected)
    saved_epoch = os.environ.get("SOURCE_DATE_EPOCH")
    os.environ["SOURCE_DATE_EPOCH"] = str(epoch)
    try:
        config = load_config(config_file=str(mkdocs_yml), site_dir=str(site_dir), strict=True)
        mkdocs_build(config)
        # A 404 page only works at the root of a host; in a version folder its links point nowhere.
        (site_dir / "404.html").unlink(missing_ok=True)
        _sitemaps(site_dir, config, epoch)
    except (MkDocsException, SystemExit) as exc:
        problems = "; ".join(collected.messages) or str(exc)
        raise InputError(mkdocs_yml, f"mkdocs build --strict failed: {problems}") from None
    finally:
        logger.removeHandler(collected)
        if saved_epoch is None:
            os.environ.pop("SOURCE_DATE_EPOCH", None)
        else:
            os.environ["SOURCE_DATE_EPOCH"] = saved_epoch


def _sitemaps(site_dir: Path, config: MkDocsConfig, epoch: int) -> None:
    """Fix up the version's sitemap for Material and for sitemap readers.

    With a site URL the version root itself is listed too: Material's version selector keeps the
    reader on the same page only when the common prefix of the target version's sitemap entries
    is an entry (it is with directory URLs, not with ``use_directory_urls: false``). Without a
    site URL the sitemap lists nothing (entries must be absolute; i18n's would say "None…").
    Material fetches sitemap.xml next to each language alternate too, so ``<lang>/`` gets a copy.
    """
    sitemap = site_dir / "sitemap.xml"
    text = sitemap.read_text(encoding="utf-8")
    opening = re.search(r"<urlset[^>]*>\n", text)
    if opening is None:
        raise RuntimeError(f"{sitemap}: no <urlset> line (mkdocs' and i18n's templates write one)")
    if config.site_url:
        root = f"    <url>\n        <loc>{html.escape(config.site_url)}</loc>\n    </url>\n"
        text = text[: opening.end()] + root + text[opening.end():]
    else:
        text = text[: opening.end()] + "</urlset>\n"
    sitemap.write_text(text, encoding="utf-8")
    (site_dir / "sitemap.xml.gz").write_bytes(gzip.compress(text.encode("utf-8"), mtime=epoch))
    for lang in config.plugins["i18n"].config.languages:
        if not lang.default:
            for name in ("sitemap.xml", "sitemap.xml.gz"):
                shutil.copyfile(site_dir / name, site_dir / lang.locale / name)


class _WarningCollector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(" ".join(record.getMessage().split()))


def versions_json(meta: ReportMeta) -> str:
    """mike's versions.json: newest first, alias "latest" on the newest."""
    entries = [
        {"version": v.id, "title": v.title[meta.langs[0]], "aliases": ["latest"] if v is meta.latest else []}
        for v in reversed(meta.versions)
    ]
    return json.dumps(entries, ensure_ascii=False, indent=2) + "\n"


def _write_index(out: Path, jobs: list[ReportJob], lang: str) -> None:
    if len(jobs) == 1:
        return  # the report's own index.html (written into out/) is the site's
    links = [{"href": f"{job.prefix}index.html", "title": job.config.title.model_dump()[lang]} for job in jobs]
    (out / "index.html").write_text(
        _ENV.get_template("site/index.html.j2").render(lang=lang, links=links), encoding="utf-8"
    )
