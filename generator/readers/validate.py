"""What every reader hands on, checked at the reader boundary: numbers finite, non-negative and in
range, names present, free of control characters (cleaned) and at most :data:`NAME_LIMIT` characters
(:func:`bounded_name`), first bad row named in one line."""
from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from generator.errors import InputError
from generator.metric_table import CANONICAL_METRIC_NAMES
from generator.model import STAT_COLUMNS, Dataset, GpuInfo
from generator.text_safety import clean_frame, clean_text

#: Largest count, duration (ns), byte count or id we accept: 2**53 (exact in float64; 104 days in ns).
LIMIT = float(2 ** 53)

#: Dataset table → (what its rows are, the column naming a row, columns that must be ≥ 0,
#: columns that must be present in every row).
TABLES: dict[str, tuple[str, str, list[str], list[str]]] = {
    "kernel_summary": ("kernel summary", "name", [*STAT_COLUMNS, "time_pct"], ["count", "total_ns"]),
    "nvtx_summary": ("NVTX summary", "name", [*STAT_COLUMNS, "time_pct"], ["count", "total_ns"]),
    "api_summary": ("CUDA API summary", "name", [*STAT_COLUMNS, "time_pct"], ["count", "total_ns"]),
    "memcpy_summary": ("memcpy summary", "operation", [*STAT_COLUMNS, "total_bytes"], ["count"]),
    "kernel_metrics": ("ncu launch", "name", ["launch_id", *CANONICAL_METRIC_NAMES], ["launch_id"]),
}
#: Columns whose values are whole numbers (counts and ids).
WHOLE = {"count", "launch_id"}
#: Longest name kept whole (characters; real C++ kernel names reach a few thousand): a longer one is
#: cut there and marked (:func:`bounded_name`), so a 100 MB name costs what 64 K characters cost.
NAME_LIMIT = 1 << 16


_MARK = re.compile(r"…\[\+\d+ characters\]")


def bounded_name(name: object) -> object:
    """``name`` cut to :data:`NAME_LIMIT` characters and marked ``…[+N characters]`` when longer (as
    :func:`bounded_name_sql` does inside SQLite; a name cut already stays as it is); anything else as
    it is."""
    if isinstance(name, str) and len(name) > NAME_LIMIT and not _MARK.fullmatch(name, NAME_LIMIT):
        return f"{name[:NAME_LIMIT]}…[+{len(name) - NAME_LIMIT} characters]"
    return name


def bounded_name_sql(column: str) -> str:
    """An SQLite expression giving :func:`bounded_name` of the text ``column`` (the long value never
    leaves SQLite)."""
    return (f"CASE WHEN length({column}) > {NAME_LIMIT} THEN substr({column}, 1, {NAME_LIMIT}) || '…[+' || "
            f"(length({column}) - {NAME_LIMIT}) || ' characters]' ELSE {column} END")


def checked(dataset: Dataset) -> Dataset:
    """``dataset`` with its text cleaned; InputError naming the first row with a bad number or name."""
    for attr in TABLES:
        frame = getattr(dataset, attr)
        if frame is not None:
            setattr(dataset, attr, checked_table(dataset.provenance.path, attr, frame))
    dataset.gpus = [_clean_gpu(gpu) for gpu in dataset.gpus]
    return dataset


def checked_table(path: str | Path, attr: str, frame: pd.DataFrame) -> pd.DataFrame:
    """The Dataset table ``attr`` (a key of TABLES) of ``path`` with its text cleaned; InputError
    naming its first row with a bad number or name (what :func:`checked` does to each table)."""
    what, key, non_negative, required = TABLES[attr]
    path = str(path)
    if key in frame.columns:
        frame[key] = frame[key].map(bounded_name)
    frame = clean_frame(frame)
    _check_names(path, what, frame, key)
    for column in non_negative:
        if column in frame.columns:
            _check_numbers(path, what, frame, key, column, required=column in required)
    return frame


def _row(what: str, frame: pd.DataFrame, key: str, position: int) -> str:
    name = frame[key].iloc[position] if key in frame.columns else None
    shown = f" {name[:80]!r}" if isinstance(name, str) and name else ""
    return f"{what} row {position + 1}{shown}"


def _check_names(path: str, what: str, frame: pd.DataFrame, key: str) -> None:
    if key not in frame.columns:
        return
    bad = ~frame[key].map(lambda v: isinstance(v, str) and v.strip() != "")
    if bad.any():
        position = int(np.flatnonzero(bad.to_numpy())[0])
        raise InputError(path, f"{_row(what, frame, key, position)}: no {key} (empty or missing)")


def _check_numbers(path: str, what: str, frame: pd.DataFrame, key: str, column: str, *, required: bool) -> None:
    values = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    not_numbers = values.isna() & frame[column].notna()
    missing = values.isna() & frame[column].isna()
    finite = np.isfinite(values.to_numpy())
    bad = not_numbers | (required & missing) | (~values.isna() & ~pd.Series(finite, index=values.index))
    bad |= (values < 0) | (values > LIMIT)
    if column in WHOLE:
        bad |= ~values.isna() & (values % 1 != 0)
    if bad.any():
        position = int(np.flatnonzero(bad.to_numpy())[0])
        value = frame[column].iloc[position]
        rule = "a whole number" if column in WHOLE else "a number"
        raise InputError(path, f"{_row(what, frame, key, position)}: {column} is {_shown(value)}; "
                               f"expected {rule} from 0 to {LIMIT:.3g}")


def _shown(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "missing"
    return repr(value.item() if hasattr(value, "item") else value)[:40]


def _clean_gpu(gpu: GpuInfo) -> GpuInfo:
    texts = {f.name: clean_text(v) for f in dataclasses.fields(gpu) if isinstance(v := getattr(gpu, f.name), str)}
    return dataclasses.replace(gpu, **texts) if texts else gpu
