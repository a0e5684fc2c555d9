"""Chip files: the shipped ones (generator/chips/<key>.yaml) and a user's own, validated (pydantic)
into analyses.projection.Chip. A bad file is one InputError line naming the file and the key."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from generator.analyses.projection import FIGURES, OPTIONAL_FIGURES, Check, Chip, Figure, Target
from generator.errors import InputError
from generator.model import VersionInputs
from generator.pipeline.build_cache import BuildCache, default_root
from generator.pipeline.config import CleanStr, Inputs, ReportConfig, VersionConfig, key_path
from generator.pipeline.inputs import InputCache, version_inputs
from generator.resources import CHIPS_DIR, shipped
from generator.run_layout import MANIFEST

Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FigureSpec(_Strict):
    """A figure: value, where it comes from; an estimate says how uncertain it is."""

    value: Positive
    source: Annotated[CleanStr, Field(min_length=1)]
    estimate: bool = False
    uncertainty_pct: float = Field(default=0.0, ge=0, lt=100, allow_inf_nan=False)

    @model_validator(mode="after")
    def _estimates_say_how_uncertain(self) -> FigureSpec:
        if self.estimate and self.uncertainty_pct == 0:
            raise ValueError("an estimate needs uncertainty_pct above 0")
        return self


class ChipSpec(_Strict):
    """A whole chip file."""

    name: Annotated[CleanStr, Field(min_length=1)]
    gpu_names: list[CleanStr] = []
    figures: dict[str, FigureSpec]

    @field_validator("figures")
    @classmethod
    def _known_figures(cls, figures: dict[str, FigureSpec]) -> dict[str, FigureSpec]:
        unknown = sorted(set(figures) - set(FIGURES))
        if unknown:
            raise ValueError(f"unknown figure {unknown[0]} (known: {', '.join(FIGURES)})")
        missing = [k for k in FIGURES if k not in figures and k not in OPTIONAL_FIGURES]
        if missing:
            raise ValueError(f"missing figure {missing[0]}")
        return figures


def load_chip(name_or_file: str | Path, base: Path | None = None) -> Chip:
    """A shipped chip by key (``h100-sxm``) or a chip file by path (relative to ``base`` when
    given); InputError on a bad one."""
    text = str(name_or_file)
    path = CHIPS_DIR / f"{text}.yaml" if text in shipped() else (base or Path()) / text
    if not path.is_file():
        raise InputError(path, f"no such chip file (shipped chips: {', '.join(shipped())})")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InputError(path, f"not valid YAML ({' '.join(str(exc).split())})") from None
    if not isinstance(data, dict):
        raise InputError(path, "expected a mapping at the top level")
    try:
        spec = ChipSpec.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise InputError(path, f"{key_path(error['loc'])}: {error['msg'].removeprefix('Value error, ')}") from None
    figures = {k: Figure(f.value, f.source, f.estimate, f.uncertainty_pct) for k, f in spec.figures.items()}
    return Chip(path.stem, spec.name, figures, tuple(spec.gpu_names))


def shipped_chips() -> list[Chip]:
    """Every chip the package ships."""
    return [load_chip(key) for key in shipped()]


def read_run(path: Path) -> VersionInputs:
    """A capture run directory's inputs, as a one-run version."""
    if not (path / MANIFEST).is_file():
        raise InputError(path, "not a capture run directory (no manifest.json)")
    with InputCache(BuildCache(default_root())) as cache:  # what a build or an earlier command read
        return version_inputs(VersionConfig.model_construct(runs=[path], inputs=Inputs()), cache, path / MANIFEST, 0)


def check_of(run: Path) -> Check:
    """The parts of a capture run a projection is checked against."""
    found = read_run(run)
    return Check(run.name, found.gpus[0].name if found.gpus else None, found.kernel_summary, found.manifest)


def report_targets(config: ReportConfig, report_file: Path) -> tuple[Target, ...]:
    """The chips report.yaml lists, loaded, each with the capture to check it against."""
    base = Path(report_file).resolve().parent
    return tuple(Target(load_chip(entry.chip, base), check_of(entry.validate_with) if entry.validate_with else None)
                 for entry in config.chips)
