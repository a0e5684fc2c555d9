"""Keeping a version's built pages when nothing it is made of changed since the last build.

A version's key is a sha256 over the generator's code and templates, the versions of the libraries
that render and build pages, the report's page metadata and settings (top-N, classification, GPU
peaks: everything in report.yaml but the versions), the version's config, the bytes of every file
it reads (run directories walked) and the previous version's key (its pages compare with it).
After a build, ``<cache>/versions/<key>.json`` records a digest of the version's site and Markdown
trees as written; the next build with the same key copies them from the current ``--out`` and
``--src`` when they still have exactly that content, instead of analyzing and rendering again.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import json
import shutil
import sys
from functools import cache
from pathlib import Path

import generator
from generator.model import ReportMeta
from generator.pipeline.config import ReportConfig
from generator.readers.base import sha256_of

FORMAT = "kernel-report-version/1"
KEEP_RECORDS = 256  # newest records kept (a few hundred bytes each)
LIBRARIES = ("mkdocs", "mkdocs-material", "mkdocs-static-i18n", "jieba", "altair", "vl-convert-python", "jinja2",
             "pyyaml", "pydantic", "pandas", "numpy", "duckdb", "adbc-driver-sqlite", "ncu-report", "cpp-demangle",
             "markdown", "pymdown-extensions", "backrefs", "pygments", "markupsafe", "narwhals")


@cache
def code_fingerprint() -> str:
    """sha256 over every file of the generator package (code, templates, resources) and the library versions."""
    digest = hashlib.sha256(FORMAT.encode())
    root = Path(generator.__file__).parent
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    for lib in LIBRARIES:
        try:
            digest.update(f"{lib}={importlib.metadata.version(lib)}\0".encode())
        except importlib.metadata.PackageNotFoundError:
            digest.update(f"{lib}=-\0".encode())
    digest.update(sys.version.encode())
    return digest.hexdigest()


def version_key(meta: ReportMeta, report_file: Path, config: ReportConfig, index: int,
                previous: str | None) -> str | None:
    """The key of ``config.versions[index]``, or None when one of its inputs cannot be read (the
    build then reports it)."""
    version = config.versions[index]
    digest = hashlib.sha256()
    head = [code_fingerprint(), repr(dataclasses.asdict(meta)), str(report_file.resolve()), index,
            config.model_dump_json(exclude={"versions"}, warnings=False),
            version.model_dump_json(warnings=False), previous]
    digest.update(json.dumps(head, default=str).encode())
    files = [*version.runs, *version.inputs.paths(), *(p for point in version.sweep
                                                        for p in [*point.runs, *point.inputs.paths()])]
    try:
        for path in files:
            for file in sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]:
                digest.update(str(file).encode() + b"\0" + sha256_of(file).encode())
    except OSError:
        return None
    return digest.hexdigest()


def tree_digest(root: Path) -> str | None:
    """sha256 over the names and bytes of every file under ``root``; None if it is not a directory."""
    if not root.is_dir():
        return None
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + sha256_of(path).encode())
    return digest.hexdigest()


class VersionReuse:
    """Version trees kept between builds, recorded under ``root`` (None: never kept)."""

    def __init__(self, root: Path | None) -> None:
        self.root = root / "versions" if root is not None else None
        self.kept: list[str] = []

    def restore(self, key: str | None, built: tuple[Path, Path], staged: tuple[Path, Path]) -> bool:
        """Copy the last build's site and Markdown trees of this version (``built``) into ``staged``
        when the key and their content are the ones recorded; whether it did."""
        if self.root is None or key is None or not (self.root / f"{key}.json").is_file():
            return False
        try:
            record = json.loads((self.root / f"{key}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        if record != {"format": FORMAT, "trees": [tree_digest(p) for p in built]}:
            return False
        for source, target in zip(built, staged):
            shutil.copytree(source, target, copy_function=shutil.copy2)
        self.kept.append(key)
        return True

    def remember(self, key: str | None, staged: tuple[Path, Path]) -> None:
        """Record the digests of a version's freshly built trees under its key."""
        if self.root is None or key is None:
            return
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            record = {"format": FORMAT, "trees": [tree_digest(p) for p in staged]}
            (self.root / f"{key}.json").write_text(json.dumps(record), encoding="utf-8")
            records = sorted(self.root.glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
            for old in records[:-KEEP_RECORDS]:
                old.unlink(missing_ok=True)
        except OSError:
            pass  # not kept: the next build renders this version again
