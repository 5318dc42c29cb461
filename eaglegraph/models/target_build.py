"""The target of a pair as a module: an MLA model when its config has latent attention, the
Llama/Qwen family otherwise; loaded from its folder or with seeded random weights."""

from __future__ import annotations

import torch

from eaglegraph.models.init import random_target, seeded
from eaglegraph.models.loading import load_target, resolve_dtype
from eaglegraph.models.mla import MLATarget
from eaglegraph.models.mtp_loading import load_mla_target
from eaglegraph.models.rope import rope_extras_from_config
from eaglegraph.models.target import TargetModel
from eaglegraph.pair.config import Config
from eaglegraph.pair.mla import mla_dims, moe_dims
from eaglegraph.pair.model import ModelSide


def rope_interleave(cfg: Config) -> bool:
    """DeepSeek checkpoints store rope dims as interleaved pairs unless the config says not."""
    return bool((cfg.sub("text_config") or cfg).bool("rope_interleave", default=True))


def build_target(
    side: ModelSide,
    dtype: torch.dtype,
    device: torch.device,
    *,
    random_weights: bool,
    seed: int,
    max_positions: int | None,
) -> TargetModel | MLATarget:
    mla = mla_dims(side.config)
    if mla is None:
        if random_weights:
            return random_target(side.geometry, dtype, device, seed, max_positions=max_positions)
        return load_target(side.path, side.geometry, dtype, device, max_positions=max_positions)
    moe = moe_dims(side.config)
    if random_weights:
        rope = rope_extras_from_config(side.config)
        model = MLATarget(
            side.geometry,
            mla,
            moe,
            resolve_dtype(dtype),
            device,
            max_positions=max_positions,
            rope_extras=rope,
        )
        return seeded(model, device, seed)
    return load_mla_target(
        side.path, side.geometry, mla, moe, dtype, device,
        rope_interleave=rope_interleave(side.config), max_positions=max_positions,
    )  # fmt: skip
