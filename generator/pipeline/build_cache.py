"""A content-addressed cache of parsed inputs, so an unchanged input is never parsed twice.

An entry is what one reader call returned (a Dataset, a stage summary, an nsys export's stages
read in one pass, …) for one file: a folder ``<key>/`` with ``meta.json`` (the key, the small
values: provenance, devices, dicts) and one Parquet file per table, written by DuckDB. The key is a sha256 over the input file's bytes and
path, the call and its arguments, the source of every module that reads inputs and the versions
of the libraries they use — an edited input, reader or library never meets an old entry.

An entry is stored only when reading it back gives the very same tables (dtypes, values and
value types), so a build with the cache writes the same bytes as one without. A corrupt or foreign
entry is reported in one line, removed and rebuilt. The cache keeps at most
:data:`DEFAULT_MAX_BYTES` (``KERNEL_REPORT_CACHE_MAX_MB``), evicting the least recently used
entries. ``KERNEL_REPORT_CACHE`` names its folder (default: the user cache folder), ``off``
disables it.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import json
import math
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path

import duckdb
import pandas as pd
import platformdirs

import generator
from generator.model import Dataset, GpuInfo, Provenance
from generator.readers.base import sha256_of
from generator.readers.nsys_sqlite import StageReading

FORMAT = "kernel-report-input-cache/1"
DEFAULT_MAX_BYTES = 1 << 30
#: Modules whose code decides what an input reads as (their source is part of every key).
READING_CODE = ("readers", "model.py", "metric_table.py", "nsys_queries.py", "run_layout.py", "units.py",
                "errors.py", "text_safety.py", "pipeline/inputs.py", "pipeline/build_cache.py",
                "pipeline/stage_choice.py", "pipeline/rank_map.py", "analyses/collectives.py")
LIBRARIES = ("pandas", "numpy", "duckdb", "adbc-driver-sqlite", "adbc-driver-manager", "ncu-report",
             "cpp-demangle")
_TABLES = tuple(f.name for f in dataclasses.fields(Dataset) if f.name not in ("provenance", "gpus"))

Value = Dataset | StageReading | pd.DataFrame | dict


@cache
def code_fingerprint() -> str:
    """sha256 over the reading code's source and the library and Python versions."""
    digest = hashlib.sha256(FORMAT.encode())
    root = Path(generator.__file__).parent
    for name in READING_CODE:
        for path in sorted((root / name).rglob("*.py")) if (root / name).is_dir() else [root / name]:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    for lib in LIBRARIES:
        try:
            version = importlib.metadata.version(lib)
        except importlib.metadata.PackageNotFoundError:
            version = "-"
        digest.update(f"{lib}={version}\0".encode())
    digest.update(sys.version.encode())
    return digest.hexdigest()


def default_root() -> Path | None:
    """The cache folder from KERNEL_REPORT_CACHE (``off``: none), else the user cache folder."""
    chosen = os.environ.get("KERNEL_REPORT_CACHE")
    if chosen == "off":
        return None
    return Path(chosen) if chosen else Path(platformdirs.user_cache_dir("kernel-report"))


def default_max_bytes() -> int:
    size = os.environ.get("KERNEL_REPORT_CACHE_MAX_MB")
    return int(float(size) * 2**20) if size else DEFAULT_MAX_BYTES


class BuildCache:
    """Parsed inputs by content; :meth:`get` returns a stored value or computes and stores it."""

    def __init__(self, root: Path | None, max_bytes: int | None = None,
                 warn: Callable[[str], None] | None = None) -> None:
        self.root = root
        self.max_bytes = default_max_bytes() if max_bytes is None else max_bytes
        self.warn = warn or (lambda line: print(line, file=sys.stderr))
        self.hits = self.misses = 0

    def key(self, path: Path, call: str, args: object) -> str:
        path = path.resolve()
        head = json.dumps([code_fingerprint(), str(path), sha256_of(path), call, args])
        return hashlib.sha256(head.encode()).hexdigest()

    def holds(self, path: Path, call: str, args: object) -> bool:
        """Whether an entry for ``call(path, *args)`` is stored (:meth:`get` still checks it)."""
        if self.root is None:
            return False
        key = self.key(path, call, args)
        return (self.root / key[:2] / key).exists()

    def get(self, path: Path, call: str, args: object, compute: Callable[[], Value]) -> Value:
        """The value ``compute()`` gives for ``call(path, *args)``, from the cache when stored."""
        if self.root is None:
            return compute()
        key = self.key(path, call, args)
        entry = self.root / key[:2] / key
        if entry.exists():
            try:
                value = _load(entry, key)
                os.utime(entry)  # most recently used
                self.hits += 1
                return value
            except Exception as exc:  # any damage: the entry is rebuilt, never trusted
                self.warn(f"build cache: entry {entry} is unreadable or foreign ({_short(exc)}); rebuilt")
                shutil.rmtree(entry, ignore_errors=True)
        self.misses += 1
        value = compute()
        try:
            self._store(entry, key, value)
        except Exception as exc:  # a full disk, or a value this format cannot hold: only not cached
            self.warn(f"build cache: cannot write {entry} ({_short(exc)}); continuing without it")
        return value

    def _store(self, entry: Path, key: str, value: Value) -> None:
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key[:8]}-", dir=entry.parent))
        try:
            _dump(tmp, key, value)
            if not _same(_load(tmp, key), value):
                return  # a table Parquet cannot carry exactly: not cached
            try:
                tmp.rename(entry)
            except OSError:  # another build stored it meanwhile
                return
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self._evict()

    def _evict(self) -> None:
        """Remove least recently used entries while the cache is over its size; only folders named
        and shaped as :meth:`_store` writes them are entries (:func:`entry_size`), so a folder of the
        user's under a ``KERNEL_REPORT_CACHE`` they named is never touched."""
        entries = []
        for entry in self.root.glob("*/*"):
            size = entry_size(entry)
            if size is not None:
                entries.append((entry.lstat().st_mtime_ns, entry.name, size, entry))
        total = sum(e[2] for e in entries)
        for _, _, size, entry in sorted(entries):
            if total <= self.max_bytes:
                break
            shutil.rmtree(entry, ignore_errors=True)
            total -= size


_KEY = re.compile(r"[0-9a-f]{64}")
_TABLE_FILE = re.compile(r"[a-z_]+\.parquet")


def entry_size(folder: Path) -> int | None:
    """The bytes of the cache entry ``folder``, or None unless it is one as :meth:`BuildCache._store`
    writes it: a real folder ``<2 hex>/<64 hex key starting with them>`` holding only regular files,
    ``meta.json`` (of this cache format and this key) and ``<table>.parquet``."""
    name = folder.name
    if not (_KEY.fullmatch(name) and folder.parent.name == name[:2]) or folder.is_symlink() or not folder.is_dir():
        return None
    try:
        files = list(folder.iterdir())
        if not all(f.name == "meta.json" or _TABLE_FILE.fullmatch(f.name) for f in files) or \
                any(f.is_symlink() or not f.is_file() for f in files):
            return None
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("key") != name:
            return None
        return sum(f.stat().st_size for f in files)
    except (OSError, ValueError):
        return None


def _short(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:200]


def _dump(folder: Path, key: str, value: Value) -> None:
    tables: dict[str, pd.DataFrame] = {}
    if isinstance(value, Dataset):
        meta = {"type": "dataset", "provenance": dataclasses.asdict(value.provenance),
                "gpus": [dataclasses.asdict(g) for g in value.gpus]}
        tables = {name: getattr(value, name) for name in _TABLES if getattr(value, name) is not None}
    elif isinstance(value, StageReading):
        fields = value._asdict()
        tables = {name: v for name, v in fields.items() if isinstance(v, pd.DataFrame)}
        meta = {"type": "stages", "values": {name: v for name, v in fields.items() if name not in tables}}
    elif isinstance(value, pd.DataFrame):
        meta, tables = {"type": "frame"}, {"frame": value}
    else:
        meta = {"type": "json", "value": value}
    meta.update(format=FORMAT, key=key, tables={n: _schema(t) for n, t in tables.items()})
    with duckdb.connect(config={"threads": 1}) as duck:
        for name, table in tables.items():  # the path is a parameter, never SQL text
            duck.from_df(table.reset_index(drop=True)).to_parquet(str(folder / f"{name}.parquet"))
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")


def _schema(table: pd.DataFrame) -> dict:
    return {"columns": list(table.columns), "dtypes": [str(t) for t in table.dtypes],
            "index": table.index.tolist() if not isinstance(table.index, pd.RangeIndex) else None}


def _load(folder: Path, key: str) -> Value:
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    if meta.get("format") != FORMAT or meta.get("key") != key:
        raise ValueError(f"written for {meta.get('format')!r}, key {str(meta.get('key'))[:12]}")
    tables = {}
    with duckdb.connect(config={"threads": 1}) as duck:
        for name, schema in meta["tables"].items():
            table = duck.execute("SELECT * FROM read_parquet(?)", [str(folder / f"{name}.parquet")]).df()
            if list(table.columns) != schema["columns"]:
                raise ValueError(f"{name}: columns differ from meta.json")
            table = table.astype(dict(zip(schema["columns"], schema["dtypes"])))
            if schema["index"] is not None:
                table.index = schema["index"]
            tables[name] = table
    if meta["type"] == "frame":
        return tables["frame"]
    if meta["type"] == "json":
        return meta["value"]
    if meta["type"] == "stages":
        return StageReading(**meta["values"], **tables)
    provenance = meta["provenance"]
    provenance["notes"] = tuple(provenance["notes"])
    return Dataset(provenance=Provenance(**provenance), gpus=[GpuInfo(**g) for g in meta["gpus"]], **tables)


def _same(a: Value, b: Value) -> bool:
    """Equal values of equal types everywhere (NaN equals NaN; None is not NaN)."""
    if isinstance(a, Dataset) and isinstance(b, Dataset):
        return (a.provenance == b.provenance and a.gpus == b.gpus
                and all(_same_table(getattr(a, n), getattr(b, n)) for n in _TABLES))
    if isinstance(a, StageReading) and isinstance(b, StageReading):
        return all(_same_table(x, y) if isinstance(x, pd.DataFrame) or isinstance(y, pd.DataFrame)
                   else type(x) is type(y) and json.dumps(x) == json.dumps(y) for x, y in zip(a, b))
    if isinstance(a, pd.DataFrame) and isinstance(b, pd.DataFrame):
        return _same_table(a, b)
    return type(a) is type(b) and json.dumps(a) == json.dumps(b)


def _same_table(a: pd.DataFrame | None, b: pd.DataFrame | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if list(a.columns) != list(b.columns) or list(a.dtypes) != list(b.dtypes) or list(a.index) != list(b.index):
        return False
    return all(_same_cell(x, y) for column in a.columns for x, y in zip(a[column].tolist(), b[column].tolist()))


def _same_cell(x: object, y: object) -> bool:
    if type(x) is not type(y):
        return False
    if isinstance(x, float) and math.isnan(x):
        return math.isnan(y)
    return bool(x == y)
