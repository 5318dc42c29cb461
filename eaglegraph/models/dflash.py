"""DFlash block drafter (SpecForge `DFlashDraftModel`, vLLM `DFlashQwen3ForCausalLM`).

DFlash drafts K tokens in one forward. The target's states at `target_layer_ids` (outputs of
those layers) are concatenated and projected by `fc` into context features; each draft layer
turns `hidden_norm(context)` into keys (k_norm, RoPE at the context positions) and values
stored in that layer's KV cache (the *context step*). The query block is the next token
followed by K mask tokens at the K+1 following positions; it runs through ordinary Qwen3
layers whose attention is non-causal over context and block, and rows 1..K of the block give
the K draft tokens. Embedding and head are the target's unless the checkpoint carries them.

The attention callback writes the block's own K/V and attends (the rig makes the draft's
layers non-causal); `context_kv` hands each layer's context K/V to a writer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from eaglegraph.models import ops
from eaglegraph.models.drafts.base import BuildArgs, DraftBase
from eaglegraph.models.layers import (
    AttentionFn,
    DecoderLayer,
    ForwardContext,
    RMSNorm,
    modules_of,
    new_param,
)
from eaglegraph.models.target import TargetModel, geometry_spec
from eaglegraph.models.vocab import head_logits

KVWriter = Callable[[int, torch.Tensor, torch.Tensor], None]
"""`write(layer_index, k [T, nkv, hd], v [T, nkv, hd])`: store context K/V of one layer."""


@dataclass(frozen=True)
class DFlashArch:
    """`aux_layer_ids`: the target's entering-layer ids (output-of-layer id + 1)."""

    aux_layer_ids: tuple[int, ...]
    target_hidden_size: int
    mask_token_id: int
    own_head: bool = False

    @property
    def kind(self) -> str:
        return "dflash"


class DFlashDraft(DraftBase[DFlashArch, TargetModel]):
    """fc + hidden_norm (context), Qwen3 layers (non-causal), final norm, (shared) head."""

    kind = "dflash"

    def __init__(self, arch: DFlashArch, target: TargetModel, args: BuildArgs) -> None:
        super().__init__(arch, target, args)
        g, dtype, dev = args.geometry, args.dtype, args.device
        self.spec = geometry_spec(g, qk_norm=True)
        n_aux = len(arch.aux_layer_ids)
        self.fc_weight = new_param((g.hidden_size, n_aux * arch.target_hidden_size), dtype, dev)
        self.hidden_norm = RMSNorm(g.hidden_size, g.rms_norm_eps, dtype, dev)
        self.layers = nn.ModuleList(
            DecoderLayer(self.spec, dtype, dev) for _ in range(g.num_hidden_layers)
        )
        self.norm = RMSNorm(g.hidden_size, g.rms_norm_eps, dtype, dev)
        self.lm_head = (
            new_param((target.vocab_size, g.hidden_size), dtype, dev) if arch.own_head else None
        )

    def combine(self, aux: torch.Tensor) -> torch.Tensor:
        """Target states at the tapped layers `[T, n·Ht]` to context features `[T, H]`."""
        return F.linear(aux, self.fc_weight)

    def context_kv(self, context: torch.Tensor, positions: torch.Tensor, write: KVWriter) -> None:
        """Each layer's K/V of the context features (k_norm, RoPE), handed to `write`."""
        s, t = self.spec, context.shape[0]
        x = self.hidden_norm(context)
        for i, layer in enumerate(modules_of(self.layers, DecoderLayer)):
            attn = layer.self_attn
            kv = F.linear(x, attn.qkv_weight[s.q_width :], None)
            k, v = kv.split([s.kv_width, s.kv_width], dim=-1)
            k = k.reshape(t, s.num_kv_heads, s.head_dim)
            if attn.k_norm is not None:
                k = attn.k_norm(k)
            k = k.contiguous()
            scratch_q = torch.zeros((t, 1, s.head_dim), dtype=k.dtype, device=k.device)
            ops.rotary(scratch_q, k, positions, self.cos_sin_cache)  # RoPE on k only
            write(self.layer_offset + i, k, v.reshape(t, s.num_kv_heads, s.head_dim))

    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        attention: AttentionFn,
    ) -> torch.Tensor:
        """Final-normed hidden states of the query block `[T, H]`."""
        h = self.target.embed_tokens(input_ids)
        ctx = ForwardContext(positions, self.cos_sin_cache, attention)
        for i, layer in enumerate(self.layers):
            h = layer(h, ctx, self.layer_offset + i)
        return self.norm(h)

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        head = self.lm_head if self.lm_head is not None else self.target.lm_head_weight
        return head_logits(hidden, head).float()

    def draft_to_target(self, ids: torch.Tensor) -> torch.Tensor:
        return ids
