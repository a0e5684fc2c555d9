"""The fix of Material's search worker (Chinese query segmentation) on the worker Material ships."""
from __future__ import annotations

import shutil
from pathlib import Path

import material
import pytest

from generator.pipeline.mkdocs_site import _segment_whole_queries

WORKERS = Path(material.__file__).parent / "templates" / "assets" / "javascripts" / "workers"


def test_segmentation_takes_the_query_end(tmp_path: Path) -> None:
    [worker] = WORKERS.glob("search.*.min.js")
    built = tmp_path / "assets" / "javascripts" / "workers" / worker.name
    built.parent.mkdir(parents=True)
    shutil.copyfile(worker, built)
    _segment_whole_queries(tmp_path)
    before, after = worker.read_text(encoding="utf-8"), built.read_text(encoding="utf-8")
    assert len(after) == len(before) + 1 and "for(let o=s+1;o<=t.length;o++)t.slice(s,o)in e" in after
    with pytest.raises(RuntimeError, match="0 Chinese query segmentation loops"):
        _segment_whole_queries(tmp_path)  # fixed already: a worker without the loop is not passed through
