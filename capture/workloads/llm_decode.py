"""``llm-decode``: a Llama-style dense decoder with GQA, stages ``prefill`` and ``decode``.

``--cuda-graph`` decodes over a static KV cache with the decode step replayed as one CUDA graph
(:class:`capture.workloads.generate.GraphedDecoder`); without it every step is launched eagerly.
"""
from __future__ import annotations

import torch
from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

from capture.workloads import Iteration
from capture.workloads.generate import GraphedDecoder, prefill_and_decode
from capture.workloads.params import Params


def build(params: Params) -> Iteration:
    dtype = params.torch_dtype()
    if params.model:
        model = AutoModelForCausalLM.from_pretrained(params.model, dtype=dtype, attn_implementation=params.attn_impl)
    else:  # Llama-3.2-1B shape
        config = LlamaConfig(
            hidden_size=2048,
            intermediate_size=8192,
            num_hidden_layers=params.layers or 16,
            num_attention_heads=32,
            num_key_value_heads=8,
            vocab_size=128256,
            max_position_embeddings=8192,
        )
        config._attn_implementation = params.attn_impl
        with torch.device(params.device):
            model = LlamaForCausalLM(config).to(dtype)
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
