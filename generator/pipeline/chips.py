"""Chip files: the shipped ones (generator/chips/<key>.yaml) and a user's own, validated (pydantic)
into analyses.projection.Chip. A bad file is one InputError line naming the file and the key."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from generator.analyses.projection import FIGURES, OPTIONAL_FIGURES, Check, Chip, Figure, Target
from generator.errors import InputError
from generator.languages import DEFAULT_LANG, LANGS
from generator.model import VersionInputs
from generator.pipeline.build_cache import BuildCache, default_root
from generator.pipeline.config import CleanStr, Inputs, ReportConfig, VersionConfig
from generator.pipeline.inputs import InputCache, version_inputs
from generator.readers.documents import key_path, load_yaml
from generator.resources import CHIPS_DIR, MEASURED_SUFFIX, shipped, shipped_measured
from generator.run_layout import MANIFEST

Positive = Annotated[float, Field(strict=True, gt=0, allow_inf_nan=False)]
Lang = Literal[tuple(LANGS)]  # type: ignore[valid-type]
#: the plausible range of each figure (a chip outside it is a typo, not a design): any chip of the
#: next decades fits, 1e308 or 1e-300 does not
BOUNDS: dict[str, tuple[float, float]] = {
    "sm_count": (1, 100_000), "sm_clock_mhz": (1, 100_000), "dram_gb": (1e-3, 1e6),
    "dram_bandwidth_gbps": (1e-3, 1e7), "l2_mb": (1e-3, 1e6), "l2_bandwidth_gbps": (1e-3, 1e8),
    "link_gbps": (1e-3, 1e7), "launch_latency_us": (1e-4, 1e5), "tensor_bf16_tflops": (1e-3, 1e7),
    "tensor_fp16_tflops": (1e-3, 1e7), "tensor_fp8_tflops": (1e-3, 1e7), "tensor_tf32_tflops": (1e-3, 1e7),
    "fp32_tflops": (1e-3, 1e7), "power_w": (1e-3, 1e7), "launch_gap_us": (1e-4, 1e5),
    "launch_memory_us": (1e-4, 1e5),
    "peer_copy_gbps": (1e-3, 1e7), "allreduce_busbw_gbps": (1e-3, 1e7),
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MeasuredSpec(_Strict):
    """How the chip probe measured a figure (capture/chip_probe.py): the method, the repeats, their
    spread ((p90 − p10) / median, %), their median and the SM clock NVML read meanwhile."""

    method: Annotated[CleanStr, Field(min_length=1)]
    repeats: Annotated[int, Field(strict=True, ge=1)]
    spread_pct: float | None = Field(default=None, ge=0, le=100, allow_inf_nan=False, strict=True)  # None: one repeat
    median: Positive | None = None
    clock_mhz: Positive | None = None


class FigureSpec(_Strict):
    """A figure: value, where it comes from; an estimate says how uncertain it is; a measured one
    (source ``measured``) says how it was measured and carries the datasheet's figure beside it.
    ``source`` is a citation (a document's words, shown as quoted English on other languages' pages),
    or the file's own words in each language, ``{en: …, zh: …}``."""

    value: Positive
    source: Annotated[CleanStr, Field(min_length=1)] | dict[Lang, Annotated[CleanStr, Field(min_length=1)]]
    estimate: Annotated[bool, Field(strict=True)] = False
    uncertainty_pct: float = Field(default=0.0, ge=0, lt=100, allow_inf_nan=False, strict=True)
    measured: MeasuredSpec | None = None
    datasheet: Positive | None = None

    @model_validator(mode="after")
    def _estimates_say_how_uncertain(self) -> FigureSpec:
        if self.estimate and self.uncertainty_pct == 0:
            raise ValueError("an estimate needs uncertainty_pct above 0")
        if (self.source == "measured") != (self.measured is not None):
            raise ValueError("source measured and a measured block go together")
        return self


class ChipSpec(_Strict):
    """A whole chip file."""

    name: Annotated[CleanStr, Field(min_length=1)]
    gpu_names: list[CleanStr] = []
    figures: dict[str, FigureSpec]
    #: a probe's file: the datasheet chip it measured, and the probe's run (date, host, versions)
    datasheet_chip: CleanStr | None = None
    probe: dict | None = None

    @field_validator("figures")
    @classmethod
    def _known_figures(cls, figures: dict[str, FigureSpec]) -> dict[str, FigureSpec]:
        unknown = sorted(set(figures) - set(FIGURES))
        if unknown:
            raise ValueError(f"unknown figure {unknown[0]} (known: {', '.join(FIGURES)})")
        missing = [k for k in FIGURES if k not in figures and k not in OPTIONAL_FIGURES]
        if missing:
            raise ValueError(f"missing figure {missing[0]}")
        for key, figure in figures.items():
            low, high = BOUNDS[key]
            if not low <= figure.value <= high:
                raise ValueError(f"{key}.value {figure.value:g} is outside {low:g} … {high:g} ({FIGURES[key]})")
        return figures


def load_chip(name_or_file: str | Path, base: Path | None = None) -> Chip:
    """A shipped chip by key (``h100-sxm``, with the figures its probe file measured as
    ``measured``; ``h100-sxm-measured``: the probe file itself) or a chip file by path (relative
    to ``base`` when given); InputError on a bad one."""
    text = str(name_or_file)
    chip = _load(CHIPS_DIR / f"{text}.yaml" if text in shipped() + shipped_measured() else (base or Path()) / text)
    probe = CHIPS_DIR / f"{text}{MEASURED_SUFFIX}.yaml"
    if text in shipped() and probe.is_file():
        chip = replace(chip, measured=_load(probe).measured)
    return chip


def _load(path: Path) -> Chip:
    if not path.is_file():
        raise InputError(path, f"no such chip file (shipped chips: {', '.join(shipped())})")
    data = load_yaml(path, "chip file")
    if not isinstance(data, dict):
        raise InputError(path, "expected a mapping at the top level")
    try:
        spec = ChipSpec.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise InputError(path, f"{key_path(error['loc'])}: {error['msg'].removeprefix('Value error, ')}") from None
    figures = {k: Figure(f.value, f.source if isinstance(f.source, str) else f.source[DEFAULT_LANG], f.estimate,
                         f.uncertainty_pct, {} if isinstance(f.source, str) else dict(f.source),
                         f.measured.model_dump(exclude_none=True) if f.measured else None)
               for k, f in spec.figures.items()}
    return Chip(path.stem, spec.name, figures, tuple(spec.gpu_names),
                {k: f for k, f in figures.items() if f.measured is not None})


def shipped_chips() -> list[Chip]:
    """Every chip the package ships."""
    return [load_chip(key) for key in shipped()]


def read_run(path: Path) -> VersionInputs:
    """A capture run directory's inputs, as a one-run version, its operator calls and module
    attribution not read (no projection reads them)."""
    if not (path / MANIFEST).is_file():
        raise InputError(path, "not a capture run directory (no manifest.json)")
    with InputCache(BuildCache(default_root())) as cache:  # what a build or an earlier command read
        return version_inputs(VersionConfig.model_construct(runs=[path], inputs=Inputs()), cache, path / MANIFEST, 0,
                              operator_calls=False, modules=False)


def check_of(run: Path) -> Check:
    """The parts of a capture run a projection is checked against."""
    found = read_run(run)
    return Check(run.name, found.gpus[0].name if found.gpus else None, found.kernel_summary, found.manifest)


def report_targets(config: ReportConfig, report_file: Path) -> tuple[Target, ...]:
    """The chips report.yaml lists, loaded, each with the capture to check it against."""
    base = Path(report_file).resolve().parent
    return tuple(Target(load_chip(entry.chip, base), check_of(entry.validate_with) if entry.validate_with else None)
                 for entry in config.chips)
