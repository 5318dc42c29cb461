"""MTP drafts: DeepSeek/GLM modules inside the target checkpoint, Qwen-style separate drafts.

The module is `models.mtp.MTPDraft`; its weights come from the target's folder
(`model.layers.{L+i}.*`, DeepSeek style, MLA blocks) or the draft's own (`mtp.*`, SpecForge
`Qwen3_5MTPDraftModel`, standard attention). Drafting: one module reused step by step as
EAGLE-1 does, or with several modules and K > 1 every module over each request's window.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from eaglegraph.errors import BadInput
from eaglegraph.models.drafts.base import (
    BuildArgs,
    BuildDefaults,
    DraftStep,
    Verified,
    positions_of,
)
from eaglegraph.models.mtp import GemmaRMSNorm, MTPArch, MTPDraft, Target
from eaglegraph.models.mtp_loading import load_mtp_draft
from eaglegraph.models.rope import rope_extras_from_config
from eaglegraph.models.target_build import rope_interleave
from eaglegraph.pair.kinds import DraftKind
from eaglegraph.pair.kv_layers import modules_run, mtp_layout
from eaglegraph.pair.mla import mla_dims, moe_dims
from eaglegraph.pair.model import Pair
from eaglegraph.pair.mtp_layout import MTPLayout
from eaglegraph.pair.tensors import CheckpointIndex


def _deepseek_arch(pair: Pair, layout: MTPLayout | None, modules: int) -> MTPArch:
    assert pair.draft is not None
    if layout is None or layout.style != "deepseek" or layout.attention != "mla":
        style = layout.style if layout else "unknown"
        raise BadInput(
            f"in-checkpoint MTP of style {style!r} is recognised but not built by the rig "
            "(DeepSeek-style MLA modules at model.layers.{L+i} are)"
        )
    cfg = pair.draft.config
    return MTPArch(
        "deepseek",
        modules,
        mla=mla_dims(cfg),
        moe=moe_dims(cfg),
        rope_interleave=rope_interleave(cfg),
        rope_extras=tuple(rope_extras_from_config(cfg).items()),
    )


def _qwen_arch(pair: Pair, layout: MTPLayout, modules: int) -> MTPArch:
    assert pair.draft is not None
    cfg, g = pair.draft.config, pair.draft.geometry
    factor = cfg.float("partial_rotary_factor", default=1.0)
    return MTPArch(
        "qwen",
        modules,
        own_head=layout.share_lm_head is False,
        gemma_norm=True,
        output_gate=bool(cfg.bool("attn_output_gate", default=False)),
        rotary_dim=int(g.head_dim * factor) if factor < 1.0 else 0,
        mask_position_zero=False,
        rope_extras=tuple(rope_extras_from_config(cfg).items()),
    )


def window_drafts(draft: MTPDraft, v: Verified) -> list[int]:
    """Several modules, densely: module s reads the token s+1 ahead and module s-1's
    recycled hidden (the target's for s = 0) over the whole accepted sequence; its argmax at
    the last position is draft s, the token the deeper modules see past the known sequence."""
    out: list[int] = []
    feature, valid = v.hidden, v.valid
    try:
        for s in range(v.num_speculative_tokens):
            tokens = (v.tokens + out)[s + 1 : s + 1 + valid]
            ids, pos = positions_of(tokens, feature.device)
            draft.step = s
            logit_h, feature = draft(DraftStep(ids, pos, feature, v.attention))
            logits = draft.compute_logits(logit_h[-1:])
            out.append(int(draft.draft_to_target(logits.argmax(-1))[0]))
    finally:
        draft.step = 0
    return out


class MTPBuild(BuildDefaults[MTPArch, Target, MTPDraft]):
    kind = DraftKind.MTP
    mla_target = True

    def arch(self, pair: Pair, framework: str) -> MTPArch:
        assert pair.draft is not None and pair.target is not None
        layout, modules = mtp_layout(pair), modules_run(pair, framework)
        if pair.draft.path == pair.target.path:
            return _deepseek_arch(pair, layout, modules)
        if layout is None:
            raise BadInput(f"{pair.draft.path} is not an MTP draft")
        if mla_dims(pair.target.config) is not None:
            raise BadInput("a Qwen-style MTP draft over an MLA target is not supported")
        return _qwen_arch(pair, layout, modules)

    def fresh(self, arch: MTPArch, target: Target, args: BuildArgs) -> MTPDraft:
        if arch.rope_extras:
            args = replace(args, rope_extras=dict(arch.rope_extras))
        return MTPDraft(arch, target, args)

    def random(
        self, arch: MTPArch, target: Target, args: BuildArgs, gen: torch.Generator
    ) -> MTPDraft:
        """Seeded modules; Gemma-style norms at their identity (0)."""
        draft = super().random(arch, target, args, gen)
        with torch.no_grad():
            for sub in draft.modules():
                if isinstance(sub, GemmaRMSNorm):
                    sub.weight.zero_()
        return draft

    def load(
        self, index: CheckpointIndex, arch: MTPArch, target: Target, args: BuildArgs
    ) -> MTPDraft:
        return load_mtp_draft(index, arch, target, args)

    def dense_drafts(self, draft: MTPDraft, verified: Verified) -> list[int]:
        if min(draft.num_modules, verified.num_speculative_tokens) > 1:
            return window_drafts(draft, verified)
        return super().dense_drafts(draft, verified)


BUILD = MTPBuild()
