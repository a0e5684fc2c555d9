"""What each tool of the MCP server answers, from a built site's data files (:class:`SiteIndex`).

Every payload carries ``schema_version``; lists say how many rows there were and whether they were
cut (``truncated``). Requests the site cannot answer raise :class:`Refused` with one sentence.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from generator.agent.site_index import Refused, SiteIndex, records
from generator.agent.sql import DEFAULT_ROWS, Tables

SCHEMA_VERSION = 1
#: findings with the largest exclusive saving the overview lists (the Overview page's "largest savings")
SAVINGS_SHOWN = 5
DEFAULT_KERNELS = 20
MAX_KERNELS = 200
#: the longest text a stage or chip name may be (longer ones are refused unread)
MAX_NAME_CHARS = 200


class Tools:
    """The tools over one site; SQL databases are made per version on first use."""

    def __init__(self, site: SiteIndex) -> None:
        self.site = site
        self._tables: dict[str, Tables] = {}

    def versions(self) -> dict[str, Any]:
        rows = []
        for version in self.site.versions.values():
            facts = version.facts
            setup, workload = facts.get("setup") or {}, facts.get("workload") or {}
            gpus = [g.get("name") for g in workload.get("gpus") or [] if isinstance(g, dict)] or [setup.get("name")]
            rows.append({"id": version.id, "report": version.report, "version": version.version,
                         "report_title": (facts.get("report") or {}).get("title"),
                         "title": (facts.get("version") or {}).get("title"),
                         "date": (facts.get("version") or {}).get("date"),
                         "gpus": [g for g in gpus if g],
                         "workload": (workload.get("model") or {}).get("workload"),
                         "attn_impl": workload.get("attn_impl"), "mode": workload.get("mode"),
                         "data_files": sorted(version.files)})
        return {"schema_version": SCHEMA_VERSION, "rows": rows, "truncated": False}

    def overview(self, version_id: str) -> dict[str, Any]:
        version = self.site.version(version_id)
        facts, summary = version.facts, version.json("summary.json") or {}
        findings = (version.findings or {}).get("findings") or []
        saving = [f for f in findings if f.get("bound") and not f.get("abstained")
                  and (f["bound"].get("exclusive_saving_ns") or 0) > 0]
        saving.sort(key=lambda f: -f["bound"]["exclusive_saving_ns"])
        return {"schema_version": SCHEMA_VERSION, "version": version.id,
                "report": facts.get("report"), "title": (facts.get("version") or {}).get("title"),
                "date": (facts.get("version") or {}).get("date"),
                "stage_decomposition": records(version.table("stage_decomposition.csv")),
                "largest_savings": [{"rank": f["rank"], "id": f["id"], "stage": f["stage"], "claim": f["claim"].get("en"),
                                     "bound": f["bound"], "confidence": f.get("confidence")}
                                    for f in saving[:SAVINGS_SHOWN]],
                "setup": facts.get("setup"), "workload": facts.get("workload"),
                "coverage": summary.get("coverage"), "gpu": summary.get("gpu"),
                "classification_counts": (summary.get("classification") or {}).get("counts"),
                "ncu_agreement": summary.get("ncu_agreement")}

    def kernels(self, version_id: str, stage: str | None = None, limit: int = DEFAULT_KERNELS) -> dict[str, Any]:
        version = self.site.version(version_id)
        top = version.table("top_kernels.csv")
        if top is None:
            raise Refused(f"version {version.id} has no top_kernels.csv")
        stage = _choice(stage, [str(s) for s in dict.fromkeys(top["stage"])], "stage") if stage is not None else "all"
        rows = records(top[top["stage"].astype(str) == stage])
        work = records(version.table("useful_work.csv"))
        ncu = records(version.table("ncu_metrics.csv"))
        limit = _bounded(limit, MAX_KERNELS)
        for row in rows:
            row["profiled_class"] = dict(p.split("=", 1) for p in str(row.get("profiled") or "").split(";") if "=" in p)
            row["ncu"] = [{k: m.get(k) for k in ("stage", "class", "qualifier", "busiest_unit", "launches", "duration_ns")}
                          for m in ncu if m.get("name") == row["name"] and (stage == "all" or m.get("stage") == stage)]
            row["useful_work"] = [w for w in work if w.get("name") == row["name"]
                                  and (stage == "all" or w.get("stage") == stage)]
        return {"schema_version": SCHEMA_VERSION, "version": version.id, "stage": stage,
                "total_rows": len(rows), "rows": rows[:limit], "truncated": len(rows) > limit}

    def findings(self, version_id: str, stage: str | None = None) -> dict[str, Any]:
        version = self.site.version(version_id)
        document = version.findings
        if document is None:
            raise Refused(f"version {version.id} has no findings.json")
        if stage is None:
            return document
        stages = list(dict.fromkeys(str(f.get("stage")) for f in document.get("findings") or []))
        stage = _choice(stage, stages, "stage")
        return {**document, "findings": [f for f in document["findings"] if str(f.get("stage")) == stage]}

    def compare(self, baseline_id: str, current_id: str) -> dict[str, Any]:
        from generator.commands.compare import compare_paths, comparison_report
        from generator.errors import InputError

        baseline, current = self.site.version(baseline_id), self.site.version(current_id)
        try:  # the CLI's default --metrics
            compared = compare_paths(baseline.folder, current.folder)
        except InputError as exc:
            raise Refused(str(exc).replace(str(self.site.root), "SITE")) from None
        return comparison_report(baseline.id, current.id, compared)

    def project(self, version_id: str, chip: str) -> dict[str, Any]:
        version = self.site.version(version_id)
        entries = version.json("what_if.json") or []
        chips = [e["target"]["key"] for e in entries]
        if not chips:
            raise Refused(f"version {version.id} has no chip projections (the report lists no chips, or the "
                          "capture has no ncu launches)")
        entry = dict(entries[chips.index(_choice(chip, chips, "chip"))])
        if entry.get("sensitivity") is None:  # the build keeps it with the first chip: it does not depend on the target
            entry["sensitivity"], entry["moves"] = entries[0]["sensitivity"], entries[0]["moves"]
        return entry

    def sql(self, version_id: str, query: str, limit: int = DEFAULT_ROWS) -> dict[str, Any]:
        version = self.site.version(version_id)
        if version.id not in self._tables:
            self._tables[version.id] = Tables(version.tables)
        tables = self._tables[version.id]
        return {"schema_version": SCHEMA_VERSION, "version": version.id, "tables": tables.names,
                **tables.query(query, limit)}


def _choice(text: object, allowed: list[str], what: str) -> str:
    """``text`` when it is exactly one of ``allowed``; else refused, naming the allowed ones."""
    if isinstance(text, str) and len(text) <= MAX_NAME_CHARS and text in allowed:
        return text
    raise Refused(f"unknown {what}; this version's are {', '.join(allowed)}")


def _bounded(limit: object, most: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise Refused(f"limit must be a whole number from 1 to {most}")
    return min(limit, most)


def site_tools(root: Path) -> Tools:
    return Tools(SiteIndex(root))
