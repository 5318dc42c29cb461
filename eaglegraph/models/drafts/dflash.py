"""DFlash block drafters (SpecForge `DFlashDraftModel`): arch from `dflash_config`, loaded or
seeded weights, and dense block drafting.

`target_layer_ids` name outputs of target layers; the target taps the stream entering layer
id + 1 (vLLM adds one too). Tensor names are SpecForge's (`fc`, `hidden_norm`, `layers.{i}.*`,
`norm`, optional `lm_head`), with an optional `model.` prefix.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from eaglegraph.errors import BadInput
from eaglegraph.models.dflash import DFlashArch, DFlashDraft
from eaglegraph.models.drafts.base import BuildArgs, PlannedBuild, Verified, positions_of
from eaglegraph.models.layers import DecoderLayer, modules_of
from eaglegraph.models.loading import Plan, plan_head, plan_layer
from eaglegraph.models.target import TargetModel
from eaglegraph.pair.kinds import DraftKind
from eaglegraph.pair.model import Pair
from eaglegraph.pair.mtp_layout import dflash_layout


def full_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Every query row attends to every key (GQA expanded), fp32: DFlash's non-causal block."""
    groups = q.shape[1] // k.shape[1]
    kk = k.float().repeat_interleave(groups, dim=1).transpose(0, 1)
    vv = v.float().repeat_interleave(groups, dim=1).transpose(0, 1)
    out = F.scaled_dot_product_attention(q.float().transpose(0, 1), kk, vv)
    return out.transpose(0, 1)


class DFlashBuild(PlannedBuild[DFlashArch, TargetModel, DFlashDraft]):
    kind = DraftKind.DFLASH
    # the block is the bonus token plus K mask rows: vLLM reserves K+1 lookahead slots
    extra_lookahead_slots = 1

    def arch(self, pair: Pair, framework: str) -> DFlashArch:
        assert pair.draft is not None and pair.target is not None
        layout = dflash_layout(pair.draft.config, pair.draft.checkpoint)
        ids = layout.target_layer_ids
        if not ids:
            raise BadInput(f"{pair.draft.path}: DFlash config names no target_layer_ids")
        entering = tuple(i + 1 for i in ids)
        layers = pair.target.geometry.num_hidden_layers
        if max(entering) >= layers or min(ids) < 0:
            raise BadInput(
                f"DFlash target_layer_ids {ids} tap past the target's {layers} layers (the rig "
                "taps the stream entering layer id + 1)"
            )
        if layout.mask_token_id is None:
            raise BadInput(f"{pair.draft.path}: DFlash config has no dflash_config.mask_token_id")
        own = pair.draft.checkpoint.find("lm_head.weight", "model.lm_head.weight") is not None
        return DFlashArch(entering, pair.target.geometry.hidden_size, layout.mask_token_id, own)

    def aux_layer_ids(self, pair: Pair, framework: str) -> tuple[int, ...]:
        return self.arch(pair, framework).aux_layer_ids

    def fresh(self, arch: DFlashArch, target: TargetModel, args: BuildArgs) -> DFlashDraft:
        if not isinstance(target, TargetModel):
            raise BadInput("a DFlash draft over an MLA target is not supported by the rig")
        return DFlashDraft(arch, target, args)

    def planned(
        self, plan: Plan, arch: DFlashArch, target: TargetModel, args: BuildArgs
    ) -> DFlashDraft:
        draft = self.fresh(arch, target, args)
        plan.add(draft.fc_weight, ["fc.weight"])
        plan.add(draft.hidden_norm.weight, ["hidden_norm.weight"])
        for i, layer in enumerate(modules_of(draft.layers, DecoderLayer)):
            plan_layer(plan, layer, [f"layers.{i}."])
        plan_head(plan, draft.norm, draft.lm_head)
        plan.note(["embed_tokens.weight"], (target.vocab_size, args.geometry.hidden_size))
        return draft

    def dense_drafts(self, draft: DFlashDraft, v: Verified) -> list[int]:
        """The accepted sequence's tapped states become context K/V at positions 0..valid-1;
        the block (next token, then K mask tokens, at valid..valid+K) attends to the context
        and to itself, non-causally, in every layer; block rows 1..K are the drafts."""
        assert v.aux is not None, "DFlash needs the target's tapped states"
        valid, k = v.valid, v.num_speculative_tokens
        device = v.aux.device
        ctx: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

        def store(layer: int, kk: torch.Tensor, vv: torch.Tensor) -> None:
            ctx[layer] = (kk, vv)

        draft.context_kv(draft.combine(v.aux), positions_of(v.tokens[:valid], device)[1], store)

        def attend(
            layer: int, q: torch.Tensor, kk: torch.Tensor, vv: torch.Tensor, out: torch.Tensor
        ) -> None:
            ck, cv = ctx[layer]
            out.copy_(full_attention(q, torch.cat([ck, kk]), torch.cat([cv, vv])))

        block = [v.tokens[-1]] + [draft.arch.mask_token_id] * k
        ids, pos = positions_of(block, device, start=valid)
        h = draft(ids, pos, attend)
        out = draft.compute_logits(h[1:]).argmax(-1)
        return [int(t) for t in draft.draft_to_target(out).tolist()]


BUILD = DFlashBuild()
