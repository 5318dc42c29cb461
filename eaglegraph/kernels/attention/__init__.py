"""Causal paged attention over the metadata layouts vLLM's backends use.

One entry point, :func:`paged_attention`, takes the batch's :class:`PagedMeta` and launches the
kernel its layout needs; a caller builds the meta once per batch with one of the builders:

* flash-attn style (:func:`block_table_meta`): ``query_start_loc``, ``seq_lens`` and a block
  table; only query rows below ``query_start_loc[num_reqs]`` are processed, so padded tokens
  are ignored.
* FlashInfer style (:func:`csr_meta`, :func:`csr_decode_meta`): CSR
  ``kv_indptr``/``kv_indices``/``last_page_len``. Decode takes its batch size from the number
  of query rows and assumes one token per request, which is what makes a PIECEWISE draft
  decode read stale ``kv_indptr[num_reqs+1:]`` / ``last_page_len[num_reqs:]`` (hazard
  ``piecewise-draft-decode``).

A launch is logged and reported under the name of the layout's kernel role
(``"varlen_paged_attention"``, ``"csr_paged_prefill"``, ``"csr_paged_decode"``).

Programs are per (request or decode row, kv head[, query block]): the query heads sharing a
kv head (GQA) are rows of one tile, so each K/V block is loaded once per group and scored
with ``tl.dot``. Under the CPU interpreter, where a program costs ~0.1 ms per executed
operation whatever its tile size, tiles grow to cover a short request in one step and one
program takes every kv head (see ``tiles.prefill_tiles``).

The guards check every metadata entry and page id a program reads (see ``guard.py``). Each
entry is logged by exactly one program (the first kv-head program; for the query-start/indptr
arrays entry ``r+1`` by request ``r`` and entry 0 by request 0; pages by the query block that
reads the most of them, once per page), so a replay logs each bad value once, while every
program applies the fallback: a request with bad metadata is skipped (its output rows are
left untouched) and a bad page's tokens are masked out of the softmax.

Accumulation is fp32 with an online softmax over ``BLOCK_N`` tokens at a time. Output rows
with nothing to attend (empty KV) are written as zeros.

Layout: ``paged.py`` holds the entry point, ``meta.py`` the metadata builders and checks
(shared with the MLA entry point), ``paged_prefill.py`` the prefill kernel both styles share,
``csr.py`` the decode kernel and the CSR page-list build, ``tiles.py`` shapes, tile sizes and
constants.
"""

from __future__ import annotations

from eaglegraph.kernels.attention.csr import build_csr_page_indices
from eaglegraph.kernels.attention.meta import (
    PagedLayout,
    PagedMeta,
    block_table_meta,
    csr_decode_meta,
    csr_meta,
)
from eaglegraph.kernels.attention.paged import paged_attention
from eaglegraph.kernels.attention.tiles import default_scale

__all__ = [
    "PagedLayout",
    "PagedMeta",
    "block_table_meta",
    "build_csr_page_indices",
    "csr_decode_meta",
    "csr_meta",
    "default_scale",
    "paged_attention",
]
