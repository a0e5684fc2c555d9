"""Exact argv of every profiler call, and what --dry-run prints."""
from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from capture import cli
from capture import commands as cmd
from capture.run import RunConfig, planned_commands
from capture.workloads.params import Params

RUN = Path("/runs/r1")
LAY = cmd.RunLayout(RUN)
WORKER = ["/py", "-m", "capture.worker", "--workload", "ocr-vlm", "--attn-impl", "eager"]


def test_worker_argv_lists_only_non_default_params() -> None:
    params = Params(attn_impl="eager", new_tokens=8, image_size=512)
    assert cmd.worker_argv("/py", "ocr-vlm", params, RUN / "logs/stages.json") == [
        "/py", "-m", "capture.worker", "--workload", "ocr-vlm",
        "--image-size", "512", "--new-tokens", "8", "--attn-impl", "eager",
        "--stages-out", "/runs/r1/logs/stages.json", "--mark-operators",
    ]


def test_worker_argv_of_the_nsys_and_ncu_runs() -> None:
    params = Params(cuda_graph=True, module_depth=3)
    assert cmd.worker_argv("/py", "llm-decode", params, RUN / "logs/stages.json", 3) == [
        "/py", "-m", "capture.worker", "--workload", "llm-decode", "--cuda-graph", "--module-depth", "3",
        "--stages-out", "/runs/r1/logs/stages.json", "--mark-operators", "--overhead-runs", "3",
    ]
    cfg = RunConfig(workload="llm-decode", params=params, run_dir=RUN, python="/py")
    assert cfg.worker(plan=LAY.profile_plan) == [
        "/py", "-m", "capture.worker", "--workload", "llm-decode", "--cuda-graph", "--module-depth", "3",
        "--profile-plan", "/runs/r1/logs/ncu_plan.json",
    ]
    # the ncu run's own parameters (capture.targets.ncu_params: operator windows only)
    assert cfg.worker(plan=LAY.profile_plan, params=Params(warmup=1, module_depth=0)) == [
        "/py", "-m", "capture.worker", "--workload", "llm-decode", "--warmup", "1", "--module-depth", "0",
        "--profile-plan", "/runs/r1/logs/ncu_plan.json",
    ]


def test_nsys_commands() -> None:
    assert cmd.nsys_profile("nsys", LAY, WORKER) == [
        "nsys", "profile", "--trace=cuda,nvtx", "--sample=none", "--cpuctxsw=none", "--cuda-graph-trace=node",
        "-o", "/runs/r1/nsys/report", *WORKER,
    ]
    assert cmd.nsys_export("nsys", LAY) == [
        "nsys", "export", "--type", "sqlite", "--output", "/runs/r1/nsys/report.sqlite",
        "/runs/r1/nsys/report.nsys-rep",
    ]
    assert cmd.nsys_stats("nsys", LAY, ["cuda_gpu_kern_sum"], "decode", stage="decode") == [
        "nsys", "stats", "--report", "cuda_gpu_kern_sum", "--format", "csv",
        "--output", "/runs/r1/nsys/stats/decode", "--filter-nvtx", "decode", "/runs/r1/nsys/report.sqlite",
    ]
    assert cmd.nsys_stats("nsys", LAY, ["cuda_gpu_kern_sum", "nvtx_sum", "cuda_api_sum"], "all") == [
        "nsys", "stats", "--report", "cuda_gpu_kern_sum,nvtx_sum,cuda_api_sum", "--format", "csv",
        "--output", "/runs/r1/nsys/stats/all", "/runs/r1/nsys/report.sqlite",
    ]


def test_ncu_profile_one_run_for_all_stages_and_kernels() -> None:
    argv = cmd.ncu_profile("ncu", LAY, WORKER, includes=["kr.profile@target/"], kernel_regex="^(_Z1a|_Z1b)$",
                           sections=("SpeedOfLight", "Occupancy"), section_set="full", metrics=["m1", "m2"])
    assert argv == [
        "ncu", "--clock-control", "none", "--target-processes", "all", "--nvtx",
        "--nvtx-include", "kr.profile@target/", "--graph-profiling", "node",
        "--kernel-name-base", "mangled", "--kernel-name", "regex:^(_Z1a|_Z1b)$",
        "--filter-mode", "per-launch-config", "--launch-count", "1",
        "--set", "full", "--section", "SpeedOfLight", "--section", "Occupancy", "--metrics", "m1,m2",
        "-o", "/runs/r1/ncu/report", *WORKER,
    ]


def test_ncu_collects_the_report_metrics_and_speed_of_light() -> None:
    """--metrics lists every raw metric the canonical table reads, so the report lacks none of them."""
    from generator.metric_table import CANONICAL_METRICS, TENSOR_DATAPATHS

    assert cmd.DEFAULT_SECTIONS == ("SpeedOfLight",)
    for metric in CANONICAL_METRICS:
        for name in [*metric.ncu_metrics, *(n for f in metric.ncu_formulas for n in f.metrics())]:
            assert name in cmd.REPORT_METRICS, (metric.name, name)
    assert {p.ops for p in TENSOR_DATAPATHS} <= set(cmd.REPORT_METRICS)
    assert len(cmd.REPORT_METRICS) == len(set(cmd.REPORT_METRICS)) == 66


def test_ncu_exports() -> None:
    assert cmd.ncu_export_raw("ncu", LAY) == ["ncu", "--import", "/runs/r1/ncu/report.ncu-rep", "--csv", "--page", "raw",
                                              "--print-units", "base"]
    assert cmd.ncu_export_mangled("ncu", LAY, "-retry") == [
        "ncu", "--import", "/runs/r1/ncu/report-retry.ncu-rep", "--csv", "--page", "raw",
        "--print-kernel-base", "mangled", "--metrics", "gpu__time_duration.sum",
    ]


def test_plan_uses_preset_stages_in_order() -> None:
    cfg = RunConfig(workload="ocr-vlm", params=Params(), run_dir=RUN, python="/py")
    steps = [name for name, _, _ in planned_commands(cfg, "nsys", "ncu")]
    assert steps == ["nsys profile", "nsys export", "nsys stats all", "nsys stats sam", "nsys stats clip",
                     "nsys stats projector", "nsys stats prefill", "nsys stats decode",
                     "ncu profile", "ncu export raw", "ncu export names"]
    no_ncu = [name for name, _, _ in planned_commands(cfg, "nsys", None)]
    assert "ncu profile" not in no_ncu


@pytest.mark.parametrize(("flags", "runs"), [([], "3"), (["--cuda-graph"], "3"), (["--cuda-graph", "--overhead-runs", "5"], "5"),
                                             (["--overhead-runs", "0"], None)])
def test_overhead_runs_default_to_three(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        flags: list[str], runs: str | None) -> None:
    """Each traced overhead iteration costs the nsys pass ~1.5 s; nsys' node-level graph tracing
    failed the graph preset at 6 runs (15 iterations)."""
    assert cli.main(["run", "--workload", "llm-decode", "--out", str(tmp_path), "--name", "g", "--dry-run",
                     "--nsys", "/opt/nsys", "--ncu", "/opt/ncu", *flags]) == 0
    profile = shlex.split(next(line for line in capsys.readouterr().out.splitlines() if not line.startswith("#")))
    if runs is None:
        assert "--overhead-runs" not in profile
    else:
        assert profile[profile.index("--overhead-runs") + 1] == runs


def test_dry_run_prints_the_exact_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["run", "--workload", "gemm", "--out", str(tmp_path), "--name", "g", "--dry-run",
                     "--nsys", "/opt/nsys", "--ncu", "/opt/ncu", "--set", "full", "--m", "1024"])
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"# run directory: {tmp_path / 'g'}"
    commands = [shlex.split(line.split(" > ")[0]) for line in lines if not line.startswith("#")]
    profile = commands[0]
    assert profile[:8] == ["/opt/nsys", "profile", "--trace=cuda,nvtx", "--sample=none", "--cpuctxsw=none",
                           "--cuda-graph-trace=node", "-o", str(tmp_path / "g/nsys/report")]
    assert profile[9:] == ["-m", "capture.worker", "--workload", "gemm", "--m", "1024",
                           "--stages-out", str(tmp_path / "g/logs/stages.json"), "--mark-operators",
                           "--calls-out", str(tmp_path / "g/ops/calls.csv"),
                           "--overhead-runs", "3"]  # the default
    assert ["/opt/nsys", "stats", "--report", "cuda_gpu_kern_sum", "--format", "csv", "--output",
            str(tmp_path / "g/nsys/stats/gemm"), "--filter-nvtx", "gemm",
            str(tmp_path / "g/nsys/report.sqlite")] in commands
    ncu = next(c for c in commands if c[0] == "/opt/ncu" and "-o" in c)
    assert ncu[ncu.index("--nvtx-include") + 1] == "kr.profile@target/"  # the profile windows
    assert ncu[ncu.index("--set") + 1] == "full"
    assert ncu[-2:] == ["--profile-plan", str(tmp_path / "g/logs/ncu_plan.json")]
    # the worker's own flags are the nsys run's; capture.targets.ncu_params may change them once the plan is known
    note = lines[lines.index("# ncu profile") + 1]
    assert note == ("# if every profile window is an operator call (known after the nsys pass), the worker runs "
                    "with --m 1024 --warmup 0 --module-depth 0 where the first iteration launched as the measured "
                    "one, else with --m 1024 --warmup 1 --module-depth 0")
    every = cli.main(["run", "--workload", "gemm", "--out", str(tmp_path), "--name", "g", "--dry-run",
                      "--nsys", "/opt/nsys", "--ncu", "/opt/ncu", "--all-launch-configs"])
    assert every == 0
    every_lines = capsys.readouterr().out.splitlines()
    ncu = next(shlex.split(line) for line in every_lines if line.startswith("/opt/ncu") and " -o " in line)
    assert ncu[ncu.index("--nvtx-include") + 1] == "gemm/" and "--profile-plan" not in ncu
    assert not any("operator call" in line for line in every_lines)  # no windows: the flags are the nsys run's
    assert cli.main(["run", "--workload", "gemm", "--out", str(tmp_path), "--name", "g", "--dry-run",
                     "--nsys", "/opt/nsys", "--ncu", "/opt/ncu", "--warmup", "1"]) == 0
    once = capsys.readouterr().out.splitlines()  # the one warm-up is the first iteration: marked
    assert once[once.index("# ncu profile") + 1] == (
        "# if every profile window is an operator call (known after the nsys pass), the worker runs with "
        "--warmup 0 --module-depth 0 where the first iteration launched as the measured one")
    assert cli.main(["run", "--workload", "gemm", "--out", str(tmp_path), "--name", "g", "--dry-run",
                     "--nsys", "/opt/nsys", "--ncu", "/opt/ncu", "--warmup", "0"]) == 0
    assert not any("operator call" in line for line in capsys.readouterr().out.splitlines())  # nothing is marked
    assert lines[-3] == (f"/opt/ncu --import {tmp_path}/g/ncu/report.ncu-rep --csv --page raw --print-units base "
                         f"> {tmp_path}/g/ncu/raw.csv")
    assert not (tmp_path / "g").exists()  # a dry run writes nothing


def test_missing_tool_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("NSYS", raising=False)
    assert cli.main(["run", "--workload", "gemm", "--out", str(tmp_path), "--name", "g"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["capture: nsys not found: put it on PATH, set NSYS=PATH or pass --nsys PATH"]
    assert not (tmp_path / "g").exists()


def test_unknown_workload_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--workload", "nope", "--out", str(tmp_path)]) == 2
    assert "unknown workload 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_workload_that_does_not_import_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          command: str) -> None:
    """A run imports the workload's module beside the environment probe, a sweep before it makes its
    folder; either way nothing is written."""
    fake = tmp_path / "tool"
    fake.write_text("#!/bin/sh\necho 'Fake version 1.0'\n")
    fake.chmod(0o755)
    grid = ["--grid", "m=64,128"] if command == "sweep" else []
    assert cli.main([command, "--workload", "no_such_module_kr:build", "--out", str(tmp_path / "out"), "--name", "w",
                     "--nsys", str(fake), "--ncu", str(fake), "--device", "cpu", *grid]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["capture: cannot import workload module 'no_such_module_kr': No module named 'no_such_module_kr'"]
    assert not (tmp_path / "out").exists()


def test_every_subcommand_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    for sub in (["--help"], ["run", "--help"], ["sweep", "--help"], ["list-workloads", "--help"]):
        with pytest.raises(SystemExit) as exc:
            cli.main(sub)
        assert exc.value.code == 0
    assert "--attn-impl" in capsys.readouterr().out
