"""A large sharded checkpoint whose tensor data is a sparse hole: headers real, data never written.

Used by the inspect benchmark and by the test that proves inspect reads headers only: any
read of tensor data would show up in the process's read byte count.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

ITEM = {"BF16": 2}


def llama_config(layers: int, hidden: int = 1024) -> dict[str, object]:
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": hidden,
        "intermediate_size": hidden * 3,
        "num_hidden_layers": layers,
        "num_attention_heads": hidden // 128,
        "num_key_value_heads": max(1, hidden // 512),
        "vocab_size": 32000,
        "max_position_embeddings": 8192,
        "torch_dtype": "bfloat16",
    }


def _shapes(cfg: dict[str, object]) -> dict[str, tuple[int, ...]]:
    h, i_, v = int(cfg["hidden_size"]), int(cfg["intermediate_size"]), int(cfg["vocab_size"])  # type: ignore[arg-type]
    kv = int(cfg["num_key_value_heads"]) * 128  # type: ignore[arg-type]
    shapes: dict[str, tuple[int, ...]] = {
        "model.embed_tokens.weight": (v, h),
        "model.norm.weight": (h,),
        "lm_head.weight": (v, h),
    }
    for layer in range(int(cfg["num_hidden_layers"])):  # type: ignore[arg-type]
        p = f"model.layers.{layer}."
        shapes |= {
            p + "self_attn.q_proj.weight": (h, h),
            p + "self_attn.k_proj.weight": (kv, h),
            p + "self_attn.v_proj.weight": (kv, h),
            p + "self_attn.o_proj.weight": (h, h),
            p + "mlp.gate_proj.weight": (i_, h),
            p + "mlp.up_proj.weight": (i_, h),
            p + "mlp.down_proj.weight": (h, i_),
            p + "input_layernorm.weight": (h,),
            p + "post_attention_layernorm.weight": (h,),
        }
    return shapes


def write_sparse_checkpoint(folder: Path, shards: int = 30, layers: int = 400) -> tuple[int, int]:
    """Write config + sharded safetensors with sparse data; return (tensor count, data bytes)."""
    folder.mkdir(parents=True, exist_ok=True)
    cfg = llama_config(layers)
    (folder / "config.json").write_text(json.dumps(cfg))
    shapes = _shapes(cfg)
    names = list(shapes)
    weight_map: dict[str, str] = {}
    total = 0
    for s in range(shards):
        file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        header: dict[str, object] = {"__metadata__": {"format": "pt"}}
        offset = 0
        for name in names[s::shards]:
            nbytes = math.prod(shapes[name]) * ITEM["BF16"]
            header[name] = {
                "dtype": "BF16",
                "shape": list(shapes[name]),
                "data_offsets": [offset, offset + nbytes],
            }
            offset += nbytes
            weight_map[name] = file
        raw = json.dumps(header).encode()
        raw += b" " * (-len(raw) % 8)
        with open(folder / file, "wb") as fh:
            fh.write(struct.pack("<Q", len(raw)) + raw)
            fh.truncate(8 + len(raw) + offset)  # a hole: no data block is ever written
        total += offset
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map})
    )
    return len(shapes), total
