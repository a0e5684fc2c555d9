"""The reports and versions of a built site, found once when the server starts.

Every file a tool reads is listed here, under the site's own names; what a client sends only selects
one of these entries by exact match, it never becomes part of a path.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from generator.render.data_files import FINDINGS_JSON, VERSION_JSON

#: a report's folder holds this list of its versions (mike's format, written by the build)
VERSIONS_JSON = "versions.json"
#: the names the site's folders and data files have (anything else is skipped, never opened)
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


class Refused(Exception):
    """A request the server does not serve, in one plain sentence for the client."""


@dataclass(frozen=True)
class SiteVersion:
    """One built version: ``id`` is ``REPORT/VERSION``; ``files`` its data files by name."""

    id: str
    report: str
    version: str
    folder: Path
    files: dict[str, Path] = field(default_factory=dict)

    def json(self, name: str) -> Any:
        """A data file's JSON (``name`` one of :attr:`files`), None where the version has none."""
        path = self.files.get(name)
        return None if path is None else json.loads(path.read_text(encoding="utf-8"))

    def table(self, name: str) -> pd.DataFrame | None:
        """A data file's CSV as read back (empty cells missing), None where the version has none."""
        path = self.files.get(name)
        if path is None:
            return None
        return pd.read_csv(path, index_col=False, keep_default_na=False, na_values=[""], low_memory=False)

    @property
    def tables(self) -> dict[str, Path]:
        """Every CSV data file by its stem (the SQL tool's table names), sorted."""
        return {Path(name).stem: path for name, path in sorted(self.files.items()) if name.endswith(".csv")}

    @property
    def facts(self) -> dict[str, Any]:
        """data/version.json (report, version, setup, workload); {} for a site built before it existed."""
        return self.json(Path(VERSION_JSON).name) or {}

    @property
    def findings(self) -> dict[str, Any] | None:
        return self.json(Path(FINDINGS_JSON).name)


def records(frame: pd.DataFrame | None) -> list[dict[str, Any]]:
    """Rows as JSON-ready dicts: missing cells None, numpy numbers as Python ones."""
    if frame is None:
        return []
    return [{str(k): plain(v) for k, v in row.items()} for row in frame.to_dict("records")]


def plain(value: Any) -> Any:
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    return value


def _children(folder: Path) -> list[Path]:
    """The entries of ``folder`` with a safe name that are not symbolic links, sorted by name."""
    return sorted((p for p in folder.iterdir() if _SAFE_NAME.fullmatch(p.name) and not p.is_symlink()),
                  key=lambda p: p.name)


class SiteIndex:
    """The versions of the site at ``root``: a one-report site (``root/versions.json``) or one
    report per folder holding a versions.json."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise FileNotFoundError(f"{root}: not a directory")
        reports = [self.root] if (self.root / VERSIONS_JSON).is_file() else [
            p for p in _children(self.root) if p.is_dir() and (p / VERSIONS_JSON).is_file()]
        self.versions: dict[str, SiteVersion] = {}
        for folder in reports:
            for version in self._report_versions(folder):
                self.versions[version.id] = version
        if not self.versions:
            raise FileNotFoundError(f"{root}: no built report (no versions.json with a version folder beside it)")

    @staticmethod
    def _report_versions(folder: Path) -> list[SiteVersion]:
        listed = json.loads((folder / VERSIONS_JSON).read_text(encoding="utf-8"))
        names = [e.get("version") for e in listed if isinstance(e, dict)] if isinstance(listed, list) else []
        found = []
        for name in reversed(names):  # versions.json: newest first; the site's order is oldest first
            path = folder / str(name)
            if not isinstance(name, str) or not _SAFE_NAME.fullmatch(name) or path.is_symlink() or not path.is_dir():
                continue
            data = path / "data"
            files = {p.name: p for p in _children(data) if p.is_file()} if data.is_dir() and not data.is_symlink() else {}
            version = SiteVersion("", "", name, path, files)
            report = str((version.facts.get("report") or {}).get("id") or folder.name)
            found.append(SiteVersion(f"{report}/{name}", report, name, path, files))
        return found

    def version(self, text: object) -> SiteVersion:
        """The version whose id is ``text`` exactly; anything else is refused."""
        if isinstance(text, str) and text in self.versions:
            return self.versions[text]
        raise Refused(f"unknown version id; this site's versions are {', '.join(self.versions)} "
                      "(the versions tool lists them)")
