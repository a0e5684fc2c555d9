"""The capture commands of a manifest as the pages show them: once, with paths relative to the run
directory (no path of the capture machine), tools by their name, and long kernel-name regexes replaced by
their length (the full commands stay in manifest.json)."""
from __future__ import annotations

import re
import shlex
from typing import Any

#: the run directory's subfolders (generator.run_layout): an absolute path through one of them is
#: shown from there on
RUN_SUBDIRS = ("nsys", "ncu", "logs")
_IN_RUN = re.compile(r"/(?:" + "|".join(RUN_SUBDIRS) + r")(?:/|$)")
#: an argument longer than this many characters is replaced by its length
ARG_MAX = 120
_LONG = re.compile(r"^(?P<head>(?:--[\w-]+=)?(?:regex:)?)(?P<body>.+)$", re.S)


def _argv_lists(value: Any, inside: bool = False) -> list[list[str]]:
    """Every command under a key containing "command", in manifest order (a string: split as a shell does)."""
    if isinstance(value, dict):
        return [c for key, v in value.items() for c in _argv_lists(v, inside or "command" in str(key))]
    if isinstance(value, list):
        if inside and value and all(isinstance(v, str) for v in value):
            return [list(value)]
        return [c for v in value for c in _argv_lists(v, inside)]
    if inside and isinstance(value, str):
        try:
            return [shlex.split(value)]
        except ValueError:
            return [[value]]
    return []


def relative_path(arg: str) -> str:
    """``/any/where/runs/x/nsys/report`` → ``nsys/report``; another absolute path → its last part."""
    if not arg.startswith("/"):
        return arg
    inside = _IN_RUN.search(arg)
    return arg[inside.start() + 1:] if inside else arg.rstrip("/").rsplit("/", 1)[-1] or arg


def _shown_arg(arg: str, too_long: str) -> str:
    if len(arg) > ARG_MAX:
        match = _LONG.match(arg)
        head = match["head"] if match else ""
        return head + too_long.format(chars=len(arg) - len(head))
    if "=" in arg and arg.startswith("--"):
        flag, _, value = arg.partition("=")
        return f"{flag}={relative_path(value)}"
    return relative_path(arg)


def shown_commands(manifest: dict[str, Any] | None, too_long: str) -> list[str]:
    """The manifest's commands, each once, as :func:`relative_path` and ``too_long`` (a format with
    ``{chars}``, e.g. "<{chars} characters>") make them; quoted as a shell would."""
    if not isinstance(manifest, dict):
        return []
    out: list[str] = []
    for argv in _argv_lists(manifest):
        line = " ".join(shlex.quote(_shown_arg(a, too_long)) for a in argv)
        if line not in out:
            out.append(line)
    return out


def shown_argv(manifest: dict[str, Any] | None) -> str | None:
    """The capture's own command line (``argv``), the script as ``python -m capture``."""
    argv = manifest.get("argv") if isinstance(manifest, dict) else None
    if not isinstance(argv, list) or not argv:
        return None
    head = "python -m capture" if str(argv[0]).endswith(("capture/__main__.py", "capture")) else relative_path(str(argv[0]))
    return " ".join([head, *(shlex.quote(relative_path(str(a))) for a in argv[1:])])
