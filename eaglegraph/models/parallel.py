"""Tensor parallelism for the rig's models, sharded as vLLM and SGLang shard them.

A rank builds the whole model from the same seed or checkpoint as every other rank, then
`shard_model` keeps its slice, as the engines' parallel linears load theirs:
- attention: q heads split over the ranks, KV heads too, or replicated when the TP size
  exceeds them (vLLM `QKVParallelLinear`: each rank keeps head `rank·kv/tp`); o_proj is
  row-parallel, its output all-reduced;
- MLA: q_b and kv_b split by heads, the latent projection (kv_a) replicated (the latent KV
  cache is the same on every rank), o_proj row-parallel;
- dense MLP: gate/up column-parallel, down row-parallel, all-reduced;
- routed experts: split by expert under expert parallelism (each rank computes its own
  experts, the sum is all-reduced: the engines' default all-reduce dispatch), or each
  expert's intermediate split over TP without it; shared experts are TP-sharded and reduced
  together with the routed sum, one all-reduce per MoE layer as the engines do.
Embeddings and LM heads stay replicated (each rank holds the whole vocabulary): the engines'
vocab-parallel split changes memory, not the graphs' collectives pattern of the decoder, and
`pair.rank_sizing` sizes it as the engines do.

Every all-reduce goes through `eaglegraph::tp_all_reduce`, an opaque op (a compiled forward
keeps it as one call, as vLLM's `all_reduce` custom op) that calls the installed
`TensorParallel`: its process group and the observer that records each collective (the
rank runtime's ledger). Without an installed group the sharded model refuses to run.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch import Tensor, nn

from eaglegraph.errors import BadInput
from eaglegraph.models.layers import Attention, GatedMLP
from eaglegraph.models.mla import MLAAttention
from eaglegraph.models.moe import RoutedMoE
from eaglegraph.models.mtp import GatedAttention


class CollectiveLedger(Protocol):
    """What records a rank's collectives (`rig.ledger.Ledger`)."""

    seq: int

    def observe(self, op: str, tensor: Tensor) -> Callable[[], None]: ...

    def scoped(self, label: str) -> contextlib.AbstractContextManager[None]: ...

    def around_replay(self, label: str, collectives: int) -> Callable[[], None] | None: ...


@dataclass
class TensorParallel:
    """This process's place in its tensor-parallel group, and the ledger of its collectives."""

    rank: int
    size: int
    group: Any = None  # a torch.distributed ProcessGroup (None: the default group)
    ledger: CollectiveLedger | None = None

    def all_reduce(self, x: Tensor) -> None:
        import torch.distributed as dist

        done = self.ledger.observe("all_reduce", x) if self.ledger is not None else None
        dist.all_reduce(x, group=self.group)
        if done is not None:
            done()


_INSTALLED: list[TensorParallel] = []


@contextlib.contextmanager
def tensor_parallel(tp: TensorParallel) -> Iterator[TensorParallel]:
    """Install `tp` for the forwards run inside (the rank runtime installs one per process)."""
    _INSTALLED.append(tp)
    try:
        yield tp
    finally:
        _INSTALLED.remove(tp)


def installed() -> TensorParallel | None:
    return _INSTALLED[-1] if _INSTALLED else None


def _ledger() -> CollectiveLedger | None:
    return _INSTALLED[-1].ledger if _INSTALLED else None


def collective_scope(label: str | Callable[[], str]) -> contextlib.AbstractContextManager[None]:
    """Collectives issued inside are recorded as running in `label` (a phase and its graph,
    or a callable making it, called only when a ledger records); a no-op without an installed
    ledger (single-rank runs pay one list test)."""
    ledger = _ledger()
    if ledger is None:
        return contextlib.nullcontext()
    return ledger.scoped(label if isinstance(label, str) else label())


def collectives_issued() -> int:
    """How many collectives this rank has recorded so far (0 without a ledger)."""
    ledger = _ledger()
    return ledger.seq if ledger is not None else 0


@contextlib.contextmanager
def replay_watch(label: str, collectives: int) -> Iterator[bool]:
    """Around a replay that runs `collectives` captured collectives no Python sees: recorded
    as one ledger entry whose end is written once the replay finished (a stuck peer leaves
    it open). Yields whether to replay (False only where a test planted a skipped replay). A
    no-op when nothing is recorded or the graph holds no collective."""
    ledger = _ledger()
    if ledger is None or not collectives:
        yield True
        return
    done = ledger.around_replay(label, collectives)
    yield done is not None
    if done is not None:
        done()


@torch.library.custom_op("eaglegraph::tp_all_reduce", mutates_args=("x",))
def tp_all_reduce(x: Tensor) -> None:
    """Sum `x` over the tensor-parallel group, in place."""
    if not _INSTALLED:
        raise RuntimeError("a tensor-parallel model ran with no process group installed")
    _INSTALLED[-1].all_reduce(x)


@tp_all_reduce.register_fake
def _tp_all_reduce_fake(x: Tensor) -> None:
    return None


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


def shard_models(
    models: Iterable[Any], rank: int, size: int, *, expert_parallel: bool = False
) -> int:
    """Keep rank `rank` of `size`'s slice of every parallel layer of `models` (a target and
    its draft: a layer they share is sharded once), and all-reduce each row-parallel output;
    returns how many all-reduces one forward of all of them issues."""
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
