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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from rich.progress import Progress

from generator import output_dirs
from generator.analyses.chart_notes import with_sweep_note
from generator.analyses.result import SweepResult, VersionResult
from generator.analyses.version import AnalysisSettings, analyze_alone, analyze_version
from generator.errors import InputError
from generator.forks import Forks, fork_safe, with_origin
from generator.languages import LANGS
from generator.machine import cpus
from generator.model import ReportMeta, VersionInputs
from generator.pipeline.build_cache import BuildCache, default_root
from generator.pipeline.chips import report_targets, shipped_chips
from generator.pipeline.config import ReportConfig, VersionConfig, in_languages, load_report, report_meta
from generator.pipeline.inputs import InputCache
from generator.pipeline.sweep_inputs import sweep_version
from generator.pipeline.version_reuse import VersionReuse, version_key
from generator.render import svg
from generator.render.site import write_mkdocs_config, write_report_index, write_version_index


@dataclass(frozen=True)
class ReportJob:
    """One report.yaml to build: its file, validated config and where its versions go."""

    path: Path
    config: ReportConfig
    prefix: str  # "" for a single report, else "<report-id>/"


#: A report.yaml, or a report made without one (:func:`config.files_report`) and the file it stands for.
Report = Path | tuple[Path, ReportConfig]


def build_site(
    report_files: list[Report],
    out: Path,
    src: Path,
    *,
    site_url: str | None = None,
    langs: list[str] | None = None,
    progress: Progress | None = None,
    force: bool = False,
    cache: BuildCache | None = None,
) -> list[tuple[Path, Path]]:
    """Build every version of every report into ``out`` (and Markdown into ``src``), atomically; the
    (directory, backup) pairs where what a directory held that no build wrote was moved aside (a
    user's files in a site, or all of a directory no build wrote with ``force``).

    ``cache`` holds parsed inputs between builds (default: :func:`build_cache.default_root`) and
    the records of which versions' pages can be kept as they are.

    Each version's analysis compares with the one before; reading and rendering run side by side
    (:func:`_build_report`).
    """
    langs = langs or list(LANGS)
    jobs = _jobs(report_files)
    inputs = [path for job in jobs for path in (job.path, *job.config.input_paths(), *_chip_files(job))]
    out, src = output_dirs.refuse_unsafe(out, "--out", inputs), output_dirs.refuse_unsafe(src, "--src", inputs)
    output_dirs.refuse_overlap(out, src)
    for option, target in [("--out", out), *(("--src", src / job.config.id) for job in jobs)]:
        output_dirs.refuse_unowned(output_dirs.refuse_unsafe(target, option, inputs), option, force=force)
    cache_root = cache.root if cache is not None else default_root()
    if cache_root is not None:  # the cache writes there too
        output_dirs.refuse_input_overlap(cache_root.expanduser().resolve(), f"KERNEL_REPORT_CACHE {cache_root}", inputs)
    with _made_dirs_removed_on_failure([out, src]):
        return _build_into(jobs, out, src, site_url, langs, progress, cache)


@contextlib.contextmanager
def _made_dirs_removed_on_failure(targets: list[Path]) -> Iterator[None]:
    """The folders above ``targets`` (and ``targets``) that the block makes are removed again, if
    still empty, when the block fails: a failed build leaves no empty ``<out>_src/``."""
    missing = sorted({p for t in targets for p in (t, *t.parents) if not p.exists()}, key=lambda p: -len(p.parts))
    try:
        yield
    except BaseException:
        for folder in missing:
            with contextlib.suppress(OSError):
                folder.rmdir()  # only an empty one
        raise


def _build_into(jobs: list[ReportJob], out: Path, src: Path, site_url: str | None, langs: list[str],
                progress: Progress | None, cache: BuildCache | None) -> list[tuple[Path, Path]]:
    """:func:`build_site` once its targets are checked."""
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
        reuse = VersionReuse(cache.root)
        for job in jobs:
            base_url = f"{site_url.rstrip('/')}/{job.prefix}" if site_url else None
            meta = report_meta(job.config, base_url, langs)
            _build_report(job, meta, cache, reuse, (tmp_out / job.prefix, tmp_src[job.config.id]),
                          (out / job.prefix, src / job.config.id), step)
        if len(jobs) > 1:  # else the report's own index.html (written into out/) is the site's
            write_report_index(tmp_out, [(job.prefix, in_languages(job.config.title, langs)) for job in jobs],
                               langs[0])
        targets = [*(src / job.config.id for job in jobs), out]
        backups = [output_dirs.swap_in(tmp_src[job.config.id], src / job.config.id) for job in jobs]
        backups.append(output_dirs.swap_in(tmp_out, out))
    return [(target, backup) for target, backup in zip(targets, backups) if backup is not None]


def _chip_files(job: ReportJob) -> list[Path]:
    """The chip files (not shipped chip names) a report projects onto: inputs too."""
    base = job.path.resolve().parent
    return [base / c.chip for c in job.config.chips if (base / c.chip).is_file()]


def _jobs(report_files: list[Report]) -> list[ReportJob]:
    configs = [r if isinstance(r, tuple) else (Path(r), load_report(r)) for r in report_files]
    ids = [config.id for _, config in configs]
    for path, config in configs:
        if ids.count(config.id) > 1:
            raise InputError(path, f"report id {config.id!r} is used by another report of this build")
    prefix = (lambda c: "") if len(configs) == 1 else (lambda c: f"{c.id}/")
    return [ReportJob(path, config, prefix(config)) for path, config in configs]


def _build_report(job: ReportJob, meta: ReportMeta, store: BuildCache, reuse: VersionReuse,
                  staged: tuple[Path, Path], built: tuple[Path, Path], step: Callable[[str], None]) -> None:
    """Every version of one report into the ``staged`` (site, Markdown) folders.

    A version whose key is unchanged is copied from the ``built`` ones of the last build
    (:mod:`.version_reuse`); the others are read, analysed and rendered
    (:func:`_read_analyze_render`).
    """
    config = job.config
    out, src = staged
    versions = config.versions
    keys: list[str | None] = []
    for index in range(len(versions)):
        keys.append(version_key(meta, job.path, config, index, keys[-1] if keys else None)
                    if reuse.root is not None else None)
    trees = [(out / v.id, src / v.id) for v in versions]
    kept = [reuse.restore(key, (built[0] / v.id, built[1] / v.id), tree)
            for v, key, tree in zip(versions, keys, trees)]
    for version in (v for v, k in zip(versions, kept) if k):
        step(f"{config.id}/{version.id}: unchanged, kept")
    rebuilt = [i for i, k in enumerate(kept) if not k]
    if rebuilt:
        _read_analyze_render(job, meta, store, trees, rebuilt, step)
        for i in rebuilt:
            reuse.remember(keys[i], trees[i])
    write_version_index(meta, out)


def _read_analyze_render(job: ReportJob, meta: ReportMeta, store: BuildCache, trees: list[tuple[Path, Path]],
                         rebuilt: list[int], step: Callable[[str], None]) -> None:
    """Read, analyse and render the ``rebuilt`` versions into ``trees`` (site, Markdown), as a pipeline.

    Versions ``0 … max(rebuilt)`` are read side by side in forked children (:mod:`generator.forks`;
    versions that share an input file in one, so each file is read once), which also run the
    analyses that do not compare a version with the one before (:func:`analyze_alone`). Each is
    analysed to the end here as soon as its inputs and the analysis before it are in, and
    each rebuilt one is rendered and built in a child forked as soon as its analysis is done (it
    inherits the analysis), beside the reading and analysing still going on. The error raised does
    not depend on timing: the first failing read in order, else the first failing analysis, else the
    first failing render.
    """
    config = job.config
    versions = config.versions
    settings = AnalysisSettings(top_n=config.top_n, rule=config.classification.rule,
                                margin=config.classification.margin, peaks=config.gpu.as_settings(),
                                chips=report_targets(config, job.path), chip_basis=tuple(shipped_chips()))
    count = max(rebuilt) + 1
    groups = _sharing_groups([_input_files(versions[i]) for i in range(count)])
    inputs: dict[int, tuple[VersionInputs, SweepResult | None, dict | Exception]] = {}
    results: list[VersionResult] = []
    errors: dict[tuple[int, int], BaseException] = {}  # (0 read | 1 analysis | 2 render, group or version)
    here = cpus() < 2 or not fork_safe()
    ahead = [] if here else rebuilt[:cpus()]  # chart workers started now, loading while inputs are read
    with Forks(cpus(), here=here) as forks, _charts_started_for(ahead):
        for n, group in enumerate(groups):
            forks.submit((0, n), functools.partial(_read_group, job, store, group, settings))
        _prepare_rendering(store.root, compile_now=not here and len(rebuilt) > 1)
        svg.prestart(ahead)
        while forks.pending():
            (phase, n), ok, value = forks.next()
            if phase == 2:
                svg.release(n)  # the child that rendered it is done with it
            if not ok:
                errors[(phase, n)] = value
            elif phase == 0:
                values, (hits, misses) = value
                store.hits, store.misses = store.hits + hits, store.misses + misses
                inputs.update(zip(groups[n], values))
                for i in groups[n]:
                    step(f"{config.id}/{versions[i].id}: inputs read")
            else:
                step(f"{config.id}/{versions[n].id}: rendered and built")
            while not errors and len(results) in inputs:
                i = len(results)
                step(f"{config.id}/{versions[i].id}: analyzing")
                try:
                    results.append(_analysis(versions[i].id, *inputs.pop(i), settings, results[-1] if results else None))
                except Exception as exc:  # noqa: BLE001 - raised below, once the children are done
                    errors[(1, i)] = exc
                    break
                if i in rebuilt:
                    forks.submit((2, i), functools.partial(render_and_build, results[i], meta, job.path,
                                                           trees[i][1], trees[i][0], i))
    if errors:
        raise errors[min(errors)]


@contextlib.contextmanager
def _charts_started_for(versions: list[int]) -> Iterator[None]:
    """Chart workers started for ``versions`` (svg.prestart) are ended when the block is left."""
    try:
        yield
    finally:
        for version in versions:
            svg.release(version)


def _prepare_rendering(cache_root: Path | None, compile_now: bool) -> None:
    """Import the page renderer and MkDocs and start loading jieba's dictionary
    (generator.pipeline.mkdocs_site) while the inputs are read: the rendering children inherit it
    instead of each paying. Compiled templates are kept in the build cache under ``cache_root``.

    With ``compile_now`` (several versions rendered in children) every page and theme template is
    compiled here too (or loaded compiled from the build cache), once for all of them. Otherwise
    the one renderer compiles only the templates it uses: about half (a version fires few of the
    findings, most of Material's partials are not used), 0.5 s of CPU less for one version."""
    from generator.pipeline.mkdocs_site import compile_theme
    from generator.render.compiled_templates import keep_in
    from generator.render.pages import compile_templates

    keep_in(cache_root / "templates" if cache_root is not None else None)
    if compile_now:
        compile_templates()
        compile_theme()


def _read_group(job: ReportJob, store: BuildCache, group: list[int], settings: AnalysisSettings
                ) -> tuple[list[tuple[VersionInputs, SweepResult | None, dict | Exception]], tuple[int, int]]:
    """The inputs (and sweep) of each of ``group``'s versions with the results of its analyses that
    do not read the version before (:func:`_alone`), and the build cache hits and misses of reading
    them (counted where the values arrive: in the parent, or here when it is the parent)."""
    versions = job.config.versions
    counts = store.hits, store.misses
    with InputCache(store) as cache:
        read = [sweep_version(versions[i], cache, job.path, i) for i in group]
    read_counts = store.hits - counts[0], store.misses - counts[1]
    store.hits, store.misses = counts
    return [(found, sweep, _alone(versions[i].id, found, settings)) for i, (found, sweep) in zip(group, read)], read_counts


def _alone(version_id: str, inputs: VersionInputs, settings: AnalysisSettings) -> dict | Exception:
    """:func:`analyze_alone`'s results, or the error it raised: raised where the version's analysis
    is completed (:func:`_analysis`), so which error a build reports does not depend on where each
    step ran."""
    try:
        return analyze_alone(version_id, inputs, settings)
    except Exception as exc:  # noqa: BLE001 - raised by _analysis, in the version's turn
        return with_origin(exc)


def _input_files(version: VersionConfig) -> set[Path]:
    parts = [version, *version.sweep]
    return {path.resolve() for part in parts for path in [*part.runs, *part.inputs.paths()]}


def _sharing_groups(files: list[set[Path]]) -> list[list[int]]:
    """Indices of ``files`` grouped so that sets sharing a path (directly or through others) are
    in one group; groups in order of their first index."""
    groups: list[tuple[set[Path], list[int]]] = []
    for index, paths in enumerate(files):
        joined = [g for g in groups if g[0] & paths]
        merged = (set(paths).union(*(g[0] for g in joined)), sorted([index, *(i for g in joined for i in g[1])]))
        groups = [g for g in groups if g not in joined] + [merged]
    return [members for _, members in sorted(groups, key=lambda g: g[1][0])]


def _analysis(version_id: str, inputs: VersionInputs, sweep: SweepResult | None, alone: dict | Exception,
              settings: AnalysisSettings, before: VersionResult | None) -> VersionResult:
    if isinstance(alone, Exception):
        raise alone
    analysis = analyze_version(version_id, inputs, settings, before, alone)
    if sweep is None:
        return analysis
    notes = with_sweep_note(analysis.values.get("chart_notes", {}), sweep.configs)  # known only now
    return dataclasses.replace(analysis, sweep=sweep, values={**analysis.values, "chart_notes": notes})


def render_and_build(result: VersionResult, meta: ReportMeta, report_file: Path, version_src: Path,
                     site_dir: Path, charts_ahead: object = None) -> None:
    """Render one version's pages into ``version_src/docs`` and build its site into ``site_dir``
    (its charts drawn by the worker started ahead as ``charts_ahead``, when there is one)."""
    # imported here: charts (Altair) and MkDocs take a second to import, which a build whose
    # versions are all unchanged (:mod:`.version_reuse`) never needs
    from generator.pipeline.mkdocs_site import build_version_site
    from generator.render.pages import latest_page_names, page_file, page_names, render_version

    docs = version_src / "docs"
    with svg.svg_batch(charts_ahead) as svgs:  # the SVGs are drawn while MkDocs builds the site: it copies them last
        render_version(result, meta, docs, list(meta.langs), svgs)
        nav = [page_file(page, meta.langs[0], meta.langs[0]) for page in page_names(result)]
        version = meta.version(result.version_id)
        mkdocs_yml = write_mkdocs_config(report_file, meta, version, version_src, nav, latest_page_names(meta))
        build_version_site(mkdocs_yml, site_dir, version.date, late=svgs.paths, before_late=svgs.finish)
