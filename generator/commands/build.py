"""`python -m generator build [REPORT.yaml …]`: build the versioned bilingual site."""
from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from generator.errors import InputError
from generator.languages import LANGS

HELP = "build the versioned multilingual report site from report.yaml files (default: the bundled example)"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ocr-vlm" / "report.yaml"
#: The bundled example's committed Markdown sources (rewritten only by building it into ``site``).
COMMITTED_SRC = EXAMPLE.parents[2] / "site_src"
DEFAULT_OUT = Path("site")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("reports", nargs="*", type=Path, metavar="REPORT.yaml",
                        help=f"report files (default: {EXAMPLE.relative_to(EXAMPLE.parents[2])})")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="site directory (default: site)")
    parser.add_argument("--src", type=Path,
                        help="where the Markdown sources go (default: OUT_src beside --out; the bundled example's "
                             "committed site_src/ only when building the example into site)")
    parser.add_argument("--force", action="store_true",
                        help="replace --out even if an earlier build did not write it (never a directory "
                             "holding inputs, the report, /, home or the current directory)")
    parser.add_argument("--no-cache", action="store_true",
                        help="read every input afresh, neither using nor filling the build cache (its folder: "
                             "KERNEL_REPORT_CACHE, default the user cache folder; size: KERNEL_REPORT_CACHE_MAX_MB)")
    parser.add_argument("--site-url", help="published base URL, e.g. https://ORG.github.io/REPO/")
    parser.add_argument("--lang", default=",".join(LANGS),
                        help=f"site languages, the default first (default: {','.join(LANGS)})")


def run(args: argparse.Namespace) -> int:
    from generator.pipeline.build import build_site  # heavy imports (mkdocs, analyses) only when building
    from generator.pipeline.build_cache import BuildCache, default_root

    langs = [lang.strip() for lang in args.lang.split(",") if lang.strip()]
    unknown = [lang for lang in langs if lang not in LANGS]
    if not langs or unknown or len(set(langs)) != len(langs):
        raise InputError("--lang", f"expected a list of distinct languages out of {','.join(LANGS)}")
    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as progress:
        reports = args.reports or [_example()]
        build_site(reports, args.out, args.src or default_src(reports, args.out), site_url=args.site_url,
                   langs=langs, progress=progress, force=args.force,
                   cache=BuildCache(None if args.no_cache else default_root()))
    console.print(f"site written to {args.out}/", soft_wrap=True)
    return 0


def default_src(reports: list[Path], out: Path) -> Path:
    """``<out>_src`` beside ``out``; that is the committed example sources only for the bundled example
    built into ``site`` (any other build there would mix into them: it must name ``--src``)."""
    src = out.parent / f"{out.name}_src"
    if src.resolve() == COMMITTED_SRC and [p.resolve() for p in reports] != [EXAMPLE]:
        raise InputError("--src", f"the default ({src}) holds the bundled example's committed sources; "
                         "name another --src or --out")
    return src


def _example() -> Path:
    """The bundled example's report.yaml; it ships with the source checkout, not with an installed wheel."""
    if not EXAMPLE.is_file():
        raise InputError("python -m generator build", "no REPORT.yaml given and the bundled example is not "
                         "installed (it is examples/ocr-vlm/report.yaml of a kernel-report source checkout: "
                         "build from there, or name your own report.yaml)")
    return EXAMPLE
