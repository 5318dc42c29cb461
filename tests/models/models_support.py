"""Shared helpers for the model tests: configs, checkpoints, dense attention, references.

The reference functions here are written from the research notes with plain torch ops
(no eaglegraph kernels), so comparing against them checks the modules independently.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

from eaglegraph.models.mla import with_up_projections
from eaglegraph.pair.config import Config
from eaglegraph.pair.geometry import Geometry, geometry_from_config


def geometry_of(config: Mapping[str, Any]) -> Geometry:
    return geometry_from_config(Config(dict(config), "test-config"))


def write_checkpoint(
    folder: Path, config: Mapping[str, Any], tensors: Mapping[str, torch.Tensor], shards: int = 1
) -> Path:
    """config.json plus one safetensors file, or `shards` files with an index."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(dict(config)))
    items = {k: v.contiguous() for k, v in tensors.items()}
    if shards == 1:
        save_file(items, str(folder / "model.safetensors"))
        return folder
    names = sorted(items)
    weight_map: dict[str, str] = {}
    for s in range(shards):
        file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: items[n] for n in names[s::shards]}
        save_file(part, str(folder / file))
        weight_map.update(dict.fromkeys(part, file))
    index = {"metadata": {"total_size": 0}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    return folder


class DenseAttention:
    """Causal SDPA over the T tokens of one sequence, GQA by repeating kv heads.

    Records the layer indices it is called with so tests can check draft layer offsets.
    """

    def __init__(self) -> None:
        self.calls: list[int] = []

    def __call__(
        self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor
    ) -> None:
        self.calls.append(layer)
        with_up_projections(_dense_core)(layer, q, k, v, out)


def _dense_core(
    layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor
) -> None:
    out.copy_(dense_attention(q, k, v))


def dense_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    t, nh, hd = q.shape
    rep = nh // k.shape[1]
    # expand, not repeat_interleave: no host sync, so the callback is graph-capturable.
    k = k[:, :, None, :].expand(t, k.shape[1], rep, hd).reshape(t, nh, hd)
    vd = v.shape[-1]  # MLA: the value is the latent prefix, narrower than q/k
    v = v[:, :, None, :].expand(t, v.shape[1], rep, vd).reshape(t, nh, vd)
    o = F.scaled_dot_product_attention(
        q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1), is_causal=True
    )
    return o.transpose(0, 1)


def ref_rms(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    xf = x.float()
    return weight * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def ref_rope(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """Plain rotate-half RoPE with the default frequencies, as HF Llama applies it."""
    hd = x.shape[-1]
    inv = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
    freqs = positions.float()[:, None] * inv[None, :]
    emb = torch.cat([freqs, freqs], dim=-1)[:, None, :]
    x1, x2 = x[..., : hd // 2], x[..., hd // 2 :]
    rotated = torch.cat([-x2, x1], dim=-1)
    return x * emb.cos() + rotated * emb.sin()


def ref_attention_block(
    sd: Mapping[str, torch.Tensor],
    prefix: str,
    x: torch.Tensor,
    positions: torch.Tensor,
    geometry: Geometry,
) -> torch.Tensor:
    nh, nkv, hd = geometry.num_attention_heads, geometry.num_key_value_heads, geometry.head_dim
    t = x.shape[0]

    def proj(name: str) -> torch.Tensor:
        return F.linear(
            x, sd[f"{prefix}self_attn.{name}.weight"], sd.get(f"{prefix}self_attn.{name}.bias")
        )

    q = proj("q_proj").view(t, nh, hd)
    k = proj("k_proj").view(t, nkv, hd)
    v = proj("v_proj").view(t, nkv, hd)
    theta = geometry.rope.rope_theta
    o = dense_attention(ref_rope(q, positions, theta), ref_rope(k, positions, theta), v)
    return F.linear(o.reshape(t, nh * hd), sd[f"{prefix}self_attn.o_proj.weight"])


def ref_mlp(sd: Mapping[str, torch.Tensor], prefix: str, x: torch.Tensor) -> torch.Tensor:
    gate = F.linear(x, sd[f"{prefix}mlp.gate_proj.weight"])
    up = F.linear(x, sd[f"{prefix}mlp.up_proj.weight"])
    return F.linear(F.silu(gate) * up, sd[f"{prefix}mlp.down_proj.weight"])


def randomize_(module: torch.nn.Module, seed: int, std: float = 0.05) -> None:
    """Non-trivial weights everywhere (HF zero-inits biases and one-inits norms)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(std * torch.randn(p.shape, generator=gen))
