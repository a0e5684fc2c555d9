"""report.yaml: the schema of a report (pydantic), its loading, and the ReportMeta pages receive.

Paths in report.yaml are relative to the file; globs expand sorted. Every problem is reported with
its key path (``versions[1].inputs.ncu[0]: file not found``) in one InputError, one line each.
"""
from __future__ import annotations

import datetime
import glob
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationError,
    ValidationInfo,
    create_model,
    model_validator,
)

from generator.errors import InputError
from generator.languages import LANGS
from generator.model import ReportMeta, VersionMeta
from generator.pipeline.bounded_glob import expand
from generator.run_layout import MANIFEST
from generator.text_safety import first_unsafe


@dataclass(frozen=True)
class FileSet:
    """One file or glob entry of report.yaml and the files it names (sorted, absolute)."""

    pattern: str
    paths: tuple[Path, ...]


def _expand_files(value: Any, info: ValidationInfo) -> FileSet:
    if not isinstance(value, str) or not value:
        raise ValueError("expected a file path or glob (text)")
    base: Path = info.context["base"]
    pattern = str(base / value)
    if glob.has_magic(value):
        paths = expand(value, base)
        if not paths:
            raise ValueError(f"no file matches {value!r}")
        return FileSet(value, paths)
    if not Path(pattern).is_file():
        raise ValueError(f"file not found: {value}")
    return FileSet(value, (Path(pattern).resolve(),))


def _run_dir(value: Any, info: ValidationInfo) -> Path:
    if not isinstance(value, str) or not value:
        raise ValueError("expected a capture run directory (text)")
    path = (info.context["base"] / value).resolve()
    if not path.is_dir():
        raise ValueError(f"run directory not found: {value}")
    if not (path / MANIFEST).is_file():
        raise ValueError(f"not a capture run directory (no {MANIFEST}): {value}")
    return path


Files = Annotated[FileSet, PlainValidator(_expand_files)]
RunDir = Annotated[Path, PlainValidator(_run_dir)]
#: Names the site's own files (and mike's alias) take beside the version and report folders.
RESERVED_IDS = frozenset({"index.html", "versions.json", "latest", "sitemap.xml", "sitemap.xml.gz", "404.html"})


def _site_folder(value: str) -> str:
    if value.lower() in RESERVED_IDS:
        raise ValueError(f"{value!r} is taken by the site's own files; choose another id")
    return value


def _clean(value: str) -> str:
    bad = first_unsafe(value.replace("\n", " "))
    if bad:
        raise ValueError(f"contains the control character or lone surrogate {bad}")
    return value


Slug = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", max_length=100), AfterValidator(_site_folder)]
CleanStr = Annotated[str, AfterValidator(_clean)]
#: Dates a build can stamp: SOURCE_DATE_EPOCH and gzip's 32-bit mtime (1970-01-01 … 2106-02-07).
FIRST_DATE, LAST_DATE = datetime.date(1970, 1, 1), datetime.date(2106, 2, 7)


def _stampable(value: datetime.date) -> datetime.date:
    if not FIRST_DATE <= value <= LAST_DATE:
        raise ValueError(f"{value} is outside {FIRST_DATE} … {LAST_DATE}, the dates a build can stamp")
    return value


Date = Annotated[datetime.date, AfterValidator(_stampable)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)


#: Words in every site language (generator.languages): ``{en: …, zh: …}``.
Text = create_model("Text", __base__=_Strict, **dict.fromkeys(LANGS, (CleanStr, ...)))


class NsysInput(_Strict):
    """An nsys file (SQLite export, stats CSV, console text), optionally restricted to an NVTX stage."""

    path: Files
    stage: CleanStr | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, data: Any) -> Any:
        return {"path": data} if isinstance(data, str) else data


class Inputs(_Strict):
    """Explicit input files of a version (instead of, or in addition to, capture runs)."""

    nsys: list[NsysInput] = []
    ncu: list[Files] = []
    torch: list[Files] = []

    def paths(self) -> list[Path]:
        """Every file these inputs name."""
        return [p for files in [e.path for e in self.nsys] + self.ncu + self.torch for p in files.paths]


class SweepPoint(_Strict):
    """One configuration of a parameter sweep; ``baseline: true`` on one makes it the reference of
    the deltas (default: the first)."""

    label: CleanStr
    params: dict[str, Any] = {}
    baseline: bool = False
    runs: list[RunDir] = []
    inputs: Inputs = Inputs()


class VersionConfig(_Strict):
    """One version of the report: its inputs are capture runs and/or explicit files, or a sweep."""

    id: Slug
    title: Text
    date: Date
    notes: Text | None = None
    runs: list[RunDir] = []
    inputs: Inputs = Inputs()
    sweep: list[SweepPoint] = []

    @model_validator(mode="after")
    def _has_inputs(self) -> VersionConfig:
        inputs = self.inputs
        if not (self.runs or self.sweep or inputs.nsys or inputs.ncu or inputs.torch):
            raise ValueError("a version needs runs, inputs or sweep")
        labels = [point.label for point in self.sweep]
        if len(set(labels)) != len(labels):
            raise ValueError("sweep labels must be unique")
        if sum(point.baseline for point in self.sweep) > 1:
            raise ValueError("at most one sweep config can be the baseline")
        return self


class GpuPeaks(_Strict):
    """Peak overrides for the roofline (else read from the ncu metrics / device attributes)."""

    peak_dram_gbps: Positive | None = None
    peak_tflops: dict[str, Positive] = {}

    def as_settings(self) -> dict[str, Any]:
        """The ``AnalysisSettings.peaks`` dict: only the keys report.yaml set."""
        return self.model_dump(exclude_defaults=True)


class Classification(_Strict):
    rule: Literal["sol", "roofline", "sm_dram_margin"] = "sol"
    margin: float = Field(default=5.0, ge=0, allow_inf_nan=False)


class ReportConfig(_Strict):
    """A whole report.yaml. ``versions`` are in report order: oldest first, the last is the latest."""

    id: Slug
    title: Text
    gpu: GpuPeaks = GpuPeaks()
    classification: Classification = Classification()
    top_n: int = Field(default=20, ge=1)
    versions: list[VersionConfig] = Field(min_length=1)

    def input_paths(self) -> list[Path]:
        """Every run directory and file the report reads (what a build must never delete)."""
        parts = [*self.versions, *(point for v in self.versions for point in v.sweep)]
        return [path for part in parts for path in [*part.runs, *part.inputs.paths()]]

    @model_validator(mode="after")
    def _unique_versions(self) -> ReportConfig:
        ids = [v.id for v in self.versions]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"duplicate version ids: {', '.join(duplicates)}")
        return self


def report_meta(config: ReportConfig, site_url: str | None, langs: list[str]) -> ReportMeta:
    """The pages' view of a validated report."""
    return ReportMeta(
        id=config.id,
        title=config.title.model_dump(),
        versions=tuple(
            VersionMeta(v.id, v.title.model_dump(), v.date, v.notes.model_dump() if v.notes else None,
                        bool(v.sweep))
            for v in config.versions
        ),
        site_url=site_url,
        langs=tuple(langs),
    )


def key_path(loc: tuple[str | int, ...]) -> str:
    """``("versions", 1, "inputs", "ncu", 0)`` → ``versions[1].inputs.ncu[0]``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def _problems(exc: ValidationError) -> list[str]:
    lines = []
    for error in exc.errors():
        message = error["msg"].removeprefix("Value error, ")
        lines.append(f"{key_path(error['loc'])}: {message}")
    return lines


#: A report.yaml is a few hundred values; aliases expanding past this are a mistake or an attack.
MAX_YAML_NODES = 100_000


def expanded_size(data: Any, limit: int) -> int:
    """How many values ``data`` holds with shared (aliased) parts counted each time; stops past ``limit``."""
    count, stack = 0, [data]
    while stack and count <= limit:
        item = stack.pop()
        count += 1
        if isinstance(item, dict):
            stack += [*item.keys(), *item.values()]
        elif isinstance(item, list):
            stack += item
    return count


def load_report(path: str | Path) -> ReportConfig:
    """Read and validate report.yaml; InputError listing every problem (one line each)."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InputError(path, f"not valid YAML ({' '.join(str(exc).split())})") from None
    except RecursionError:
        raise InputError(path, "not valid YAML (nested too deeply)") from None
    except ValueError as exc:  # a date such as 2026-02-30 or 20260-01-01
        raise InputError(path, f"not valid YAML ({' '.join(str(exc).split())})") from None
    if not isinstance(data, dict):
        raise InputError(path, "expected a mapping at the top level")
    if expanded_size(data, MAX_YAML_NODES) > MAX_YAML_NODES:
        raise InputError(path, f"more than {MAX_YAML_NODES} values once its aliases are expanded")
    try:
        return ReportConfig.model_validate(data, context={"base": path.resolve().parent})
    except ValidationError as exc:
        raise InputError(path, f"\n{path}: ".join(_problems(exc))) from None
