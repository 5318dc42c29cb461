"""Multi-Token-Prediction drafts: DeepSeek-style in-checkpoint modules and Qwen-style drafts.

One MTP module (vLLM `DeepSeekMultiTokenPredictorLayer`, SpecForge `Qwen3_5MTPModel`):

    h = eh_proj(cat(enorm(embed(token_{i+1})), hnorm(hidden_i)))      # [T, 2H] -> [T, H]
    h = block(h)                                                      # one decoder layer
    logits = head(shared_norm(h));  hidden for the next step = shared_norm(h)

The hidden fed in is the target's final-normed hidden state at the previous position (draft
prefill, as EAGLE-1) or the module's own recycled `shared_norm(h)` (later steps). vLLM zeroes
the token embedding at position 0. With several modules (`num_nextn_predict_layers` > 1),
draft step k uses module `k % n` (vLLM `spec_step_idx % num_mtp_layers`); `step` selects it.
Embedding and head are the target's unless the draft carries its own (`own_head`).

DeepSeek/GLM checkpoints store module i at `model.layers.{L+i}` with an MLA block (routed
experts from `first_k_dense_replace` on); Qwen-style drafts (`mtp.fc`, `mtp.pre_fc_norm_*`,
`mtp.layers.0`, `mtp.norm`) use a standard-attention block with Gemma-style `(1 + w)` norms
and an optional sigmoid output gate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from eaglegraph.models import ops
from eaglegraph.models.drafts.base import BuildArgs, DraftBase, DraftStep
from eaglegraph.models.layers import (
    AttentionCall,
    AttentionModule,
    GatedMLP,
    LayerSpec,
    PreNormBlock,
    RMSNorm,
    VocabEmbedding,
    new_param,
)
from eaglegraph.models.mla import MLADecoderLayer, MLATarget
from eaglegraph.models.rope import build_cos_sin_cache
from eaglegraph.models.target import TargetModel, geometry_spec
from eaglegraph.models.vocab import head_logits
from eaglegraph.pair.mla import MLADims, MoEDims

Target = TargetModel | MLATarget


@dataclass(frozen=True)
class MTPArch:
    """What an MTP draft looks like beyond its geometry.

    `style` "deepseek": MLA blocks in the target checkpoint; "qwen": a separate draft with
    standard attention. `gemma_norm`: norms scale by `1 + w`. `output_gate`: q_proj also
    produces a sigmoid gate over the attention output (Qwen3.5 `attn_output_gate`).
    `rotary_dim`: rotated dims per head (`partial_rotary_factor`); 0 means all.
    `num_modules` > 1 with K > 1 drafts module by module over each request's window (vLLM's
    multi-module speculator); otherwise module `step % n` runs step by step, as EAGLE.
    """

    style: str
    num_modules: int
    own_head: bool = False
    gemma_norm: bool = False
    output_gate: bool = False
    rotary_dim: int = 0
    mask_position_zero: bool = True
    # what the build reads from the config besides the geometry (DeepSeek-style: MLA and
    # MoE dims, checkpoint rope order; every style: the config's YaRN keys)
    mla: MLADims | None = None
    moe: MoEDims | None = None
    rope_interleave: bool = True
    rope_extras: tuple[tuple[str, Any], ...] = ()

    @property
    def kind(self) -> str:
        return "mtp"


class GemmaRMSNorm(RMSNorm):
    """RMSNorm scaling by `1 + weight` (Qwen3.5 / vLLM GemmaRMSNorm); weight 0 is identity."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (xf * (1.0 + self.weight.float())).to(x.dtype)


def _norm(gemma: bool, size: int, eps: float, dtype: torch.dtype, dev: torch.device) -> RMSNorm:
    norm = (GemmaRMSNorm if gemma else RMSNorm)(size, eps, dtype, dev)
    if gemma:
        with torch.no_grad():
            norm.weight.zero_()
    return norm


class GatedAttention(AttentionModule):
    """q/k/v with per-head q/k norm, partial RoPE and an optional sigmoid output gate."""

    def __init__(
        self, spec: LayerSpec, arch: MTPArch, dtype: torch.dtype, device: torch.device
    ) -> None:
        super().__init__()
        self.spec = spec
        self.gate = arch.output_gate
        q_rows = spec.q_width * (2 if arch.output_gate else 1)
        self.qkv_weight = new_param((q_rows + 2 * spec.kv_width, spec.hidden_size), dtype, device)
        self.o_weight = new_param((spec.hidden_size, spec.q_width), dtype, device)
        eps = spec.rms_norm_eps
        self.q_norm = _norm(arch.gemma_norm, spec.head_dim, eps, dtype, device)
        self.k_norm = _norm(arch.gemma_norm, spec.head_dim, eps, dtype, device)
        self.rotary_dim = arch.rotary_dim or spec.head_dim

    def operands(
        self, x: torch.Tensor, positions: torch.Tensor, cos_sin_cache: torch.Tensor
    ) -> AttentionCall:
        s, t = self.spec, x.shape[0]
        q_rows = s.q_width * (2 if self.gate else 1)
        qkv = F.linear(x, self.qkv_weight)
        q, k, v = qkv.split([q_rows, s.kv_width, s.kv_width], dim=-1)
        gate = None
        if self.gate:
            # per head: [query | gate], as Qwen3.5 lays q_proj out
            qg = q.reshape(t, s.num_heads, 2 * s.head_dim)
            q, gate = qg[..., : s.head_dim], qg[..., s.head_dim :].reshape(t, s.q_width)
        q = self.q_norm(q.reshape(t, s.num_heads, s.head_dim))
        k = self.k_norm(k.reshape(t, s.num_kv_heads, s.head_dim))
        rot = self.rotary_dim
        ops.rotary(q[..., :rot], k[..., :rot], positions, cos_sin_cache)
        out = torch.empty((t, s.num_heads, s.head_dim), dtype=x.dtype, device=x.device)
        return AttentionCall(q, k, v.reshape(t, s.num_kv_heads, s.head_dim), out, gate)

    def output(self, call: AttentionCall) -> torch.Tensor:
        o = call.out.view(call.out.shape[0], self.spec.q_width)
        if call.gate is not None:
            o = o * torch.sigmoid(call.gate)
        return F.linear(o, self.o_weight)


class StandardBlock(PreNormBlock):
    """Pre-norm decoder block with `GatedAttention` and a dense gated MLP (Qwen-style MTP)."""

    input_layernorm: RMSNorm
    self_attn: GatedAttention
    post_attention_layernorm: RMSNorm
    mlp: GatedMLP

    def __init__(
        self, spec: LayerSpec, arch: MTPArch, dtype: torch.dtype, device: torch.device
    ) -> None:
        super().__init__()
        eps, hidden = spec.rms_norm_eps, spec.hidden_size
        self.input_layernorm = _norm(arch.gemma_norm, hidden, eps, dtype, device)
        self.self_attn = GatedAttention(spec, arch, dtype, device)
        self.post_attention_layernorm = _norm(arch.gemma_norm, hidden, eps, dtype, device)
        self.mlp = GatedMLP(spec, dtype, device)


class MTPModule(nn.Module):
    """enorm, hnorm, eh_proj `[H, 2H]`, one block, the shared-head norm (and head if own)."""

    def __init__(
        self,
        hidden: int,
        vocab: int,
        eps: float,
        block: nn.Module,
        arch: MTPArch,
        dtype: torch.dtype,
        device: torch.device,
    ) -> None:
        super().__init__()
        self.enorm = _norm(arch.gemma_norm, hidden, eps, dtype, device)
        self.hnorm = _norm(arch.gemma_norm, hidden, eps, dtype, device)
        self.eh_proj = new_param((hidden, 2 * hidden), dtype, device)
        self.block = block
        self.shared_norm = _norm(arch.gemma_norm, hidden, eps, dtype, device)
        self.head = new_param((vocab, hidden), dtype, device) if arch.own_head else None


def _rope_cache(arch: MTPArch, target: Target, args: BuildArgs) -> torch.Tensor:
    """DeepSeek-style modules share the target's cache; Qwen-style ones rotate `rotary_dim`."""
    if arch.style == "deepseek":
        return target.cos_sin_cache
    g = args.geometry
    return build_cos_sin_cache(
        g.rope,
        arch.rotary_dim or g.head_dim,
        max(g.max_position_embeddings, target.geometry.max_position_embeddings),
        args.max_positions or max(target.max_positions, 1),
        args.device,
        args.rope_extras,
    )


class MTPDraft(DraftBase[MTPArch, Target]):
    """`num_modules` MTP modules sharing the target's embedding (and head unless own).

    The draft interface of the rig: `forward(step)` (a `DraftStep`) returns
    (pre-norm hidden for logits, post-norm hidden for the next step), `compute_logits`
    applies the module's shared-head norm and head. The attribute `step` picks the module
    (k % n).
    """

    kind = "mtp"

    def __init__(self, arch: MTPArch, target: Target, args: BuildArgs) -> None:
        mla, moe = arch.mla, arch.moe
        if arch.style == "deepseek" and mla is None:
            raise ValueError("a DeepSeek-style MTP draft needs the MLA dims")
        super().__init__(arch, target, args, _rope_cache(arch, target, args))
        geometry, dtype, dev = args.geometry, args.dtype, args.device
        self.step = 0
        eps = geometry.rms_norm_eps
        blocks: list[nn.Module] = []
        if mla is not None and arch.style == "deepseek":
            scale = target.softmax_scale if isinstance(target, MLATarget) else mla.qk_head_dim**-0.5
            for i in range(arch.num_modules):
                offset = args.layer_offset + i
                layer_moe = moe if moe is not None and moe.is_moe_layer(offset) else None
                blocks.append(MLADecoderLayer(geometry, mla, layer_moe, scale, dtype, dev))
        else:
            spec = geometry_spec(geometry, qk_norm=True)
            blocks = [StandardBlock(spec, arch, dtype, dev) for _ in range(arch.num_modules)]
        self.modules_ = nn.ModuleList(
            MTPModule(geometry.hidden_size, target.vocab_size, eps, b, arch, dtype, dev)
            for b in blocks
        )

    @property
    def embed(self) -> VocabEmbedding:
        return self.target.embed_tokens

    @property
    def num_modules(self) -> int:
        return len(self.modules_)

    def module_for(self, step: int) -> MTPModule:
        module = self.modules_[step % len(self.modules_)]
        if not isinstance(module, MTPModule):  # nn.ModuleList is not generic
            raise TypeError(f"MTP module {step}: {type(module).__name__}")
        return module

    def forward(self, step: DraftStep) -> tuple[torch.Tensor, torch.Tensor]:
        index = self.step % self.num_modules
        module = self.module_for(index)
        emb = self.embed(step.input_ids)
        if self.arch.mask_position_zero:
            emb = torch.where(step.positions[:, None] == 0, torch.zeros_like(emb), emb)
        x = torch.cat([module.enorm(emb), module.hnorm(step.hidden_in)], dim=-1)
        h = F.linear(x, module.eh_proj)
        h = module.block(h, self.context(step), self.layer_offset + index)
        return h, module.shared_norm(h)

    def prefill_feature(self, hidden: torch.Tensor, aux: torch.Tensor | None) -> torch.Tensor:
        """MTP consumes the target's final (normed) hidden state, as EAGLE-1 does."""
        return hidden

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """fp32 `[T, V]` logits of the current step's module: head(shared_norm(h))."""
        module = self.module_for(self.step)
        head = module.head if module.head is not None else self.target.lm_head_weight
        return head_logits(module.shared_norm(hidden), head).float()

    def draft_to_target(self, ids: torch.Tensor) -> torch.Tensor:
        """MTP drafts over the target vocabulary: the identity."""
        return ids
