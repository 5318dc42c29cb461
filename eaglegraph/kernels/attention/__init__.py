"""Causal paged attention in the two metadata styles vLLM's backends use.

* flash-attn style (:func:`varlen_paged_attention`): ``query_start_loc``, ``seq_lens`` and a
  block table; only query rows below ``query_start_loc[num_reqs]`` are processed, so padded
  tokens are ignored.
* FlashInfer style (:func:`csr_paged_prefill`, :func:`csr_paged_decode`): CSR
  ``kv_indptr``/``kv_indices``/``last_page_len``. Decode takes its batch size from the number of
  query rows and assumes one token per request, which is what makes a PIECEWISE draft decode read
  stale ``kv_indptr[num_reqs+1:]`` / ``last_page_len[num_reqs:]`` (hazard
  ``piecewise-draft-decode``).

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

Layout: ``flash.py`` and ``csr.py`` hold each style's entry points, ``meta.py`` their
metadata checks (shared with the MLA wrappers), ``paged_prefill.py`` the prefill kernel both
share, ``tiles.py`` shapes, tile sizes and constants.
"""

from __future__ import annotations

from eaglegraph.kernels.attention.csr import (
    build_csr_page_indices,
    csr_paged_decode,
    csr_paged_prefill,
)
from eaglegraph.kernels.attention.flash import varlen_paged_attention
from eaglegraph.kernels.attention.tiles import default_scale

__all__ = [
    "build_csr_page_indices",
    "csr_paged_decode",
    "csr_paged_prefill",
    "default_scale",
    "varlen_paged_attention",
]
