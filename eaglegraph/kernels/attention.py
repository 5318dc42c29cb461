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
program takes every kv head (see ``_prefill_tiles``).

The guards check every metadata entry and page id a program reads (see ``guard.py``). Each
entry is logged by exactly one program (the first kv-head program; for the query-start/indptr
arrays entry ``r+1`` by request ``r`` and entry 0 by request 0; pages by the query block that
reads the most of them, once per page), so a replay logs each bad value once, while every
program applies the fallback: a request with bad metadata is skipped (its output rows are
left untouched) and a bad page's tokens are masked out of the softmax.

Accumulation is fp32 with an online softmax over ``BLOCK_N`` tokens at a time. Output rows
with nothing to attend (empty KV) are written as zeros.
"""

from __future__ import annotations

import math

import torch

from eaglegraph.kernels._triton import (
    check_device,
    interpreting,
    next_pow2,
    reduce_max,
    reduce_sum,
    rows_per_program,
    tl,
    triton,
)
from eaglegraph.kernels.guard import Guard, check_bounds_pair, guard_args, log_violation

__all__ = [
    "build_csr_page_indices",
    "csr_paged_decode",
    "csr_paged_prefill",
    "default_scale",
    "varlen_paged_attention",
]

_LOG2E = 1.4426950408889634


@triton.jit
def _paged_prefill_kernel(
    q_ptr,
    k_cache_ptr,
    v_cache_ptr,
    out_ptr,
    qo_ptr,  # query_start_loc / qo_indptr [R+1]
    len_ptr,  # flash-attn: seq_lens [R]; CSR: last_page_len [R]
    pages_ptr,  # flash-attn: block_table [R, n_cols]; CSR: kv_indices [max_pages]
    kv_indptr_ptr,  # CSR only: kv_indptr [R+1]
    num_q_rows,
    num_blocks,
    pages_extent,  # flash-attn: n_cols (block-table width); CSR: kv_indices.numel()
    bt_stride,
    stride_qt,
    stride_qh,
    stride_ot,
    stride_oh,
    stride_kb,
    stride_ko,
    stride_kh,
    stride_vb,
    stride_vo,
    stride_vh,
    qk_scale,
    head_dim,
    log_entries_ptr,
    log_count_ptr,
    log_capacity,
    kernel_id,
    qo_id,
    len_id,
    pages_id,
    kv_indptr_id,
    CSR: tl.constexpr,
    PAGE_SIZE: tl.constexpr,
    GROUP: tl.constexpr,  # query heads per kv head
    GROUP_P2: tl.constexpr,  # next_pow2(GROUP)
    KV_HEADS: tl.constexpr,  # kv heads per program: 1 compiled (see _prefill_tiles)
    BLOCK_M: tl.constexpr,  # query tokens per program
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
    DOT_F32: tl.constexpr,
    GUARD: tl.constexpr,
):
    # One program per (request, kv head, query block): the GROUP query heads sharing a kv
    # head are rows of one tile, so every K/V block is loaded once per group, not once per
    # query head. Rows are token-major: row i is token i // (KV_HEADS * GROUP_P2), kv head
    # (i // GROUP_P2) % KV_HEADS, query head i % GROUP_P2 of that kv head's group.
    r = tl.program_id(0)
    kvh0 = tl.program_id(1) * KV_HEADS
    mb = tl.program_id(2)

    qs = tl.load(qo_ptr + r)
    qe = tl.load(qo_ptr + r + 1)
    q_len = qe - qs
    if CSR:
        ks = tl.load(kv_indptr_ptr + r)
        ke = tl.load(kv_indptr_ptr + r + 1)
        n_pages = ke - ks
        lpl = tl.load(len_ptr + r)
        kv_len = tl.where(n_pages > 0, (n_pages - 1) * PAGE_SIZE + lpl, 0)
        page_base = pages_ptr + ks.to(tl.int64)
    else:
        kv_len = tl.load(len_ptr + r)
        page_base = pages_ptr + r.to(tl.int64) * bt_stride
    active = q_len > 0

    if GUARD:
        # Metadata entries are logged by the first program of each request only.
        first = (kvh0 == 0) & (mb == 0)
        bad_qs, bad_qe = check_bounds_pair(qs, qe, num_q_rows)
        meta_ok = ~bad_qs & ~bad_qe
        if CSR:
            bad_ks, bad_ke = check_bounds_pair(ks, ke, pages_extent)
            kv_ok = ~bad_ks & ~bad_ke
            bad_len = (lpl < 0) | (lpl > PAGE_SIZE) | (kv_ok & (n_pages > 0) & (lpl < 1))
            len_value = lpl
            meta_ok = meta_ok & kv_ok & ~bad_len
        else:
            bad_len = (
                (kv_len < 0) | (kv_len > pages_extent * PAGE_SIZE) | (meta_ok & (kv_len < q_len))
            )
            len_value = kv_len
            meta_ok = meta_ok & ~bad_len
        if first & ~meta_ok:  # valid metadata (the common case) calls no logger
            log_violation(
                log_entries_ptr, log_count_ptr, log_capacity, kernel_id, qo_id, r, qs,
                (r == 0) & bad_qs,
            )  # fmt: skip
            log_violation(
                log_entries_ptr, log_count_ptr, log_capacity, kernel_id, qo_id, r + 1, qe, bad_qe
            )
            log_violation(
                log_entries_ptr, log_count_ptr, log_capacity, kernel_id, len_id, r, len_value,
                bad_len,
            )  # fmt: skip
            if CSR:
                log_violation(
                    log_entries_ptr, log_count_ptr, log_capacity, kernel_id, kv_indptr_id, r, ks,
                    (r == 0) & bad_ks,
                )  # fmt: skip
                log_violation(
                    log_entries_ptr, log_count_ptr, log_capacity, kernel_id, kv_indptr_id, r + 1,
                    ke, bad_ke,
                )  # fmt: skip
        active = active & meta_ok
        # The last query block of a request reads every page the request's blocks read.
        log_pages = (kvh0 == 0) & (mb == (q_len - 1) // BLOCK_M)

    m_start = mb * BLOCK_M
    offs_r = tl.arange(0, BLOCK_M * KV_HEADS * GROUP_P2)
    offs_m = m_start + offs_r // (KV_HEADS * GROUP_P2)  # token within the request
    kv_row = kvh0 + (offs_r // GROUP_P2) % KV_HEADS
    head = kv_row * GROUP + offs_r % GROUP_P2
    row_ok = offs_m < tl.where(active, q_len, 0)
    if GROUP != GROUP_P2:
        row_ok = row_ok & (offs_r % GROUP_P2 < GROUP)
    rows = (qs + offs_m).to(tl.int64)
    if KV_HEADS == 1:
        offs_d = tl.arange(0, BLOCK_D)
        kv_off = kvh0 * stride_kh + offs_d
        vv_off = kvh0 * stride_vh + offs_d
        q_mask = row_ok[:, None] & (offs_d < head_dim)[None, :]
    else:
        # Several kv heads side by side along the columns; each row's q is zero outside its
        # own kv head's columns (block-diagonal), so one dot scores every head at once.
        offs_c = tl.arange(0, KV_HEADS * BLOCK_D)
        offs_d = offs_c % BLOCK_D
        kv_col = kvh0 + offs_c // BLOCK_D
        kv_off = kv_col * stride_kh + offs_d
        vv_off = kv_col * stride_vh + offs_d
        q_mask = row_ok[:, None] & (offs_d < head_dim)[None, :]
        q_mask = q_mask & (kv_row[:, None] == kv_col[None, :])
    d_ok = offs_d < head_dim
    q = tl.load(
        q_ptr + rows[:, None] * stride_qt + head[:, None] * stride_qh + offs_d[None, :],
        mask=q_mask,
        other=0.0,
    )
    if DOT_F32:
        q = q.to(tl.float32)
    # Causal: query row i sits at position kv_len - q_len + i.
    q_pos = kv_len - q_len + offs_m
    kv_hi = tl.minimum(kv_len, kv_len - q_len + m_start + BLOCK_M)
    kv_hi = tl.where(active & (m_start < q_len), kv_hi, 0)
    k_base = k_cache_ptr + kv_off[None, :]
    v_base = v_cache_ptr + vv_off[None, :]

    m_i = tl.full([BLOCK_M * KV_HEADS * GROUP_P2], float("-inf"), tl.float32)
    l_i = tl.full([BLOCK_M * KV_HEADS * GROUP_P2], 0.0, tl.float32)
    acc = tl.full([BLOCK_M * KV_HEADS * GROUP_P2, KV_HEADS * BLOCK_D], 0.0, tl.float32)
    for start in range(0, kv_hi, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        n_ok = offs_n < kv_hi
        page_idx = offs_n // PAGE_SIZE
        page = tl.load(page_base + page_idx, mask=n_ok, other=0).to(tl.int64)
        if GUARD:
            bad_page = n_ok & ((page < 0) | (page >= num_blocks))
            if log_pages & (reduce_max(bad_page.to(tl.int32), 0) > 0):
                page_row = ks + page_idx if CSR else r * pages_extent + page_idx
                log_violation(
                    log_entries_ptr, log_count_ptr, log_capacity, kernel_id, pages_id, page_row,
                    page, bad_page & (offs_n % PAGE_SIZE == 0),
                )  # fmt: skip
            n_ok = n_ok & ~bad_page
        slot_off = (offs_n % PAGE_SIZE)[:, None]
        kv_mask = n_ok[:, None] & d_ok[None, :]
        k = tl.load(
            k_base + page[:, None] * stride_kb + slot_off * stride_ko, mask=kv_mask, other=0.0
        )
        v = tl.load(
            v_base + page[:, None] * stride_vb + slot_off * stride_vo, mask=kv_mask, other=0.0
        )
        if DOT_F32:
            s = tl.dot(q, tl.trans(k.to(tl.float32)), input_precision="ieee")
        else:
            s = tl.dot(q, tl.trans(k))
        allowed = n_ok[None, :] & (offs_n[None, :] <= q_pos[:, None])
        s = tl.where(allowed, s * qk_scale, float("-inf"))
        m_new = tl.maximum(m_i, reduce_max(s, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.exp2(s - m_safe[:, None])
        alpha = tl.exp2(m_i - m_safe)
        l_i = l_i * alpha + reduce_sum(p, 1)
        if DOT_F32:
            pv = tl.dot(p, v.to(tl.float32), input_precision="ieee")
        else:
            pv = tl.dot(p.to(v.dtype), v)
        acc = acc * alpha[:, None] + pv
        m_i = m_new

    o = acc / tl.where(l_i > 0.0, l_i, 1.0)[:, None]
    tl.store(
        out_ptr + rows[:, None] * stride_ot + head[:, None] * stride_oh + offs_d[None, :],
        o.to(out_ptr.dtype.element_ty),
        mask=q_mask,
    )


@triton.jit
def _csr_decode_kernel(
    q_ptr,
    k_cache_ptr,
    v_cache_ptr,
    out_ptr,
    kv_indptr_ptr,
    kv_indices_ptr,
    lpl_ptr,
    num_indices,
    num_blocks,
    stride_qt,
    stride_qh,
    stride_ot,
    stride_oh,
    stride_kb,
    stride_ko,
    stride_kh,
    stride_vb,
    stride_vo,
    stride_vh,
    qk_scale,
    head_dim,
    log_entries_ptr,
    log_count_ptr,
    log_capacity,
    kernel_id,
    kv_indptr_id,
    lpl_id,
    kv_indices_id,
    PAGE_SIZE: tl.constexpr,
    GROUP: tl.constexpr,  # query heads per kv head
    GROUP_P2: tl.constexpr,  # next_pow2(GROUP)
    KV_HEADS: tl.constexpr,  # kv heads per program: 1 compiled (see _decode_tiles)
    BLOCK_H: tl.constexpr,  # tile rows: KV_HEADS * GROUP_P2, at least 16 for tl.dot
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
    DOT_F32: tl.constexpr,
    GUARD: tl.constexpr,
):
    # One program per (row, kv head): the GROUP query heads of the kv head are the rows of a
    # [BLOCK_H, BLOCK_D] tile, so K/V pages are read once per group and scores are a tl.dot.
    # Row i is query head i % GROUP_P2 of kv head i // GROUP_P2 (rows past the heads are
    # padding); several kv heads per program work as in the prefill kernel.
    b = tl.program_id(0)
    kvh0 = tl.program_id(1) * KV_HEADS

    ks = tl.load(kv_indptr_ptr + b)
    ke = tl.load(kv_indptr_ptr + b + 1)
    lpl = tl.load(lpl_ptr + b)
    n_pages = ke - ks
    kv_len = tl.where(n_pages > 0, (n_pages - 1) * PAGE_SIZE + lpl, 0)
    if GUARD:
        first = kvh0 == 0
        bad_ks, bad_ke = check_bounds_pair(ks, ke, num_indices)
        kv_ok = ~bad_ks & ~bad_ke
        bad_lpl = (lpl < 0) | (lpl > PAGE_SIZE) | (kv_ok & (n_pages > 0) & (lpl < 1))
        if first & (~kv_ok | bad_lpl):  # valid metadata (the common case) calls no logger
            log_violation(
                log_entries_ptr, log_count_ptr, log_capacity, kernel_id, kv_indptr_id, b, ks,
                (b == 0) & bad_ks,
            )  # fmt: skip
            log_violation(
                log_entries_ptr, log_count_ptr, log_capacity, kernel_id, kv_indptr_id, b + 1, ke,
                bad_ke,
            )  # fmt: skip
            log_violation(
                log_entries_ptr, log_count_ptr, log_capacity, kernel_id, lpl_id, b, lpl, bad_lpl
            )
        active = kv_ok & ~bad_lpl
        kv_hi = tl.where(active, kv_len, 0)
        n_rows = tl.where(active, KV_HEADS * GROUP_P2, 0)  # bad metadata: row untouched
    else:
        kv_hi = kv_len
        n_rows = KV_HEADS * GROUP_P2

    offs_h = tl.arange(0, BLOCK_H)
    kv_row = kvh0 + offs_h // GROUP_P2
    h_ok = offs_h < n_rows
    if GROUP != GROUP_P2:
        h_ok = h_ok & (offs_h % GROUP_P2 < GROUP)
    if KV_HEADS == 1:
        offs_d = tl.arange(0, BLOCK_D)
        kv_off = kvh0 * stride_kh + offs_d
        vv_off = kvh0 * stride_vh + offs_d
        q_mask = h_ok[:, None] & (offs_d < head_dim)[None, :]
    else:
        offs_c = tl.arange(0, KV_HEADS * BLOCK_D)
        offs_d = offs_c % BLOCK_D
        kv_col = kvh0 + offs_c // BLOCK_D
        kv_off = kv_col * stride_kh + offs_d
        vv_off = kv_col * stride_vh + offs_d
        q_mask = h_ok[:, None] & (offs_d < head_dim)[None, :]
        q_mask = q_mask & (kv_row[:, None] == kv_col[None, :])
    q_off = (kv_row * GROUP + offs_h % GROUP_P2)[:, None] * stride_qh + offs_d[None, :]
    q = tl.load(q_ptr + b.to(tl.int64) * stride_qt + q_off, mask=q_mask, other=0.0)
    if DOT_F32:
        q = q.to(tl.float32)
    page_base = kv_indices_ptr + ks.to(tl.int64)
    kv_d_ok = (offs_d < head_dim)[None, :]
    k_base = k_cache_ptr + kv_off[None, :]
    v_base = v_cache_ptr + vv_off[None, :]

    m_i = tl.full([BLOCK_H], float("-inf"), tl.float32)
    l_i = tl.full([BLOCK_H], 0.0, tl.float32)
    acc = tl.full([BLOCK_H, KV_HEADS * BLOCK_D], 0.0, tl.float32)
    for start in range(0, kv_hi, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        n_ok = offs_n < kv_hi
        page_idx = offs_n // PAGE_SIZE
        page = tl.load(page_base + page_idx, mask=n_ok, other=0).to(tl.int64)
        if GUARD:
            bad_page = n_ok & ((page < 0) | (page >= num_blocks))
            if first & (reduce_max(bad_page.to(tl.int32), 0) > 0):
                log_violation(
                    log_entries_ptr, log_count_ptr, log_capacity, kernel_id, kv_indices_id,
                    ks + page_idx, page, bad_page & (offs_n % PAGE_SIZE == 0),
                )  # fmt: skip
            n_ok = n_ok & ~bad_page
        slot_off = (offs_n % PAGE_SIZE)[:, None]
        kv_mask = n_ok[:, None] & kv_d_ok
        k = tl.load(
            k_base + page[:, None] * stride_kb + slot_off * stride_ko, mask=kv_mask, other=0.0
        )
        v = tl.load(
            v_base + page[:, None] * stride_vb + slot_off * stride_vo, mask=kv_mask, other=0.0
        )
        if DOT_F32:
            s = tl.dot(q, tl.trans(k.to(tl.float32)), input_precision="ieee")
        else:
            s = tl.dot(q, tl.trans(k))
        s = tl.where(n_ok[None, :], s * qk_scale, float("-inf"))
        m_new = tl.maximum(m_i, reduce_max(s, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.exp2(s - m_safe[:, None])
        alpha = tl.exp2(m_i - m_safe)
        l_i = l_i * alpha + reduce_sum(p, 1)
        if DOT_F32:
            pv = tl.dot(p, v.to(tl.float32), input_precision="ieee")
        else:
            pv = tl.dot(p.to(v.dtype), v)
        acc = acc * alpha[:, None] + pv
        m_i = m_new

    o = acc / tl.where(l_i > 0.0, l_i, 1.0)[:, None]
    tl.store(
        out_ptr + b.to(tl.int64) * stride_ot + q_off,
        o.to(out_ptr.dtype.element_ty),
        mask=q_mask,
    )


@triton.jit
def _copy_page_indices_kernel(
    kv_indices_ptr,
    block_table_ptr,
    kv_indptr_ptr,
    bt_stride,
    n_cols,
    num_indices,
    num_reqs,
    log_entries_ptr,
    log_count_ptr,
    log_capacity,
    kernel_id,
    kv_indptr_id,
    BLOCK_R: tl.constexpr,
    BLOCK: tl.constexpr,
    GUARD: tl.constexpr,
):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    r_ok = r < num_reqs
    start = tl.load(kv_indptr_ptr + r, mask=r_ok, other=0)
    end = tl.load(kv_indptr_ptr + r + 1, mask=r_ok, other=0)
    n = end - start
    if GUARD:
        bad_start, bad_end = check_bounds_pair(start, end, num_indices)
        bad_end = bad_end | (~bad_start & (n > n_cols))
        if reduce_max((bad_start | bad_end).to(tl.int32), 0) > 0:  # nothing to log: no call
            log_violation(
                log_entries_ptr, log_count_ptr, log_capacity, kernel_id, kv_indptr_id, r, start,
                (r == 0) & bad_start,
            )  # fmt: skip
            log_violation(
                log_entries_ptr, log_count_ptr, log_capacity, kernel_id, kv_indptr_id, r + 1, end,
                bad_end,
            )  # fmt: skip
        n = tl.where(bad_start | bad_end, 0, n)
    src = block_table_ptr + r.to(tl.int64)[:, None] * bt_stride
    dst = kv_indices_ptr + start.to(tl.int64)[:, None]
    for j0 in range(0, reduce_max(n, 0), BLOCK):
        j = j0 + tl.arange(0, BLOCK)[None, :]
        m = j < n[:, None]
        tl.store(dst + j, tl.load(src + j, mask=m), mask=m)


def _check_attention_shapes(
    q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, out: torch.Tensor
) -> tuple[int, int, int, int]:
    """Validate q/out/cache shapes; returns (num_heads, num_kv_heads, head_dim, page size)."""
    if q.dim() != 3 or out.shape != q.shape:
        raise ValueError(f"q {tuple(q.shape)} and out {tuple(out.shape)} must be [T, nh, hd]")
    if k_cache.dim() != 4 or v_cache.shape != k_cache.shape:
        raise ValueError("k_cache and v_cache must both be [num_blocks, block_size, nkv, hd]")
    _, block_size, num_kv_heads, head_dim = k_cache.shape
    num_heads = q.shape[1]
    if q.shape[2] != head_dim or num_heads % num_kv_heads:
        raise ValueError(
            f"q {tuple(q.shape)} does not fit cache heads ({num_kv_heads}, {head_dim})"
        )
    for t in (q, out, k_cache, v_cache):
        if t.stride(-1) != 1:
            raise ValueError("q, out and the caches need a contiguous last dimension")
    return num_heads, num_kv_heads, head_dim, block_size


# Under the interpreter a program costs ~0.1 ms per executed operation however wide its tiles
# are, so tiles grow until one query block and one KV block cover a short request. Two caps:
# 256 rows/positions (numpy's work per operation stays small) and rows * BLOCK_N * BLOCK_D
# <= 2**18, below which numpy's OpenBLAS runs a dot on the calling thread; above it, its
# worker threads make a dot 10-1000x slower on a busy 2-core machine. Compiled, tiles keep
# their register-friendly sizes.
_INTERP_MAX_TILE = 256
_INTERP_MAX_DOT = 1 << 18


def _fit_interpreted(rows: int, block_n: int, cols: int, min_rows: int) -> tuple[int, int]:
    """Halve the larger of (rows, BLOCK_N) until one tile's dot fits the single-thread size."""
    while rows * block_n * cols > _INTERP_MAX_DOT:
        if block_n >= rows and block_n > 16:
            block_n //= 2
        elif rows > min_rows:
            rows //= 2
        elif block_n > 16:
            block_n //= 2
        else:
            break
    return rows, block_n


def _interpreted_kv_heads(num_kv_heads: int) -> int:
    """Kv heads per program under the interpreter: all of them when they tile evenly.

    Scoring every kv head in one block-diagonal dot wastes (kv heads - 1)/kv heads of the
    dot's multiply-adds, which is free in numpy, and divides the programs (and so the
    interpreter's per-operation cost) by the number of kv heads. Compiled, always 1.
    """
    if num_kv_heads & (num_kv_heads - 1) == 0 and num_kv_heads <= 16:
        return num_kv_heads
    return 1


def _prefill_tiles(
    head_dim: int, num_kv_heads: int, group: int, max_query_len: int, max_kv_len: int
) -> tuple[int, int, int, int, int]:
    """(BLOCK_M, GROUP_P2, KV_HEADS, BLOCK_N, BLOCK_D) for a bound ``max_kv_len`` on any
    request's KV length.

    A program's tile has BLOCK_M query tokens times KV_HEADS * GROUP_P2 heads as rows; tl.dot
    needs every tile dimension >= 16, so short queries are padded up to 16 rows.
    """
    block_d = next_pow2(head_dim, 16)
    group_p2 = next_pow2(group)
    if not interpreting():
        heads = group_p2
        rows = max(min(heads * next_pow2(max_query_len), 64 if block_d <= 128 else 32), heads, 16)
        return rows // heads, group_p2, 1, 64 if block_d <= 128 else 32, block_d
    kv_heads = _interpreted_kv_heads(num_kv_heads)
    while True:
        heads = kv_heads * group_p2
        rows = min(heads * next_pow2(max_query_len), max(_INTERP_MAX_TILE, heads))
        block_n = min(next_pow2(max_kv_len, 16), _INTERP_MAX_TILE)
        min_rows = max(heads, 16)
        rows, block_n = _fit_interpreted(max(rows, 16), block_n, kv_heads * block_d, min_rows)
        if kv_heads == 1 or rows * block_n * kv_heads * block_d <= _INTERP_MAX_DOT:
            return rows // heads, group_p2, kv_heads, block_n, block_d
        kv_heads //= 2


def _decode_tiles(
    head_dim: int, num_kv_heads: int, group: int, max_kv_len: int
) -> tuple[int, int, int, int]:
    """(KV_HEADS, BLOCK_H, BLOCK_N, BLOCK_D): KV_HEADS * GROUP_P2 query heads as rows."""
    block_d = next_pow2(head_dim, 16)
    group_p2 = next_pow2(group)
    if not interpreting():
        return 1, max(group_p2, 16), 64 if block_d <= 128 else 32, block_d
    kv_heads = _interpreted_kv_heads(num_kv_heads)
    while True:
        block_h = max(kv_heads * group_p2, 16)
        block_n = min(next_pow2(max_kv_len, 16), _INTERP_MAX_TILE)
        _, block_n = _fit_interpreted(block_h, block_n, kv_heads * block_d, block_h)
        if kv_heads == 1 or block_h * block_n * kv_heads * block_d <= _INTERP_MAX_DOT:
            return kv_heads, block_h, block_n, block_d
        kv_heads //= 2


def _num_warps(rows: int, block_d: int) -> int:
    return 4 if rows * block_d <= 64 * 128 else 8


def _dot_in_f32(q: torch.Tensor, k_cache: torch.Tensor) -> bool:
    """fp32 inputs need IEEE dots (tf32 is not 1e-5 accurate); mixed dtypes and the
    interpreter (whose bf16 dot is wrong) also go through fp32."""
    return q.dtype == torch.float32 or q.dtype != k_cache.dtype or interpreting()


def _launch_prefill(
    *,
    csr: bool,
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    out: torch.Tensor,
    qo: torch.Tensor,
    lens: torch.Tensor,
    pages: torch.Tensor,
    kv_indptr: torch.Tensor,
    pages_extent: int,
    bt_stride: int,
    num_reqs: int,
    max_query_len: int,
    scale: float,
    kernel: str,
    roles: tuple[str, str, str, str],
    guard: Guard | None,
) -> None:
    num_heads, num_kv_heads, head_dim, block_size = _check_attention_shapes(
        q, k_cache, v_cache, out
    )
    if num_reqs <= 0 or max_query_len <= 0:
        return
    group = num_heads // num_kv_heads
    block_m, group_p2, kv_heads, block_n, block_d = _prefill_tiles(
        head_dim, num_kv_heads, group, max_query_len, pages_extent * block_size
    )
    g = guard_args(guard, kernel, roles, qo)
    grid = (num_reqs, num_kv_heads // kv_heads, triton.cdiv(max_query_len, block_m))
    _paged_prefill_kernel[grid](
        q,
        k_cache,
        v_cache,
        out,
        qo,
        lens,
        pages,
        kv_indptr,
        q.shape[0],
        k_cache.shape[0],
        pages_extent,
        bt_stride,
        q.stride(0),
        q.stride(1),
        out.stride(0),
        out.stride(1),
        k_cache.stride(0),
        k_cache.stride(1),
        k_cache.stride(2),
        v_cache.stride(0),
        v_cache.stride(1),
        v_cache.stride(2),
        float(scale) * _LOG2E,
        head_dim,
        g.entries,
        g.count,
        g.capacity,
        g.kernel_id,
        *g.buffer_ids,
        CSR=csr,
        PAGE_SIZE=block_size,
        GROUP=group,
        GROUP_P2=group_p2,
        KV_HEADS=kv_heads,
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        BLOCK_D=block_d,
        DOT_F32=_dot_in_f32(q, k_cache),
        GUARD=g.enabled,
        num_warps=_num_warps(block_m * kv_heads * group_p2, kv_heads * block_d),
    )


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
    if query_start_loc.numel() < num_reqs + 1 or seq_lens.numel() < num_reqs:
        raise ValueError("query_start_loc needs num_reqs + 1 entries and seq_lens num_reqs")
    if block_table.dim() != 2 or block_table.shape[0] < num_reqs or block_table.stride(1) != 1:
        raise ValueError("block_table must be a row-major [>= num_reqs, n_cols] tensor")
    _launch_prefill(
        csr=False,
        q=q,
        k_cache=k_cache,
        v_cache=v_cache,
        out=out,
        qo=query_start_loc,
        lens=seq_lens,
        pages=block_table,
        kv_indptr=query_start_loc,
        pages_extent=block_table.shape[1],
        bt_stride=block_table.stride(0),
        num_reqs=num_reqs,
        max_query_len=max_query_len,
        scale=scale,
        kernel="varlen_paged_attention",
        roles=("query_start_loc", "seq_lens", "block_table", ""),  # no kv_indptr
        guard=guard,
    )


def csr_paged_prefill(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    out: torch.Tensor,
    qo_indptr: torch.Tensor,
    kv_indptr: torch.Tensor,
    kv_indices: torch.Tensor,
    last_page_len: torch.Tensor,
    num_reqs: int,
    max_query_len: int,
    scale: float,
    guard: Guard | None = None,
) -> None:
    """FlashInfer style causal prefill/verify over CSR page lists.

    Request ``r``'s queries are rows ``[qo_indptr[r], qo_indptr[r+1])``, its pages
    ``kv_indices[kv_indptr[r]:kv_indptr[r+1]]``, its KV length
    ``(n_pages - 1) * block_size + last_page_len[r]`` (0 without pages); queries sit at the end
    of the KV range.

    Guard roles: ``"qo_indptr"`` (monotone, in ``[0, q.shape[0]]``), ``"kv_indptr"``
    (monotone, in ``[0, kv_indices.numel()]``), ``"last_page_len"`` (``1..block_size`` when
    the request has pages), ``"kv_indices"`` (page ids in ``[0, num_blocks)``).
    """
    check_device(q, k_cache, v_cache, out, qo_indptr, kv_indptr, kv_indices, last_page_len)
    if qo_indptr.numel() < num_reqs + 1 or kv_indptr.numel() < num_reqs + 1:
        raise ValueError("qo_indptr and kv_indptr need num_reqs + 1 entries")
    if last_page_len.numel() < num_reqs or kv_indices.dim() != 1:
        raise ValueError("last_page_len needs num_reqs entries; kv_indices must be 1-D")
    _launch_prefill(
        csr=True,
        q=q,
        k_cache=k_cache,
        v_cache=v_cache,
        out=out,
        qo=qo_indptr,
        lens=last_page_len,
        pages=kv_indices,
        kv_indptr=kv_indptr,
        pages_extent=kv_indices.numel(),
        bt_stride=0,
        num_reqs=num_reqs,
        max_query_len=max_query_len,
        scale=scale,
        kernel="csr_paged_prefill",
        roles=("qo_indptr", "last_page_len", "kv_indices", "kv_indptr"),
        guard=guard,
    )


def csr_paged_decode(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    out: torch.Tensor,
    kv_indptr: torch.Tensor,
    kv_indices: torch.Tensor,
    last_page_len: torch.Tensor,
    batch_size: int,
    scale: float,
    guard: Guard | None = None,
) -> None:
    """FlashInfer style decode: one query row per request, ``batch_size`` = query rows.

    Row ``b`` attends all of pages ``kv_indices[kv_indptr[b]:kv_indptr[b+1]]`` (length rule
    as in :func:`csr_paged_prefill`). Because the batch size is the (possibly padded) token
    count, rows past the real request count read whatever ``kv_indptr``/``last_page_len``
    hold there — the ``piecewise-draft-decode`` hazard's stale read; the guard checks every
    entry each row reads. Guard roles as in :func:`csr_paged_prefill` (no ``qo_indptr``).
    """
    check_device(q, k_cache, v_cache, out, kv_indptr, kv_indices, last_page_len)
    num_heads, num_kv_heads, head_dim, block_size = _check_attention_shapes(
        q, k_cache, v_cache, out
    )
    if batch_size > q.shape[0]:
        raise ValueError(f"batch_size {batch_size} exceeds q rows {q.shape[0]}")
    if kv_indptr.numel() < batch_size + 1 or last_page_len.numel() < batch_size:
        raise ValueError("kv_indptr needs batch_size + 1 entries and last_page_len batch_size")
    if kv_indices.dim() != 1:
        raise ValueError("kv_indices must be 1-D")
    if batch_size <= 0:
        return
    group = num_heads // num_kv_heads
    kv_heads, block_h, block_n, block_d = _decode_tiles(
        head_dim, num_kv_heads, group, kv_indices.numel() * block_size
    )
    g = guard_args(
        guard, "csr_paged_decode", ("kv_indptr", "last_page_len", "kv_indices"), kv_indptr
    )
    _csr_decode_kernel[(batch_size, num_kv_heads // kv_heads)](
        q,
        k_cache,
        v_cache,
        out,
        kv_indptr,
        kv_indices,
        last_page_len,
        kv_indices.numel(),
        k_cache.shape[0],
        q.stride(0),
        q.stride(1),
        out.stride(0),
        out.stride(1),
        k_cache.stride(0),
        k_cache.stride(1),
        k_cache.stride(2),
        v_cache.stride(0),
        v_cache.stride(1),
        v_cache.stride(2),
        float(scale) * _LOG2E,
        head_dim,
        g.entries,
        g.count,
        g.capacity,
        g.kernel_id,
        *g.buffer_ids,
        PAGE_SIZE=block_size,
        GROUP=group,
        GROUP_P2=next_pow2(group),
        KV_HEADS=kv_heads,
        BLOCK_H=block_h,
        BLOCK_N=block_n,
        BLOCK_D=block_d,
        DOT_F32=_dot_in_f32(q, k_cache),
        GUARD=g.enabled,
        num_warps=_num_warps(block_h, kv_heads * block_d),
    )


def build_csr_page_indices(
    kv_indices: torch.Tensor,
    block_table: torch.Tensor,
    kv_indptr: torch.Tensor,
    num_reqs: int,
    guard: Guard | None = None,
) -> None:
    """Fill ``kv_indices[kv_indptr[r] + j] = block_table[r, j]`` for each request's pages.

    vLLM's ``_copy_page_indices_kernel``: the CSR page list FlashInfer reads, built on the
    device from the block table after the host computed ``kv_indptr``. Guard role
    ``"kv_indptr"``: monotone, in ``[0, kv_indices.numel()]``, and no more pages than the
    block table has columns; a bad request is not copied.
    """
    check_device(kv_indices, block_table, kv_indptr)
    if block_table.dim() != 2 or block_table.shape[0] < num_reqs or block_table.stride(1) != 1:
        raise ValueError("block_table must be a row-major [>= num_reqs, n_cols] tensor")
    if kv_indptr.numel() < num_reqs + 1 or kv_indices.dim() != 1:
        raise ValueError("kv_indptr needs num_reqs + 1 entries; kv_indices must be 1-D")
    if num_reqs <= 0:
        return
    g = guard_args(guard, "build_csr_page_indices", ("kv_indptr",), kv_indptr)
    block = min(next_pow2(block_table.shape[1]), 1024)
    block_r = rows_per_program(num_reqs, block)
    _copy_page_indices_kernel[(triton.cdiv(num_reqs, block_r),)](
        kv_indices,
        block_table,
        kv_indptr,
        block_table.stride(0),
        block_table.shape[1],
        kv_indices.numel(),
        num_reqs,
        g.entries,
        g.count,
        g.capacity,
        g.kernel_id,
        *g.buffer_ids,
        BLOCK_R=block_r,
        BLOCK=block,
        GUARD=g.enabled,
    )


def default_scale(head_dim: int) -> float:
    """The softmax scale every kernel here expects callers to pass: 1/sqrt(head_dim)."""
    return 1.0 / math.sqrt(head_dim)
