"""`python -m generator build [REPORT.yaml … | PROFILE … | RUN_DIR …]`: build the versioned bilingual site.

Report files build as they describe; profiler files and capture run directories build one
version of a report made from them (:func:`generator.pipeline.config.files_report`).
"""
from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from generator.errors import InputError
from generator.languages import DEFAULT_LANG, LANGS
from generator.run_layout import MANIFEST

if TYPE_CHECKING:
    from generator.pipeline.config import ReportConfig

HELP = ("build the versioned multilingual report site from report.yaml files, or from profiler files and run "
        "directories (default: the bundled example)")
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ocr-vlm" / "report.yaml"
#: The bundled example's committed Markdown sources (rewritten only by building it into ``site``).
COMMITTED_SRC = EXAMPLE.parents[2] / "site_src"
DEFAULT_OUT = Path("site")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("reports", nargs="*", type=Path, metavar="REPORT.yaml|FILE|RUN_DIR",
                        help="report files, or nsys/ncu/PyTorch profiler files and capture run directories for a "
                             f"one-version report (default: {EXAMPLE.relative_to(EXAMPLE.parents[2])})")
    parser.add_argument("--title", help="the title of a report made from profiler files (default: their names)")
    parser.add_argument("--date", type=datetime.date.fromisoformat, metavar="YYYY-MM-DD",
                        help="the version date of a report made from profiler files (default: the newest run's "
                             "creation day, else the newest file's modification day)")
    parser.add_argument("--stages", type=lambda text: [s.strip() for s in text.split(",") if s.strip()],
                        metavar="RANGE,…",
                        help="read each nsys file given by name in these NVTX ranges, one stage each (e.g. "
                             "prefill,decode; `python -m generator inspect FILE` lists them); `all`: the whole file "
                             "as one stage (default: the workload's top-level NVTX ranges that hold kernels)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="site directory (default: site)")
    parser.add_argument("--src", type=Path,
                        help="where the Markdown sources go (default: OUT_src beside --out; the bundled example's "
                             "committed site_src/ only when building the example into site)")
    parser.add_argument("--force", action="store_true",
                        help="build into --out/--src even if an earlier build did not write them: what they "
                             "held is moved to a backup beside them (<name>.kr-backup-N), nothing is deleted "
                             "(never a directory holding inputs, the report, /, home, the current directory "
                             "or a symbolic link)")
    parser.add_argument("--no-cache", action="store_true",
                        help="read every input afresh, neither using nor filling the build cache (its folder: "
                             "KERNEL_REPORT_CACHE, default the user cache folder; size: KERNEL_REPORT_CACHE_MAX_MB)")
    parser.add_argument("--site-url", help="published base URL, e.g. https://ORG.github.io/REPO/")
    parser.add_argument("--dask-scheduler", metavar="ADDRESS",
                        help="read the ranks of multi-rank exports on this Dask cluster, where the files are "
                             "(needs the 'cluster' extra; default: one process per rank here)")
    parser.add_argument("--lang", default=",".join(LANGS),
                        help=f"site languages, the default first (default: {','.join(LANGS)})")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from generator.pipeline import rank_map
    from generator.pipeline.build import build_site  # heavy imports (mkdocs, analyses) only when building
    from generator.pipeline.build_cache import BuildCache, default_root
    from generator.pipeline.config import untranslated

    langs = [lang.strip() for lang in args.lang.split(",") if lang.strip()]
    unknown = [lang for lang in langs if lang not in LANGS]
    if not langs or unknown or len(set(langs)) != len(langs):
        raise InputError("--lang", f"expected a list of distinct languages out of {','.join(LANGS)}")
    paths = args.reports or [_example()]
    reports = _reports(paths, args.title, args.date, args.stages)
    for path, config in reports if args.reports and not _made_from_files(reports) else []:
        for lang, keys in untranslated(config, langs).items():
            shown = f"the {DEFAULT_LANG} text" if lang != DEFAULT_LANG else "the text of another language"
            print(f"note: {path.name} gives no {lang} text for {', '.join(keys)}; the {lang} pages show {shown}",
                  file=sys.stderr)
    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with rank_map.scheduler(args.dask_scheduler), \
            Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as progress:
        backups = build_site(list(reports), args.out, args.src or default_src(paths, args.out),
                             site_url=args.site_url, langs=langs, progress=progress, force=args.force,
                             cache=BuildCache(None if args.no_cache else default_root()))
    for target, backup in backups:
        console.print(f"kept: what {target} held that no build wrote was moved to {backup}", soft_wrap=True, markup=False)
    console.print(f"site written to {args.out}/", soft_wrap=True)
    return 0


def _reports(paths: list[Path], title: str | None, date: datetime.date | None,
             stages: list[str] | None = None) -> list[tuple[Path, ReportConfig]]:
    """Each report.yaml of ``paths`` loaded, or one report made from all of them when they are
    profiler files and capture run directories (never both kinds)."""
    from generator.pipeline.config import files_report, load_report
    from generator.readers import sniffed

    profiles = [path for path in paths if path.is_dir() or (path.suffix not in (".yaml", ".yml") and sniffed(path))]
    for path in profiles:
        if path.is_dir() and not (path / MANIFEST).is_file():
            raise InputError(path, f"is a directory but not a capture run (no {MANIFEST}); name the runs or "
                                   "profiler files in it instead")
    if profiles and len(profiles) != len(paths):
        other = next(path for path in paths if path not in profiles)
        raise InputError(other, "give report.yaml files, or profiler files and run directories, not both "
                                "(list the files under a version's inputs in the report.yaml)")
    if profiles:
        return [(profiles[0], files_report(profiles, title, date, stages))]
    for option, value in (("--title", title), ("--date", date), ("--stages", stages)):
        if value is not None:
            raise InputError(option, "is for a report made from profiler files; a report.yaml gives its own")
    return [(path, load_report(path)) for path in paths]


def _made_from_files(reports: list[tuple[Path, ReportConfig]]) -> bool:
    """Whether ``reports`` is the one report :func:`_reports` made from profiler files (its texts have no language)."""
    from generator.readers import sniffed

    path = reports[0][0]
    return path.suffix not in (".yaml", ".yml") and (path.is_dir() or sniffed(path) is not None)


def default_src(reports: list[Path], out: Path) -> Path:
    """``<out>_src`` beside ``out``; that is the committed example sources only for the bundled example
    built into ``site`` (any other build there would mix into them: it must name ``--src``)."""
    src = out.parent / f"{out.name}_src"
    if src.resolve() == COMMITTED_SRC and [p.resolve() for p in reports] != [EXAMPLE]:
        raise InputError("--src", f"the default ({src}) holds the bundled example's committed sources; "
                         "name another --out (e.g. --out my-site) or --src")
    return src


def _example() -> Path:
    """The bundled example's report.yaml; it ships with the source checkout, not with an installed wheel."""
    if not EXAMPLE.is_file():
        raise InputError("python -m generator build", "no REPORT.yaml given and the bundled example is not "
                         "installed (it is examples/ocr-vlm/report.yaml of a kernel-report source checkout: "
                         "build from there, or name your own report.yaml)")
    return EXAMPLE
