"""The one entry point of paged attention: a batch's :class:`PagedMeta` picks the kernel.

A caller builds the meta once per batch (``meta.py``: a block table, CSR prefill lists or a
CSR decode) and every layer hands it here with its own ``q``/caches/``out``; the prefill
kernel serves the block-table and CSR prefill layouts, the decode kernel the CSR decode one.
"""

from __future__ import annotations

import torch

from eaglegraph.kernels._triton import check_device
from eaglegraph.kernels.attention.csr import launch_decode
from eaglegraph.kernels.attention.meta import PagedLayout, PagedMeta
from eaglegraph.kernels.attention.paged_prefill import launch_prefill
from eaglegraph.kernels.attention.tiles import check_attention_shapes
from eaglegraph.kernels.guard import Guard

# The name a launch is logged and reported under, by layout (``guard.KERNEL_NAMES``): guard
# logs, run files and findings carry it, so it stays what the entry points were once called.
_KERNEL_NAMES: dict[PagedLayout, str] = {
    PagedLayout.BLOCK_TABLE: "varlen_paged_attention",
    PagedLayout.CSR: "csr_paged_prefill",
    PagedLayout.CSR_DECODE: "csr_paged_decode",
}


def paged_attention(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    out: torch.Tensor,
    meta: PagedMeta,
    *,
    max_query_len: int,
    scale: float,
    guard: Guard | None = None,
    causal: bool = True,
) -> None:
    """Causal paged attention of ``q`` over the caches, written to ``out``, for ``meta``'s batch.

    Block table (flash-attn): request ``r`` owns query rows ``[qsl[r], qsl[r+1])``; its query
    ``i`` sits at position ``seq_lens[r] - q_len + i`` and attends KV positions up to it, read
    through ``block_table[r, pos // block_size]``. Rows past ``qsl[num_reqs]`` are never
    touched, like FA's varlen kernels. CSR prefill (FlashInfer): queries are rows
    ``[qo_indptr[r], qo_indptr[r+1])``, pages ``kv_indices[kv_indptr[r]:kv_indptr[r+1]]``, KV
    length ``(n_pages - 1) * block_size + last_page_len[r]`` (0 without pages); queries sit at
    the end of the KV range. ``max_query_len`` only sizes the grid: rows of a request beyond
    it are not computed. ``causal=False``: every query row attends its request's whole KV
    (DFlash blocks).

    CSR decode: row ``b`` (one query each, ``num_reqs`` rows) attends all of its pages.
    Because the batch size is the (possibly padded) token count, rows past the real request
    count read whatever ``kv_indptr``/``last_page_len`` hold there — the
    ``piecewise-draft-decode`` hazard's stale read. ``max_query_len`` and ``causal`` do not
    apply (a single query at the end of its KV attends all of it either way).

    Guard roles (the meta's builder names them): ``"query_start_loc"``/``"qo_indptr"``
    (monotone, in ``[0, q.shape[0]]``), ``"seq_lens"`` (``q_len <= seq_len <= n_cols *
    block_size``), ``"block_table"`` (block ids in ``[0, num_blocks)``; row = ``r * n_cols +
    j``), ``"kv_indptr"`` (monotone, in ``[0, kv_indices.numel()]``), ``"last_page_len"``
    (``1..block_size`` when the request has pages), ``"kv_indices"`` (page ids in
    ``[0, num_blocks)``).
    """
    check_device(q, k_cache, v_cache, out, *meta.tensors)
    meta.check_query_rows(q.shape[0])
    ops = check_attention_shapes(q, k_cache, v_cache, out)
    kernel = _KERNEL_NAMES[meta.layout]
    if meta.decode:
        launch_decode(ops, meta, scale, kernel, guard)
    else:
        launch_prefill(ops, meta, max_query_len, scale, kernel, guard, causal)
