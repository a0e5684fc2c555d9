"""A capture run's operator calls (``ops/calls.csv``: the work each ATen call of the marked iteration
asked for, written by the capture) and the call that made each (stage, kernel)'s profiled launch.

The launch ↔ call join is the marked iteration and operator number the nsys export's operator marks
give the launch (nsys_sqlite.representative_launches' ``marked`` and ``operator``) = the file's
``iteration`` and ``call``. A run without the
file has no shapes (None): its pages say the useful work is unknown.
"""
from __future__ import annotations

import functools
import io
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from pydantic import TypeAdapter, ValidationError

from generator.errors import InputError
from generator.readers.base import plain_file
from generator.readers.inflate import chunks
from generator.readers.nsys_sqlite import launch_operators, representative_launches
from generator.run_layout import (
    CALLS_COLUMNS,
    CALLS_CSV,
    COMPRESSED,
    MODULE_NVTX_DOMAIN,
    OPS_NVTX_DOMAIN,
    with_compressed,
)

CALL_COLUMNS = list(CALLS_COLUMNS)  # what the capture writes (run_layout.CALLS_COLUMNS)
NUMERIC = ["call", "flop", "ideal_bytes", "m", "n", "k", "batch"]


def calls_file(run: Path) -> Path | None:
    """The run's operator-call file (plain or compressed), None when the capture wrote none."""
    return next((run / name for name in with_compressed(CALLS_CSV) if (run / name).is_file()), None)


def read_op_calls(path: Path) -> pd.DataFrame:
    """CALL_COLUMNS of ``path``; InputError naming the file and the column when one is missing."""
    data = b"".join(chunks(path)) if path.suffix in COMPRESSED else path.read_bytes()
    try:
        frame = pd.read_csv(io.BytesIO(data), dtype=dict.fromkeys(NUMERIC, str))  # cells as written, for errors
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise InputError(path, f"not a CSV table ({str(exc).splitlines()[0]})") from None
    missing = [c for c in CALL_COLUMNS if c not in frame]
    if missing:
        raise InputError(path, f"missing column {missing[0]!r} (expected {', '.join(CALL_COLUMNS)})")
    for column in NUMERIC:
        frame[column] = _numbers(path, frame[column], column)
    for column in JSON_LISTS:
        _json_lists(path, frame[column], column)
    return frame[CALL_COLUMNS]


#: the largest figure a single operator call can ask for (FLOP, bytes, a product dimension, a call
#: number): far above any model's (a 1e18-FLOP call would take 20 minutes on a 1-PFLOP/s chip)
LIMITS = {"call": 2**40, "flop": 1e18, "ideal_bytes": 1e16, "m": 2**40, "n": 2**40, "k": 2**40, "batch": 2**40}
#: the operand columns: a JSON list per call (shapes, strides: lists of whole numbers; dtypes: names)
JSON_LISTS = {"input_shapes": list[list[int] | int | None], "input_dtypes": list[str | None],
              "input_strides": list[list[int] | int | None], "output_shapes": list[list[int] | int | None]}


def _numbers(path: Path, column: pd.Series, name: str) -> pd.Series:
    """``column`` as numbers, empty cells NaN (unknown); InputError naming the line of the first cell
    that is not a number from 0 to LIMITS[name] (a whole number for all but ``flop`` and ``ideal_bytes``)."""
    values = pd.to_numeric(column, errors="coerce").astype("float64")
    whole = name not in ("flop", "ideal_bytes")
    bad = (column.notna() & values.isna()) | (values < 0) | (values > LIMITS[name]) | \
        (whole & values.notna() & (values != values.round()))
    if bad.any():
        row = int(bad.to_numpy().argmax())
        kind = "a whole number" if whole else "a number"
        raise InputError(path, f"line {row + 2}: {name} {column.iloc[row]!r} is not {kind} from 0 to {LIMITS[name]:.3g}")
    integral = len(values) and values.notna().all() and (values == values.round()).all()
    return values.astype("int64") if integral else values  # as pandas reads a column of whole numbers


def _json_lists(path: Path, column: pd.Series, name: str) -> None:
    """InputError naming the line of the first cell of ``column`` that is not JSON_LISTS[name]
    (empty cells are taken: no record). The distinct cells are checked as one JSON array."""
    distinct = column.dropna().unique().tolist()
    cells = [c for c in distinct if isinstance(c, str)]
    others = [c for c in distinct if not isinstance(c, str)]
    try:
        parsed = _adapter(name).validate_json("[" + ",".join(cells) + "]")
        problem = None
        if len(parsed) != len(cells):  # a cell holding several values: find it alone
            problem, cell = "more than one JSON value", next(c for c in cells if not _valid(name, c))
    except ValidationError as exc:
        error = exc.errors()[0]
        at = error["loc"][0] if error["loc"] and isinstance(error["loc"][0], int) else None
        problem, cell = error["msg"], cells[at] if at is not None else None
        if cell is None:  # not JSON at all: find the cell alone
            cell = next(c for c in cells if not _valid(name, c))
    if problem is None and not others:
        return
    if problem is None:
        cell, problem = others[0], "not JSON text"
    row = int((column.astype(object) == cell).to_numpy().argmax())
    shown = repr(cell) if len(repr(cell)) <= 60 else repr(cell)[:57] + "..."
    raise InputError(path, f"line {row + 2}: {name} {shown} is not a JSON list of operands ({problem})")


def _valid(name: str, cell: str) -> bool:
    try:
        return len(_adapter(name).validate_json("[" + cell + "]")) == 1
    except ValidationError:
        return False


@functools.cache
def _adapter(name: str) -> TypeAdapter:
    return TypeAdapter(list[JSON_LISTS[name]])


#: what :func:`run_op_calls` gives per (stage, kernel): the call's key, op, product dims, FLOP, ideal
#: bytes and the operands' shapes, dtypes and strides (JSON text) that useful_work.call_work reads, and
#: the representative launch's configuration (grid, block) with the stage's launches that share it
JOINED_COLUMNS = ["stage", "name", "iteration", "call", "op", "m", "n", "k", "batch", "flop", "ideal_bytes",
                  "input_shapes", "input_dtypes", "input_strides", "grid", "block", "config_launches"]


#: what :func:`run_calls` gives per kernel launch of the stages: nsys_sqlite.LAUNCH_OPERATOR_COLUMNS
#: and the columns of its call (NaN where no call made it)
LAUNCH_CALL_COLUMNS = ["stage", "name", "duration_ns", "grid", "block", "node", "iteration", "call", "op", "m", "n",
                       "k", "batch", "flop", "ideal_bytes", "input_shapes", "input_dtypes", "input_strides"]


def run_op_calls(path: Path, sqlite: Path, stages: Sequence[str], names: Sequence[str]) -> pd.DataFrame:
    """Per (stage, kernel) of ``names`` the call that made its representative launch (the one ncu
    profiled): JOINED_COLUMNS."""
    return run_calls(path, sqlite, stages, names)[0]


def run_calls(path: Path, sqlite: Path, stages: Sequence[str],
              names: Sequence[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`run_op_calls`, and every launch of the stages with the call that made it
    (LAUNCH_CALL_COLUMNS: each launch's own call, the marked iteration's, CUDA graph nodes included)."""
    calls = read_op_calls(path).drop_duplicates(["iteration", "call"])
    with plain_file(sqlite) as plain:
        launches = representative_launches(plain, stages, names, MODULE_NVTX_DOMAIN, OPS_NVTX_DOMAIN)
        every = launch_operators(plain, stages, OPS_NVTX_DOMAIN)
    every = every.rename(columns={"marked": "iteration", "operator": "call"})
    every["call"] = pd.to_numeric(every["call"], errors="coerce")
    per_launch = every.merge(calls.drop(columns=["stage", "output_shapes"], errors="ignore"),
                             on=["iteration", "call"], how="left")
    return _representative(launches, every, calls), per_launch[LAUNCH_CALL_COLUMNS]


def _representative(launches: pd.DataFrame, every: pd.DataFrame, calls: pd.DataFrame) -> pd.DataFrame:
    """JOINED_COLUMNS of the representative ``launches`` whose operator call ``calls`` holds; a CUDA
    graph node's call is that of the same launch in ``every`` (the first of its configuration)."""
    first = every.drop_duplicates(["stage", "name", "grid", "block"])[["stage", "name", "grid", "block", "iteration",
                                                                       "call"]]
    launches = launches.merge(first, on=["stage", "name", "grid", "block"], how="left")
    missing = launches["operator"].isna()
    launches.loc[missing, "marked"] = launches.loc[missing, "iteration"]
    launches.loc[missing, "operator"] = launches.loc[missing, "call"]
    launches = launches.drop(columns=["iteration", "call"])
    launches = launches.dropna(subset=["operator"]).astype({"operator": "int64"})
    joined = launches[["stage", "name", "marked", "operator", "grid", "block", "config_launches"]].merge(
        calls.drop(columns="stage"), left_on=["marked", "operator"], right_on=["iteration", "call"])
    return joined[JOINED_COLUMNS].reset_index(drop=True)
