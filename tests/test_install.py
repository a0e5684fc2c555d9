"""Installed like a library: a wheel of the repository, in a fresh venv outside the checkout, builds a report.

The wheel is built from a copy of the packaging files and packages (never in the checkout), installed
without dependencies into a new venv; the dependencies come from the test's own environment through a
``.pth`` line placed after the venv's site-packages, so the generator can only be the installed one.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from conftest import DATA, ROOT

pytestmark = pytest.mark.slow

REPORT = """
id: installed
title: {{en: Installed wheel, zh: 已安装的 wheel}}
versions:
  - id: v1
    title: {{en: First, zh: 第一版}}
    date: 2026-11-20
    inputs: {{nsys: ["{h200}/small_vlm.nsys.sqlite.xz"], ncu: ["{h200}/small_vlm_prefill.ncu-rep.xz"]}}
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv's python with only the wheel of this repository installed."""
    root = tmp_path_factory.mktemp("install")
    source = root / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("generator", "capture"):
        shutil.copytree(ROOT / name, source / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    wheels = root / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(wheels)], check=True, cwd=root)
    (wheel,) = wheels.glob("kernel_report-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert {"generator/templates/i18n/en.yaml", "generator/templates/i18n/zh.yaml",
            "generator/templates/kernel_families.yaml", "generator/templates/mkdocs.yml.j2",
            "generator/templates/site/index.html.j2"} <= names
    assert len([n for n in names if n.startswith("generator/templates/")]) == len(
        [p for p in (ROOT / "generator" / "templates").rglob("*") if p.is_file()])

    env = root / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    python = env / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)],
                   check=True, cwd=root, env=_clean_env())  # a PYTHONPATH checkout would count as installed
    site_packages = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                        check=True, capture_output=True, text=True).stdout.strip())
    # the dependencies (pandas, mkdocs, …) from this environment, searched after the wheel's own files
    deps = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    (site_packages / "zz_test_dependencies.pth").write_text("\n".join(sorted(deps)) + "\n", encoding="utf-8")
    return python


def _clean_env() -> dict[str, str]:
    """This environment without PYTHONPATH/PYTHONHOME: nothing but the venv decides what is installed."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def _run(python: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), *args], cwd=cwd, env=_clean_env(), capture_output=True, text=True,
                          timeout=900)


def test_installed_wheel_builds_a_report_outside_the_checkout(installed: Path, tmp_path: Path) -> None:
    where = _run(installed, tmp_path, "-c", "import generator, generator.resources as r; "
                                            "print(generator.__file__); print(r.TEMPLATES)")
    assert where.returncode == 0, where.stderr
    module, templates = (Path(line) for line in where.stdout.split())
    env = installed.parent.parent
    assert env in module.parents and ROOT not in module.parents
    assert env in templates.parents and (templates / "i18n" / "zh.yaml").is_file()

    report = tmp_path / "report.yaml"
    report.write_text(REPORT.format(h200=DATA / "h200-small"), encoding="utf-8")
    done = _run(installed, tmp_path, "-m", "generator", "build", "report.yaml")
    assert done.returncode == 0, done.stderr
    versions = json.loads((tmp_path / "site" / "versions.json").read_text(encoding="utf-8"))
    assert [v["version"] for v in versions] == ["v1"]
    for page in ("index.html", "zh/index.html", "top-kernels.html", "zh/top-kernels.html"):
        assert (tmp_path / "site" / "v1" / page).is_file(), page
    kernels = (tmp_path / "site_src" / "installed" / "v1" / "docs" / "top-kernels.zh.md").read_text(encoding="utf-8")
    assert "内核" in kernels


def test_installed_build_without_arguments_says_where_the_example_lives(installed: Path, tmp_path: Path) -> None:
    done = _run(installed, tmp_path, "-m", "generator", "build")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "bundled example is not installed" in done.stderr and "examples/ocr-vlm/report.yaml" in done.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written
