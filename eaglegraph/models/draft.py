"""EAGLE-1 and EAGLE-3 draft heads with vLLM's semantics (research §4.2, §4.3).

Both share the target's embedding or lm_head where the checkpoint does not carry its own;
shared modules are held by reference, not registered, so the draft's parameters are only
the draft's own weights. Draft attention layers report `layer_offset + i` to the attention
callback because the draft's KV-cache layers follow the target's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import torch
import torch.nn.functional as F
from torch import nn

from eaglegraph.errors import BadInput
from eaglegraph.models.layers import (
    Attention,
    AttentionFn,
    DecoderLayer,
    GatedMLP,
    LayerSpec,
    RMSNorm,
    VocabEmbedding,
    new_param,
)
from eaglegraph.models.rope import build_cos_sin_cache, cache_length
from eaglegraph.models.target import TargetModel, layer_spec
from eaglegraph.pair.geometry import Geometry


@dataclass(frozen=True)
class DraftArch:
    """What a draft needs beyond its Geometry; the rig builds it from the pair's facts.

    `num_aux` 0 means no fc (EAGLE-3 `use_aux_hidden_state: false`). `draft_vocab_size`
    None means the target vocabulary. `fc_norm` is SpecForge eagle3.1's per-aux RMSNorm,
    `norm_before_fc` speculators' `input_norm` over the whole concatenation.
    """

    kind: Literal["eagle1", "eagle3"]
    target_hidden_size: int
    num_aux: int = 3
    draft_vocab_size: int | None = None
    fc_bias: bool = False
    norm_before_residual: bool = False
    fc_norm: bool = False
    norm_before_fc: bool = False


def draft_layer_spec(geometry: Geometry) -> LayerSpec:
    """Config defaults for draft layers (drafts are Llama-shaped; Qwen3-typed ones get q/k norm)."""
    family = geometry.model_type if geometry.model_type in ("qwen2", "qwen3") else "llama"
    return layer_spec(geometry, family)


def _rope_cache(
    geometry: Geometry,
    target: TargetModel,
    max_positions: int | None,
    rope_extras: Mapping[str, Any] | None,
    device: torch.device,
) -> torch.Tensor:
    # vLLM raises a draft's max_position_embeddings to the target's serving length.
    max_pos = max(geometry.max_position_embeddings, target.geometry.max_position_embeddings)
    rows = max_positions or max(cache_length(geometry.rope, max_pos), target.max_positions)
    return build_cos_sin_cache(geometry.rope, geometry.head_dim, max_pos, rows, device, rope_extras)


class _DraftBase(nn.Module):
    """Shared plumbing: geometry, shared target modules, rope cache, layer offset."""

    def __init__(
        self,
        geometry: Geometry,
        arch: DraftArch,
        target: TargetModel,
        layer_offset: int,
        device: torch.device,
        max_positions: int | None,
        rope_extras: Mapping[str, Any] | None,
    ) -> None:
        super().__init__()
        self.geometry = geometry
        self.arch = arch
        self.layer_offset = layer_offset
        self.hidden_size = geometry.hidden_size
        self.extra_tensors: tuple[str, ...] = ()
        # A plain tuple keeps the target out of this module's parameters and state_dict.
        self._target = (target,)
        cache = _rope_cache(geometry, target, max_positions, rope_extras, device)
        self.register_buffer("cos_sin_cache", cache, persistent=False)
        self.max_positions = cache.shape[0]

    @property
    def target(self) -> TargetModel:
        return self._target[0]


class Eagle1Draft(_DraftBase):
    """fc over concat(embedding, target final-normed hidden), decoder layer(s), no final norm.

    Layer 0 has no input norm; logits come from the target's lm_head; the embedding is the
    target's (vLLM skips a checkpoint's `embed_tokens` for EAGLE-1).
    """

    def __init__(
        self,
        geometry: Geometry,
        arch: DraftArch,
        target: TargetModel,
        *,
        layer_offset: int,
        dtype: torch.dtype,
        device: torch.device | str,
        spec: LayerSpec | None = None,
        fc_bias: bool | None = None,
        max_positions: int | None = None,
        rope_extras: Mapping[str, Any] | None = None,
    ) -> None:
        dev = torch.device(device)
        super().__init__(geometry, arch, target, layer_offset, dev, max_positions, rope_extras)
        hidden = geometry.hidden_size
        if target.hidden_size != hidden:
            raise BadInput(
                f"EAGLE-1 draft hidden_size {hidden} differs from the target's {target.hidden_size}"
            )
        self.spec = spec or draft_layer_spec(geometry)
        use_bias = arch.fc_bias if fc_bias is None else fc_bias
        self.fc_weight = new_param((hidden, 2 * hidden), dtype, dev)
        self.fc_bias = new_param((hidden,), dtype, dev) if use_bias else None
        self.layers = nn.ModuleList(
            DecoderLayer(self.spec, dtype, dev, input_norm=i > 0)
            for i in range(geometry.num_hidden_layers)
        )
        self.vocab_size = target.vocab_size

    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        hidden_in: torch.Tensor,
        attention: AttentionFn,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(hidden for logits, hidden for the next step): the same tensor for EAGLE-1."""
        emb = self.target.embed_tokens(input_ids)
        h = F.linear(torch.cat([emb, hidden_in], dim=-1), self.fc_weight, self.fc_bias)
        for i, layer in enumerate(self.layers):
            h = layer(h, positions, self.cos_sin_cache, attention, self.layer_offset + i)
        return h, h

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.target.compute_logits(hidden)

    def draft_to_target(self, ids: torch.Tensor) -> torch.Tensor:
        """EAGLE-1 drafts over the target vocabulary: the identity."""
        return ids


class Eagle3MidLayer(nn.Module):
    """EAGLE-3 layer 0: attention over concat(input_layernorm(emb), hidden_norm(h)), width 2H."""

    def __init__(
        self,
        spec: LayerSpec,
        norm_before_residual: bool,
        dtype: torch.dtype,
        device: torch.device,
    ) -> None:
        super().__init__()
        eps, hidden = spec.rms_norm_eps, spec.hidden_size
        self.norm_before_residual = norm_before_residual
        self.input_layernorm = RMSNorm(hidden, eps, dtype, device)
        self.hidden_norm = RMSNorm(hidden, eps, dtype, device)
        self.self_attn = Attention(spec, 2 * hidden, dtype, device)
        self.post_attention_layernorm = RMSNorm(hidden, eps, dtype, device)
        self.mlp = GatedMLP(spec, dtype, device)

    def forward(
        self,
        emb: torch.Tensor,
        h: torch.Tensor,
        positions: torch.Tensor,
        cos_sin_cache: torch.Tensor,
        attention: AttentionFn,
        layer_index: int,
    ) -> torch.Tensor:
        normed = self.hidden_norm(h)
        residual = normed if self.norm_before_residual else h
        x = torch.cat([self.input_layernorm(emb), normed], dim=-1)
        h = residual + self.self_attn(x, positions, cos_sin_cache, attention, layer_index)
        return h + self.mlp(self.post_attention_layernorm(h))


class Eagle3Draft(_DraftBase):
    """EAGLE-3 head: fc over aux states (prefill), midlayer, extra layers, final norm, own head.

    Decode steps feed the draft's own previous `hidden_out` (width H), prefill the target's
    concatenated aux states (width num_aux·Ht); fc runs only when the width differs from H.
    """

    def __init__(
        self,
        geometry: Geometry,
        arch: DraftArch,
        target: TargetModel,
        *,
        layer_offset: int,
        dtype: torch.dtype,
        device: torch.device | str,
        spec: LayerSpec | None = None,
        fc_bias: bool | None = None,
        own_embed: bool = False,
        own_lm_head: bool = True,
        max_positions: int | None = None,
        rope_extras: Mapping[str, Any] | None = None,
    ) -> None:
        dev = torch.device(device)
        super().__init__(geometry, arch, target, layer_offset, dev, max_positions, rope_extras)
        hidden, eps = geometry.hidden_size, geometry.rms_norm_eps
        self.vocab_size = target.vocab_size
        self.draft_vocab_size = arch.draft_vocab_size or target.vocab_size
        if not own_embed and target.hidden_size != hidden:
            raise BadInput(
                f"EAGLE-3 draft has no embed_tokens and its hidden_size {hidden} differs from "
                f"the target's {target.hidden_size}, so it cannot share the target embedding"
            )
        if not own_lm_head and self.draft_vocab_size != target.vocab_size:
            raise BadInput(
                f"EAGLE-3 draft has no lm_head but a draft vocab of {self.draft_vocab_size} "
                f"(target vocab {target.vocab_size})"
            )
        self.spec = spec or draft_layer_spec(geometry)
        self.embed_tokens = (
            VocabEmbedding(target.vocab_size, hidden, dtype, dev) if own_embed else None
        )
        fc_in = arch.num_aux * arch.target_hidden_size
        use_bias = arch.fc_bias if fc_bias is None else fc_bias
        self.fc_weight = new_param((hidden, fc_in), dtype, dev) if arch.num_aux else None
        self.fc_bias = new_param((hidden,), dtype, dev) if arch.num_aux and use_bias else None
        self.fc_norm = (
            nn.ModuleList(
                RMSNorm(arch.target_hidden_size, eps, dtype, dev) for _ in range(arch.num_aux)
            )
            if arch.fc_norm
            else None
        )
        self.input_norm = RMSNorm(fc_in, eps, dtype, dev) if arch.norm_before_fc and fc_in else None
        self.midlayer = Eagle3MidLayer(self.spec, arch.norm_before_residual, dtype, dev)
        self.layers = nn.ModuleList(
            DecoderLayer(self.spec, dtype, dev) for _ in range(geometry.num_hidden_layers - 1)
        )
        self.norm = RMSNorm(hidden, eps, dtype, dev)
        self.lm_head = (
            new_param((self.draft_vocab_size, hidden), dtype, dev) if own_lm_head else None
        )
        self.register_buffer(
            "d2t",
            torch.zeros(self.draft_vocab_size, dtype=torch.int64, device=dev),
            persistent=False,
        )

    @property
    def embed(self) -> VocabEmbedding:
        return self.embed_tokens if self.embed_tokens is not None else self.target.embed_tokens

    @property
    def lm_head_weight(self) -> torch.Tensor:
        return self.lm_head if self.lm_head is not None else self.target.lm_head_weight

    def combine(self, aux: torch.Tensor) -> torch.Tensor:
        """Target aux states `[T, num_aux·Ht]` to the draft width H (norms, then fc)."""
        if self.fc_weight is None:
            raise ValueError(
                f"draft has no fc (num_aux 0) but got hidden width {aux.shape[-1]}, expected {self.hidden_size}"
            )
        if self.input_norm is not None:
            aux = self.input_norm(aux)
        if self.fc_norm is not None:
            chunks = aux.split(self.arch.target_hidden_size, dim=-1)
            aux = torch.cat([norm(c) for norm, c in zip(self.fc_norm, chunks, strict=True)], dim=-1)
        return F.linear(aux, self.fc_weight, self.fc_bias)

    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        hidden_in: torch.Tensor,
        attention: AttentionFn,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(norm(h_out) for logits, h_out prenorm for the next draft step)."""
        emb = self.embed(input_ids)
        h = hidden_in if hidden_in.shape[-1] == self.hidden_size else self.combine(hidden_in)
        h = self.midlayer(emb, h, positions, self.cos_sin_cache, attention, self.layer_offset)
        for i, layer in enumerate(self.layers, start=1):
            h = layer(h, positions, self.cos_sin_cache, attention, self.layer_offset + i)
        return self.norm(h), h

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """fp32 `[T, Vd]` logits over the draft vocabulary."""
        return F.linear(hidden, self.lm_head_weight).float()

    def draft_to_target(self, ids: torch.Tensor) -> torch.Tensor:
        """Target ids of draft ids: `i + d2t[i]` (d2t is zero for an identity map)."""
        return ids + self.d2t[ids]


Draft = Eagle1Draft | Eagle3Draft
