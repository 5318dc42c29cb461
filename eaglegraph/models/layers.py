"""Building blocks shared by targets and drafts: norms, fused projections, decoder layer.

Weights are plain parameters used through `F.linear`, so matmuls go to cuBLAS and q/k/v and
gate/up each run as one fused GEMM (the loader concatenates the checkpoint's separate
matrices into them). Everything between two attention calls is ordinary tensor ops with
shapes taken from the inputs, no host syncs and no branches on tensor values, because the
rig captures these forwards in CUDA graphs and also splits them into segments at the
attention calls.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple, TypeVar

import torch
import torch.nn.functional as F
from torch import nn

from eaglegraph.models import ops

AttentionFn = Callable[[int, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], None]
"""`attention(layer_index, q [T,nh,hd], k [T,nkv,hd], v [T,nkv,hd], out [T,nh,hd])`.

Called after q/k norm and RoPE. q, k and v may be strided views of the fused qkv output
(last dimension contiguous); `out` is contiguous and must be written in place. An MLA layer
passes its up-projection weight as v (`models.mla.is_latent_call`): the callable runs the
up-projections around its multi-query core, as vLLM's MLA op does
(`models.mla.with_up_projections`).
"""


class ForwardContext(NamedTuple):
    """What every layer of one forward is called with besides its hidden states and its index:
    the tokens' positions, the RoPE cache they index and the attention callable. vLLM's layers
    read the attention part from a global forward context; here the model hands this record
    down, so a new layer or model takes one parameter for it, not three."""

    positions: torch.Tensor
    cos_sin_cache: torch.Tensor
    attention: AttentionFn


def new_param(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> nn.Parameter:
    """An uninitialised inference parameter; loading or random init fills it on the device."""
    return nn.Parameter(torch.empty(shape, dtype=dtype, device=device), requires_grad=False)


@dataclass(frozen=True)
class LayerSpec:
    """What one decoder layer looks like; built from the config, refined by the checkpoint."""

    hidden_size: int
    intermediate_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rms_norm_eps: float
    qkv_bias: bool = False
    o_bias: bool = False
    qk_norm: bool = False
    mlp_bias: bool = False

    @property
    def q_width(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def kv_width(self) -> int:
        return self.num_kv_heads * self.head_dim


class RMSNorm(nn.Module):
    """RMSNorm computed in fp32 and cast back before the weight, as HF and vLLM do."""

    def __init__(self, size: int, eps: float, dtype: torch.dtype, device: torch.device) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(
            torch.ones(size, dtype=dtype, device=device), requires_grad=False
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * xf.to(x.dtype)


class VocabEmbedding(nn.Module):
    """Token embedding through the NaN-on-bad-id Triton gather (see kernels.embedding)."""

    def __init__(self, vocab: int, hidden: int, dtype: torch.dtype, device: torch.device) -> None:
        super().__init__()
        self.weight = new_param((vocab, hidden), dtype, device)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        out = torch.empty(
            (ids.shape[0], self.weight.shape[1]), dtype=self.weight.dtype, device=self.weight.device
        )
        ops.embedding(self.weight, ids, out)
        return out


class GatedMLP(nn.Module):
    """SiLU-gated MLP with gate and up fused into one `[2I, H]` weight."""

    def __init__(self, spec: LayerSpec, dtype: torch.dtype, device: torch.device) -> None:
        super().__init__()
        inter, hidden = spec.intermediate_size, spec.hidden_size
        self.gate_up_weight = new_param((2 * inter, hidden), dtype, device)
        self.gate_up_bias = new_param((2 * inter,), dtype, device) if spec.mlp_bias else None
        self.down_weight = new_param((hidden, inter), dtype, device)
        self.down_bias = new_param((hidden,), dtype, device) if spec.mlp_bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = F.linear(x, self.gate_up_weight, self.gate_up_bias).chunk(2, dim=-1)
        return F.linear(F.silu(gate) * up, self.down_weight, self.down_bias)


class AttentionCall(NamedTuple):
    """One call of the attention callable: q and k normed and roped, the `out` it writes, and
    what the projection back needs besides (a sigmoid gate)."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    out: torch.Tensor
    gate: torch.Tensor | None = None


class AttentionModule(nn.Module, ABC):
    """The forward every attention module shares: its `operands` (projections, norms, RoPE in
    place), the external attention call, its `output` projection. Standard, gated and latent
    attention differ only in those two."""

    def forward(self, x: torch.Tensor, ctx: ForwardContext, layer_index: int) -> torch.Tensor:
        call = self.operands(x, ctx.positions, ctx.cos_sin_cache)
        ctx.attention(layer_index, call.q, call.k, call.v, call.out)
        return self.output(call)

    @abstractmethod
    def operands(
        self, x: torch.Tensor, positions: torch.Tensor, cos_sin_cache: torch.Tensor
    ) -> AttentionCall:
        """q, k, v and `out` for the attention call: projected, normed, roped in place."""

    @abstractmethod
    def output(self, call: AttentionCall) -> torch.Tensor:
        """The projection back to the hidden width of what the call wrote."""


class Attention(AttentionModule):
    """q/k/v (one fused GEMM, GQA), optional per-head q/k norm, RoPE, external attention, o_proj.

    `input_size` is the width fed to qkv: the hidden size, or 2H for an EAGLE-3 midlayer.
    """

    def __init__(
        self, spec: LayerSpec, input_size: int, dtype: torch.dtype, device: torch.device
    ) -> None:
        super().__init__()
        self.spec = spec
        qkv_rows = spec.q_width + 2 * spec.kv_width
        self.qkv_weight = new_param((qkv_rows, input_size), dtype, device)
        self.qkv_bias = new_param((qkv_rows,), dtype, device) if spec.qkv_bias else None
        self.o_weight = new_param((spec.hidden_size, spec.q_width), dtype, device)
        self.o_bias = new_param((spec.hidden_size,), dtype, device) if spec.o_bias else None
        self.q_norm = (
            RMSNorm(spec.head_dim, spec.rms_norm_eps, dtype, device) if spec.qk_norm else None
        )
        self.k_norm = (
            RMSNorm(spec.head_dim, spec.rms_norm_eps, dtype, device) if spec.qk_norm else None
        )

    def operands(
        self, x: torch.Tensor, positions: torch.Tensor, cos_sin_cache: torch.Tensor
    ) -> AttentionCall:
        s = self.spec
        tokens = x.shape[0]
        qkv = F.linear(x, self.qkv_weight, self.qkv_bias)
        q, k, v = qkv.split([s.q_width, s.kv_width, s.kv_width], dim=-1)
        q = q.view(tokens, s.num_heads, s.head_dim)
        k = k.view(tokens, s.num_kv_heads, s.head_dim)
        v = v.view(tokens, s.num_kv_heads, s.head_dim)
        if self.q_norm is not None and self.k_norm is not None:
            q = self.q_norm(q)
            k = self.k_norm(k)
        ops.rotary(q, k, positions, cos_sin_cache)
        out = torch.empty((tokens, s.num_heads, s.head_dim), dtype=q.dtype, device=q.device)
        return AttentionCall(q, k, v, out)

    def output(self, call: AttentionCall) -> torch.Tensor:
        out = call.out.view(call.out.shape[0], self.spec.q_width)
        return F.linear(out, self.o_weight, self.o_bias)


class PreNormBlock(nn.Module):
    """A pre-norm residual block over one stream: `h + attn(norm(h))`, then `h + mlp(norm(h))`.

    Subclasses set `input_layernorm` (None: identity), `self_attn`, `post_attention_layernorm`
    and `mlp`, in that order (the checkpoint's), and share this forward: Llama-family layers,
    MLA layers and Qwen-style MTP blocks differ only in their parts.
    """

    input_layernorm: nn.Module | None
    self_attn: nn.Module
    post_attention_layernorm: nn.Module
    mlp: nn.Module

    def forward(self, h: torch.Tensor, ctx: ForwardContext, layer_index: int) -> torch.Tensor:
        x = self.input_layernorm(h) if self.input_layernorm is not None else h
        h = h + self.self_attn(x, ctx, layer_index)
        return h + self.mlp(self.post_attention_layernorm(h))


class DecoderLayer(PreNormBlock):
    """Pre-norm Llama decoder layer over one residual stream.

    `input_norm=False` is EAGLE-1's layer 0, whose input norm vLLM replaces by an identity.
    """

    input_layernorm: RMSNorm | None
    self_attn: Attention
    post_attention_layernorm: RMSNorm
    mlp: GatedMLP

    def __init__(
        self, spec: LayerSpec, dtype: torch.dtype, device: torch.device, input_norm: bool = True
    ) -> None:
        super().__init__()
        eps, hidden = spec.rms_norm_eps, spec.hidden_size
        self.input_layernorm = RMSNorm(hidden, eps, dtype, device) if input_norm else None
        self.self_attn = Attention(spec, hidden, dtype, device)
        self.post_attention_layernorm = RMSNorm(hidden, eps, dtype, device)
        self.mlp = GatedMLP(spec, dtype, device)


M = TypeVar("M", bound=nn.Module)


def modules_of(modules: nn.ModuleList, kind: type[M]) -> list[M]:
    """The list's modules as `kind` (checked): `nn.ModuleList` is not generic, so without this
    every layer read back from one is typed as a bare `nn.Module`."""
    out: list[M] = []
    for module in modules:
        if not isinstance(module, kind):
            raise TypeError(f"expected {kind.__name__}, found {type(module).__name__}")
        out.append(module)
    return out
