"""Prefill + greedy decode of a causal LM, as the two stages ``prefill`` and ``decode``."""
from __future__ import annotations

import torch

from capture.workloads.stages import stage


@torch.inference_mode()
def prefill_and_decode(model: torch.nn.Module, inputs_embeds: torch.Tensor, new_tokens: int) -> torch.Tensor:
    """Run the prompt once (``prefill``), then ``new_tokens`` greedy steps with the KV cache
    (``decode``); returns the generated token ids (batch × new_tokens)."""
    with stage("prefill"):
        out = model(inputs_embeds=inputs_embeds, use_cache=True)
        token = out.logits[:, -1:].argmax(-1)
    past = out.past_key_values
    tokens = [token]
    with stage("decode"):
        for _ in range(new_tokens):
            out = model(input_ids=token, past_key_values=past, use_cache=True)
            past = out.past_key_values
            token = out.logits[:, -1:].argmax(-1)
            tokens.append(token)
    return torch.cat(tokens[1:], dim=1) if new_tokens else tokens[0][:, :0]
