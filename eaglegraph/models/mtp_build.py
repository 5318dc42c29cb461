"""From an inspected pair to an MLA/standard target and its MTP draft (loaded or seeded).

DeepSeek-style MTP lives in the target's folder (`model.layers.{L+i}`), so the draft is
loaded from the target path; a Qwen-style MTP draft has its own folder. The KV layout of each
layer follows the attention that reads it: a latent `[kv_lora_rank | rope]` row for MLA
layers, k and v heads for standard ones.
"""

from __future__ import annotations

import torch

from eaglegraph.errors import BadInput
from eaglegraph.models.init import random_target
from eaglegraph.models.loading import load_target
from eaglegraph.models.mla import MLATarget
from eaglegraph.models.mtp import MTPArch, MTPDraft, Target
from eaglegraph.models.mtp_loading import (
    load_mla_target,
    load_mtp_draft,
    random_mla_target,
    random_mtp_draft,
)
from eaglegraph.models.rope import rope_extras_from_config
from eaglegraph.pair.config import Config
from eaglegraph.pair.mla import mla_dims, moe_dims
from eaglegraph.pair.model import ModelSide, Pair
from eaglegraph.pair.mtp_layout import in_target_mtp, separate_mtp_draft


def _rope_interleave(cfg: Config) -> bool:
    return bool((cfg.sub("text_config") or cfg).bool("rope_interleave", default=True))


def build_target(
    side: ModelSide,
    dtype: torch.dtype,
    device: torch.device,
    *,
    random_weights: bool,
    seed: int,
    max_positions: int | None,
) -> Target:
    """The target of a pair: an MLA model when its config has latent attention."""
    mla = mla_dims(side.config)
    extras = rope_extras_from_config(side.config)
    if mla is None:
        if random_weights:
            return random_target(side.geometry, dtype, device, seed, max_positions=max_positions)
        return load_target(side.path, side.geometry, dtype, device, max_positions=max_positions)
    moe = moe_dims(side.config)
    if random_weights:
        return random_mla_target(
            side.geometry, mla, moe, dtype, device, seed,
            max_positions=max_positions, rope_extras=extras,
        )  # fmt: skip
    return load_mla_target(
        side.path, side.geometry, mla, moe, dtype, device,
        rope_interleave=_rope_interleave(side.config), max_positions=max_positions,
    )  # fmt: skip


def mtp_arch(pair: Pair) -> MTPArch:
    """The MTP draft's arch from the pair: in-target (DeepSeek/GLM) or a separate folder."""
    assert pair.draft is not None
    cfg = pair.draft.config
    if pair.target is not None and pair.draft.path == pair.target.path:
        layout = in_target_mtp(cfg, pair.draft.checkpoint)
        if layout is None or layout.style != "deepseek" or layout.attention != "mla":
            style = layout.style if layout else "unknown"
            raise BadInput(
                f"in-checkpoint MTP of style {style!r} is recognised but not built by the rig "
                "(DeepSeek-style MLA modules at model.layers.{L+i} are)"
            )
        return MTPArch("deepseek", layout.modules or 1)
    separate = separate_mtp_draft(cfg, set(pair.draft.checkpoint.tensors))
    if separate is None:
        raise BadInput(f"{pair.draft.path} is not an MTP draft")
    g = pair.draft.geometry
    factor = cfg.float("partial_rotary_factor", default=1.0)
    rotary = int(g.head_dim * factor) if factor < 1.0 else 0
    return MTPArch(
        "qwen",
        separate.modules or 1,
        own_head=separate.share_lm_head is False,
        gemma_norm=True,
        output_gate=bool(cfg.bool("attn_output_gate", default=False)),
        rotary_dim=rotary,
        mask_position_zero=False,
    )


def build_mtp_draft(
    pair: Pair,
    arch: MTPArch,
    target: Target,
    dtype: torch.dtype,
    device: torch.device,
    *,
    random_weights: bool,
    seed: int,
    max_positions: int | None,
) -> MTPDraft:
    assert pair.draft is not None
    cfg = pair.draft.config
    mla = mla_dims(cfg) if arch.style == "deepseek" else None
    moe = moe_dims(cfg) if arch.style == "deepseek" else None
    if random_weights:
        draft = random_mtp_draft(
            pair.draft.geometry, arch, target, dtype, device, seed,
            mla=mla, moe=moe, max_positions=max_positions,
            rope_extras=rope_extras_from_config(cfg),
        )  # fmt: skip
    else:
        draft = load_mtp_draft(
            pair.draft.path, pair.draft.geometry, arch, target, dtype, device,
            mla=mla, moe=moe, rope_interleave=_rope_interleave(cfg), max_positions=max_positions,
        )  # fmt: skip
    if isinstance(target, MLATarget) and arch.style != "deepseek":
        raise BadInput("a Qwen-style MTP draft over an MLA target is not supported")
    return draft
