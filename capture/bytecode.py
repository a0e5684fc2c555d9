"""Cached bytecode for the capture's Python processes where the environment forbids it.

Containers often set ``PYTHONDONTWRITEBYTECODE``: every Python process then compiles torch and
transformers from source again (on the H100 host: importing the ocr-vlm workload took 11.4–12.2 s
that way, 7.0–7.8 s with cached bytecode), and a capture starts four of them (its own, the
environment probe, the nsys and the ncu worker). There the capture keeps their bytecode in a folder
of the user cache (Python's ``PYTHONPYCACHEPREFIX``), never beside the sources; a prefix the user
set is kept. Elsewhere nothing changes.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import platformdirs

#: The folder's name in the user cache folder (beside the build cache's own, never inside it).
FOLDER = "kernel-report-bytecode"


def cache_bytecode() -> Path | None:
    """Where this process, and every process it starts, keeps bytecode from now on, if the
    environment forbade writing it; else None."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return None
    prefix = os.environ.get("PYTHONPYCACHEPREFIX") or platformdirs.user_cache_dir(FOLDER)
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    sys.dont_write_bytecode = False
    sys.pycache_prefix = prefix
    return Path(prefix)
