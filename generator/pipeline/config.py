"""report.yaml: the schema of a report (pydantic), its loading, and the ReportMeta pages receive.

Paths in report.yaml are relative to the file; globs expand sorted. Every problem is reported with
its key path (``versions[1].inputs.ncu[0]: file not found``) in one InputError, one line each.
"""
from __future__ import annotations

import datetime
import difflib
import glob
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, get_args

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
    field_validator,
    model_validator,
)

from generator.errors import InputError
from generator.languages import DEFAULT_LANG, LANGS
from generator.model import ReportMeta, VersionMeta
from generator.pipeline.bounded_glob import expand
from generator.pipeline.stage_choice import StagesFrom, option_source
from generator.readers import sniffed
from generator.readers.documents import key_path
from generator.readers.manifest import read_manifest
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
RESERVED_IDS = frozenset({"index.html", "versions.json", "latest", "sitemap.xml", "sitemap.xml.gz", "404.html",
                          "llms.txt"})  # render.llms_txt.LLMS_TXT


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


TEXT_HINT = "give a text or {" + ", ".join(f"{lang}: …" for lang in LANGS) + "}"


class _TextBase(_Strict):
    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {DEFAULT_LANG: value}
        if not isinstance(value, dict) or not value:
            raise ValueError(f"{TEXT_HINT} (got {_shown(value)})")
        return value

    @model_validator(mode="after")
    def _some_words(self) -> _TextBase:
        if not self.model_dump(exclude_none=True):
            raise ValueError(f"{TEXT_HINT} (got no text)")
        return self


#: Words in some of the site languages (generator.languages), ``{en: …, zh: …}``; one text is the
#: default language's. A language built without its own text shows another's (:func:`in_languages`).
Text = create_model("Text", __base__=_TextBase, **dict.fromkeys(LANGS, (CleanStr | None, None)))


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
    #: read as a version's inputs (pipeline.sweep_inputs): its stages are report.yaml's, never found
    stages_from: ClassVar[None] = None


class VersionConfig(_Strict):
    """One version of the report: its inputs are capture runs and/or explicit files, or a sweep."""

    id: Slug
    title: Text
    date: Date
    notes: Text | None = None
    runs: list[RunDir] = []
    inputs: Inputs = Inputs()
    sweep: list[SweepPoint] = []
    #: where the stages of a report made from profiler files come from (pipeline.stage_choice);
    #: None in a report.yaml, which names its own
    stages_from: StagesFrom | None = None

    @field_validator("stages_from")
    @classmethod
    def _made_from_files(cls, value: StagesFrom | None, info: ValidationInfo) -> StagesFrom | None:
        if value is not None and not (info.context or {}).get("files"):
            raise ValueError("is set by `build FILE…`; a report.yaml names stages under inputs: nsys")
        return value

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


class ChipTarget(_Strict):
    """A chip to project the versions onto (``h100-sxm``, or a chip file relative to report.yaml),
    and optionally a capture run of the same workload on it to check the projection against."""

    chip: CleanStr
    validate_with: RunDir | None = Field(default=None, alias="validate")

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, data: Any) -> Any:
        return {"chip": data} if isinstance(data, str) else data


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
    chips: list[ChipTarget] = []
    versions: list[VersionConfig] = Field(min_length=1)

    def input_paths(self) -> list[Path]:
        """Every run directory and file the report reads (what a build must never delete)."""
        parts = [*self.versions, *(point for v in self.versions for point in v.sweep)]
        checks = [c.validate_with for c in self.chips if c.validate_with is not None]
        return [path for part in parts for path in [*part.runs, *part.inputs.paths()]] + checks

    @model_validator(mode="after")
    def _unique_versions(self) -> ReportConfig:
        ids = [v.id for v in self.versions]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"duplicate version ids: {', '.join(duplicates)}")
        return self


def report_meta(config: ReportConfig, site_url: str | None, langs: list[str]) -> ReportMeta:
    """The pages' view of a validated report, every text in every language of ``langs``
    (:func:`in_languages`)."""
    return ReportMeta(
        id=config.id,
        title=in_languages(config.title, langs),
        versions=tuple(
            VersionMeta(v.id, in_languages(v.title, langs), v.date,
                        in_languages(v.notes, langs) if v.notes else None, bool(v.sweep))
            for v in config.versions
        ),
        site_url=site_url,
        langs=tuple(langs),
    )


def in_languages(text: BaseModel, langs: list[str]) -> dict[str, str]:
    """A :data:`Text` in each of ``langs``: its own words, else the default language's, else the first given."""
    given = given_languages(text)
    fallback = given.get(DEFAULT_LANG, next(iter(given.values())))
    return {lang: given.get(lang, fallback) for lang in langs}


def given_languages(text: BaseModel) -> dict[str, str]:
    """The words a :data:`Text` gives, by language."""
    return text.model_dump(exclude_none=True)


def untranslated(config: ReportConfig, langs: list[str]) -> dict[str, list[str]]:
    """Per language of ``langs``, the keys of report.yaml texts that do not give it (shown in another)."""
    texts = [("title", config.title)]
    for index, version in enumerate(config.versions):
        texts += [(f"versions[{index}].title", version.title)]
        texts += [(f"versions[{index}].notes", version.notes)] if version.notes else []
    missing = {lang: [key for key, text in texts if lang not in given_languages(text)] for lang in langs}
    return {lang: keys for lang, keys in missing.items() if keys}


#: What each key takes, in plain words (by the key's name; a list item by its list's name).
HINTS = {
    "id": "give an id of letters, digits, '.', '_' or '-' (it names a folder of the site), e.g. my-report",
    "title": TEXT_HINT,
    "notes": TEXT_HINT,
    "date": "give the version's date as YYYY-MM-DD, e.g. 2026-01-31",
    "versions": "give a list of versions, each {id: v1, title: …, date: YYYY-MM-DD, runs: […] or inputs: {…}}",
    "runs": "give a list of capture run directories, e.g. [runs/my-run]",
    "inputs": "give the version's files by profiler: {nsys: [FILE.sqlite], ncu: [FILE.ncu-rep], torch: [FILE.json]}",
    "nsys": "give a list of nsys files (or {path: FILE, stage: NVTX-RANGE}), e.g. [profile.sqlite]",
    "ncu": "give a list of ncu reports or CSV exports, e.g. [profile.ncu-rep]",
    "torch": "give a list of PyTorch profiler traces, e.g. [trace.json.gz]",
    "path": "give a file path or glob, relative to report.yaml",
    "stage": "give the NVTX range's name as text",
    "sweep": "give a list of configurations, each {label: …, params: {…}, runs: […]}",
    "label": "give the configuration's name as text",
    "params": "give the configuration's parameters as {name: value}",
    "baseline": "give true or false",
    "top_n": "give a whole number, 1 or more (how many kernels the top list keeps)",
    "gpu": "give {peak_dram_gbps: GB/s, peak_tflops: {datatype: TFLOP/s}}",
    "peak_dram_gbps": "give a positive, finite number of GB/s",
    "peak_tflops": "give {datatype: TFLOP/s}, each a positive, finite number",
    "classification": "give {rule: sol | roofline | sm_dram_margin, margin: PERCENT}",
    "rule": "give one of sol, roofline, sm_dram_margin",
    "margin": "give a number of percent, 0 or more",
}
#: Keys a version does not take that belong under its ``inputs``.
INPUT_KINDS = ("nsys", "ncu", "torch")
#: keys only a report made from profiler files has (files_report), never offered to a report.yaml
FILES_ONLY_KEYS = ("stages_from",)


def _problems(exc: ValidationError) -> list[str]:
    """One line per problem: the key path, then what is wrong in plain words (never pydantic's)."""
    errors = exc.errors()
    unknown = {tuple(e["loc"]) for e in errors if e["type"] == "extra_forbidden"}
    meant = {loc: _meant(loc, unknown) for loc in unknown}
    lines = []
    for error in errors:
        loc, kind = tuple(error["loc"]), error["type"]
        if kind == "missing" and loc in meant.values():
            continue  # said with the misspelt key: "tittle: unknown key; did you mean title?"
        hint = next((HINTS[part] for part in reversed(loc) if isinstance(part, str) and part in HINTS),
                    "see docs/report-yaml.md")
        if kind == "value_error":
            message = error["msg"].removeprefix("Value error, ")
        elif kind == "missing":
            message = f"missing; {hint}"
        elif kind == "extra_forbidden":
            message = f"unknown key; did you mean {meant[loc][-1]}?" if meant[loc] else _unknown_key(loc)
        else:
            message = f"{hint} (got {_shown(error['input'])})"
        lines.append(f"{key_path(loc)}: {message}")
    return lines


def _meant(loc: tuple[str | int, ...], unknown: set[tuple[str | int, ...]]) -> tuple[str | int, ...] | None:
    """The key path of the known key that the unknown key ``loc`` misspells, if one is close."""
    model = _model_at(loc[:-1])
    if model is None:
        return None
    given = {other[-1] for other in unknown if other[:-1] == loc[:-1]}
    close = difflib.get_close_matches(str(loc[-1]), [k for k in _keys(model) if k not in given], n=1, cutoff=0.75)
    return (*loc[:-1], close[0]) if close else None


def _unknown_key(loc: tuple[str | int, ...]) -> str:
    model = _model_at(loc[:-1])
    known = ", ".join(_keys(model)) if model else ""
    where = "the report" if len(loc) == 1 else key_path(loc[:-1])
    moved = " (files go under inputs:, e.g. inputs: {ncu: [FILE]})" if loc[-1] in INPUT_KINDS else ""
    return f"unknown key; {where} takes {known}{moved}"


def _keys(model: type[BaseModel]) -> list[str]:
    """The keys a report.yaml may write in ``model`` (not those `build FILE…` sets: VersionConfig.stages_from)."""
    return [k for k in model.model_fields if k not in FILES_ONLY_KEYS]


def _model_at(loc: tuple[str | int, ...]) -> type[BaseModel] | None:
    """The schema model the key path ``loc`` leads to (list items and optional values looked through)."""
    model: type[BaseModel] | None = ReportConfig
    for part in loc:
        if isinstance(part, int) or model is None:
            continue
        field = model.model_fields.get(part)
        model = _model_in(field.annotation) if field else None
    return model


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for m in map(_model_in, get_args(annotation)) if m is not None), None)


def _shown(value: Any) -> str:
    """A short rendering of the value the user wrote."""
    text = repr(value) if isinstance(value, str) else yaml.safe_dump(value, default_flow_style=True, width=10**6).strip()
    text = text.removesuffix("\n...").strip()
    return text if len(text) <= 60 else text[:57] + "…"


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
    profile = profiler_file(path)
    if profile:
        raise InputError(path, f"{profile}, not a report.yaml: build it directly (python -m generator build "
                               f"{path.name} [more files]) or list it under a version's inputs")
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
        raise InputError(path, "expected a mapping at the top level (id:, title:, versions:); see docs/report-yaml.md")
    if expanded_size(data, MAX_YAML_NODES) > MAX_YAML_NODES:
        raise InputError(path, f"more than {MAX_YAML_NODES} values once its aliases are expanded")
    try:
        return ReportConfig.model_validate(data, context={"base": path.resolve().parent})
    except ValidationError as exc:
        raise InputError(path, f"\n{path}: ".join(_problems(exc))) from None


#: The inputs key each reader's files go under.
INPUT_KIND = {"nsys-sqlite": "nsys", "nsys-rep": "nsys", "nsys-stats": "nsys", "ncu-rep": "ncu", "ncu-csv": "ncu",
              "torch-trace": "torch"}


def profiler_file(path: Path) -> str | None:
    """"this is …" when ``path`` is a capture run or a profiler file rather than a report.yaml, else None."""
    if path.is_dir():
        return "this is a capture run directory" if (path / MANIFEST).is_file() else None
    if path.suffix in (".yaml", ".yml"):
        return None
    reader = sniffed(path)
    if reader is None:
        return None
    article = "an" if reader.description[0].lower() in "aeinou" else "a"
    return f"this is {article} {reader.description}"


#: Suffixes a profiler file's name ends with, left out of a title made from file names.
PROFILE_SUFFIXES = (".xz", ".zst", ".gz", ".sqlite", ".nsys-rep", ".qdrep", ".ncu-rep", ".csv", ".json", ".txt",
                    ".nsys", ".ncu")


def files_report(paths: list[Path], title: str | None = None, date: datetime.date | None = None,
                 stages: list[str] | None = None) -> ReportConfig:
    """A one-version report over capture run directories and profiler files, with no report.yaml.

    The title is ``title`` or the inputs' names; the date ``date`` or the newest run's creation day,
    else the newest file's modification day (UTC). Paths are relative to the first input's folder.
    ``stages``: NVTX ranges each nsys file is read in, one stage each; ``["all"]``: the whole file as one
    stage; None: the workload's own NVTX ranges found in each nsys SQLite export (pipeline.stage_choice).
    """
    stages_from = option_source(stages)
    base = paths[0].resolve().parent
    runs: list[str] = []
    inputs: dict[str, list[str]] = {}
    for path in paths:
        relative = glob.escape(os.path.relpath(path.resolve(), base))
        if path.is_dir():
            runs.append(relative)
            continue
        reader = sniffed(path)
        if reader is None:
            raise InputError(path, "not a profiler file this tool reads (see `python -m generator inspect`)")
        kind = INPUT_KIND[reader.format]
        named = stages_from == "option" and kind == "nsys"
        entries = [{"path": relative, "stage": stage} for stage in stages or ()] if named else [relative]
        inputs.setdefault(kind, []).extend(entries)
    if stages and "nsys" not in inputs:
        raise InputError("--stages", "names NVTX ranges of nsys files; none was given")
    title = title or _names_title(paths)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", title).strip("-._")[:100] or "report"
    data = {
        "id": f"{slug}-report" if slug.lower() in RESERVED_IDS else slug,
        "title": title,
        "versions": [{"id": "v1", "title": title, "date": date or _newest_day(paths), "runs": runs,
                      "inputs": inputs, "stages_from": stages_from if "nsys" in inputs else None}],
    }
    try:
        return ReportConfig.model_validate(data, context={"base": base, "files": True})
    except ValidationError as exc:
        raise InputError(paths[0], "; ".join(_problems(exc))) from None


def _names_title(paths: list[Path]) -> str:
    """The inputs' names without profiler suffixes, joined: ``small_vlm + small_vlm_prefill``."""
    names = []
    for path in paths:
        name = path.resolve().name
        while name.endswith(PROFILE_SUFFIXES) and "." in name[1:]:
            name = name[: name.rindex(".")]
        names.append(name)
    names = list(dict.fromkeys(names))
    return " + ".join(names[:3]) + (f" + {len(names) - 3} more" if len(names) > 3 else "")


def _newest_day(paths: list[Path]) -> datetime.date:
    """The newest capture run's ``created`` day, else the newest file's modification day (UTC)."""
    created = []
    for path in (p for p in paths if p.is_dir()):
        if not (path / MANIFEST).is_file():
            continue
        stamp = read_manifest(path / MANIFEST).get("created")  # a bad manifest: its one-line error
        if stamp is not None:
            created.append(datetime.datetime.fromisoformat(stamp).date())
    if created:
        return max(created)
    newest = max(path.stat().st_mtime for path in paths)
    return datetime.datetime.fromtimestamp(newest, datetime.UTC).date()
