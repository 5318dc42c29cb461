"""The KV-cache layout of every attention layer of a pair: target layers, then draft layers.

MLA layers (DeepSeek-style targets and their MTP modules) cache one latent row of
`kv_lora_rank + qk_rope_head_dim` per token; standard layers cache k and v heads. An MTP
draft has one layer per module, whatever its config's `num_hidden_layers` says (for
in-checkpoint MTP that config is the target's).
"""

from __future__ import annotations

import dataclasses

import torch

from eaglegraph.models.parallel import kv_heads_per_rank
from eaglegraph.pair.geometry import Geometry
from eaglegraph.pair.kv_layers import draft_layer_count
from eaglegraph.pair.mla import mla_dims
from eaglegraph.pair.model import ModelSide, Pair
from eaglegraph.rig.kv_cache import KVLayout


def _standard(g: Geometry, block_size: int, dtype: torch.dtype) -> KVLayout:
    return KVLayout(0, block_size, g.num_key_value_heads, g.head_dim, dtype)


def _side_layout(side: ModelSide, block_size: int, dtype: torch.dtype) -> KVLayout:
    mla = mla_dims(side.config)
    if mla is not None:
        return KVLayout(0, block_size, 1, mla.cache_width, dtype, latent=True)
    return _standard(side.geometry, block_size, dtype)


def per_rank_kv(layout: KVLayout, tp: int) -> KVLayout:
    """One tensor-parallel rank's share of a layer's cache: its KV heads (split, or one
    replicated head past the model's count; `models.parallel`); an MLA latent row is whole on
    every rank."""
    if tp == 1 or layout.latent:
        return layout
    return dataclasses.replace(layout, num_kv_heads=kv_heads_per_rank(layout.num_kv_heads, tp))


def kv_layouts(pair: Pair, block_size: int, dtype: torch.dtype, framework: str) -> list[KVLayout]:
    """One layout per attention layer, target first (num_blocks 0: sized later)."""
    assert pair.target is not None and pair.draft is not None
    target = [_side_layout(pair.target, block_size, dtype)] * pair.target.geometry.num_hidden_layers
    draft = [_side_layout(pair.draft, block_size, dtype)] * draft_layer_count(pair, framework)
    return target + draft
