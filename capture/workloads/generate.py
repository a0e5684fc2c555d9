"""Prefill + greedy decode of a causal LM, as the two stages ``prefill`` and ``decode``.

Two forms: :func:`prefill_and_decode` (dynamic KV cache, every decode step launched op by op)
and :class:`GraphedDecoder` (static KV cache, the decode step captured once as a CUDA graph and
replayed, as vLLM, SGLang and ``torch.compile(mode="reduce-overhead")`` run decode).
"""
from __future__ import annotations

import inspect
from typing import Any

import torch

from capture.workloads.stages import range_, stage

#: NVTX range (not a stage) around the one-time CUDA graph capture of the decode step.
GRAPH_CAPTURE_RANGE = "cuda_graph_capture"


@torch.inference_mode()
def prefill_and_decode(model: torch.nn.Module, inputs_embeds: torch.Tensor, new_tokens: int) -> torch.Tensor:
    """Run the prompt once (``prefill``), then ``new_tokens`` greedy steps with the KV cache
    (``decode``); returns the generated token ids (batch × new_tokens)."""
    keyword = cache_keyword(model)
    with stage("prefill"):
        out = model(inputs_embeds=inputs_embeds, use_cache=True)
        token = out.logits[:, -1:].argmax(-1)
    past = returned_cache(out)
    tokens = [token]
    with stage("decode"):
        for _ in range(new_tokens):
            out = model(input_ids=token, use_cache=True, **{keyword: past})
            past = returned_cache(out)
            token = out.logits[:, -1:].argmax(-1)
            tokens.append(token)
    return torch.cat(tokens[1:], dim=1) if new_tokens else tokens[0][:, :0]


def cache_keyword(model: torch.nn.Module) -> str:
    """The keyword the model's forward takes its KV cache by: ``cache`` where transformers has it
    (5.24, which deprecates ``past_key_values``), else ``past_key_values`` (5.17, the GPU hosts')."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def returned_cache(out: Any) -> Any:
    """The KV cache a forward returned, under the name its transformers version gives it."""
    return out["cache"] if "cache" in out else out["past_key_values"]


class GraphedDecoder:
    """Greedy decode over a static KV cache with one CUDA graph for the decode step.

    The step (model forward on one token, argmax, advance the position) reads and writes only
    static tensors, so it is captured once — on the first call, inside the NVTX range
    ``cuda_graph_capture`` — and each decode step is one ``graph.replay()``. ``graph=False`` runs
    the same static-cache step eagerly (what the CPU tests check against the dynamic cache).
    """

    def __init__(self, model: torch.nn.Module, inputs_embeds: torch.Tensor, new_tokens: int, *, graph: bool = True) -> None:
        from transformers import StaticCache

        if graph and inputs_embeds.device.type != "cuda":
            raise ValueError("--cuda-graph needs a CUDA device")
        self.model, self.embeds, self.new_tokens, self.use_graph = model, inputs_embeds, new_tokens, graph
        batch, self.prompt_len = inputs_embeds.shape[:2]
        self.cache = StaticCache(config=model.config, max_cache_len=self.prompt_len + new_tokens + 1)
        device = inputs_embeds.device
        self.ids = torch.zeros(batch, 1, dtype=torch.long, device=device)
        self.position = torch.zeros(1, dtype=torch.long, device=device)
        self.graph: torch.cuda.CUDAGraph | None = None
        self.keyword = cache_keyword(model)

    def _step(self) -> None:
        out = self.model(input_ids=self.ids, cache_position=self.position, use_cache=True, **{self.keyword: self.cache})
        self.ids.copy_(out.logits[:, -1:].argmax(-1))
        self.position.add_(1)

    def _capture(self) -> None:
        """Warm the step up on a side stream (lazy cache and library set-up stay out of the
        graph), then capture it; the cache is reset before every run."""
        with range_(GRAPH_CAPTURE_RANGE):
            self.position.fill_(self.prompt_len)
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(2):
                    self._step()
            torch.cuda.current_stream().wait_stream(side)
            self.position.fill_(self.prompt_len)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self._step()

    @torch.inference_mode()
    def __call__(self) -> torch.Tensor:
        """Prefill (eager) then ``new_tokens`` decode steps; the generated ids (batch × new_tokens)."""
        if self.use_graph and self.graph is None:
            self._capture()
        self.cache.reset()
        with stage("prefill"):
            positions = torch.arange(self.prompt_len, device=self.embeds.device)
            out = self.model(inputs_embeds=self.embeds, cache_position=positions, use_cache=True,
                             **{self.keyword: self.cache})
            self.ids.copy_(out.logits[:, -1:].argmax(-1))
            self.position.fill_(self.prompt_len)
        tokens = []
        with stage("decode"):
            for _ in range(self.new_tokens):
                self.graph.replay() if self.graph is not None else self._step()
                tokens.append(self.ids.clone())
        return torch.cat(tokens, dim=1) if tokens else self.ids[:, :0]
