"""Sweep grids, run directory labels and the report.yaml a sweep writes."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from capture import cli
from capture.sweep import apply, label, parse_grid, points, report_yaml
from capture.tools import CaptureError
from capture.workloads.params import Params
from generator.pipeline.config import load_report

ROOT = Path(__file__).parent.parent


def test_grid_points_and_labels() -> None:
    grid = parse_grid(["image_size=224,448", "batch=1,4"])
    assert grid == {"image_size": [224, 448], "batch": [1, 4]}
    pts = points(grid)
    assert pts == [{"image_size": 224, "batch": 1}, {"image_size": 224, "batch": 4},
                   {"image_size": 448, "batch": 1}, {"image_size": 448, "batch": 4}]
    assert [label(p) for p in pts][:2] == ["image-size224_batch1", "image-size224_batch4"]
    assert apply(Params(), pts[3]) == Params(image_size=448, batch=4)
    assert parse_grid(["attn-impl=eager,sdpa"]) == {"attn_impl": ["eager", "sdpa"]}


@pytest.mark.parametrize("bad, message", [
    (["image_size"], "is not NAME=V1"),
    (["colour=1,2"], "unknown workload parameter 'colour'"),
    (["batch=one"], "takes integers"),
    ([], "at least one"),
])
def test_bad_grid(bad: list[str], message: str) -> None:
    with pytest.raises(CaptureError, match=message):
        parse_grid(bad)


def test_report_yaml_is_one_sweep_version() -> None:
    grid = {"image_size": [224, 448], "batch": [1]}
    runs = [(p, label(p)) for p in points(grid)]
    doc = yaml.safe_load(report_yaml("vit", grid, runs, "2026-11-22"))
    title = {"en": "vit sweep: image_size × batch", "zh": "vit 参数扫描：image_size × batch"}
    assert doc == {"id": "vit-sweep", "title": title, "versions": [{
        "id": "sweep",
        "title": title,
        "date": "2026-11-22",
        "sweep": [
            {"label": "image_size=224, batch=1", "params": {"image_size": 224, "batch": 1},
             "runs": ["image-size224_batch1"], "baseline": True},
            {"label": "image_size=448, batch=1", "params": {"image_size": 448, "batch": 1},
             "runs": ["image-size448_batch1"]},
        ],
    }]}


def test_report_yaml_over_the_committed_vit_runs_is_a_valid_report(tmp_path: Path) -> None:
    """What `capture sweep` writes loads through the generator's own report schema."""
    sweep_dir = ROOT / "examples" / "runs" / "vit-sweep"
    grid = {"image_size": [224, 448], "batch": [1, 4]}
    runs = [(p, str(sweep_dir / label(p))) for p in points(grid)]
    report = tmp_path / "report.yaml"
    report.write_text(report_yaml("vit", grid, runs, "2026-11-22"))
    config = load_report(report)
    (version,) = config.versions
    assert [p.params for p in version.sweep] == points(grid)
    assert [p.baseline for p in version.sweep] == [True, False, False, False]


def test_sweep_dry_run_prints_one_capture_per_point(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["sweep", "--workload", "vit", "--grid", "image_size=224,448", "batch=1,4", "--out", str(tmp_path),
                     "--dry-run", "--nsys", "nsys", "--ncu", "ncu"])
    assert code == 0
    out = capsys.readouterr().out
    dirs = [line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("# run directory")]
    assert dirs == [str(tmp_path / "vit-sweep" / d) for d in
                    ("image-size224_batch1", "image-size224_batch4", "image-size448_batch1", "image-size448_batch4")]
    assert "--batch 4 --image-size 448" in out
    assert not (tmp_path / "vit-sweep").exists()
