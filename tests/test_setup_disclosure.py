"""The test setup on the Overview, from each committed capture manifest and from a copy of one carrying the
keys newer captures write (fidelity, energy, clocks, tokens, L2 size): every value as the manifest
records it, preset defaults as their values (read from the capture sources here), and "not recorded"
where a manifest lacks a key."""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from conftest import ROOT
from helpers_pages import example_result

from generator.analyses.setup import workload_setup
from generator.render.commands import shown_commands
from generator.render.pages import render_page
from generator.render.translations import translator
from generator.workload_params import PRESET_DEFAULTS, generated_tokens

RUNS = ROOT / "examples" / "runs"
MANIFESTS = sorted(RUNS.glob("*/manifest.json"))
SDPA = RUNS / "ocr-vlm-sdpa-h200" / "manifest.json"
NEW_KEYS = ("fidelity", "energy", "clocks", "tokens")
#: the committed captures made before the keys existed (the H200 ones of 2026-11-29 record them all)
OLDER = [p for p in MANIFESTS if not set(NEW_KEYS) & set(json.loads(p.read_text(encoding="utf-8")))]


def _index(manifest: dict, lang: str) -> str:
    result, meta = example_result()
    return render_page("index", dataclasses.replace(result, manifest=manifest), meta, lang, {})


def _cell(text: str, label: str) -> str:
    found = re.findall(rf"^\| {re.escape(label)} \| (.*) \|$", text, re.M)
    assert len(found) == 1, (label, found)
    return found[0]


def test_preset_defaults_are_the_capture_sources_numbers() -> None:
    """``params.layers or 16`` in capture/workloads/<preset>.py: the value a recorded None stands for."""
    modules = {"ocr-vlm": "ocr_vlm", "llm-decode": "llm_decode", "vit": "vit"}
    for preset, module in modules.items():
        text = (ROOT / "capture" / "workloads" / f"{module}.py").read_text(encoding="utf-8")
        found: dict[str, list[int]] = {}
        for key, value in re.findall(r"params\.(\w+) or (\d+)", text):
            found.setdefault(key, []).append(int(value))
        assert {k: tuple(v) for k, v in found.items()} == PRESET_DEFAULTS[preset], preset


def test_newer_captures_record_every_new_key() -> None:
    newer = {p.parent.name for p in MANIFESTS} - {p.parent.name for p in OLDER}
    assert newer == {"compiled-block-h200", "llm-decode-eager-attn-h200", "llm-decode-graph-h200", "llm-decode-h200-a",
                     "llm-decode-h200-b", "llm-decode-h200-probe", "ocr-vlm-sdpa-h200-a", "ocr-vlm-sdpa-h200-b",
                     "llm-decode-h100-a", "llm-decode-h100-b", "ocr-vlm-sdpa-h100-a"}
    assert all(set(NEW_KEYS) <= set(json.loads((RUNS / n / "manifest.json").read_text(encoding="utf-8"))) for n in newer)
    assert len(OLDER) == 9


@pytest.mark.parametrize("manifest_path", MANIFESTS, ids=[p.parent.name for p in MANIFESTS])
def test_committed_manifests_show_the_newer_keys_they_record(manifest_path: Path) -> None:
    """Captures before 2026-11-29 predate the newer keys: "not recorded"; those of that day record them
    (a workload that generates no tokens records none): shown."""
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    assert bool(set(NEW_KEYS) & set(manifest)) == (manifest["created"] >= "2026-11-29")
    recorded = {"setup.fidelity": manifest.get("fidelity"), "setup.energy": manifest.get("energy"),
                "setup.clocks": manifest.get("clocks"), "setup.tokens": generated_tokens(manifest),  # as findings
                "setup.l2_cache": manifest["environment"]["gpus"][0].get("l2_cache_bytes")}
    for lang in ("en", "zh"):
        t = translator(lang)
        text = _index(manifest, lang)
        missing = t("setup.not_recorded")
        for label, value in recorded.items():
            assert (_cell(text, t(label)) == missing) == (value is None), (lang, label)
        function = ":" in manifest["workload"]  # compiled-block-h200: module:function, not a preset
        assert _cell(text, t("setup.weights")) == t("setup.weights_unknown" if function else "setup.weights_random")
        params = manifest["params"]
        if params.get("layers") is None and not function:  # the preset's default, as its value
            default = " / ".join(map(str, PRESET_DEFAULTS[manifest["workload"]]["layers"]))
            assert _cell(text, t("setup.param.layers")) == t("setup.default", value=default)
        mode = "mode_cuda_graph" if params.get("cuda_graph") else "mode_eager"
        assert _cell(text, t("setup.mode")) == t(f"setup.{mode}")
        assert t("unknown") not in _cell(text, t("setup.param.batch"))


def test_instrumentation_cost_per_stage_as_recorded() -> None:
    manifest = json.loads(SDPA.read_text(encoding="utf-8"))
    text = _index(manifest, "en")
    decode = manifest["module_overhead"]["stages"]["decode"]  # 5,216 range calls, +2.5 % timed
    row = (f"| decode | {decode['calls']:,d} | {decode['timed_pct']:.1f} | {decode['spread_pct']:.1f} | "
           f"{decode['direct_pct']:.2f} |")
    assert row == "| decode | 5,216 | 2.5 | 0.8 | 0.60 |" and row in text
    assert "0.88 µs" in text  # seconds_per_call 8.83e-7
    # an older manifest (ocr-vlm-eager-v2) records only overhead_pct: timed shown, the rest not recorded
    older = json.loads((RUNS / "ocr-vlm-eager-v2" / "manifest.json").read_text(encoding="utf-8"))
    pct = older["module_overhead"]["stages"]["decode"]["overhead_pct"]
    assert f"| decode | not recorded | {pct:.1f} | not recorded | not recorded |" in _index(older, "en")


def test_newer_manifest_keys_are_shown(tmp_path: Path) -> None:
    """A copy of the committed sdpa manifest with the keys helper `cap` adds, read back from tmp_path."""
    manifest = json.loads(SDPA.read_text(encoding="utf-8"))
    same = {"measured_launches": 979, "plain_launches": 979, "only_measured": {}, "only_plain": {}}
    manifest["fidelity"] = {"verdict": "consistent", "stages": {"prefill": same, "decode": same},
                            "note": "kernel time with and without the profiler within 2 %"}  # readers.fidelity.compare
    manifest["energy"] = {"source": "nvml", "note": "board energy counter",
                          "stages": {"decode": {"joules": 123.4, "seconds": 0.797, "watts": 154.83, "resolved": True},
                                     "projector": {"joules": None, "seconds": 0.0001, "watts": None,
                                                   "resolved": False}}}
    manifest["environment"]["gpus"][0]["l2_cache_bytes"] = 52_428_800
    manifest["clocks"] = {"sm_mhz": 1980, "memory_mhz": 3201}
    manifest["tokens"] = {"generated": 32}
    copy = tmp_path / "manifest.json"
    copy.write_text(json.dumps(manifest), encoding="utf-8")
    text = _index(json.loads(copy.read_text(encoding="utf-8")), "en")
    assert _cell(text, "Fidelity check") == ('<span class="kr-raw">consistent</span> (prefill, decode); '
                                             '<span class="kr-raw" lang="en">kernel time with and without the profiler '
                                             'within 2 %</span>')  # a verdict readers.fidelity does not write: data
    assert _cell(text, "Energy per stage") == ("decode: 123.40 J in 0.797 s (154.8 W), projector: not resolved "
                                               "(nvml)")
    assert _cell(text, "L2 cache") == "52.43 MB"
    assert _cell(text, "Clocks during capture") == "SM 1,980 MHz, memory 3,201 MHz"
    assert _cell(text, "Tokens generated") == "32"
    zh = _index(manifest, "zh")
    assert _cell(zh, "采集时的时钟") == "SM 1,980 MHz，显存 3,201 MHz"
    assert workload_setup(manifest)["tokens"] == 32


def test_the_recorded_fidelity_verdict_in_both_languages() -> None:
    """ocr-vlm-sdpa-h200-a (v3 of the bundled example) records "same kernels" in all five stages: the
    verdict in the page's language, the stages as recorded, the capture's English note as data."""
    manifest = json.loads((RUNS / "ocr-vlm-sdpa-h200-a" / "manifest.json").read_text(encoding="utf-8"))
    fidelity = manifest["fidelity"]
    assert fidelity["verdict"] == "same kernels" and all(
        s["measured_launches"] == s["plain_launches"] and not s["only_measured"] and not s["only_plain"]
        for s in fidelity["stages"].values())
    # the capture's own note: quoted as written on the English page, in the page's words on the others
    notes = {"en": f'<span class="kr-raw" lang="en">{fidelity["note"]}</span>',  # no character needs escaping
             "zh": translator("zh")("capture_texts.fidelity_note")}
    for lang, verdict, sep in (("en", "same kernels", ", "), ("zh", "内核相同", "、")):
        cell = _cell(_index(manifest, lang), translator(lang)("setup.fidelity"))
        assert cell == f"{verdict} ({sep.join(fidelity['stages'])}); {notes[lang]}", lang


@pytest.mark.parametrize("manifest_path", MANIFESTS, ids=[p.parent.name for p in MANIFESTS])
def test_commands_show_no_path_of_the_capture_machine(manifest_path: Path) -> None:
    """Every absolute path the manifest's commands and argv hold is absent from what the pages show."""
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    shown = "\n".join(shown_commands(manifest, "<{chars} characters>"))
    absolute = set(re.findall(r"(?<![\w.])/[\w.+-]+(?:/[\w.+@-]+)+", json.dumps(
        {"argv": manifest.get("argv"), "phases": manifest.get("phases")})))
    assert absolute  # every committed capture ran its tools by absolute path
    assert not [p for p in absolute if p in shown]
    assert not re.search(r"(?:^|\s|')/\w", shown)
    text = _index(manifest, "en")
    assert not [p for p in absolute if p in text]
    # each command once; the kernel-name regexes (kilobytes) as their length
    assert len(shown.splitlines()) == len(set(shown.splitlines()))
    assert max(map(len, shown.split())) < 200


def test_no_generated_page_holds_a_capture_machine_path(example_site) -> None:
    """The bundled example built: no page (Markdown source or HTML, any version or language) holds an
    absolute path its runs' manifests record (argv, tool and output paths)."""
    report = example_site.report.read_text(encoding="utf-8")
    runs = [RUNS / name for name in re.findall(r"runs/([\w.-]+)\]", report)]
    assert [r.name for r in runs] == ["ocr-vlm-eager-v2", "ocr-vlm-sdpa-h200", "ocr-vlm-sdpa-h200-a"]
    absolute: set[str] = set()
    for run in runs:
        manifest = (run / "manifest.json").read_text(encoding="utf-8")
        absolute |= set(re.findall(r"(?<![\w.])/[\w.+-]+(?:/[\w.+@-]+)+", manifest))
    assert "/work/main/runs/ocr-vlm-sdpa-h200/nsys/report" in absolute
    assert "/work/main/runs/ocr-vlm-a/ops/calls.csv" in absolute  # v3's operator shapes, written on the capture machine
    pages = [p for root in (example_site.site, example_site.src) for p in root.rglob("*")
             if p.suffix in (".html", ".md")]
    assert len(pages) > 80
    leaks = {p.name: sorted(a for a in absolute if a in text) for p in pages
             if any(a in (text := p.read_text(encoding="utf-8")) for a in absolute)}
    assert leaks == {}


def test_hostile_manifest_values_stay_text() -> None:
    """Values from a manifest (workload, attention, model directory, argv) are data: escaped in their cell."""
    manifest = json.loads(SDPA.read_text(encoding="utf-8"))
    evil = "x|<script>window.__kr=1</script>`y`*_"
    manifest["params"] = {**manifest["params"], "attn_impl": evil, "model": f"/models/{evil}"}
    manifest["argv"] = [*manifest["argv"], evil]
    text = _index(manifest, "en")
    assert "<script>" not in text and "`y`" not in text
    for label in ("Model", "Weights", "Attention implementation", "Capture command"):
        assert _cell(text, label).count(" | ") == 0, label  # the row keeps its two cells
    assert _cell(text, "Weights") == translator("en")("setup.weights_real")
