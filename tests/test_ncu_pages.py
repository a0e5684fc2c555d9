"""Every CSV ncu 2025.3 writes from one real report either reads with the report's own numbers or is
refused in one line as "not a kernel-metrics CSV" (tests/data/ncu-pages-2025.3/README.md says how
each file was exported from tests/data/gemm/ncu/report.ncu-rep on the H200)."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import DATA, ROOT

from generator.cli import main
from generator.errors import InputError
from generator.metric_table import CANONICAL_METRIC_NAMES
from generator.readers import read

PAGES = DATA / "ncu-pages-2025.3"
GEMM_REPORT = DATA / "gemm" / "ncu" / "report.ncu-rep.xz"
OCR_REPORT = ROOT / "examples" / "runs" / "ocr-vlm-eager" / "ncu" / "report.ncu-rep.xz"

#: What each export of the GEMM report yields: the canonical metrics it carries (the raw page has
#: every one; a details page the section header metrics; a section its own), and whether its numbers
#: are exact (the raw page: 6 decimals) or rounded to the digits the page prints (2 decimals, 3 digits).
DETAILS = {"duration_ns", "sm_throughput_pct", "dram_throughput_pct", "memory_throughput_pct",
           "memory_throughput_bytes_per_s", "l1_hit_rate_pct", "l1_throughput_pct", "l2_hit_rate_pct",
           "l2_throughput_pct", "achieved_occupancy_pct", "theoretical_occupancy_pct", "memory_busy_pct",
           "max_bandwidth_pct", "waves_per_sm", "grid_size", "block_size", "registers_per_thread",
           "sm_frequency_hz", "elapsed_cycles"}
READS: dict[str, tuple[set[str], bool]] = {
    "page_raw.csv.xz": (set(CANONICAL_METRIC_NAMES), True),
    "page_raw_base_units.csv.xz": (set(CANONICAL_METRIC_NAMES), False),
    "page_details.csv": (DETAILS, False),
    "page_details_all.csv.xz": (DETAILS, False),
    "page_details_base_units.csv": (DETAILS, False),
    "section_SpeedOfLight.csv": ({"duration_ns", "sm_throughput_pct", "dram_throughput_pct", "memory_throughput_pct",
                                  "l1_throughput_pct", "l2_throughput_pct", "sm_frequency_hz", "elapsed_cycles"}, False),
    "section_MemoryWorkloadAnalysis.csv": ({"memory_throughput_bytes_per_s", "l1_hit_rate_pct", "l2_hit_rate_pct",
                                            "memory_busy_pct", "max_bandwidth_pct"}, False),
    "section_LaunchStats.csv": ({"waves_per_sm", "grid_size", "block_size", "registers_per_thread"}, False),
    "section_Occupancy.csv": ({"achieved_occupancy_pct", "theoretical_occupancy_pct"}, False),
}
#: Exports that hold no per-launch metric of ours, and the words of their refusal.
REFUSED = {
    "page_session.csv": "an ncu --page session export",
    "page_source.csv.xz": "an ncu --page source export",
    "section_Nvlink_Tables.csv": "only ncu messages (==WARNING== No metrics to collect found in sections.",
    "section_Nvlink_Topology.csv": "only ncu messages (==WARNING== No metrics to collect found in sections.",
    "section_ComputeWorkloadAnalysis.csv": "in section 'Compute Workload Analysis'",
    "section_InstructionStats.csv": "in section 'Instruction Statistics'",
    "section_MemoryWorkloadAnalysis_Chart.csv.xz": "in section 'Memory Workload Analysis Chart'",
    "section_MemoryWorkloadAnalysis_Tables.csv.xz": "in section 'Memory Workload Analysis Tables'",
    "section_NumaAffinity.csv": "in section 'NUMA Affinity'",
    "section_PmSampling.csv": "in section 'PM Sampling'",
    "section_SchedulerStats.csv": "in section 'Scheduler Statistics'",
    "section_SourceCounters.csv": "in section 'Source Counters'",
    "section_SpeedOfLight_RooflineChart.csv": "in section 'GPU Speed Of Light Roofline Chart'",
    "section_SpeedOfLight_HierarchicalDoubleRooflineChart.csv":
        "in section 'GPU Speed Of Light Hierarchical Roofline Chart (Double Precision)'",
    "section_SpeedOfLight_HierarchicalHalfRooflineChart.csv":
        "in section 'GPU Speed Of Light Hierarchical Roofline Chart (Half Precision)'",
    "section_SpeedOfLight_HierarchicalSingleRooflineChart.csv":
        "in section 'GPU Speed Of Light Hierarchical Roofline Chart (Single Precision)'",
    "section_SpeedOfLight_HierarchicalTensorRooflineChart.csv.xz":
        "in section 'GPU Speed Of Light Hierarchical Roofline Chart (Tensor Core)'",
    "section_WarpStateStats.csv": "in section 'Warp State Statistics'",
    "section_WorkloadDistribution.csv": "in section 'GPU and Memory Workload Distribution'",
}
NAME_FORMS = ["ocr_names_demangled.csv.xz", "ocr_names_function.csv", "ocr_names_mangled.csv.xz"]


@pytest.fixture(scope="module")
def gemm() -> dict:
    """The one launch of the GEMM report as the .ncu-rep reader sees it."""
    return read(GEMM_REPORT).kernel_metrics.iloc[0].to_dict()


def test_every_export_of_the_folder_is_covered() -> None:
    exports = {p.name for p in PAGES.iterdir() if ".csv" in p.name}
    assert exports == set(READS) | set(REFUSED) | set(NAME_FORMS)


@pytest.mark.parametrize("name", sorted(READS))
def test_export_reads_with_the_reports_numbers(name: str, gemm: dict) -> None:
    carried, exact = READS[name]
    launch = read(PAGES / name).kernel_metrics
    assert len(launch) == 1
    row = launch.iloc[0]
    assert row["name"] == "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT" and row["stage"] == "gemm"
    assert {m for m in CANONICAL_METRIC_NAMES if not math.isnan(row[m])} == carried
    for metric in carried:
        # display units print 3 significant digits (1.01 TB/s for 1.0064e12 B/s): within half a unit of the last
        assert row[metric] == pytest.approx(gemm[metric], rel=1e-6 if exact else 5e-3), metric


def test_the_reports_own_numbers(gemm: dict) -> None:
    """The reference itself: 2·M·N·K tensor FLOP of the bf16 4096³ matmul, its duration and throughputs."""
    assert gemm["flop_tensor"] == 2 * 4096 ** 3
    assert gemm["duration_ns"] == 175584
    assert gemm["sm_throughput_pct"] == pytest.approx(90.30, abs=0.005)
    assert gemm["memory_throughput_pct"] == pytest.approx(69.85, abs=0.005)
    raw = read(PAGES / "page_raw.csv.xz").kernel_metrics.iloc[0]
    assert raw["flop_tensor"] == 2 * 4096 ** 3 and raw["duration_ns"] == 175584
    # --print-units base prints the duration in ns, not 175.58 us
    assert read(PAGES / "page_details_base_units.csv").kernel_metrics.iloc[0]["duration_ns"] == 175584
    assert read(PAGES / "page_details.csv").kernel_metrics.iloc[0]["duration_ns"] == 175580


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_export_without_kernel_metrics_is_refused_in_one_line(name: str) -> None:
    with pytest.raises(InputError) as caught:
        read(PAGES / name)
    assert caught.value.path == str(PAGES / name)
    assert caught.value.problem.startswith("not a kernel-metrics CSV: ")
    assert REFUSED[name] in caught.value.problem and "\n" not in str(caught.value)


def test_refusal_through_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    path = PAGES / "section_SpeedOfLight_RooflineChart.csv"
    assert main(["inspect", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: {path}: not a kernel-metrics CSV: none of the metrics this tool reads (duration_ns, "
                   "sm_throughput_pct, dram_throughput_pct, memory_throughput_pct, …) in section "
                   "'GPU Speed Of Light Roofline Chart'\n")


def test_kernel_name_forms_read_with_the_reports_durations() -> None:
    """The OCR-VLM report's 224 launches exported under each --print-kernel-base: same launches, same times."""
    report = read(OCR_REPORT).kernel_metrics
    for name in NAME_FORMS:
        export = read(PAGES / name).kernel_metrics
        assert len(export) == 224, name
        assert export["duration_ns"].tolist() == report["duration_ns"].tolist(), name
        assert export["stage"].tolist() == report["stage"].tolist(), name
    assert report["duration_ns"].sum() == pytest.approx(5.154e6, rel=1e-3)


def test_ncu_files_carry_their_sha256() -> None:
    for path in (GEMM_REPORT, PAGES / "page_details.csv"):
        assert len(read(path).provenance.sha256 or "") == 64
    from generator.readers.base import sha256_of
    plain = PAGES / "page_details.csv"
    assert read(plain).provenance.sha256 == sha256_of(plain)


def test_provenance_of_a_plain_report(tmp_path: Path) -> None:
    import lzma

    plain = tmp_path / "report.ncu-rep"
    plain.write_bytes(lzma.decompress(GEMM_REPORT.read_bytes()))
    from generator.readers.base import sha256_of
    dataset = read(plain)
    assert dataset.provenance.sha256 == sha256_of(plain) and dataset.provenance.format_version == "ncu 2025.3.1"


def test_nvtx_names_with_colons_and_slashes_survive(tmp_path: Path) -> None:
    """The raw page of the GEMM report with its NVTX cell naming ranges as CCCL and users do: ncu writes
    ``Domain:Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg``, so the range is read from the right."""
    import lzma

    text = lzma.decompress((PAGES / "page_raw.csv.xz").read_bytes()).decode()
    cell = '15844  ""<default domain>:gemm:none:none:none:none:none:none"" '
    assert text.count(cell) == 1
    nested = ('15844  ""<default domain>:decode/step:1:none:none:none:none:none:none"" '
              '""CCCL:cub::DeviceScan::InclusiveScan:none:none:none:none:none:none"" ')
    path = tmp_path / "raw_nested.csv"
    path.write_text(text.replace(cell, nested), encoding="utf-8")
    row = read(path).kernel_metrics.iloc[0]
    assert row["stage"] == "cub::DeviceScan::InclusiveScan"
    assert row["nvtx"] == "<default domain>:decode/step:1; CCCL:cub::DeviceScan::InclusiveScan"
    assert len(read(path, stage="decode/step:1").kernel_metrics) == 1
    assert row["duration_ns"] == 175584
