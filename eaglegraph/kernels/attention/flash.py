"""Flash-attn style metadata: ``query_start_loc``, ``seq_lens`` and a block table; only query
rows below ``query_start_loc[num_reqs]`` are processed, so padded tokens are ignored."""

from __future__ import annotations

import torch

from eaglegraph.kernels._triton import check_device
from eaglegraph.kernels.attention.meta import block_table_meta
from eaglegraph.kernels.attention.paged_prefill import launch_prefill
from eaglegraph.kernels.guard import Guard


def varlen_paged_attention(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    out: torch.Tensor,
    query_start_loc: torch.Tensor,
    seq_lens: torch.Tensor,
    block_table: torch.Tensor,
    num_reqs: int,
    max_query_len: int,
    scale: float,
    guard: Guard | None = None,
    causal: bool = True,
) -> None:
    """Flash-attn style causal paged attention (varlen queries, block table).

    Request ``r`` owns query rows ``[qsl[r], qsl[r+1])``; its query ``i`` sits at position
    ``seq_lens[r] - q_len + i`` and attends KV positions up to it, read through
    ``block_table[r, pos // block_size]``. Rows outside every request (padding past
    ``qsl[num_reqs]``) are never touched, like FA's varlen kernels. ``max_query_len`` only
    sizes the grid; rows of a request beyond it are not computed.

    Guard roles: ``"query_start_loc"`` (monotone, in ``[0, q.shape[0]]``), ``"seq_lens"``
    (``q_len <= seq_len <= n_cols * block_size``), ``"block_table"`` (each block id read in
    ``[0, num_blocks)``; row = ``r * n_cols + j``).
    """
    check_device(q, k_cache, v_cache, out, query_start_loc, seq_lens, block_table)
    meta = block_table_meta(query_start_loc, seq_lens, block_table, num_reqs)
    kernel = "varlen_paged_attention"
    launch_prefill(q, k_cache, v_cache, out, meta, max_query_len, scale, kernel, guard, causal)
