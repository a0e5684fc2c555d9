"""Nsight Compute CSV exports, both layouts, sniffed from the header.

* ``--page raw`` (wide): header row, units row, one row per launch, one column per metric.
* ``--page details`` / ``--metrics`` (long): one row per metric; four known column sets
  (ncu 2021.2, 2023.1, 2025, and 2025 with ``Body Item Label`` as ``--print-details all`` and
  ``--section X`` exports write it). Metric rows may be cut short after ``Metric Value`` with a
  trailing comma; rule rows (Rule Name filled, Metric Name empty) are not metrics and are skipped,
  and so are body-item rows (a chart's or table's entries, Body Item Label filled): the section's
  header rows carry its metrics.

Leading ncu messages (``==PROF==``, ``==WARNING==`` lines) are skipped. Other exports ncu writes
— ``--page session`` and ``--page source``, a section export that holds only a message, or one whose
sections carry none of the metrics of :mod:`generator.metric_table` — are refused with one line:
"not a kernel-metrics CSV: …".

Metric rows of the "Command line profiler metrics" section carry raw ncu names; other sections
carry display names, looked up by (section, name) pairs of :mod:`generator.metric_table`.
"""
from __future__ import annotations

import csv
import dataclasses
import math
import re
from collections.abc import Callable
from pathlib import Path

from generator.errors import InputError
from generator.metric_table import CANONICAL_METRIC_NAMES, NCU_BOTTLENECK_COLUMN, NCU_BOTTLENECK_RULE, resolve
from generator.model import Dataset, GpuInfo, Provenance
from generator.readers.base import provenance_sha256
from generator.readers.ncu_rep import device_info, kernel_metrics_frame, nvtx_identity
from generator.units import parse_number

_LAUNCH = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name"]
_METRIC = ["Section Name", "Metric Name", "Metric Unit", "Metric Value"]
_RULE = ["Rule Name", "Rule Type", "Rule Description"]
_LAUNCH_CONFIG = ["Context", "Stream", "Block Size", "Grid Size", "Device", "CC"]
#: Column sets of `--page details` exports (NVTX columns aside), by the ncu version that wrote them.
DETAILS_LAYOUTS: dict[str, frozenset[str]] = {
    "2021.2": frozenset(_LAUNCH + ["Kernel Time", "Context", "Stream"] + _METRIC + _RULE),
    "2023.1": frozenset(_LAUNCH + _LAUNCH_CONFIG + _METRIC),
    "2025": frozenset(_LAUNCH + _LAUNCH_CONFIG + _METRIC + _RULE
                      + ["Estimated Speedup Type", "Estimated Speedup"]),
    "2025 body items": frozenset(_LAUNCH + _LAUNCH_CONFIG + _METRIC + _RULE + ["Body Item Label"]
                                 + ["Estimated Speedup Type", "Estimated Speedup"]),
}
_REQUIRED_DETAILS = ["ID", "Kernel Name", "Section Name", "Metric Name", "Metric Unit", "Metric Value"]
_REQUIRED_RAW = ["ID", "Kernel Name"]
#: the largest launch ID taken (ncu numbers launches from 0; an int64 column holds them, shifted)
MAX_LAUNCH_ID = 2**53
_HEAD = re.compile(rb'^(\xef\xbb\xbf)?(==[A-Z]+==[^\n]*\n|\s*\n)*("?ID"?,|Launch Settings\r?\n|"Kernel Name",|"Process ID",)')
#: ncu's own message lines (``==PROF== …``, ``==WARNING== …``) before or instead of the CSV.
_MESSAGE = re.compile(r"^==[A-Z]+==")
#: First lines of the ncu exports that are not per-launch metrics, and what they are.
_OTHER_PAGES = {"Launch Settings": "an ncu --page session export (launch settings, session and device "
                                   "attributes), no per-launch metrics",
                '"Kernel Name",': "an ncu --page source export (per-instruction counters of one kernel), "
                                  "no per-launch metrics"}
#: The columns of ncu's ``--print-summary`` export: statistics per kernel over its invocations.
_SUMMARY = {"Invocations", "Minimum", "Maximum", "Average"}


def is_nvtx_column(name: str) -> bool:
    """NVTX state columns ncu adds with --nvtx, e.g. `thread Domain:Push/Pop_Range:...`."""
    return "Push/Pop_Range" in name or "Start/Stop_Range" in name


class NcuCsvReader:
    format = "ncu-csv"
    description = "Nsight Compute CSV export (--page raw or --page details/--metrics)"

    def sniff(self, path: Path, head: bytes) -> bool:
        if _HEAD.match(head):
            return True
        lines = head.decode("utf-8", "replace").lstrip("\ufeff").splitlines()
        return len(head) < 4096 and bool(lines) and all(_MESSAGE.match(line) or not line.strip() or line[0] == " "
                                                        for line in lines)  # only ncu messages

    def read(self, path: Path, *, stage: str | None = None) -> Dataset:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InputError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        lines, said = _without_messages(text)
        first = next((line for line in lines if line.strip()), None)
        if first is None:
            raise InputError(path, f"not a kernel-metrics CSV: only ncu messages ({said[:200]})" if said
                             else "file is empty")
        for start, what in _OTHER_PAGES.items():
            if first.startswith(start):
                raise InputError(path, f"not a kernel-metrics CSV: {what}")
        reader = csv.reader(lines)  # message lines are blank: line numbers stay the file's
        try:
            header = next(cells for cells in reader if cells)
        except csv.Error as exc:
            raise InputError(path, f"line {reader.line_num}: {exc}") from None
        if set(header) >= _SUMMARY:
            raise InputError(path, "not a kernel-metrics CSV: an ncu --print-summary export (minimum, maximum and "
                                   "average per kernel over its invocations), no per-launch metrics")
        try:
            if "Metric Name" in header or "Metric Value" in header:
                layout, launches, gpus = _read_details(header, reader)
            else:
                layout, launches, gpus = _read_raw(header, reader)
        except _RowError as exc:
            raise InputError(path, str(exc)) from None
        if not launches:
            raise InputError(path, f"not a kernel-metrics CSV: only ncu messages ({said[:200]})" if said
                             else "no launches (header only)")
        rows = []
        for launch in launches:
            try:
                rows.append(launch.row())
            except ValueError as exc:
                raise InputError(path, f"launch {launch.identity['launch_id']}: {exc}") from None
        if not any(launch.names_metrics for launch in launches):
            raise InputError(path, f"not a kernel-metrics CSV: none of the metrics this tool reads "
                                   f"({', '.join(CANONICAL_METRIC_NAMES[:4])}, …) in {_sections(launches)}")
        frame, notes = kernel_metrics_frame(rows, stage)
        return Dataset(
            provenance=Provenance(path=str(path), format=f"ncu-csv-{'raw' if layout == 'raw' else 'details'}",
                                  format_version=f"ncu {layout} layout", sha256=provenance_sha256(path), notes=notes),
            kernel_metrics=frame,
            gpus=gpus,
        )


def _without_messages(text: str) -> tuple[list[str], str]:
    """The file's lines with ncu's message lines (and their indented continuations) blanked, and those
    messages as one line of text."""
    lines = text.splitlines(keepends=True)
    said: list[str] = []
    in_message = False
    for i, line in enumerate(lines):
        in_message = bool(_MESSAGE.match(line)) or (in_message and line[:1] == " ")
        if in_message:
            said.append(line.strip())
            lines[i] = "\n"
    return lines, " ".join(said)


class _RowError(Exception):
    """What is wrong with the CSV's header or a line of it (the reader raises it as InputError)."""


@dataclasses.dataclass
class _Launch:
    """One launch: identity columns, raw metrics by name, details metrics by (section, name)."""

    identity: dict
    ranges: list[str]
    raw: dict[str, tuple[str, str]] = dataclasses.field(default_factory=dict)
    details: dict[tuple[str, str], tuple[str, str]] = dataclasses.field(default_factory=dict)
    sections: dict[str, None] = dataclasses.field(default_factory=dict)  # of a details export, in order
    names_metrics: bool = False  # set by row(): some metric of the registry is among its rows
    bottleneck: str | None = None  # message of ncu's SOLBottleneck rule (details pages)
    id_text: str = ""  # the ID cell as printed (rule rows name their launch by it)

    def row(self) -> dict:
        row = dict(self.identity, _ranges=self.ranges, **{NCU_BOTTLENECK_COLUMN: self.bottleneck})
        row.update(resolve(self._lookup(lambda name: self.raw.get(name)),
                           self._lookup(lambda section, name: self.details.get((section, name)))))
        return row

    def _lookup(self, get: Callable[..., tuple[str, str] | None]) -> Callable[..., tuple[str, str] | None]:
        """``get``, noting in ``names_metrics`` when it finds a metric the registry asks for (valued or n/a)."""
        def found(*key: str) -> tuple[str, str] | None:
            value = get(*key)
            self.names_metrics = self.names_metrics or value is not None
            return value
        return found


def _sections(launches: list[_Launch]) -> str:
    """What a CSV holds, for the refusal: its sections' names, or the raw page's columns."""
    names = list(dict.fromkeys(name for launch in launches for name in launch.sections))
    if names:
        return f"section{'s' if len(names) > 1 else ''} {', '.join(repr(n) for n in names)}"
    columns = list(dict.fromkeys(name for launch in launches for name in launch.raw))
    return f"columns {', '.join(repr(c) for c in columns[:6])}{', …' if len(columns) > 6 else ''}"


def _require(header: list[str], names: list[str]) -> None:
    for name in names:
        if name not in header:
            raise _RowError(f"missing column {name!r}")


def _identity(cells: dict[str, str], nvtx: list[str], line: int) -> tuple[dict, list[str]]:
    """Identity columns of one launch and every NVTX range name around it."""
    try:
        value = parse_number(cells["ID"])
    except ValueError:
        value = math.nan
    if not (0 <= value <= MAX_LAUNCH_ID and value == int(value)):  # NaN and inf fail the first test
        raise _RowError(f"line {line}: ID {cells['ID']!r} is not a whole number from 0 to {MAX_LAUNCH_ID:,}")
    launch_id = int(value)
    kinds: dict[bool, list[tuple[str, list[str]]]] = {False: [], True: []}
    for column in nvtx:
        start_end = "Start/Stop_Range" in column
        for domain, name in nvtx_entries(cells.get(column, ""), start_end=start_end):
            group = kinds[start_end]
            if group and group[-1][0] == domain:
                group[-1][1].append(name)
            else:
                group.append((domain, [name]))
    stage, text, ranges = nvtx_identity(kinds[False], kinds[True])
    device = cells.get("Device", "").strip()
    return {
        "launch_id": launch_id,
        "name": cells["Kernel Name"],
        "short_name": None,
        "mangled_name": None,
        "stage": stage,
        "nvtx": text,
        "grid": cells.get("Grid Size") or None,
        "block": cells.get("Block Size") or None,
        "device": int(device) if device.isdigit() else None,
        "cc": cells.get("CC") or None,
        "process": cells.get("Process Name") or None,
    }, ranges


def nvtx_entries(text: str, *, start_end: bool) -> list[tuple[str, str]]:
    """(domain, range name) pairs of one ncu NVTX cell, outer → inner. Push/pop cells read
    `615  "<domain>:name:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg" …` (thread id first);
    start/end entries carry a range id before the domain."""
    entries = []
    for entry in re.findall(r'"([^"]*)"', text):
        head = entry.rsplit(":", 6)[0]  # drop the six payload/color/message fields
        parts = head.split(":", 2 if start_end else 1)
        if len(parts) == (3 if start_end else 2) and parts[-1]:
            entries.append((parts[-2], parts[-1]))
    return entries


def _read_raw(header: list[str], reader) -> tuple[str, list[_Launch], list[GpuInfo]]:
    _require(header, _REQUIRED_RAW)
    if len(set(header)) != len(header):
        raise _RowError("unknown ncu CSV layout: repeated column names in a raw-page header")
    try:
        unit_row = next(reader)
    except StopIteration:
        raise _RowError("line 2: units row missing") from None
    except csv.Error as exc:
        raise _RowError(f"line 2: {exc}") from None
    if len(unit_row) != len(header) or unit_row[header.index("ID")] != "":
        raise _RowError("unknown ncu CSV layout: line 2 is not the raw page's units row")
    units = dict(zip(header, unit_row))
    nvtx = [c for c in header if is_nvtx_column(c)]
    launches = []
    for cells in _rows(reader, len(header), ragged_at=None):
        named = dict(zip(header, cells))
        identity, ranges = _identity(named, nvtx, reader.line_num)
        launch = _Launch(identity, ranges)
        launch.raw = {name: (value, units[name]) for name, value in named.items() if value != ""}
        launches.append(launch)
    return "raw", launches, _raw_gpus(launches)


def _read_details(header: list[str], reader) -> tuple[str, list[_Launch], list[GpuInfo]]:
    _require(header, _REQUIRED_DETAILS)
    columns = frozenset(c for c in header if not is_nvtx_column(c))
    layout = next((name for name, cols in DETAILS_LAYOUTS.items() if cols == columns), None)
    if layout is None or len(set(header)) != len(header):
        known = ", ".join(DETAILS_LAYOUTS)
        raise _RowError(f"unknown ncu CSV layout: columns {sorted(columns)} match none of ncu {known}")
    nvtx = [c for c in header if is_nvtx_column(c)]
    value_at = header.index("Metric Value")
    launches: dict[int, _Launch] = {}
    verdicts: dict[str, str] = {}  # launch ID text → SOLBottleneck message
    for cells in _rows(reader, len(header), ragged_at=value_at + 2):
        named = dict(zip(header, cells))
        if not named["Metric Name"]:
            if not named.get("Rule Name"):
                raise _RowError(f"line {reader.line_num}: neither a metric nor a rule")
            if named["Rule Name"] == NCU_BOTTLENECK_RULE and named.get("Rule Description"):
                verdicts[named["ID"].strip()] = named["Rule Description"]  # ncu's verdict; other rules skipped
            continue
        identity, ranges = _identity(named, nvtx, reader.line_num)
        launch = launches.setdefault(identity["launch_id"], _Launch(identity, ranges))
        if launch.identity["name"] != identity["name"]:
            raise _RowError(f"line {reader.line_num}: ID {identity['launch_id']} names two kernels")
        launch.id_text = named["ID"].strip()
        launch.sections.setdefault(named["Section Name"], None)
        if named.get("Body Item Label"):
            continue  # an entry of a chart or table; the section's header rows carry its metrics
        found = (named["Metric Value"], named["Metric Unit"])
        launch.raw.setdefault(named["Metric Name"], found)
        launch.details.setdefault((named["Section Name"], named["Metric Name"]), found)
    for launch in launches.values():
        launch.bottleneck = verdicts.get(launch.id_text)
    gpus = {(one.identity["device"], one.identity["cc"]) for one in launches.values()
            if one.identity["device"] is not None or one.identity["cc"] is not None}
    return layout, list(launches.values()), [GpuInfo(index=d, compute_capability=cc)
                                             for d, cc in sorted(gpus, key=str)]


def _rows(reader, width: int, ragged_at: int | None):
    """Data rows padded to ``width``; only the known raggedness is accepted: a metric row that
    ends after Metric Value with a trailing comma (``ragged_at`` fields, the last one empty). In a
    details export, a line of another width that does not start with a launch ID is the header of a
    table ncu puts among the metric rows (NUMA Affinity's per-GPU table): its lines are skipped up to
    the next metric row."""
    in_table = False
    try:
        for cells in reader:
            if not cells:
                continue
            if len(cells) == width:
                in_table = False
                yield cells
            elif ragged_at is not None and len(cells) == ragged_at and cells[-1] == "":
                in_table = False
                yield cells[:-1] + [""] * (width - ragged_at + 1)
            elif ragged_at is not None and (in_table or not cells[0].strip().isdigit()):
                in_table = True
            else:
                raise _RowError(f"line {reader.line_num}: {len(cells)} fields, expected {width}")
    except csv.Error as exc:
        raise _RowError(f"line {reader.line_num}: {exc}") from None


def _attr(launch: _Launch, name: str) -> float | None:
    found = launch.raw.get(f"device__attribute_{name}")
    if found is None:
        return None
    try:
        value = parse_number(found[0])
    except ValueError:
        return None
    return None if math.isnan(value) else value


def _raw_gpus(launches: list[_Launch]) -> list[GpuInfo]:
    """Devices from the raw page's `device__attribute_*` columns (or Device/CC alone)."""
    gpus: dict[int | None, GpuInfo] = {}
    for launch in launches:
        device = launch.identity["device"]
        if device not in gpus:
            name = launch.raw.get("device__attribute_display_name")
            gpus[device] = device_info(lambda attribute, launch=launch: _attr(launch, attribute),
                                       name[0] if name else None, device, launch.identity["cc"])
    return list(gpus.values())


READER = NcuCsvReader()
