"""Builders for synthetic model folders used across the test suite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import save_file

from eaglegraph.pair.presets import PRESETS


def write_config(folder: Path, cfg: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    return folder


def write_tensors(path: Path, shapes: dict[str, tuple[int, ...]], dtype: Any = np.float16) -> None:
    rng = np.random.default_rng(0)
    tensors = {}
    for name, shape in shapes.items():
        if name == "d2t":
            tensors[name] = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
        elif name == "t2d":
            tensors[name] = np.ones(shape, dtype=np.bool_)
        else:
            tensors[name] = rng.standard_normal(shape).astype(dtype)
    save_file(tensors, str(path))


def tiny_target_config(**over: Any) -> dict[str, Any]:
    cfg = dict(PRESETS["tiny-llama-eagle1"].target)
    cfg.update(over)
    return cfg


def tiny_eagle1_config(**over: Any) -> dict[str, Any]:
    cfg = dict(PRESETS["tiny-llama-eagle1"].draft)
    cfg.update(over)
    return cfg


def tiny_eagle3_config(**over: Any) -> dict[str, Any]:
    cfg = dict(PRESETS["tiny-llama-eagle3"].draft)
    cfg.update(over)
    return cfg


def target_shapes(cfg: dict[str, Any], layers: int | None = None) -> dict[str, tuple[int, ...]]:
    h, i_, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim", h // nh)
    shapes: dict[str, tuple[int, ...]] = {
        "model.embed_tokens.weight": (v, h),
        "model.norm.weight": (h,),
        "lm_head.weight": (v, h),
    }
    for i in range(layers if layers is not None else cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes.update(
            {
                p + "self_attn.q_proj.weight": (nh * hd, h),
                p + "self_attn.k_proj.weight": (nkv * hd, h),
                p + "self_attn.v_proj.weight": (nkv * hd, h),
                p + "self_attn.o_proj.weight": (h, nh * hd),
                p + "mlp.gate_proj.weight": (i_, h),
                p + "mlp.up_proj.weight": (i_, h),
                p + "mlp.down_proj.weight": (h, i_),
                p + "input_layernorm.weight": (h,),
                p + "post_attention_layernorm.weight": (h,),
            }
        )
    return shapes


def eagle3_shapes(
    cfg: dict[str, Any], n_aux: int = 3, target_hidden: int | None = None
) -> dict[str, tuple[int, ...]]:
    h, i_, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim", h // nh)
    vd = cfg.get("draft_vocab_size", v)
    ht = target_hidden or h
    return {
        "fc.weight": (h, n_aux * ht),
        "midlayer.self_attn.q_proj.weight": (nh * hd, 2 * h),
        "midlayer.self_attn.k_proj.weight": (nkv * hd, 2 * h),
        "midlayer.self_attn.v_proj.weight": (nkv * hd, 2 * h),
        "midlayer.self_attn.o_proj.weight": (h, nh * hd),
        "midlayer.mlp.gate_proj.weight": (i_, h),
        "midlayer.mlp.up_proj.weight": (i_, h),
        "midlayer.mlp.down_proj.weight": (h, i_),
        "midlayer.input_layernorm.weight": (h,),
        "midlayer.hidden_norm.weight": (h,),
        "midlayer.post_attention_layernorm.weight": (h,),
        "norm.weight": (h,),
        "lm_head.weight": (vd, h),
        "d2t": (vd,),
        "t2d": (v,),
    }


def eagle1_shapes(cfg: dict[str, Any], bias: bool = False) -> dict[str, tuple[int, ...]]:
    h, i_ = cfg["hidden_size"], cfg["intermediate_size"]
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim", h // nh)
    shapes = {
        "fc.weight": (h, 2 * h),
        "layers.0.self_attn.q_proj.weight": (nh * hd, h),
        "layers.0.self_attn.k_proj.weight": (nkv * hd, h),
        "layers.0.self_attn.v_proj.weight": (nkv * hd, h),
        "layers.0.self_attn.o_proj.weight": (h, nh * hd),
        "layers.0.mlp.gate_proj.weight": (i_, h),
        "layers.0.mlp.up_proj.weight": (i_, h),
        "layers.0.mlp.down_proj.weight": (h, i_),
        "layers.0.post_attention_layernorm.weight": (h,),
    }
    if bias:
        shapes["fc.bias"] = (h,)
    return shapes
