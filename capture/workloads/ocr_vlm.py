"""``ocr-vlm``: a DeepSeek-OCR-shaped vision-language model with random bf16 weights.

SAM ViT-B (1024 px, windowed + global attention) and two strided convolutions → 16×16 tokens of
1024 channels; CLIP-L (224 px) → 16×16 patch tokens of 1024; the projector maps both, concatenated
(2048), to the decoder width; the decoder is a DeepSeek-V2-style MoE (12 layers, 64 routed experts,
6 active, 2 shared; ≈3B parameters). Stages: sam, clip, projector, prefill, decode.
``--layers`` sets the layer count of all three towers (default 12 / 24 / 12); ``--image-size`` the
SAM input (CLIP's is 14/64 of it, so both grids match).
"""
from __future__ import annotations

import torch
from transformers import (
    CLIPVisionConfig,
    CLIPVisionModel,
    DeepseekV2Config,
    DeepseekV2ForCausalLM,
    SamVisionConfig,
    SamVisionModel,
)

from capture.workloads import Iteration
from capture.workloads.generate import prefill_and_decode
from capture.workloads.params import Params
from capture.workloads.stages import stage


class SamEncoder(torch.nn.Module):
    """SAM ViT-B with its neck (256 channels), then DeepSeek-OCR's 16× token compressor."""

    def __init__(self, config: SamVisionConfig) -> None:
        super().__init__()
        self.vit = SamVisionModel(config)
        self.down1 = torch.nn.Conv2d(config.output_channels, 512, 3, stride=2, padding=1, bias=False)
        self.down2 = torch.nn.Conv2d(512, 1024, 3, stride=2, padding=1, bias=False)

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        features = self.vit(pixel_values=pixels).last_hidden_state  # B × 256 × H/16 × W/16
        return self.down2(self.down1(features)).flatten(2).transpose(1, 2)  # B × (H/64·W/64) × 1024


def _configs(params: Params) -> tuple[SamVisionConfig, CLIPVisionConfig, DeepseekV2Config]:
    size = params.image_size or 1024
    sam_layers = params.layers or 12
    sam = SamVisionConfig(
        image_size=size,
        num_hidden_layers=sam_layers,
        global_attn_indexes=[i for i in range(sam_layers) if i % 3 == 2] or [sam_layers - 1],
    )
    clip = CLIPVisionConfig(
        hidden_size=1024,
        intermediate_size=4096,
        num_hidden_layers=params.layers or 24,
        num_attention_heads=16,
        image_size=size * 14 // 64,
        patch_size=14,
    )
    llm = DeepseekV2Config(
        vocab_size=129280,
        hidden_size=1280,
        intermediate_size=6848,
        moe_intermediate_size=896,
        num_hidden_layers=params.layers or 12,
        num_attention_heads=10,
        num_key_value_heads=10,
        n_routed_experts=64,
        num_experts_per_tok=6,
        n_shared_experts=2,
        first_k_dense_replace=1,
        q_lora_rank=None,
        kv_lora_rank=512,
        max_position_embeddings=8192,
    )
    for config in (sam, clip, llm):
        config._attn_implementation = params.attn_impl
    return sam, clip, llm


def build(params: Params) -> Iteration:
    if params.model:
        raise ValueError("ocr-vlm builds its own random-weight model; --model is for llm-decode and vit")
    dtype = params.torch_dtype()
    sam_cfg, clip_cfg, llm_cfg = _configs(params)
    with torch.device(params.device):
        sam = SamEncoder(sam_cfg).to(dtype).eval()
        clip = CLIPVisionModel(clip_cfg).to(dtype).eval()
        projector = torch.nn.Linear(2048, llm_cfg.hidden_size).to(dtype).eval()
        llm = DeepseekV2ForCausalLM(llm_cfg).to(dtype).eval()
    gen = torch.Generator(device=params.device).manual_seed(params.seed)
    image = torch.randn(params.batch, 3, sam_cfg.image_size, sam_cfg.image_size, device=params.device, dtype=dtype, generator=gen)
    crop = torch.randn(params.batch, 3, clip_cfg.image_size, clip_cfg.image_size, device=params.device, dtype=dtype, generator=gen)
    prompt = torch.randint(0, llm_cfg.vocab_size, (params.batch, params.prompt_len), device=params.device, generator=gen)

    @torch.inference_mode()
    def iteration() -> None:
        with stage("sam"):
            sam_tokens = sam(image)
        with stage("clip"):
            clip_tokens = clip(pixel_values=crop).last_hidden_state[:, 1:]
        with stage("projector"):
            vision = projector(torch.cat([clip_tokens, sam_tokens], dim=-1))
        embeds = torch.cat([vision, llm.get_input_embeddings()(prompt)], dim=1)
        prefill_and_decode(llm, embeds, params.new_tokens)

    iteration.generated_tokens = params.batch * params.new_tokens
    return iteration
