"""Which capture parameters each preset workload reads (capture/workloads/<name>.py and capture/worker.py).

A capture manifest records every parameter with its value, read or not (``m``/``n``/``k`` = 4096 for an OCR
run); the overview shows only the ones the workload read. tests/test_setup_facts.py checks this table against
the capture sources.
"""
from __future__ import annotations

#: read by the worker for every workload
WORKER_PARAMS: tuple[str, ...] = ("device", "warmup", "module_depth")

#: preset → the parameters its build function reads
WORKLOAD_PARAMS: dict[str, tuple[str, ...]] = {
    "ocr-vlm": ("dtype", "model", "layers", "batch", "image_size", "prompt_len", "new_tokens", "attn_impl",
                "seed"),
    "llm-decode": ("dtype", "model", "layers", "batch", "prompt_len", "new_tokens", "attn_impl", "cuda_graph",
                   "seed", "tp"),
    "vit": ("dtype", "model", "layers", "batch", "image_size", "attn_impl", "seed"),
    "gemm": ("dtype", "model", "m", "n", "k", "seed"),
}


#: preset → the value a parameter recorded as None (``--layers`` etc. not given) stands for: the numbers in
#: capture/workloads/<name>.py (``params.layers or 16``); ocr-vlm's ``layers`` are its three towers'
#: (SAM / CLIP / decoder). ``model`` None: the preset builds its own random-weight model.
PRESET_DEFAULTS: dict[str, dict[str, tuple[int, ...]]] = {
    "ocr-vlm": {"layers": (12, 24, 12), "image_size": (1024,)},
    "llm-decode": {"layers": (16,)},
    "vit": {"layers": (12,), "image_size": (224,)},
}


def params_read(workload: str, params: dict[str, object]) -> dict[str, object]:
    """The parameters ``workload`` reads, in manifest order; all of them for a workload not listed here
    (``module:function`` reads what it likes)."""
    known = WORKLOAD_PARAMS.get(workload)
    if known is None:
        return dict(params)
    return {k: v for k, v in params.items() if k in known or k in WORKER_PARAMS}


#: presets whose decode loop generates exactly ``new_tokens`` tokens per batch row
TOKEN_PRESETS: tuple[str, ...] = ("ocr-vlm", "llm-decode")


def generated_tokens(manifest: dict | None) -> int | None:
    """Tokens the measured iteration generated: the manifest's ``tokens.generated`` when recorded, else
    batch × new_tokens for a preset known to generate them (TOKEN_PRESETS), else None (no tokens)."""
    manifest = manifest or {}
    recorded = (manifest.get("tokens") or {}).get("generated") if isinstance(manifest.get("tokens"), dict) else None
    if isinstance(recorded, int) and not isinstance(recorded, bool):
        return recorded
    params = manifest.get("params") or {}
    steps, batch = params.get("new_tokens"), params.get("batch") or 1
    if manifest.get("workload") in TOKEN_PRESETS and isinstance(steps, int) and steps > 0 and isinstance(batch, int):
        return steps * batch
    return None
