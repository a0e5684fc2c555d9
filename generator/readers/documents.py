"""JSON and YAML input documents (capture manifests, chip files) read within bounds.

The parsers alone raise what no reader expects on hostile input: RecursionError on deep nesting,
ValueError on a 5,000-digit integer or a date "2026-02-31", floats ``Infinity`` / ``NaN`` that JSON
accepts. Here each is one :class:`InputError` naming the file (and the key): the file's size, its
nesting depth and every number (finite, at most :data:`MAX_INT` in magnitude) are checked before a
schema (pydantic, at the reader) checks types and ranges.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from generator.errors import InputError

#: the largest document read (bytes): a manifest with every kernel's names is a few MB
MAX_BYTES = 512 << 20
#: the deepest nesting of lists and mappings taken (a capture manifest nests 5 deep)
MAX_DEPTH = 32
#: the largest integer magnitude taken (int64: every count, byte size and timestamp fits)
MAX_INT = 2**63 - 1


def key_path(loc: tuple[str | int, ...] | list[str | int]) -> str:
    """``("energy", "stages", "decode", "joules")`` → ``energy.stages.decode.joules``; list items ``[i]``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def _text(path: Path) -> str:
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise InputError(path, f"{size:,} bytes; at most {MAX_BYTES:,} are read")
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(path, f"unreadable ({' '.join(str(exc).split())})") from None


def load_json(path: Path, what: str) -> Any:
    """The JSON document ``path`` (a ``what``: "manifest"), checked by :func:`check_tree`."""
    try:
        value = json.loads(_text(path))
    except RecursionError:
        raise InputError(path, f"not a readable {what} (nested too deeply)") from None
    except ValueError as exc:  # JSONDecodeError, and an integer over Python's digit limit
        raise InputError(path, f"not a readable {what} ({' '.join(str(exc).split())[:200]})") from None
    check_tree(path, value)
    return value


def load_yaml(path: Path, what: str) -> Any:
    """The YAML document ``path`` (a ``what``: "chip file"), checked by :func:`check_tree`."""
    try:
        value = yaml.safe_load(_text(path))
    except RecursionError:
        raise InputError(path, f"not a readable {what} (nested too deeply)") from None
    except (yaml.YAMLError, ValueError, OverflowError) as exc:  # ValueError: a huge int, a date 2026-02-31
        raise InputError(path, f"not valid YAML ({' '.join(str(exc).split())[:200]})") from None
    check_tree(path, value)
    return value


def check_tree(path: Path, value: Any) -> None:
    """InputError naming the key where ``value`` (parsed JSON/YAML) nests deeper than
    :data:`MAX_DEPTH`, holds a number that is not finite, or an integer over :data:`MAX_INT`."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        node, loc = stack.pop()
        if len(loc) > MAX_DEPTH:
            raise InputError(path, f"{key_path(loc)}: nested deeper than {MAX_DEPTH} levels")
        if isinstance(node, dict):
            stack += [(v, (*loc, str(k))) for k, v in node.items()]
        elif isinstance(node, list):
            stack += [(v, (*loc, i)) for i, v in enumerate(node)]
        elif isinstance(node, float) and not math.isfinite(node):
            raise InputError(path, f"{key_path(loc)}: {node} is not a finite number")
        elif isinstance(node, int) and not isinstance(node, bool) and abs(node) > MAX_INT:
            raise InputError(path, f"{key_path(loc)}: {len(str(abs(node)))}-digit integer is out of range")


def validated(path: Path, schema: type[BaseModel], value: Any) -> BaseModel:
    """``value`` validated by ``schema``; the first problem as one InputError naming the file and key."""
    try:
        return schema.model_validate(value)
    except ValidationError as exc:
        error = exc.errors()[0]
        shown = repr(error.get("input"))
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        message = error["msg"].removeprefix("Value error, ")
        where = key_path(error["loc"])
        detail = f"{message} (got {shown})" if error["type"] not in ("missing",) and "input" in error else message
        raise InputError(path, f"{where}: {detail}") from None
