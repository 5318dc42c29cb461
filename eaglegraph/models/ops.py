"""The models' Triton kernels as torch custom ops, so torch.compile can trace a whole forward.

vLLM compiles its models with torch.compile/Inductor and splits the graph at attention, which
is an opaque custom op; the compiled pieces' buffers are what fill its CUDA-graph pool. Here
the embedding gather, RoPE and attention are custom ops that mutate their outputs in place:
eagerly they cost one dispatch each, and under torch.compile Dynamo traces the forward into
one graph (no graph breaks, one compilation for every num_tokens) with these three as calls.
Attention runs whatever callable `attention_through(fn)` installed for the forward, so the
rig's runtime, its capture break hook and skip flag work inside compiled code unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
from torch import Tensor

from eaglegraph.kernels.embedding import embedding_lookup
from eaglegraph.kernels.rope import apply_rotary

_ATTENTION: list[Callable[[int, Tensor, Tensor, Tensor, Tensor], None]] = []


@torch.library.custom_op("eaglegraph::embedding", mutates_args=("out",))
def embedding(weight: Tensor, ids: Tensor, out: Tensor) -> None:
    """`out[t] = weight[ids[t]]` (NaN rows for bad ids), as `embedding_lookup`."""
    embedding_lookup(weight, ids, out, ids.shape[0])


@embedding.register_fake
def _embedding_fake(weight: Tensor, ids: Tensor, out: Tensor) -> None:
    return None


@torch.library.custom_op("eaglegraph::rotary", mutates_args=("q", "k"))
def rotary(q: Tensor, k: Tensor, positions: Tensor, cos_sin_cache: Tensor) -> None:
    """RoPE on q and k in place, as `apply_rotary` over all their rows."""
    apply_rotary(q, k, positions, cos_sin_cache, q.shape[0])


@rotary.register_fake
def _rotary_fake(q: Tensor, k: Tensor, positions: Tensor, cos_sin_cache: Tensor) -> None:
    return None


@torch.library.custom_op("eaglegraph::attention", mutates_args=("out",))
def attention(q: Tensor, k: Tensor, v: Tensor, out: Tensor, layer: int) -> None:
    """The installed attention callable; the point where a compiled forward splits."""
    if not _ATTENTION:
        raise RuntimeError("eaglegraph::attention called outside attention_through()")
    _ATTENTION[-1](layer, q, k, v, out)


@attention.register_fake
def _attention_fake(q: Tensor, k: Tensor, v: Tensor, out: Tensor, layer: int) -> None:
    return None


def attention_op(layer: int, q: Tensor, k: Tensor, v: Tensor, out: Tensor) -> None:
    """An AttentionFn that goes through the custom op (what a compiled forward is given)."""
    torch.ops.eaglegraph.attention(q, k, v, out, layer)


@contextmanager
def attention_through(
    fn: Callable[[int, Tensor, Tensor, Tensor, Tensor], None],
) -> Iterator[None]:
    """Route `eaglegraph::attention` to `fn` for the duration of one forward."""
    _ATTENTION.append(fn)
    try:
        yield
    finally:
        _ATTENTION.pop()
