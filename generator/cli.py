"""`python -m generator COMMAND`: each command lives in generator/commands/<name>.py.

A command module defines ``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``.
Bad input raises :class:`generator.errors.InputError` (an OSError or UnicodeDecodeError on a file is
treated alike); it is printed as one line and exits 2 (``--debug`` shows the traceback instead).
"""
from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys

from generator import commands
from generator.errors import InputError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m generator",
        description="Turn nsys/ncu/PyTorch profiler outputs into a bilingual, versioned report site.",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"generator.commands.{info.name}")
        cmd = sub.add_parser(info.name, help=module.HELP, description=module.HELP)
        module.add_arguments(cmd)
        cmd.set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    args = parser.parse_args(argv or ["build"])
    try:
        return args.run(args)
    except BrokenPipeError:  # stdout piped into e.g. `head`, which stopped reading
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (InputError, OSError, UnicodeDecodeError) as exc:
        if args.debug:
            raise
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2


def _one_line(exc: Exception) -> str:
    """``PATH: problem`` for our errors and for OS/decoding errors the commands did not catch."""
    if isinstance(exc, UnicodeDecodeError):
        return f"an input is not valid {exc.encoding} text ({exc.reason} at byte {exc.start})"
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    return str(exc)
