"""`python -m generator mcp SITE_DIR`: serve a built site to coding agents over MCP (stdio), read-only.

The tools (docs/agents.md): versions, overview, kernels, findings, compare, project, sql. Needs the
``agent`` extra (the ``mcp`` SDK); imported only when the command runs.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from generator.errors import InputError

HELP = "serve a built site's data to coding agents over MCP (stdio, read-only): versions, findings, SQL, …"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("site", type=Path, metavar="SITE_DIR", help="a site built by `python -m generator build`")


def run(args: argparse.Namespace) -> int:
    try:
        from generator.agent.server import build_server
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in ("mcp", "mcp_types"):
            raise InputError("mcp", "the MCP server needs the agent extra: pip install 'kernel-report[agent]'") from None
        raise
    try:
        server = build_server(args.site)
    except FileNotFoundError as exc:
        raise InputError(args.site, str(exc).split(": ", 1)[-1]) from None
    server.run("stdio")
    return 0
