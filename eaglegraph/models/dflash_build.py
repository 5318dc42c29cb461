"""A DFlash draft from the pair: its arch from `dflash_config`, loaded or seeded weights.

`target_layer_ids` name outputs of target layers; the target taps the stream entering layer
id + 1 (vLLM adds one too). Tensor names are SpecForge's (`fc`, `hidden_norm`, `layers.{i}.*`,
`norm`, optional `lm_head`), with an optional `model.` prefix.
"""

from __future__ import annotations

import torch

from eaglegraph.errors import BadInput
from eaglegraph.models.dflash import DFlashArch, DFlashDraft
from eaglegraph.models.init import fill_random, generator
from eaglegraph.models.loading import Plan, open_index, plan_layer
from eaglegraph.models.target import TargetModel
from eaglegraph.pair.model import Pair
from eaglegraph.pair.mtp_layout import dflash_layout


def dflash_arch(pair: Pair) -> DFlashArch:
    assert pair.draft is not None and pair.target is not None
    layout = dflash_layout(pair.draft.config, pair.draft.checkpoint)
    ids = layout.target_layer_ids
    if not ids:
        raise BadInput(f"{pair.draft.path}: DFlash config names no target_layer_ids")
    entering = tuple(i + 1 for i in ids)
    layers = pair.target.geometry.num_hidden_layers
    if max(entering) >= layers or min(ids) < 0:
        raise BadInput(
            f"DFlash target_layer_ids {ids} tap past the target's {layers} layers (the rig taps "
            "the stream entering layer id + 1)"
        )
    if layout.mask_token_id is None:
        raise BadInput(f"{pair.draft.path}: DFlash config has no dflash_config.mask_token_id")
    own_head = pair.draft.checkpoint.find("lm_head.weight", "model.lm_head.weight") is not None
    return DFlashArch(entering, pair.target.geometry.hidden_size, layout.mask_token_id, own_head)


def build_dflash_draft(
    pair: Pair,
    arch: DFlashArch,
    target: TargetModel,
    dtype: torch.dtype,
    device: torch.device,
    *,
    random_weights: bool,
    seed: int,
    max_positions: int | None,
) -> DFlashDraft:
    assert pair.draft is not None
    draft = DFlashDraft(
        pair.draft.geometry, arch, target, layer_offset=target.num_layers, dtype=dtype,
        device=device, max_positions=max_positions,
    )  # fmt: skip
    if random_weights:
        fill_random(draft, generator(device, seed))
        return draft
    plan = Plan(open_index(pair.draft.path))
    plan.add(draft.fc_weight, ["fc.weight"])
    plan.add(draft.hidden_norm.weight, ["hidden_norm.weight"])
    for i, layer in enumerate(draft.layers):
        plan_layer(plan, layer, [f"layers.{i}."])  # type: ignore[arg-type]
    plan.add(draft.norm.weight, ["norm.weight"])
    if draft.lm_head is not None:
        plan.add(draft.lm_head, ["lm_head.weight"])
    plan.note(["embed_tokens.weight"], (target.vocab_size, pair.draft.geometry.hidden_size))
    draft.extra_tensors = plan.run(device)
    return draft
