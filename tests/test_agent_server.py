"""`python -m generator mcp SITE` driven by the MCP SDK's own stdio client over the built example:
every tool's answer checked against the data files (and `compare --json` / `project --json` run
by the CLI), every refusal one line, the site unchanged, and llms.txt's links resolving."""
from __future__ import annotations

import asyncio
import csv
import functools
import hashlib
import http.server
import json
import re
import sys
import threading
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, BuiltSite

pytest.importorskip("mcp")
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from generator.cli import main  # noqa: E402
from generator.commands.build import EXAMPLE  # noqa: E402
from generator.output_dirs import JSON_MARK  # noqa: E402

pytestmark = pytest.mark.slow
REPORT = "ocr-vlm-h200"
TOOLS = {"versions", "overview", "kernels", "findings", "compare", "project", "sql"}
MB = 1 << 20


def tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def csv_rows(path: Path) -> int:
    with path.open(encoding="utf-8", newline="") as handle:
        return sum(1 for _ in csv.reader(handle)) - 1


def session(site: Path, cwd: Path, body: Callable[[Client], Awaitable[Any]]) -> Any:
    """``body`` run against a server over ``site`` started as a subprocess in ``cwd``."""
    async def run() -> Any:
        params = StdioServerParameters(command=sys.executable, args=["-m", "generator", "mcp", str(site)],
                                       cwd=str(cwd), env={"PYTHONPATH": str(ROOT), "KERNEL_REPORT_CACHE": "off",
                                                          "PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"})
        async with Client(params, cache=None) as client:
            return await body(client)
    return asyncio.run(run())


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


async def refusal(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} answered {arguments!r:.200}"
    text = result.content[0].text
    assert "\n" not in text.strip() and "Traceback" not in text and len(text) < 1000, text[:2000]
    return text


@pytest.fixture(scope="module")
def site(example_site: BuiltSite) -> Path:
    return example_site.site


@pytest.fixture(scope="module")
def answers(site: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One session calling every tool; the site's checksums before and after; the server's cwd."""
    cwd = tmp_path_factory.mktemp("server-cwd")
    before = tree(site)

    async def body(client: Client) -> dict[str, Any]:
        listed = await client.list_tools()
        out: dict[str, Any] = {"tools": {t.name: t for t in listed.tools}}
        out["versions"] = await call(client, "versions")
        v3 = f"{REPORT}/v3"
        out["overview"] = await call(client, "overview", version=v3)
        out["kernels"] = await call(client, "kernels", version=v3, stage="decode", limit=5)
        out["findings"] = await call(client, "findings", version=v3)
        out["findings_decode"] = await call(client, "findings", version=v3, stage="decode")
        out["compare"] = await call(client, "compare", baseline=f"{REPORT}/v2", current=v3)
        out["project"] = {chip: await call(client, "project", version=v3, chip=chip) for chip in ("h100-sxm", "b200")}
        tables = (await call(client, "sql", version=v3, query="SELECT 1 AS one"))["tables"]
        out["counts"] = {t: (await call(client, "sql", version=v3, query=f"SELECT count(*) AS n FROM {t}"))["rows"][0]["n"]
                         for t in tables}
        out["limited"] = await call(client, "sql", version=v3, query="SELECT name FROM top_kernels", limit=7)
        return out

    out = session(site, cwd, body)
    out["changed"] = tree(site) != before
    out["cwd_files"] = sorted(str(p) for p in cwd.rglob("*"))
    return out


def test_tools_listed_with_schemas_and_one_line_descriptions(answers: dict[str, Any]) -> None:
    tools = answers["tools"]
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description and "\n" not in tool.description.strip() and len(tool.description) < 120
        assert tool.input_schema["type"] == "object"
    assert tools["sql"].input_schema["required"] == ["version", "query"]
    assert tools["kernels"].input_schema["required"] == ["version"]


def test_versions_are_the_report_yaml_versions(answers: dict[str, Any]) -> None:
    rows = answers["versions"]["rows"]
    assert [r["id"] for r in rows] == [f"{REPORT}/v1", f"{REPORT}/v2", f"{REPORT}/v3"]
    assert [r["date"] for r in rows] == ["2026-11-22", "2026-11-26", "2026-11-29"]  # examples/ocr-vlm/report.yaml
    assert [r["attn_impl"] for r in rows] == ["eager", "sdpa", "sdpa"]
    assert all(r["gpus"] == ["NVIDIA H200"] and r["workload"] == "ocr-vlm" for r in rows)
    assert rows[2]["title"]["en"] == "V3: SDPA recaptured"


def test_findings_equal_findings_json(answers: dict[str, Any], site: Path) -> None:
    document = json.loads((site / "v3/data/findings.json").read_text(encoding="utf-8"))
    assert answers["findings"] == document
    decode = [f for f in document["findings"] if f["stage"] == "decode"]
    assert decode and answers["findings_decode"]["findings"] == decode


def test_sql_counts_equal_csv_rows(answers: dict[str, Any], site: Path) -> None:
    csvs = {p.stem: csv_rows(p) for p in (site / "v3/data").glob("*.csv")}
    assert answers["counts"] == csvs  # every data/*.csv is a table, by its stem
    assert csvs["top_kernels"] > 7
    limited = answers["limited"]
    assert limited["row_count"] == 7 and limited["truncated"] and len(limited["rows"]) == 7


def test_overview_and_kernels_are_the_data_files(answers: dict[str, Any], site: Path) -> None:
    with (site / "v3/data/stage_decomposition.csv").open(encoding="utf-8", newline="") as handle:
        stages = list(csv.DictReader(handle))
    overview = answers["overview"]
    assert [r["stage"] for r in overview["stage_decomposition"]] == [r["stage"] for r in stages]
    assert [r["span_ns"] for r in overview["stage_decomposition"]] == [int(r["span_ns"]) for r in stages]
    assert overview["setup"]["name"] == "NVIDIA H200" and overview["workload"]["fidelity_verdict"] == "same"
    savings = [f["bound"]["exclusive_saving_ns"] for f in overview["largest_savings"]]
    findings = answers["findings"]["findings"]
    expected = sorted((f["bound"]["exclusive_saving_ns"] for f in findings if f["bound"] and not f["abstained"]
                       and f["bound"]["exclusive_saving_ns"] > 0), reverse=True)[:5]
    assert savings == expected and savings
    with (site / "v3/data/top_kernels.csv").open(encoding="utf-8", newline="") as handle:
        decode = [r for r in csv.DictReader(handle) if r["stage"] == "decode"]
    kernels = answers["kernels"]
    assert kernels["total_rows"] == len(decode) and kernels["truncated"]
    assert [(k["name"], k["total_ns"]) for k in kernels["rows"]] == [(r["name"], int(r["total_ns"])) for r in decode[:5]]
    profiled = [k for k in kernels["rows"] if k["ncu"]]  # ncu_metrics.csv's row of the kernel in decode
    assert profiled and all([n["stage"] for n in k["ncu"]] == ["decode"] for k in profiled)
    assert all(k["profiled_class"]["decode"] == k["ncu"][0]["class"] for k in profiled)


def test_compare_is_the_cli_json(answers: dict[str, Any], site: Path, tmp_path: Path) -> None:
    out = tmp_path / "compare.json"
    assert main(["compare", str(site / "v2"), str(site / "v3"), "--json", str(out)]) == 0
    cli = _unmarked(json.loads(out.read_text(encoding="utf-8")))
    assert cli["baseline"] == str(site / "v2")
    assert answers["compare"] == {**cli, "baseline": f"{REPORT}/v2", "current": f"{REPORT}/v3"}
    assert cli["ncu_context"]["rows"]  # the matched kernels' ncu context, no verdict (data folders)


@pytest.mark.parametrize("chip, validate", [("h100-sxm", ["--validate", str(ROOT / "examples/runs/ocr-vlm-sdpa-v2")]),
                                            ("b200", [])])
def test_project_is_the_cli_json(answers: dict[str, Any], chip: str, validate: list[str], tmp_path: Path) -> None:
    """The report's chips as report.yaml lists them (h100-sxm validated against the H100 capture)."""
    out = tmp_path / "project.json"
    assert main(["project", "v3", "--report", str(EXAMPLE), "--chip", chip, *validate, "--json", str(out)]) == 0
    assert answers["project"][chip] == _unmarked(json.loads(out.read_text(encoding="utf-8")))


def _unmarked(document: dict[str, Any]) -> dict[str, Any]:
    """A ``--json`` file's document without the mark that names the command which wrote it (output_dirs.JSON_MARK)."""
    assert document[JSON_MARK] in ("compare", "project")
    return {k: v for k, v in document.items() if k != JSON_MARK}


def test_nothing_written(answers: dict[str, Any]) -> None:
    assert not answers["changed"] and answers["cwd_files"] == []


def _peak_rss(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status)[1]) * 1024


def _server_pid() -> int:
    for stat in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = stat.read_bytes().split(b"\0")
            parent = int(Path(stat.parent / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if parent == __import__("os").getpid() and b"mcp" in args:
            return int(stat.parent.name)
    raise AssertionError("no server process")


def test_refusals_are_one_line_and_memory_stays_bounded(site: Path, tmp_path: Path) -> None:
    before = tree(site)
    v3 = f"{REPORT}/v3"
    big = "x" * (10 * MB)

    async def body(client: Client) -> dict[str, Any]:
        said: dict[str, str] = {}
        for name, query in {
            "read_csv": "SELECT * FROM read_csv('/etc/passwd')",
            "read_text": "SELECT * FROM read_text('/etc/hostname')",
            "file_scan": f"SELECT * FROM '{site / 'v3/data/top_kernels.csv'}'",
            "glob": "SELECT * FROM glob('/*')",
            "copy": "COPY top_kernels TO '/tmp/kr-leak.csv'",
            "copy_select": "COPY (SELECT 1) TO 'leak.csv'",
            "attach": "ATTACH '/tmp/kr-leak.duckdb' AS leak",
            "install": "INSTALL httpfs",
            "load": "LOAD httpfs",
            "set": "SET enable_external_access = true",
            "create": "CREATE TABLE leak AS SELECT 1",
            "two": "SELECT 1; SELECT 2",
            "export": "EXPORT DATABASE '/tmp/kr-leak'",
        }.items():
            said[f"sql:{name}"] = await refusal(client, "sql", version=v3, query=query)
        for name, version in {"dotdot": f"{REPORT}/../v3", "up": "../v3", "absolute": str(site / "v3"),
                              "etc": "/etc/passwd", "nul": f"{v3}\x00", "big": big, "bare": "v3"}.items():
            said[f"version:{name}"] = await refusal(client, "findings", version=version)
        said["chip:path"] = await refusal(client, "project", version=v3, chip="../../etc/passwd")
        said["chip:unknown"] = await refusal(client, "project", version=v3, chip="rtx-5090")
        said["stage"] = await refusal(client, "kernels", version=v3, stage="../decode")
        said["limit"] = await refusal(client, "kernels", version=v3, limit=0)
        said["compare"] = await refusal(client, "compare", baseline="/etc", current=v3)
        pid = _server_pid()
        baseline_rss = _peak_rss(pid)
        said["sql:big"] = await refusal(client, "sql", version=v3, query=big)
        said["sql:big_select"] = await refusal(client, "sql", version=v3, query="SELECT '" + big + "'")
        said["peak_growth"] = str(_peak_rss(pid) - baseline_rss)
        said["still_answers"] = str((await call(client, "sql", version=v3, query="SELECT count(*) AS n FROM stage_time"))
                                    ["rows"][0]["n"])
        return said

    said = session(site, tmp_path, body)
    assert tree(site) == before and list(tmp_path.iterdir()) == []
    assert not any(Path(p).exists() for p in ("/tmp/kr-leak.csv", "/tmp/kr-leak.duckdb", "/tmp/kr-leak"))
    for key in ("read_csv", "read_text", "file_scan", "glob"):
        assert "may read only this version's tables" in said[f"sql:{key}"], said[f"sql:{key}"]
    for key in ("copy", "copy_select", "attach", "install", "load", "set", "create", "two", "export"):
        assert "only one SELECT statement" in said[f"sql:{key}"], said[f"sql:{key}"]
    for key in ("dotdot", "up", "absolute", "etc", "nul", "big", "bare"):
        assert "unknown version id" in said[f"version:{key}"]
    assert "unknown chip; this version's are h100-sxm, b200" in said["chip:path"]
    assert "longer than" in said["sql:big"] and "longer than" in said["sql:big_select"]
    assert len(said["version:big"]) < 1000  # the 10 MB text is never echoed back
    assert int(said["peak_growth"]) < 100 * MB  # two 10 MB strings: parsed, refused unread, freed
    assert said["still_answers"] == str(csv_rows(site / "v3/data/stage_time.csv"))


def _llms_links(text: str) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", text)


@functools.cache
def _served(site: Path) -> str:
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *a: None  # type: ignore[method-assign]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/"


def test_llms_txt_links_resolve_file_and_served(site: Path) -> None:
    text = (site / "llms.txt").read_text(encoding="utf-8")
    links = _llms_links(text)
    root = site.resolve()
    for link in links:
        assert "://" not in link and not link.startswith("/")
        target = (root / link).resolve()
        assert target.is_relative_to(root) and target.is_file(), link
    base = _served(root)
    for link in sorted(set(links))[::7] + ["v3/zh/findings.html", "v3/data/useful_work.csv"]:
        with urllib.request.urlopen(base + link, timeout=10) as response:
            assert response.status == 200 and response.read() == (root / link).read_bytes()
    for version in ("v1", "v2", "v3"):  # Overview and Findings in both languages, every data file
        for page in ("index", "findings"):
            assert f"{version}/{page}.html" in links and f"{version}/zh/{page}.html" in links
        assert {Path(link).name for link in links if link.startswith(f"{version}/data/")} == \
            {p.name for p in (site / version / "data").iterdir()}
    assert f"`{REPORT}/v3`" in text  # the id the MCP server takes


def test_llms_txt_describes_every_column(site: Path) -> None:
    text = (site / "llms.txt").read_text(encoding="utf-8")
    for path in sorted((site / "v3/data").glob("*.csv")):
        section = text.split(f"### {path.name}\n", 1)[1].split("\n### ", 1)[0]
        with path.open(encoding="utf-8", newline="") as handle:
            header = next(csv.reader(handle))
        listed = re.findall(r"^- `([^`]+)`: (.+)$", section, re.M)
        assert [c for c, _ in listed] == header, path.name
        assert [c for c, meaning in listed if meaning == "(not described)"] == [], path.name
