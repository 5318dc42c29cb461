"""Tiny EAGLE checkpoints in every naming variant, and reference draft forwards.

The references implement research §1.2, §2.2, §4.2 and §4.3 directly over the checkpoint's
tensors with plain torch ops, independently of eaglegraph's modules and kernels.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F

from eaglegraph.models import DraftArch, TargetModel, random_target
from eaglegraph.pair.geometry import Geometry
from tests.models.models_support import geometry_of, ref_attention_block, ref_mlp, ref_rms

V, H, I_SIZE, VD = 160, 64, 96, 96

TARGET_CONFIG: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": H,
    "intermediate_size": I_SIZE,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": V,
    "max_position_embeddings": 256,
    "rms_norm_eps": 1e-5,
}


def draft_config(kind: str, layers: int = 1, hidden: int = H, **extra: Any) -> dict[str, Any]:
    arch = "LlamaForCausalLMEagle3" if kind == "eagle3" else "LlamaForCausalLM"
    heads = hidden // 16
    return {
        "architectures": [arch],
        "model_type": "llama",
        "hidden_size": hidden,
        "intermediate_size": I_SIZE,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": max(heads // 2, 1),
        "vocab_size": V,
        "max_position_embeddings": 128,
        "rms_norm_eps": 1e-6,
        **extra,
    }


def make_target(seed: int = 0) -> TargetModel:
    return random_target(geometry_of(TARGET_CONFIG), "float32", "cpu", seed)


class _Rand:
    def __init__(self, seed: int) -> None:
        self.gen = torch.Generator().manual_seed(seed)

    def w(self, *shape: int) -> torch.Tensor:
        return 0.08 * torch.randn(shape, generator=self.gen)

    def norm(self, size: int) -> torch.Tensor:
        return 1.0 + 0.2 * torch.randn(size, generator=self.gen)


def _layer(
    r: _Rand, p: str, g: Geometry, in_width: int, input_norm: bool
) -> dict[str, torch.Tensor]:
    q, kv, h = g.q_width, g.kv_width, g.hidden_size
    t = {
        f"{p}self_attn.q_proj.weight": r.w(q, in_width),
        f"{p}self_attn.k_proj.weight": r.w(kv, in_width),
        f"{p}self_attn.v_proj.weight": r.w(kv, in_width),
        f"{p}self_attn.o_proj.weight": r.w(h, q),
        f"{p}mlp.gate_proj.weight": r.w(g.intermediate_size, h),
        f"{p}mlp.up_proj.weight": r.w(g.intermediate_size, h),
        f"{p}mlp.down_proj.weight": r.w(h, g.intermediate_size),
        f"{p}post_attention_layernorm.weight": r.norm(h),
    }
    if input_norm:
        t[f"{p}input_layernorm.weight"] = r.norm(h)
    return t


def eagle1_tensors(g: Geometry, fc_bias: bool, seed: int = 5) -> dict[str, torch.Tensor]:
    r = _Rand(seed)
    h = g.hidden_size
    t = {"fc.weight": r.w(h, 2 * h)}
    if fc_bias:
        t["fc.bias"] = r.w(h)
    for i in range(g.num_hidden_layers):
        t.update(_layer(r, f"layers.{i}.", g, h, input_norm=i > 0))
    return t


def eagle3_tensors(
    g: Geometry, arch: DraftArch, target: TargetModel, seed: int = 7, own_lm_head: bool = True
) -> dict[str, torch.Tensor]:
    """Canonical names (`layers.0.`, bare); d2t/t2d when the draft vocab is reduced."""
    r = _Rand(seed)
    h = g.hidden_size
    vd = arch.draft_vocab_size or V
    fc_in = arch.num_aux * arch.target_hidden_size
    t = {"fc.weight": r.w(h, fc_in), "norm.weight": r.norm(h)}
    if arch.fc_bias:
        t["fc.bias"] = r.w(h)
    if arch.fc_norm:
        t.update(
            {f"fc_norm.{i}.weight": r.norm(arch.target_hidden_size) for i in range(arch.num_aux)}
        )
    if arch.norm_before_fc:
        t["input_norm.weight"] = r.norm(fc_in)
    t.update(_layer(r, "layers.0.", g, 2 * h, input_norm=True))
    t["layers.0.hidden_norm.weight"] = r.norm(h)
    for i in range(1, g.num_hidden_layers):
        t.update(_layer(r, f"layers.{i}.", g, h, input_norm=True))
    if own_lm_head:
        t["lm_head.weight"] = r.w(vd, h)
    if vd != V:
        chosen = torch.randperm(V, generator=r.gen)[:vd].sort().values
        t["d2t"] = chosen - torch.arange(vd)
        t2d = torch.zeros(V, dtype=torch.bool)
        t2d[chosen] = True
        t["t2d"] = t2d
    return t


def rename(
    tensors: Mapping[str, torch.Tensor], *, model_prefix: bool = False, midlayer: bool = False
) -> dict[str, torch.Tensor]:
    out = {}
    for name, tensor in tensors.items():
        if midlayer and name.startswith("layers.0."):
            name = "midlayer." + name.removeprefix("layers.0.")
        if model_prefix and name != "lm_head.weight":
            name = "model." + name
        out[name] = tensor
    return out


def ref_decoder(
    sd: Mapping[str, torch.Tensor], p: str, x: torch.Tensor, pos: torch.Tensor, g: Geometry
) -> torch.Tensor:
    eps = g.rms_norm_eps
    normed = (
        ref_rms(x, sd[f"{p}input_layernorm.weight"], eps)
        if f"{p}input_layernorm.weight" in sd
        else x
    )
    x = x + ref_attention_block(sd, p, normed, pos, g)
    return x + ref_mlp(sd, p, ref_rms(x, sd[f"{p}post_attention_layernorm.weight"], eps))


def ref_eagle1(
    sd: Mapping[str, torch.Tensor],
    g: Geometry,
    embed: torch.Tensor,
    ids: torch.Tensor,
    pos: torch.Tensor,
    hidden: torch.Tensor,
) -> torch.Tensor:
    """fc(concat(embedding, target hidden)), layers (layer 0 without input norm), no final norm."""
    x = F.linear(torch.cat([embed[ids], hidden], dim=-1), sd["fc.weight"], sd.get("fc.bias"))
    for i in range(g.num_hidden_layers):
        x = ref_decoder(sd, f"layers.{i}.", x, pos, g)
    return x


def ref_eagle3(
    sd: Mapping[str, torch.Tensor],
    g: Geometry,
    arch: DraftArch,
    embed: torch.Tensor,
    ids: torch.Tensor,
    pos: torch.Tensor,
    hidden: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(norm(h_out), h_out): midlayer over concat(input_norm(emb), hidden_norm(h)), then layers."""
    eps = g.rms_norm_eps
    h = hidden
    if h.shape[-1] != g.hidden_size:
        if "input_norm.weight" in sd:
            h = ref_rms(h, sd["input_norm.weight"], eps)
        if arch.fc_norm:
            parts = h.split(arch.target_hidden_size, dim=-1)
            h = torch.cat(
                [ref_rms(c, sd[f"fc_norm.{i}.weight"], eps) for i, c in enumerate(parts)], dim=-1
            )
        h = F.linear(h, sd["fc.weight"], sd.get("fc.bias"))
    normed = ref_rms(h, sd["layers.0.hidden_norm.weight"], eps)
    residual = normed if arch.norm_before_residual else h
    x = torch.cat([ref_rms(embed[ids], sd["layers.0.input_layernorm.weight"], eps), normed], dim=-1)
    h = residual + ref_attention_block(sd, "layers.0.", x, pos, g)
    h = h + ref_mlp(
        sd, "layers.0.", ref_rms(h, sd["layers.0.post_attention_layernorm.weight"], eps)
    )
    for i in range(1, g.num_hidden_layers):
        h = ref_decoder(sd, f"layers.{i}.", h, pos, g)
    return ref_rms(h, sd["norm.weight"], eps), h
