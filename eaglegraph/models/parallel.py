"""Tensor parallelism for the rig's models, sharded as vLLM and SGLang shard them.

A rank builds the whole model from the same seed or checkpoint as every other rank, then
`shard_models` keeps its slice, as the engines' parallel linears load theirs:
- attention: q heads split over the ranks, KV heads too, or replicated when the TP size
  exceeds them (vLLM `QKVParallelLinear`: each rank keeps head `rank·kv/tp`); o_proj is
  row-parallel, its output all-reduced;
- MLA: q_b and kv_b split by heads, the latent projection (kv_a) replicated (the latent KV
  cache is the same on every rank), o_proj row-parallel;
- dense MLP: gate/up column-parallel, down row-parallel, all-reduced;
- routed experts: split by expert under expert parallelism (each rank computes its own
  experts, the sum is all-reduced: the engines' default all-reduce dispatch), or each
  expert's intermediate split over TP without it; shared experts are TP-sharded and reduced
  together with the routed sum, one all-reduce per MoE layer as the engines do;
- embeddings and LM heads: split by vocabulary rows, padded as the engines pad
  (`models.vocab`): the embedding's masked lookup is all-reduced, the head's logits are
  all-gathered (`head_logits`). A draft that shares the target's embedding or head shares
  the one sharded module; a tied head is the sharded embedding weight.

Every collective goes through one op of `models.collectives` (`eaglegraph::tp_all_reduce`,
`eaglegraph::tp_all_gather`), which calls the installed `TensorParallel`: its process group
and the ledger that records each collective. Without an installed group the sharded model
refuses to run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor, nn

from eaglegraph.errors import BadInput
from eaglegraph.models.collectives import (
    CollectiveLedger,
    TensorParallel,
    collective_scope,
    collectives_issued,
    installed,
    replay_watch,
    tensor_parallel,
    tp_all_gather,
    tp_all_reduce,
)
from eaglegraph.models.layers import Attention, GatedMLP, VocabEmbedding
from eaglegraph.models.mla import MLAAttention
from eaglegraph.models.moe import RoutedMoE
from eaglegraph.models.mtp import GatedAttention
from eaglegraph.models.vocab import shard_embedding, shard_rows, vocab_shard

__all__ = [  # the collectives, re-exported for the rig that installs and scopes them
    "CollectiveLedger",
    "TensorParallel",
    "collective_scope",
    "collectives_issued",
    "installed",
    "replay_watch",
    "shard_models",
    "tensor_parallel",
    "tp_all_gather",
    "tp_all_reduce",
]

# Attributes that hold an LM head weight (`[vocab, H]`) of its own: a target's or a draft's
# `lm_head`, an MTP module's `head`; None where the head is another module's (tied, shared).
HEAD_ATTRIBUTES = ("lm_head", "head")


def _reduce_output(module: nn.Module, inputs: Any, output: Tensor) -> Tensor:
    torch.ops.eaglegraph.tp_all_reduce(output)
    return output


def _rows(t: Tensor, index: Tensor) -> nn.Parameter:
    return nn.Parameter(t.index_select(0, index.to(t.device)).contiguous(), requires_grad=False)


def _cols(t: Tensor, index: Tensor) -> nn.Parameter:
    return nn.Parameter(t.index_select(1, index.to(t.device)).contiguous(), requires_grad=False)


def _block(first: int, count: int, width: int) -> Tensor:
    """Rows `[first·width, (first+count)·width)`: `count` heads (or experts) of `width` rows."""
    return torch.arange(first * width, (first + count) * width)


def _split(total: int, rank: int, size: int, what: str) -> tuple[int, int]:
    if total % size:
        raise BadInput(f"{what} ({total}) is not divisible by the tensor-parallel size {size}")
    per = total // size
    return rank * per, per


def kv_heads_per_rank(num_kv_heads: int, size: int) -> int:
    """KV heads one rank holds: split, or one replicated head when TP exceeds them."""
    return max(1, num_kv_heads // size)


def _kv_first(num_kv_heads: int, rank: int, size: int) -> int:
    if num_kv_heads >= size:
        return _split(num_kv_heads, rank, size, "KV heads")[0]
    if size % num_kv_heads:
        raise BadInput(
            f"the tensor-parallel size {size} is not a multiple of the {num_kv_heads} KV heads"
        )
    return rank * num_kv_heads // size


def _shard_attention(attn: Attention | GatedAttention, rank: int, size: int) -> None:
    s = attn.spec
    hd = s.head_dim
    q0, nq = _split(s.num_heads, rank, size, "attention heads")
    kv0, nkv = _kv_first(s.num_kv_heads, rank, size), kv_heads_per_rank(s.num_kv_heads, size)
    gated = isinstance(attn, GatedAttention) and attn.gate
    q_rows_total = s.q_width * (2 if gated else 1)
    q = _block(q0, nq, 2 * hd if gated else hd)
    k = q_rows_total + _block(kv0, nkv, hd)
    v = q_rows_total + s.kv_width + _block(kv0, nkv, hd)
    index = torch.cat([q, k, v])
    attn.qkv_weight = _rows(attn.qkv_weight, index)
    bias = getattr(attn, "qkv_bias", None)
    if bias is not None:
        attn.qkv_bias = _rows(bias, index)
    attn.o_weight = _cols(attn.o_weight, _block(q0, nq, hd))
    o_bias = getattr(attn, "o_bias", None)
    if o_bias is not None and rank:
        o_bias.data.zero_()  # row-parallel: the bias is added once, after the sum
    attn.spec = dataclasses.replace(s, num_heads=nq, num_kv_heads=nkv)


def _shard_mla(attn: MLAAttention, rank: int, size: int) -> None:
    m = attn.mla
    h0, nh = _split(attn.num_heads, rank, size, "attention heads")
    attn.q_b_weight = _rows(attn.q_b_weight, _block(h0, nh, m.qk_head_dim))
    attn.kv_b_weight = _rows(attn.kv_b_weight, _block(h0, nh, m.qk_nope_head_dim + m.v_head_dim))
    attn.o_weight = _cols(attn.o_weight, _block(h0, nh, m.v_head_dim))
    attn.num_heads = nh


def _shard_mlp(mlp: GatedMLP, rank: int, size: int) -> None:
    inter = mlp.down_weight.shape[1]
    i0, ni = _split(inter, rank, size, "the MLP's intermediate size")
    gate_up = torch.cat([_block(i0, ni, 1), inter + _block(i0, ni, 1)])
    mlp.gate_up_weight = _rows(mlp.gate_up_weight, gate_up)
    if mlp.gate_up_bias is not None:
        mlp.gate_up_bias = _rows(mlp.gate_up_bias, gate_up)
    mlp.down_weight = _cols(mlp.down_weight, _block(i0, ni, 1))
    if mlp.down_bias is not None and rank:
        mlp.down_bias.data.zero_()


def _shard_moe(moe: RoutedMoE, rank: int, size: int, expert_parallel: bool) -> None:
    experts, inter = moe.gate_up.shape[0], moe.down.shape[2]
    if expert_parallel:
        e0, ne = _split(experts, rank, size, "routed experts")
        moe.gate_up = _rows(moe.gate_up, _block(e0, ne, 1))
        moe.down = _rows(moe.down, _block(e0, ne, 1))
        moe.first_expert = e0
    else:
        i0, ni = _split(inter, rank, size, "the experts' intermediate size")
        rows = torch.cat([_block(i0, ni, 1), inter + _block(i0, ni, 1)])
        moe.gate_up = nn.Parameter(moe.gate_up[:, rows.to(moe.gate_up.device)].contiguous(), False)
        moe.down = nn.Parameter(moe.down[:, :, _block(i0, ni, 1)].contiguous(), False)
    if moe.shared is not None:
        _shard_mlp(moe.shared, rank, size)


def _shard_heads(module: nn.Module, rank: int, size: int) -> None:
    """Split the LM head weights `module` holds itself by vocabulary rows."""
    for name in HEAD_ATTRIBUTES:
        weight = getattr(module, name, None)
        if isinstance(weight, nn.Parameter) and weight.dim() == 2:
            setattr(module, name, shard_rows(weight, vocab_shard(weight.shape[0], rank, size)))


def shard_models(
    models: Iterable[Any], rank: int, size: int, *, expert_parallel: bool = False
) -> int:
    """Keep rank `rank` of `size`'s slice of every parallel layer of `models` (a target and
    its draft: a layer they share is sharded once), all-reduce each row-parallel output and
    each embedding lookup, all-gather each head's logits; returns how many modules
    all-reduce once per call (the heads' gathers run outside the forwards)."""
    if size == 1:
        return 0
    roots = [m for m in models if isinstance(m, nn.Module)]  # a Draft is typed as a protocol
    modules = list({id(m): m for model in roots for m in model.modules()}.values())
    reduced = 0
    inside_moe: set[int] = set()
    for module in modules:
        if isinstance(module, RoutedMoE):
            _shard_moe(module, rank, size, expert_parallel)
            if module.shared is not None:
                inside_moe.add(id(module.shared))
            module.register_forward_hook(_reduce_output)
            reduced += 1
    for module in modules:
        _shard_heads(module, rank, size)
        if isinstance(module, VocabEmbedding):
            shard_embedding(module, rank, size)  # reduces in its own forward
            reduced += 1
            continue
        if isinstance(module, (Attention, GatedAttention)):
            _shard_attention(module, rank, size)
        elif isinstance(module, MLAAttention):
            _shard_mla(module, rank, size)
        elif isinstance(module, GatedMLP) and id(module) not in inside_moe:
            _shard_mlp(module, rank, size)
        else:
            continue
        module.register_forward_hook(_reduce_output)
        reduced += 1
    return reduced
