"""Every preset runs a tiny config on the CPU; its stages are entered in order, warm-ups silent."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from capture import worker
from capture.workloads import PRESETS, WorkloadError, declared_stages, resolve, stages
from capture.workloads.params import Params

TINY = {
    "gemm": Params(device="cpu", dtype="float32", m=64, n=48, k=32, warmup=2),
    "vit": Params(device="cpu", dtype="float32", layers=1, image_size=64, batch=2, warmup=2),
    "llm-decode": Params(device="cpu", dtype="float32", layers=1, prompt_len=4, new_tokens=2),
    "ocr-vlm": Params(device="cpu", dtype="float32", layers=1, image_size=128, prompt_len=4, new_tokens=2,
                      attn_impl="eager"),
}


@pytest.mark.parametrize("name", list(PRESETS))
def test_preset_runs_on_cpu_with_stages_in_order(name: str) -> None:
    seen: list[str] = []
    stages.add_hook(seen.append)  # every stage() call outside warm-up, through the public hook
    try:
        entered = worker.run(name, TINY[name])["stages"]
    finally:
        stages.remove_hook(seen.append)
    assert entered == list(declared_stages(name))
    assert seen == entered  # warm-up iterations entered no stage


def test_gemm_computes_the_product() -> None:
    p = TINY["gemm"]
    seen: list[str] = []
    stages.add_hook(seen.append)
    try:
        resolve("gemm")(p)()
    finally:
        stages.remove_hook(seen.append)
    assert seen == ["gemm"]


def test_ocr_vlm_has_deepseek_ocr_shape() -> None:
    from capture.workloads.ocr_vlm import _configs

    sam, clip, llm = _configs(Params(attn_impl="eager"))
    assert (sam.image_size, sam.hidden_size, sam.num_hidden_layers, list(sam.global_attn_indexes)) == (1024, 768, 12, [2, 5, 8, 11])
    assert (clip.image_size, clip.hidden_size, clip.num_hidden_layers, clip.patch_size) == (224, 1024, 24, 14)
    assert (llm.n_routed_experts, llm.num_experts_per_tok, llm.n_shared_experts) == (64, 6, 2)
    assert all(c._attn_implementation == "eager" for c in (sam, clip, llm))
    # ≈3B parameters, counted from the config (no weights built)
    h, inter, moe, layers, vocab = llm.hidden_size, llm.intermediate_size, llm.moe_intermediate_size, llm.num_hidden_layers, llm.vocab_size
    mlp = 3 * h * inter + (layers - 1) * (64 + 2) * 3 * h * moe
    assert 2.5e9 < mlp + 2 * vocab * h < 3.5e9


def test_user_workload_module_function(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_wl.py").write_text(
        "from capture.workloads.stages import stage\n"
        "def build(params):\n"
        "    def it():\n"
        "        with stage('encode'):\n            pass\n"
        "        with stage('head'):\n            pass\n"
        "    return it\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert worker.run("my_wl:build", Params(device="cpu"))["stages"] == ["encode", "head"]
    assert declared_stages("my_wl:build") is None
    with pytest.raises(WorkloadError, match="no callable"):
        resolve("my_wl:nothing")
    with pytest.raises(WorkloadError, match="cannot import"):
        resolve("no_such_module_xyz:build")


def test_worker_process_writes_stages(tmp_path: Path) -> None:
    out = tmp_path / "stages.json"
    proc = subprocess.run(
        [sys.executable, "-m", "capture.worker", "--workload", "gemm", "--device", "cpu", "--m", "32",
         "--n", "32", "--k", "32", "--stages-out", str(out)],
        capture_output=True, text=True, cwd=Path(__file__).parent.parent, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    written = json.loads(out.read_text())
    assert written["stages"] == ["gemm"]
    assert written["module_ranges"]["depth"] == 5 and written["module_overhead"] is None
    bad = subprocess.run([sys.executable, "-m", "capture.worker", "--workload", "ocr-vlm", "--model", "/x", "--device", "cpu"],
                         capture_output=True, text=True, cwd=Path(__file__).parent.parent, timeout=300)
    assert bad.returncode == 2 and bad.stderr.strip().startswith("capture.worker: ocr-vlm builds its own")


def test_model_directory_with_real_weights(tmp_path: Path) -> None:
    """--model loads a local Hugging Face directory (weights from disk, not random) for llm-decode and vit."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, ViTConfig, ViTForImageClassification

    torch.manual_seed(0)
    LlamaForCausalLM(LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=4,
                                 num_key_value_heads=2, vocab_size=100)).save_pretrained(tmp_path / "llm")
    ViTForImageClassification(ViTConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                        intermediate_size=64, image_size=32, patch_size=8)).save_pretrained(tmp_path / "vit")
    common = {"device": "cpu", "dtype": "float32", "warmup": 0}
    llm = Params(model=str(tmp_path / "llm"), prompt_len=3, new_tokens=2, **common)
    assert worker.run("llm-decode", llm)["stages"] == ["prefill", "decode"]
    assert worker.run("vit", Params(model=str(tmp_path / "vit"), **common))["stages"] == ["vit"]
    with pytest.raises(ValueError, match="takes no --model"):
        resolve("gemm")(Params(model=str(tmp_path / "llm"), **common))


def test_environment_names_transformers_without_importing_it() -> None:
    """The capture's environment probe (run before anything is written) states the installed
    transformers version from its package metadata: importing it would cost the probe ~1.5 s."""
    code = ("import json, sys; from capture.environment import collect; "
            "print(json.dumps([collect()['transformers'], 'transformers' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    import transformers

    assert json.loads(out) == [transformers.__version__, False]


@pytest.mark.parametrize("forbidden", [True, False])
def test_capture_caches_bytecode_outside_the_sources_where_the_environment_forbids_it(
        tmp_path: Path, forbidden: bool) -> None:
    """With PYTHONDONTWRITEBYTECODE set (as containers often do) every Python process would compile
    torch and transformers again; the capture then keeps the bytecode of its own imports, and of the
    processes it starts (PYTHONPYCACHEPREFIX), in a folder of the user cache. Otherwise it changes
    nothing."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    if forbidden:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    code = ("import os, sys; from capture.bytecode import cache_bytecode; where = cache_bytecode(); "
            "import capture.cli, capture.run; print(where, os.environ.get('PYTHONPYCACHEPREFIX'), "
            "'PYTHONDONTWRITEBYTECODE' in os.environ, sys.dont_write_bytecode)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    folder = tmp_path / "kernel-report-bytecode"
    if forbidden:
        assert out.split() == [str(folder), str(folder), "False", "False"]
        cached = {p.name.split(".")[0] for p in folder.rglob("*.pyc")}
        assert {"cli", "run", "targets", "nsys_sqlite"} <= cached  # the capture's own imports (run: when it runs)
    else:
        assert out.split() == ["None", "None", "False", "False"] and not folder.exists()


@pytest.mark.parametrize("name", ["llm-decode", "ocr-vlm"])
def test_decode_uses_the_cache_keyword_the_installed_transformers_takes(name: str) -> None:
    """The decode loop passes and reads its KV cache under the name the installed transformers
    takes (``cache`` in 5.24, ``past_key_values`` in the GPU hosts' 5.17): no deprecation
    warning, which says the old name goes in 5.40."""
    code = ("import sys; from capture import worker; from test_capture_workloads import TINY; "
            f"worker.run({name!r}, TINY[{name!r}])")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         cwd=Path(__file__).parent.parent, env={**os.environ, "PYTHONPATH": str(Path(__file__).parent)})
    assert run.returncode == 0, run.stderr[-2000:]
    assert "deprecated" not in run.stderr and "past_key_values" not in run.stderr
