"""A capture run directory's layout: the one description ``capture`` writes to and the generator reads.

::

    manifest.json                 stages in order, GPU, versions, commands, top-N, coverage
    logs/                         every tool's stdout/stderr, stages.json, ncu_plan.json, ncu_kernels_mangled*.csv
    nsys/report.nsys-rep          nsys profile
    nsys/report.sqlite            its SQLite export
    nsys/stats/<stage>_<report>.csv  nsys stats CSVs
    ncu/report.ncu-rep            the ncu pass over the top-N kernels
    ncu/raw.csv                   its --page raw export
    ncu/report-retry.ncu-rep      the second pass over kernels the first one missed (when any)
    ncu/raw-retry.csv             its --page raw export
    ops/calls.csv                 each numbered operator call of the marked iterations: shapes, FLOP, bytes

A committed run may keep any file compressed instead (``<name>.xz`` or ``<name>.zst``); readers take
any of them.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

MANIFEST = "manifest.json"
NSYS_SQLITE = "nsys/report.sqlite"
NCU_REPORT = "ncu/report{suffix}.ncu-rep"
NCU_RAW_CSV = "ncu/raw{suffix}.csv"
#: The nsys stats report whose per-stage CSVs the capture writes (``<stage>_cuda_gpu_kern_sum.csv``).
NSYS_STATS_REPORT = "cuda_gpu_kern_sum"
#: NVTX domains the capture's worker writes besides the stage ranges (default domain): module ranges
#: (``<root>.<path> [<Class>]``, :mod:`capture.workloads.modules`), the ncu profile windows and the
#: operator marks. None is a stage: readers take the stage from the other domains.
MODULE_NVTX_DOMAIN = "kr.modules"
PROFILE_NVTX_DOMAIN = "kr.profile"
#: The nsys run's operator marks (:mod:`capture.workloads.ops`): a range around each ATen operator call
#: of the first iteration (:data:`FIRST_OP_RANGE`) and of the last warm-up iteration when it is
#: another (:data:`OP_RANGE`), and :data:`MEASURED_RANGE` around the measured one.
OPS_NVTX_DOMAIN = "kr.ops"
FIRST_OP_RANGE = "op-first"
OP_RANGE = "op"
MEASURED_RANGE = "measured"
#: The nsys run's plain repeat of the measured iteration (no module ranges, no operator marks): its
#: stage ranges, named as the stages, in this domain (``kr.repeat:<stage>`` for the readers).
REPEAT_NVTX_DOMAIN = "kr.repeat"
CAPTURE_NVTX_DOMAINS: tuple[str, ...] = (MODULE_NVTX_DOMAIN, PROFILE_NVTX_DOMAIN, OPS_NVTX_DOMAIN, REPEAT_NVTX_DOMAIN)
#: Each operator call of the marked iterations (capture.workloads.shapes), one row a call.
CALLS_CSV = "ops/calls.csv"
CALLS_COLUMNS: tuple[str, ...] = (
    "iteration",  # the marked iteration: FIRST_OP_RANGE or OP_RANGE (representative_launches' ``marked``)
    "call",  # the call's number in it, from 1 (the ``operator`` of a launch it made)
    "op",  # the ATen overload, e.g. aten.mm.default
    "stage",  # the stage the call ran in (empty: outside every stage)
    "input_shapes", "input_dtypes", "input_strides",  # JSON lists, one entry per tensor argument in order
    "output_shapes",  # JSON list, one entry per output tensor
    "flop",  # torch.utils.flop_counter's formula (aten._grouped_mm: 2*M*N*K); empty without one
    "ideal_bytes",  # every distinct input tensor read once and every output written once
    "m", "n", "k", "batch",  # of a matrix product (out = batch x (m x k)(k x n)); empty otherwise
)
#: ncu passes, in order: the first over the selected kernels, the retry over those it missed.
NCU_PASSES: tuple[str, ...] = ("", "-retry")
#: The suffixes of a compressed copy of a file (generator.readers.inflate reads each format).
COMPRESSED = (".xz", ".zst")


def with_compressed(*names: str) -> tuple[str, ...]:
    """Each of ``names`` followed by its compressed names (:data:`COMPRESSED`)."""
    return tuple(n for name in names for n in (name, *(name + suffix for suffix in COMPRESSED)))


#: Where the generator looks for a run's nsys export, and for each ncu pass's metrics (the report
#: first: it carries NVTX and device attributes), as paths relative to the run directory.
NSYS_CANDIDATES: tuple[str, ...] = with_compressed(NSYS_SQLITE)


def ncu_candidates(suffix: str = "") -> tuple[str, ...]:
    """The files that may hold the ncu pass ``suffix`` (one of NCU_PASSES), preferred first."""
    return with_compressed(NCU_REPORT.format(suffix=suffix), NCU_RAW_CSV.format(suffix=suffix))


@dataclass(frozen=True)
class RunLayout:
    """Where each artifact of the run directory ``root`` lives."""

    root: Path

    @property
    def manifest(self) -> Path:
        return self.root / MANIFEST

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def nsys_report(self) -> Path:  # nsys appends .nsys-rep to the -o base
        return self.root / "nsys" / "report"

    @property
    def nsys_rep(self) -> Path:
        return self.root / "nsys" / "report.nsys-rep"

    @property
    def sqlite(self) -> Path:
        return self.root / NSYS_SQLITE

    @property
    def stats(self) -> Path:
        return self.root / "nsys" / "stats"

    def kern_sum_csv(self, stage: str) -> Path:
        return self.stats / f"{stage}_{NSYS_STATS_REPORT}.csv"

    def ncu_report(self, suffix: str = "") -> Path:  # ncu appends .ncu-rep to the -o base
        return self.ncu_rep(suffix).with_suffix("")

    def ncu_rep(self, suffix: str = "") -> Path:
        return self.root / NCU_REPORT.format(suffix=suffix)

    def raw_csv(self, suffix: str = "") -> Path:
        return self.root / NCU_RAW_CSV.format(suffix=suffix)

    def names_csv(self, suffix: str = "") -> Path:
        return self.logs / f"ncu_kernels_mangled{suffix}.csv"

    @property
    def stages_json(self) -> Path:
        return self.logs / "stages.json"

    @property
    def calls_csv(self) -> Path:
        return self.root / CALLS_CSV

    @property
    def profile_plan(self) -> Path:
        """The ncu profile windows the worker opens (JSON, capture.workloads.windows.Plan)."""
        return self.logs / "ncu_plan.json"
