"""A CPU-sized tensor-parallel decoder for the torchrun tests: llm-decode's own tensor-parallel loading
(transformers' tp_plan) of a 2-layer Llama of hidden 256 (8 heads, 2 KV heads), prefill + decode stages."""
from __future__ import annotations

import torch
from transformers import LlamaConfig

from capture.workloads import Iteration
from capture.workloads.generate import prefill_and_decode
from capture.workloads.llm_decode import tensor_parallel
from capture.workloads.params import Params


def build(params: Params) -> Iteration:
    cfg = LlamaConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=params.layers or 2,
                      num_attention_heads=8, num_key_value_heads=2, head_dim=32, vocab_size=1024,
                      max_position_embeddings=256)
    cfg._attn_implementation = params.attn_impl
    model = tensor_parallel(params, params.torch_dtype(), cfg).to(params.device).eval()
    gen = torch.Generator(device=params.device).manual_seed(params.seed)
    ids = torch.randint(0, cfg.vocab_size, (params.batch, params.prompt_len), device=params.device, generator=gen)
    embeds = model.get_input_embeddings()(ids)

    def iteration() -> None:
        prefill_and_decode(model, embeds, params.new_tokens)

    iteration.generated_tokens = params.batch * params.new_tokens
    return iteration
