"""``vit``: a ViT image classifier (ViT-B/16 shape unless --layers) at --image-size, stage ``vit``."""
from __future__ import annotations

import torch
from transformers import AutoModelForImageClassification, ViTConfig, ViTForImageClassification

from capture.workloads import Iteration
from capture.workloads.params import Params
from capture.workloads.stages import stage


def build(params: Params) -> Iteration:
    dtype = params.torch_dtype()
    if params.model:
        model = AutoModelForImageClassification.from_pretrained(
            params.model, dtype=dtype, attn_implementation=params.attn_impl
        )
        size = params.image_size or model.config.image_size
    else:
        size = params.image_size or 224
        config = ViTConfig(
            image_size=size, patch_size=16, num_hidden_layers=params.layers or 12, num_labels=1000
        )
        config._attn_implementation = params.attn_impl
        with torch.device(params.device):
            model = ViTForImageClassification(config).to(dtype)
    model = model.to(params.device).eval()
    gen = torch.Generator(device=params.device).manual_seed(params.seed)
    pixels = torch.randn(params.batch, 3, size, size, device=params.device, dtype=dtype, generator=gen)

    @torch.inference_mode()
    def iteration() -> None:
        with stage("vit"):
            model(pixel_values=pixels, interpolate_pos_encoding=size != model.config.image_size)

    return iteration
