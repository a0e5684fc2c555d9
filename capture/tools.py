"""Finding nsys/ncu and running any tool with its output logged to files."""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


class CaptureError(Exception):
    """A problem that stops a capture before it starts (one line for the user; exit code 2)."""


def find_tool(name: str, option: str | None) -> str:
    """The path of ``name`` (nsys/ncu): the option, else env ``NSYS``/``NCU``, else PATH."""
    candidate = option or os.environ.get(name.upper()) or shutil.which(name)
    if not candidate:
        raise CaptureError(f"{name} not found: put it on PATH, set {name.upper()}=PATH or pass --{name} PATH")
    resolved = shutil.which(candidate)
    if not resolved:
        raise CaptureError(f"{name} not found or not executable: {candidate}")
    return resolved


def tool_version(path: str) -> str | None:
    """The first line of ``path --version`` that names a version, or None."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    return next((line for line in lines if "ersion" in line), lines[0] if lines else None)


@dataclass(frozen=True)
class ToolResult:
    argv: list[str]
    returncode: int
    seconds: float
    stdout_path: Path
    stderr_path: Path

    def last_error_line(self) -> str:
        """The last non-empty line of stderr (else stdout): the one-line reason for a failure."""
        for path in (self.stderr_path, self.stdout_path):
            lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
            if lines:
                return lines[-1][:500]
        return f"exit code {self.returncode}"


def run_logged(argv: list[str], logs: Path, label: str, *, stdout_to: Path | None = None,
               env: dict[str, str] | None = None, cwd: Path | None = None,
               on_line: Callable[[str], None] | None = None) -> ToolResult:
    """Run ``argv``; stdout → ``stdout_to`` or ``logs/label.stdout``, stderr → ``logs/label.stderr``.
    ``on_line`` sees each stdout line as it comes (progress), which is still written in full."""
    logs.mkdir(parents=True, exist_ok=True)
    out_path = stdout_to or logs / f"{label}.stdout"
    err_path = logs / f"{label}.stderr"
    start = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        try:
            if on_line is None:
                code = subprocess.run(argv, stdout=out, stderr=err, env=env, cwd=cwd).returncode
            else:
                with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, env=env, cwd=cwd) as proc:
                    for line in proc.stdout:
                        out.write(line)
                        on_line(line.decode(errors="replace"))
                code = proc.returncode
        except OSError as exc:
            err.write(f"{exc}\n".encode())
            code = 127
    return ToolResult(argv, code, time.monotonic() - start, out_path, err_path)
