"""Build the versioned site: per version read inputs → analyze → render Markdown → `mkdocs build`.

Layout (one report): ``<out>/<version>/`` (one MkDocs Material site per version, EN at its root and
ZH under ``zh/``), ``<out>/versions.json`` (mike's format, newest first, "latest" alias on the newest)
and ``<out>/index.html`` (relative redirect to the latest version). Several reports go to
``<out>/<report-id>/…`` each, and ``<out>/index.html`` lists them. Markdown sources go to
``<src>/<report-id>/<version>/{docs/,mkdocs.yml}``.

Everything is built next to ``out``/``src`` and swapped in at the end (generator.output_dirs: only
directories an earlier build wrote are replaced), so a failed build leaves the previous site
untouched. Same inputs → byte-identical files (SOURCE_DATE_EPOCH = version date).
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.progress import Progress

from generator import output_dirs
from generator.analyses.chart_notes import with_sweep_note
from generator.analyses.result import VersionResult
from generator.analyses.version import AnalysisSettings, analyze_version
from generator.errors import InputError
from generator.languages import LANGS
from generator.model import ReportMeta
from generator.pipeline.build_cache import BuildCache, default_root
from generator.pipeline.config import ReportConfig, VersionConfig, load_report, report_meta
from generator.pipeline.inputs import InputCache
from generator.pipeline.sweep_inputs import sweep_version
from generator.pipeline.version_reuse import VersionReuse, version_key
from generator.render.site import write_mkdocs_config, write_report_index, write_version_index


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
    cache: BuildCache | None = None,
) -> None:
    """Build every version of every report into ``out`` (and Markdown into ``src``), atomically.

    ``cache`` holds parsed inputs between builds (default: :func:`build_cache.default_root`) and
    the records of which versions' pages can be kept as they are.

    Versions are built in order: each version's analysis compares with the one before. (Worker
    processes were tried: on two CPUs their start-up — imports, the vega bundle, jieba's
    dictionary — cost more than they saved.)
    """
    langs = langs or list(LANGS)
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
        if cache is None:
            cache = BuildCache(default_root())
        inputs_cache = stack.enter_context(InputCache(cache))
        reuse = VersionReuse(cache.root)
        for job in jobs:
            base_url = f"{site_url.rstrip('/')}/{job.prefix}" if site_url else None
            meta = report_meta(job.config, base_url, langs)
            _build_report(job, meta, inputs_cache, reuse, (tmp_out / job.prefix, tmp_src[job.config.id]),
                          (out / job.prefix, src / job.config.id), step)
        if len(jobs) > 1:  # else the report's own index.html (written into out/) is the site's
            write_report_index(tmp_out, [(job.prefix, job.config.title.model_dump()) for job in jobs], langs[0])
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


def _build_report(job: ReportJob, meta: ReportMeta, cache: InputCache, reuse: VersionReuse,
                  staged: tuple[Path, Path], built: tuple[Path, Path], step: Callable[[str], None]) -> None:
    """Every version of one report into the ``staged`` (site, Markdown) folders; a version whose key
    is unchanged is copied from the ``built`` ones of the last build (:mod:`.version_reuse`). Its
    analysis is then only run when the next version compares with it."""
    config = job.config
    settings = AnalysisSettings(top_n=config.top_n, rule=config.classification.rule,
                                margin=config.classification.margin, peaks=config.gpu.as_settings())
    out, src = staged
    previous: Callable[[], VersionResult | None] = lambda: None  # noqa: E731
    key = None
    for index, version in enumerate(config.versions):
        key = version_key(meta, job.path, version, index, key) if reuse.root is not None else None

        @functools.cache
        def result(version: VersionConfig = version, index: int = index,
                   before: Callable[[], VersionResult | None] = previous) -> VersionResult:
            step(f"{config.id}/{version.id}: reading inputs")
            inputs, sweep = sweep_version(version, cache, job.path, index)
            step(f"{config.id}/{version.id}: analyzing")
            analysis = analyze_version(version.id, inputs, settings, before())
            if sweep is None:
                return analysis
            notes = with_sweep_note(analysis.values.get("chart_notes", {}), sweep.configs)  # known only now
            return dataclasses.replace(analysis, sweep=sweep, values={**analysis.values, "chart_notes": notes})

        previous = result
        trees = (out / version.id, src / version.id)
        if reuse.restore(key, (built[0] / version.id, built[1] / version.id), trees):
            step(f"{config.id}/{version.id}: unchanged, kept")
            continue
        analysis = result()
        step(f"{config.id}/{version.id}: rendering and building")
        render_and_build(analysis, meta, job.path, src / version.id, out / version.id)
        reuse.remember(key, trees)
    write_version_index(meta, out)


def render_and_build(result: VersionResult, meta: ReportMeta, report_file: Path, version_src: Path,
                     site_dir: Path) -> None:
    """Render one version's pages into ``version_src/docs`` and build its site into ``site_dir``."""
    # imported here: charts (Altair) and MkDocs take a second to import, which a build whose
    # versions are all unchanged (:mod:`.version_reuse`) never needs
    from generator.pipeline.mkdocs_site import build_version_site
    from generator.render.pages import latest_page_names, page_file, page_names, render_version

    docs = version_src / "docs"
    render_version(result, meta, docs, list(meta.langs))
    nav = [page_file(page, meta.langs[0], meta.langs[0]) for page in page_names(result)]
    version = meta.version(result.version_id)
    mkdocs_yml = write_mkdocs_config(report_file, meta, version, version_src, nav, latest_page_names(meta))
    build_version_site(mkdocs_yml, site_dir, version.date)
