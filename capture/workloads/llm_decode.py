"""``llm-decode``: a Llama-style dense decoder with GQA, stages ``prefill`` and ``decode``.

``--cuda-graph`` decodes over a static KV cache with the decode step replayed as one CUDA graph
(:class:`capture.workloads.generate.GraphedDecoder`); without it every step is launched eagerly.
``--tp N`` (under ``python -m capture run --nproc-per-node N``) splits the model over the ranks by
transformers' own tensor-parallel plan: rank 0 saves the random-weight model to a local folder, every
rank loads it with ``tp_plan="auto"`` (:func:`tp_arguments`), the folder is removed once loaded.
"""
from __future__ import annotations

import inspect
import shutil
import tempfile

import torch
from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

from capture.workloads import Iteration
from capture.workloads.generate import GraphedDecoder, prefill_and_decode
from capture.workloads.params import Params


def config(params: Params) -> LlamaConfig:
    """The preset's model: Llama-3.2-1B's shape."""
    cfg = LlamaConfig(
        hidden_size=2048,
        intermediate_size=8192,
        num_hidden_layers=params.layers or 16,
        num_attention_heads=32,
        num_key_value_heads=8,
        vocab_size=128256,
        max_position_embeddings=8192,
    )
    cfg._attn_implementation = params.attn_impl
    return cfg


def tp_arguments() -> dict:
    """``from_pretrained``'s tensor-parallel argument: ``distributed_config=DistributedConfig(tp_plan="auto")``
    where transformers has it (5.18 on), else ``tp_plan="auto"`` (5.17, the GPU hosts')."""
    try:
        from transformers import DistributedConfig
    except ImportError:
        return {"tp_plan": "auto"}
    if "tp_plan" not in inspect.signature(DistributedConfig).parameters:
        return {"tp_plan": "auto"}
    return {"distributed_config": DistributedConfig(tp_plan="auto")}


def tensor_parallel(params: Params, dtype: torch.dtype, cfg: LlamaConfig | None = None) -> torch.nn.Module:
    """The model split over the job's ranks by transformers' plan (``params.model``, else random weights
    of ``cfg`` (default: the preset's), saved by rank 0 to a local folder every rank loads)."""
    import torch.distributed as dist

    if not dist.is_initialized() or dist.get_world_size() != params.tp:
        raise ValueError(f"--tp {params.tp} needs {params.tp} ranks (python -m capture run --nproc-per-node {params.tp})")
    folder = [params.model]
    if not params.model:
        if dist.get_rank() == 0:
            folder = [tempfile.mkdtemp(prefix="kr-tp-")]
            torch.manual_seed(params.seed)
            LlamaForCausalLM(cfg or config(params)).to(dtype).save_pretrained(folder[0])
        dist.broadcast_object_list(folder, src=0)
    try:
        model = AutoModelForCausalLM.from_pretrained(folder[0], dtype=dtype, attn_implementation=params.attn_impl,
                                                     **tp_arguments())
    finally:
        dist.barrier()
        if not params.model and dist.get_rank() == 0:
            shutil.rmtree(folder[0], ignore_errors=True)
    return model


def build(params: Params) -> Iteration:
    dtype = params.torch_dtype()
    if params.tp:
        model = tensor_parallel(params, dtype)
    elif params.model:
        model = AutoModelForCausalLM.from_pretrained(params.model, dtype=dtype, attn_implementation=params.attn_impl)
    else:
        with torch.device(params.device):
            model = LlamaForCausalLM(config(params)).to(dtype)
    model = model.to(params.device).eval()
    gen = torch.Generator(device=params.device).manual_seed(params.seed)
    ids = torch.randint(0, model.config.vocab_size, (params.batch, params.prompt_len), device=params.device, generator=gen)
    embeds = model.get_input_embeddings()(ids)
    if params.cuda_graph:
        decoder = GraphedDecoder(model, embeds, params.new_tokens)
        decoder.generated_tokens = params.batch * params.new_tokens
        return decoder

    def iteration() -> None:
        prefill_and_decode(model, embeds, params.new_tokens)

    iteration.generated_tokens = params.batch * params.new_tokens
    return iteration
