"""`python -m generator COMMAND`: each command lives in generator/commands/<name>.py.

A command module defines ``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``.
Bad input raises :class:`generator.errors.InputError` (an OSError or UnicodeDecodeError on a file is
treated alike); it is printed as one line and exits 2 (``--debug`` shows the traceback instead).
An unexpected exception is one line and exit 2 too (never 1, which ``compare`` reserves for a
regression); Ctrl-C or SIGTERM is one line and exit 130, after the build removed its staging.
A command module imports at its top only what its ``add_arguments`` needs, the rest where it runs:
``--help`` and argument errors answer without pandas, SciPy or the readers (test_cli_speed.py).
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import pkgutil
import signal
import sys
import threading
from collections.abc import Iterator

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
    if not argv:  # no command: say what there is, build nothing
        parser.print_help()
        return 0
    args = parser.parse_args(argv)
    try:
        with _terminate_as_interrupt():
            return args.run(args)
    except BrokenPipeError:  # stdout piped into e.g. `head`, which stopped reading
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the build's staging directories are gone by now
        print("error: interrupted; nothing was replaced", file=sys.stderr)
        return 130
    except (InputError, OSError, UnicodeDecodeError) as exc:
        if args.debug:
            raise
        _error(_one_line(exc))
        return 2
    except Exception as exc:  # a bug: still one line and exit 2 (never 1, compare's "regression")
        if args.debug:
            raise
        _error(f"internal error ({type(exc).__name__}: {' '.join(str(exc).split())[:300]}); "
               "rerun with --debug for the traceback and report it")
        return 2


def _error(message: str) -> None:
    """``message`` on stderr, control characters (terminal escapes in file names) made harmless."""
    from generator.text_safety import clean_text  # pandas, imported only when there is an error

    print(f"error: {clean_text(message)}", file=sys.stderr)


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt inside the block, so cleanup runs as on Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _one_line(exc: Exception) -> str:
    """``PATH: problem`` for our errors and for OS/decoding errors the commands did not catch."""
    if isinstance(exc, UnicodeDecodeError):
        return f"an input is not valid {exc.encoding} text ({exc.reason} at byte {exc.start})"
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    return str(exc)
