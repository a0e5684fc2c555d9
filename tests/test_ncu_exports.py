"""The same 72 launches of a real multi-kernel ncu report, in every CSV form ncu writes (the
page, `--print-details all`, each section, `--print-summary`, `--page source`, and the three
`--print-kernel-base` name forms; tests/data/ncu-exports/README.md says how each was exported on the
H200): each form reads with the report's own durations, stage and kernel identity, or is refused in
one line as "not a kernel-metrics CSV"."""
from __future__ import annotations

import pytest
from conftest import DATA

from generator.analyses.kernel_identity import identity
from generator.cli import main
from generator.errors import InputError
from generator.readers import read

EXPORTS = DATA / "ncu-exports"
LAUNCHES = 72
#: Files that hold per-launch metrics, and whether their durations are exact (raw page) or rounded
#: to the three significant digits the details page prints.
READS = {f"ncu.{page}{form}.csv.xz": page == "raw"
         for page in ("details", "raw") for form in ("", "_demangled", "_function", "_mangled")}
READS.update({"ncu.details_all.csv.xz": False, "ncu.section_SpeedOfLight.csv.xz": False,
              "ncu.section_SpeedOfLight_all.csv.xz": False})
#: Sections whose metrics are ours but not the duration (launch statistics, occupancy, memory).
READS_NO_DURATION = [f"ncu.section_{s}{a}.csv.xz" for s in ("LaunchStats", "Occupancy", "MemoryWorkloadAnalysis")
                     for a in ("", "_all")]
REFUSED = {
    **{f"ncu.section_{s}{a}.csv.xz": "none of the metrics this tool reads"
       for s in ("ComputeWorkloadAnalysis", "InstructionStats", "SchedulerStats", "WarpStateStats")
       for a in ("", "_all")},
    "ncu.section_SourceCounters.csv.xz": "none of the metrics this tool reads",
    "ncu.section_SpeedOfLight_RooflineChart_all.csv.xz": "none of the metrics this tool reads",
    "ncu.section_SpeedOfLight_HierarchicalTensorRooflineChart_all.csv.xz": "none of the metrics this tool reads",
    "ncu.section_SpeedOfLight_RooflineChart.csv.xz": "only ncu messages (==WARNING== No metrics to show",
    "ncu.section_SpeedOfLight_HierarchicalTensorRooflineChart.csv.xz": "only ncu messages (==WARNING== No metrics",
    "ncu.source_sass.csv.xz": "an ncu --page source export",
    "ncu.summary_per_kernel.csv.xz": "an ncu --print-summary export",
}


@pytest.fixture(scope="module")
def report():
    return read(EXPORTS / "report.ncu-rep.xz").kernel_metrics.set_index("launch_id")


def test_every_export_is_listed():
    listed = set(READS) | set(READS_NO_DURATION) | set(REFUSED) | {"report.ncu-rep.xz", "README.md"}
    assert {p.name for p in EXPORTS.iterdir()} == listed


@pytest.mark.parametrize("name", sorted(READS))
def test_page_reads_the_reports_launches(name, report):
    frame = read(EXPORTS / name).kernel_metrics.set_index("launch_id")
    assert len(frame) == LAUNCHES and list(frame.index) == list(report.index)
    assert set(frame["stage"]) == {"decode"}  # the kr.modules ranges around each launch are no stage
    tolerance = 0 if READS[name] else 0.005
    assert frame["duration_ns"].to_numpy() == pytest.approx(report["duration_ns"].to_numpy(), rel=tolerance)
    for launch, row in frame.iterrows():
        ours, theirs = identity(row["name"]), identity(report.at[launch, "name"])
        if name.endswith("_function.csv.xz"):  # the base name alone: same function, agreeing arguments
            assert ours.function == theirs.function and ours.agrees(theirs), row["name"]
        else:
            assert ours == theirs, row["name"]


@pytest.mark.parametrize("name", READS_NO_DURATION)
def test_sections_without_duration_read_their_own_metrics(name, report):
    frame = read(EXPORTS / name).kernel_metrics.set_index("launch_id")
    assert len(frame) == LAUNCHES and frame["duration_ns"].isna().all()
    own = [c for c in ("grid_size", "achieved_occupancy_pct", "l2_hit_rate_pct") if frame[c].notna().all()]
    assert own, name
    for column in own:
        assert frame[column].to_numpy() == pytest.approx(report[column].to_numpy(), rel=0.005, abs=0.01)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_other_exports_are_refused_in_one_line(name, capsys):
    with pytest.raises(InputError) as info:
        read(EXPORTS / name)
    message = str(info.value)
    assert "not a kernel-metrics CSV: " in message and REFUSED[name] in message and "\n" not in message
    assert main(["inspect", str(EXPORTS / name)]) == 2
    err = capsys.readouterr().err.strip()
    assert name in err and len(err.splitlines()) == 1
