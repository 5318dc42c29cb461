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

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from eaglegraph.models import ops
from eaglegraph.models.layers import (
    AttentionFn,
    DecoderLayer,
    LayerSpec,
    RMSNorm,
    modules_of,
    new_param,
)
from eaglegraph.models.rope import build_cos_sin_cache, cache_length
from eaglegraph.models.target import TargetModel
from eaglegraph.pair.geometry import Geometry

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


class DFlashDraft(nn.Module):
    """fc + hidden_norm (context), Qwen3 layers (non-causal), final norm, (shared) head."""

    cos_sin_cache: torch.Tensor  # a registered buffer (nn.Module's __getattr__ types it loosely)

    kind = "dflash"

    def __init__(
        self,
        geometry: Geometry,
        arch: DFlashArch,
        target: TargetModel,
        *,
        layer_offset: int,
        dtype: torch.dtype,
        device: torch.device | str,
        max_positions: int | None = None,
        rope_extras: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        dev = torch.device(device)
        g = geometry
        self.geometry = g
        self.arch = arch
        self.layer_offset = layer_offset
        self.hidden_size = g.hidden_size
        self.vocab_size = target.vocab_size
        self.extra_tensors: tuple[str, ...] = ()
        self._target = (target,)
        self.spec = LayerSpec(
            g.hidden_size, g.intermediate_size, g.num_attention_heads, g.num_key_value_heads,
            g.head_dim, g.rms_norm_eps, qk_norm=True,
        )  # fmt: skip
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
        max_pos = max(g.max_position_embeddings, target.geometry.max_position_embeddings)
        rows = max_positions or max(cache_length(g.rope, max_pos), target.max_positions)
        cache = build_cos_sin_cache(g.rope, g.head_dim, max_pos, rows, dev, rope_extras)
        self.register_buffer("cos_sin_cache", cache, persistent=False)
        self.max_positions = cache.shape[0]

    @property
    def target(self) -> TargetModel:
        return self._target[0]

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
        for i, layer in enumerate(self.layers):
            h = layer(h, positions, self.cos_sin_cache, attention, self.layer_offset + i)
        return self.norm(h)

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        head = self.lm_head if self.lm_head is not None else self.target.lm_head_weight
        return F.linear(hidden, head).float()

    def draft_to_target(self, ids: torch.Tensor) -> torch.Tensor:
        return ids
