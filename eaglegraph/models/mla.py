"""DeepSeek-style targets: Multi-head Latent Attention, dense or routed-expert MLPs.

Attention runs in the absorbed form vLLM's MLA backends use: the key up-projection is folded
into the query (`q_lat = q_nope · W_UK`), the KV cache holds one row per token (the normed
latent `c` then the roped `k_pe`), and the value up-projection is applied to the latent
output. As in vLLM, the up-projections belong to the attention call, not to the model: an
MLA layer calls its attention callable with `(q [T, nh, nope+R], row [T, 1, L+R], kv_b
weight, out [T, nh·v])` (`is_latent_call`), and the callable runs `absorbed_attention`
around its multi-query core (q `[T, nh, L+R]`, k the rows, v their latent prefix). Cores
scale scores by `1/sqrt(L+R)`, so the model folds its own softmax scale (qk_head_dim and
YaRN's mscale) into q. Checkpoints store the rope dims interleaved (`rope_interleave`); the
loader permutes those rows to the rotate-half order the RoPE kernel applies, which changes
no dot product.

The routed-expert MLP is `models.moe.RoutedMoE`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from eaglegraph.models import ops
from eaglegraph.models.layers import (
    AttentionCall,
    AttentionFn,
    AttentionModule,
    GatedMLP,
    LayerSpec,
    PreNormBlock,
    RMSNorm,
    new_param,
)
from eaglegraph.models.moe import RoutedMoE
from eaglegraph.models.target import DecoderStack
from eaglegraph.models.vocab import head_logits
from eaglegraph.pair.geometry import Geometry
from eaglegraph.pair.mla import MLADims, MoEDims


def _yarn_mscale(scale: float, mscale: float) -> float:
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def mla_softmax_scale(geometry: Geometry, mla: MLADims, extras: Mapping[str, Any]) -> float:
    """`qk_head_dim^-0.5`, times YaRN's `mscale(factor, mscale_all_dim)^2` (DeepSeek-V3)."""
    scale = mla.qk_head_dim**-0.5
    rope = geometry.rope
    mscale_all_dim = extras.get("mscale_all_dim")
    if rope.rope_type != "default" and mscale_all_dim and rope.factor:
        scale *= _yarn_mscale(rope.factor, float(mscale_all_dim)) ** 2
    return scale


class MLAAttention(AttentionModule):
    """Latent attention: (q_a → norm → q_b | q_proj), kv_a → (norm, rope), absorbed kv_b."""

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        mla: MLADims,
        eps: float,
        softmax_scale: float,
        dtype: torch.dtype,
        device: torch.device,
    ) -> None:
        super().__init__()
        self.mla = mla
        self.num_heads = num_heads
        latent, rope = mla.kv_lora_rank, mla.qk_rope_head_dim
        q_rows = num_heads * mla.qk_head_dim
        if mla.q_lora_rank:
            self.q_a_weight: nn.Parameter | None = new_param(
                (mla.q_lora_rank, hidden_size), dtype, device
            )
            self.q_a_norm: RMSNorm | None = RMSNorm(mla.q_lora_rank, eps, dtype, device)
            self.q_b_weight = new_param((q_rows, mla.q_lora_rank), dtype, device)
        else:
            self.q_a_weight = None
            self.q_a_norm = None
            self.q_b_weight = new_param((q_rows, hidden_size), dtype, device)
        self.kv_a_weight = new_param((latent + rope, hidden_size), dtype, device)
        self.kv_a_norm = RMSNorm(latent, eps, dtype, device)
        self.kv_b_weight = new_param(
            (num_heads * (mla.qk_nope_head_dim + mla.v_head_dim), latent), dtype, device
        )
        self.o_weight = new_param((hidden_size, num_heads * mla.v_head_dim), dtype, device)
        # callbacks scale by 1/sqrt(L+R): fold the model's scale into q
        self.q_scale = softmax_scale * math.sqrt(latent + rope)

    def operands(
        self, x: torch.Tensor, positions: torch.Tensor, cos_sin_cache: torch.Tensor
    ) -> AttentionCall:
        m, nh, t = self.mla, self.num_heads, x.shape[0]
        latent, nope = m.kv_lora_rank, m.qk_nope_head_dim
        if self.q_a_weight is not None and self.q_a_norm is not None:
            q = F.linear(self.q_a_norm(F.linear(x, self.q_a_weight)), self.q_b_weight)
        else:
            q = F.linear(x, self.q_b_weight)
        q = q.view(t, nh, m.qk_head_dim)
        kv_a = F.linear(x, self.kv_a_weight)
        row = torch.empty((t, 1, latent + m.qk_rope_head_dim), dtype=x.dtype, device=x.device)
        row[:, 0, :latent] = self.kv_a_norm(kv_a[:, :latent])
        row[:, 0, latent:] = kv_a[:, latent:]
        # through the custom op, as every model's RoPE: Dynamo must not trace the launch
        ops.rotary(q[:, :, nope:], row[:, :, latent:], positions, cos_sin_cache)
        q.mul_(self.q_scale)  # before the up-projection: the same product, one pass fewer
        out = torch.empty((t, nh * m.v_head_dim), dtype=x.dtype, device=x.device)
        return AttentionCall(q, row, self.kv_b_weight, out)

    def output(self, call: AttentionCall) -> torch.Tensor:
        return F.linear(call.out, self.o_weight)


def is_latent_call(v: torch.Tensor) -> bool:
    """An MLA layer's attention call: its `v` is the kv_b up-projection weight `[nh·(nope+v),
    L]`, where every other layer passes value rows `[T, kv_heads, head_dim]`."""
    return v.dim() == 2


def with_up_projections(core: AttentionFn) -> AttentionFn:
    """An attention callable for any model from a multi-query `core`: MLA layers' calls get
    the up-projections around the core (`absorbed_attention`), every other call goes to it."""

    def attention(
        layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor
    ) -> None:
        if is_latent_call(v):
            absorbed_attention(core, layer, q, k, v, out)
        else:
            core(layer, q, k, v, out)

    return attention


def absorbed_attention(
    core: AttentionFn,
    layer: int,
    q: torch.Tensor,
    row: torch.Tensor,
    kv_b: torch.Tensor,
    out: torch.Tensor,
) -> None:
    """What an MLA layer's attention call computes, as vLLM's MLA attention op does inside the
    op: the query up-projection `q_nope · W_UK` joined with the roped `q_pe`, multi-query
    attention over the latent KV rows (`core`), then the value up-projection `· W_UV`.

    Keeping the up-projections inside the call is what puts their buffers where the engine's
    are: outside the piecewise graphs (attention runs eagerly between pieces), inside a FULL
    graph, and opaque to Inductor. q is `[T, nh, nope + rope]` (roped, scaled), row `[T, 1,
    L + R]`, kv_b `[nh·(nope + v), L]`; writes out `[T, nh·v]`.
    """
    t, nh = q.shape[0], q.shape[1]
    latent = kv_b.shape[1]
    nope = q.shape[2] - (row.shape[2] - latent)
    w = kv_b.view(nh, -1, latent)
    q_full = torch.empty((t, nh, row.shape[2]), dtype=q.dtype, device=q.device)
    q_full[:, :, :latent] = torch.einsum("thd,hdl->thl", q[:, :, :nope], w[:, :nope])
    q_full[:, :, latent:] = q[:, :, nope:]
    out_latent = torch.empty((t, nh, latent), dtype=q.dtype, device=q.device)
    core(layer, q_full, row, row[:, :, :latent], out_latent)
    out.view(t, nh, -1).copy_(torch.einsum("thl,hvl->thv", out_latent, w[:, nope:]))


class MLADecoderLayer(PreNormBlock):
    """Pre-norm layer: MLA, then a dense gated MLP or the routed-expert MLP."""

    input_layernorm: RMSNorm
    self_attn: MLAAttention
    post_attention_layernorm: RMSNorm
    mlp: RoutedMoE | GatedMLP

    def __init__(
        self,
        geometry: Geometry,
        mla: MLADims,
        moe: MoEDims | None,
        softmax_scale: float,
        dtype: torch.dtype,
        device: torch.device,
    ) -> None:
        super().__init__()
        eps, hidden = geometry.rms_norm_eps, geometry.hidden_size
        self.input_layernorm = RMSNorm(hidden, eps, dtype, device)
        self.self_attn = MLAAttention(
            hidden, geometry.num_attention_heads, mla, eps, softmax_scale, dtype, device
        )
        self.post_attention_layernorm = RMSNorm(hidden, eps, dtype, device)
        dense = LayerSpec(hidden, geometry.intermediate_size, 1, 1, 1, eps)
        self.mlp = (
            RoutedMoE(hidden, moe, eps, dtype, device)
            if moe is not None
            else GatedMLP(dense, dtype, device)
        )


class MLATarget(DecoderStack):
    """DeepSeek-V2/V3-style target with the interface of `TargetModel`.

    `moe` None builds every layer dense; otherwise `MoEDims.is_moe_layer` decides per layer.
    """

    family = "deepseek"

    def __init__(
        self,
        geometry: Geometry,
        mla: MLADims,
        moe: MoEDims | None,
        dtype: torch.dtype,
        device: torch.device | str,
        *,
        max_positions: int | None = None,
        rope_extras: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        dev = torch.device(device)
        extras = dict(rope_extras or {})
        self.mla = mla
        self.moe = moe
        self.softmax_scale = mla_softmax_scale(geometry, mla, extras)
        layers = (
            MLADecoderLayer(
                geometry, mla, moe if moe is not None and moe.is_moe_layer(i) else None,
                self.softmax_scale, dtype, dev,
            )
            for i in range(geometry.num_hidden_layers)
        )  # fmt: skip
        self.build_stack(geometry, layers, mla.qk_rope_head_dim, dtype, dev, max_positions, extras)

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return head_logits(hidden, self.lm_head_weight).float()
