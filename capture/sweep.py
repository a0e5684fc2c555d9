"""Parameter sweeps: one capture per grid point, and a ready ``report.yaml`` for the sweep."""
from __future__ import annotations

import datetime
import itertools
from dataclasses import fields, replace
from pathlib import Path

import yaml

from capture.tools import CaptureError
from capture.workloads.params import Params
from generator.languages import LANGS
from generator.resources import TEMPLATES, read_yaml

_TYPES = {f.name: f.type for f in fields(Params)}


def parse_grid(items: list[str]) -> dict[str, list]:
    """``["image_size=224,448", "batch=1,4"]`` → ``{"image_size": [224, 448], "batch": [1, 4]}``."""
    grid: dict[str, list] = {}
    for item in items:
        key, sep, values = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not values.strip():
            raise CaptureError(f"--grid item {item!r} is not NAME=V1,V2,…")
        if key not in _TYPES:
            raise CaptureError(f"--grid: unknown workload parameter {key!r} (one of {', '.join(_TYPES)})")
        kind = int if _TYPES[key] in ("int", "int | None") else str
        try:
            grid[key] = [kind(v.strip()) for v in values.split(",")]
        except ValueError:
            raise CaptureError(f"--grid: {key} takes integers, got {values!r}") from None
    if not grid:
        raise CaptureError("--grid needs at least one NAME=V1,V2,…")
    return grid


def points(grid: dict[str, list]) -> list[dict]:
    """Every combination, first key slowest."""
    keys = list(grid)
    return [dict(zip(keys, combo)) for combo in itertools.product(*grid.values())]


def label(point: dict) -> str:
    """A directory-safe name: ``{"image_size": 224, "batch": 1}`` → ``image-size224_batch1``."""
    return "_".join(f"{k.replace('_', '-')}{v}" for k, v in point.items())


def apply(params: Params, point: dict) -> Params:
    return replace(params, **point)


def report_yaml(workload: str, grid: dict[str, list], runs: list[tuple[dict, str]], date: str) -> str:
    """A complete report (``python -m generator build`` takes it as is): one version ``sweep``
    whose ``sweep:`` lists each config with its run directory; the first config is the baseline."""
    axes = " × ".join(grid)
    title = {lang: _title_words(lang).format(workload=workload, axes=axes) for lang in LANGS}
    version = {
        "id": "sweep",
        "title": dict(title),  # a copy: yaml would otherwise write an anchor and an alias
        "date": date,
        "sweep": [
            {"label": ", ".join(f"{k}={v}" for k, v in point.items()), "params": point, "runs": [run]}
            | ({"baseline": True} if i == 0 else {})
            for i, (point, run) in enumerate(runs)
        ],
    }
    report = {"id": f"{workload.replace(':', '-')}-sweep", "title": title, "versions": [version]}
    return yaml.safe_dump(report, allow_unicode=True, sort_keys=False)


def _title_words(lang: str) -> str:
    """The sweep report's title in ``lang`` (``sweep.report_title`` of generator/templates/i18n/<lang>.yaml)."""
    return str(read_yaml(TEMPLATES / "i18n" / f"{lang}.yaml")["sweep"]["report_title"])


def write_report(sweep_dir: Path, workload: str, grid: dict[str, list], runs: list[tuple[dict, str]]) -> Path:
    path = sweep_dir / "report.yaml"
    path.write_text(report_yaml(workload, grid, runs, datetime.date.today().isoformat()))
    return path
