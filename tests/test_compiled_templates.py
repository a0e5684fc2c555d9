"""generator.render.compiled_templates: compiled Jinja templates kept across builds, never trusted blindly."""
from __future__ import annotations

from pathlib import Path

import jinja2
import pytest

from generator.render.compiled_templates import CompiledTemplates


def env(templates: Path, cache: CompiledTemplates) -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(templates), bytecode_cache=cache)


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names of the templates Jinja compiles from source from now on."""
    seen: list[str] = []
    real = jinja2.Environment.compile

    def compile(self, source, name=None, filename=None, raw=False, defer_init=False):  # noqa: ANN001
        seen.append(name)
        return real(self, source, name, filename, raw, defer_init)

    monkeypatch.setattr(jinja2.Environment, "compile", compile)
    return seen


def test_a_later_build_loads_them_compiled(tmp_path: Path, compiles: list[str]) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "page.md.j2").write_text("{{ x }} kernels\n", encoding="utf-8")
    first = CompiledTemplates()
    first.folder = tmp_path / "cache"
    assert env(tmp_path / "t", first).get_template("page.md.j2").render(x=3) == "3 kernels"
    assert compiles == ["page.md.j2"] and len(list((tmp_path / "cache").iterdir())) == 1
    later = CompiledTemplates()  # another build process
    later.folder = tmp_path / "cache"
    assert env(tmp_path / "t", later).get_template("page.md.j2").render(x=4) == "4 kernels"
    assert compiles == ["page.md.j2"]  # not compiled again


def test_an_edited_template_or_a_damaged_file_compiles_anew(tmp_path: Path, compiles: list[str],
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "t").mkdir()
    page = tmp_path / "t" / "page.md.j2"
    page.write_text("{{ x }} kernels\n", encoding="utf-8")
    cache = CompiledTemplates()
    cache.folder = tmp_path / "cache"
    env(tmp_path / "t", cache).get_template("page.md.j2")
    page.write_text("{{ x }} launches\n", encoding="utf-8")  # Jinja's checksum of the source differs
    fresh = CompiledTemplates()
    fresh.folder = tmp_path / "cache"
    assert env(tmp_path / "t", fresh).get_template("page.md.j2").render(x=2) == "2 launches"
    assert compiles == ["page.md.j2", "page.md.j2"] and not capsys.readouterr().err
    (stored,) = (tmp_path / "cache").iterdir()
    stored.write_bytes(stored.read_bytes()[:40] + b"\x00garbage")
    damaged = CompiledTemplates()
    damaged.folder = tmp_path / "cache"
    assert env(tmp_path / "t", damaged).get_template("page.md.j2").render(x=5) == "5 launches"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(stored) in err[0] and "compiled again" in err[0]
    assert len(compiles) == 3


def test_a_one_version_build_compiles_only_the_templates_it_renders(tmp_path: Path, compiles: list[str],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """h200-small's nsys export and ncu report as one version, built in this process: the pages of a
    single version (no comparison, sweep or what-if page), the findings that fired and the theme
    templates MkDocs renders are compiled; the rest never (issue 46: compiling them all cost 0.5 s
    of CPU)."""
    import generator.pipeline.build as build
    import generator.pipeline.inputs as inputs
    from generator.render import findings, pages
    from generator.render.compiled_templates import COMPILED

    data = Path(__file__).resolve().parent / "data" / "h200-small"
    report = tmp_path / "report.yaml"
    report.write_text(f"""id: pair
title: {{en: "h200-small", zh: "h200-small"}}
versions:
  - id: v1
    title: {{en: "v1", zh: "v1"}}
    date: 2026-11-20
    inputs:
      nsys: [{data / "small_vlm.nsys.sqlite.xz"}]
      ncu: [{data / "small_vlm_prefill.ncu-rep.xz"}]
""", encoding="utf-8")
    monkeypatch.setattr(build, "fork_safe", lambda: False)
    monkeypatch.setattr(inputs, "can_fork", lambda: False)
    monkeypatch.setattr(COMPILED, "_code", {})  # nothing compiled by earlier tests of this process
    for env in (pages._env, findings._env):
        env.cache_clear()
    build.build_site([report], tmp_path / "site", tmp_path / "src")
    for env in (pages._env, findings._env):
        env.cache_clear()
    assert (tmp_path / "site" / "v1" / "index.html").is_file()
    assert {"index.md.j2", "findings.md.j2", "main.html", "base.html"} <= set(compiles)
    assert not {"comparison.md.j2", "sweep.md.j2", "what-if.md.j2", "blog.html"} & set(compiles)
    assert len(compiles) < 100  # of 147 when every template was compiled
