"""The MCP server (the ``mcp`` SDK's MCPServer, over stdio) whose tools are :class:`generator.agent.tools.Tools`.

Every tool is read-only; a refusal is an MCP tool error of one sentence (``ToolError``).
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from generator.agent.site_index import Refused
from generator.agent.sql import DEFAULT_ROWS, MAX_ROWS
from generator.agent.tools import DEFAULT_KERNELS, MAX_KERNELS, Tools, site_tools

INSTRUCTIONS = (
    "Checked answers from a kernel-report site (GPU profiles of transformer inference, nsys + ncu). Start with "
    "`versions`, then `overview` and `findings` of a version. Time is nsys kernel time in ns; useful work "
    "(what the model asked for) and executed work (what the GPU ran) are separate columns, never inferred "
    "from each other; a saving bound is measured time minus a physical floor; faster/slower verdicts come "
    "only from stage_speed/kernel_speed intervals outside measured noise.")

Version = Annotated[str, Field(description="a version id as `versions` lists it, REPORT/VERSION")]
Stage = Annotated[str | None, Field(description="an NVTX stage of the version (default: all stages)")]
_READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)


def _answer(call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    try:
        return call()
    except Refused as exc:
        raise ToolError(str(exc)) from None


def build_server(root: Path) -> MCPServer:
    """The server over the built site at ``root`` (its versions found now, its files read on request)."""
    tools: Tools = site_tools(root)
    server = MCPServer("kernel-report", instructions=INSTRUCTIONS, log_level="WARNING")

    @server.tool(annotations=_READ_ONLY)
    def versions() -> dict[str, Any]:
        """Every report version of the site (REPORT/VERSION id, title, date, GPUs, workload, data files)."""
        return _answer(tools.versions)

    @server.tool(annotations=_READ_ONLY)
    def overview(version: Version) -> dict[str, Any]:
        """A version's stage decomposition, largest savings, setup, workload and fidelity facts."""
        return _answer(lambda: tools.overview(version))

    @server.tool(annotations=_READ_ONLY)
    def kernels(version: Version, stage: Stage = None,
                limit: Annotated[int, Field(description=f"most kernels returned (1–{MAX_KERNELS})")] = DEFAULT_KERNELS,
                ) -> dict[str, Any]:
        """Top kernels of a stage by nsys time: friendly and raw names, time, class, useful vs executed work."""
        return _answer(lambda: tools.kernels(version, stage, limit))

    @server.tool(annotations=_READ_ONLY)
    def findings(version: Version, stage: Stage = None) -> dict[str, Any]:
        """The findings exactly as the version's data/findings.json holds them (claim, evidence, bound)."""
        return _answer(lambda: tools.findings(version, stage))

    @server.tool(annotations=_READ_ONLY)
    def compare(baseline: Version, current: Version) -> dict[str, Any]:
        """Two versions compared as `compare --json` compares their data folders (ncu context, no verdict)."""
        return _answer(lambda: tools.compare(baseline, current))

    @server.tool(annotations=_READ_ONLY)
    def project(version: Version,
                chip: Annotated[str, Field(description="a chip key the report projects onto, e.g. h100-sxm")],
                ) -> dict[str, Any]:
        """A version projected onto another chip, the same JSON as `project --json` (the kernel model)."""
        return _answer(lambda: tools.project(version, chip))

    @server.tool(annotations=_READ_ONLY)
    def sql(version: Version,
            query: Annotated[str, Field(description="one DuckDB SELECT over the version's tables "
                                                    "(data/<name>.csv is table <name>)")],
            limit: Annotated[int, Field(description=f"most rows returned (1–{MAX_ROWS})")] = DEFAULT_ROWS,
            ) -> dict[str, Any]:
        """Rows of one read-only SELECT over the version's data tables (top_kernels, stage_decomposition, …)."""
        return _answer(lambda: tools.sql(version, query, limit))

    return server
