"""Causal paged attention in the two metadata styles vLLM's backends use.

* flash-attn style (:func:`varlen_paged_attention`): ``query_start_loc``, ``seq_lens`` and a
  block table; only query rows below ``query_start_loc[num_reqs]`` are processed, so padded
  tokens are ignored.
* FlashInfer style (:func:`csr_paged_prefill`, :func:`csr_paged_decode`): CSR
  ``kv_indptr``/``kv_indices``/``last_page_len``. Decode takes its batch size from the number
  of query rows and assumes one token per request, which is what makes a PIECEWISE draft
  decode read stale ``kv_indptr[num_reqs+1:]`` / ``last_page_len[num_reqs:]`` (vLLM #39773).

The guards check every metadata entry and page id a program reads (see ``guard.py``). Each
entry is logged by exactly one program (head 0; for the query-start/indptr arrays entry
``r+1`` by request ``r`` and entry 0 by request 0; pages by the query block that reads the
most of them, once per page), so a replay logs each bad value once, while every program
applies the fallback: a request with bad metadata is skipped (its output rows are left
untouched) and a bad page's tokens are masked out of the softmax.

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
    splat_mask,
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
    group,
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
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
    DOT_F32: tl.constexpr,
    GUARD: tl.constexpr,
):
    r = tl.program_id(0)
    h = tl.program_id(1)
    mb = tl.program_id(2)
    kvh = h // group

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
        first = (h == 0) & (mb == 0)
        bad_qs, bad_qe = check_bounds_pair(qs, qe, num_q_rows)
        log_violation(
            log_entries_ptr,
            log_count_ptr,
            log_capacity,
            kernel_id,
            qo_id,
            r,
            qs,
            first & (r == 0) & bad_qs,
        )
        log_violation(
            log_entries_ptr,
            log_count_ptr,
            log_capacity,
            kernel_id,
            qo_id,
            r + 1,
            qe,
            first & bad_qe,
        )
        meta_ok = ~bad_qs & ~bad_qe
        if CSR:
            bad_ks, bad_ke = check_bounds_pair(ks, ke, pages_extent)
            log_violation(
                log_entries_ptr,
                log_count_ptr,
                log_capacity,
                kernel_id,
                kv_indptr_id,
                r,
                ks,
                first & (r == 0) & bad_ks,
            )
            log_violation(
                log_entries_ptr,
                log_count_ptr,
                log_capacity,
                kernel_id,
                kv_indptr_id,
                r + 1,
                ke,
                first & bad_ke,
            )
            kv_ok = ~bad_ks & ~bad_ke
            bad_lpl = (lpl < 0) | (lpl > PAGE_SIZE) | (kv_ok & (n_pages > 0) & (lpl < 1))
            log_violation(
                log_entries_ptr,
                log_count_ptr,
                log_capacity,
                kernel_id,
                len_id,
                r,
                lpl,
                first & bad_lpl,
            )
            meta_ok = meta_ok & kv_ok & ~bad_lpl
        else:
            bad_len = (
                (kv_len < 0)
                | (kv_len > pages_extent * PAGE_SIZE)
                | (~bad_qs & ~bad_qe & (kv_len < q_len))
            )
            log_violation(
                log_entries_ptr,
                log_count_ptr,
                log_capacity,
                kernel_id,
                len_id,
                r,
                kv_len,
                first & bad_len,
            )
            meta_ok = meta_ok & ~bad_len
        active = active & meta_ok
        # The last query block of a request reads every page the request's blocks read.
        log_pages = (h == 0) & (mb == (q_len - 1) // BLOCK_M)

    m_start = mb * BLOCK_M
    offs_m = m_start + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < head_dim
    row_ok = offs_m < tl.where(active, q_len, 0)
    rows = (qs + offs_m).to(tl.int64)
    q_mask = row_ok[:, None] & d_ok[None, :]
    q = tl.load(
        q_ptr + rows[:, None] * stride_qt + h * stride_qh + offs_d[None, :], mask=q_mask, other=0.0
    )
    if DOT_F32:
        q = q.to(tl.float32)
    # Causal: query row i sits at position kv_len - q_len + i.
    q_pos = kv_len - q_len + offs_m
    kv_hi = tl.minimum(kv_len, kv_len - q_len + m_start + BLOCK_M)
    kv_hi = tl.where(active & (m_start < q_len), kv_hi, 0)

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    for start in range(0, kv_hi, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        n_ok = offs_n < kv_hi
        page_idx = offs_n // PAGE_SIZE
        page = tl.load(page_base + page_idx, mask=n_ok, other=0).to(tl.int64)
        if GUARD:
            bad_page = n_ok & ((page < 0) | (page >= num_blocks))
            page_row = ks + page_idx if CSR else r * pages_extent + page_idx
            log_violation(
                log_entries_ptr,
                log_count_ptr,
                log_capacity,
                kernel_id,
                pages_id,
                page_row,
                page,
                bad_page & splat_mask(log_pages, offs_n) & (offs_n % PAGE_SIZE == 0),
            )
            n_ok = n_ok & ~bad_page
        slot_off = offs_n % PAGE_SIZE
        kv_mask = n_ok[:, None] & d_ok[None, :]
        k = tl.load(
            k_cache_ptr
            + page[:, None] * stride_kb
            + slot_off[:, None] * stride_ko
            + kvh * stride_kh
            + offs_d[None, :],
            mask=kv_mask,
            other=0.0,
        )
        v = tl.load(
            v_cache_ptr
            + page[:, None] * stride_vb
            + slot_off[:, None] * stride_vo
            + kvh * stride_vh
            + offs_d[None, :],
            mask=kv_mask,
            other=0.0,
        )
        if DOT_F32:
            s = tl.dot(q, tl.trans(k.to(tl.float32)), input_precision="ieee")
        else:
            s = tl.dot(q, tl.trans(k))
        s = s * qk_scale
        allowed = n_ok[None, :] & (offs_n[None, :] <= q_pos[:, None])
        s = tl.where(allowed, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.exp2(s - m_safe[:, None])
        alpha = tl.exp2(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, 1)
        if DOT_F32:
            pv = tl.dot(p, v.to(tl.float32), input_precision="ieee")
        else:
            pv = tl.dot(p.to(v.dtype), v)
        acc = acc * alpha[:, None] + pv
        m_i = m_new

    o = acc / tl.where(l_i > 0.0, l_i, 1.0)[:, None]
    tl.store(
        out_ptr + rows[:, None] * stride_ot + h * stride_oh + offs_d[None, :],
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
    group,
    log_entries_ptr,
    log_count_ptr,
    log_capacity,
    kernel_id,
    kv_indptr_id,
    lpl_id,
    kv_indices_id,
    PAGE_SIZE: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
    GUARD: tl.constexpr,
):
    b = tl.program_id(0)
    h = tl.program_id(1)
    kvh = h // group

    ks = tl.load(kv_indptr_ptr + b)
    ke = tl.load(kv_indptr_ptr + b + 1)
    lpl = tl.load(lpl_ptr + b)
    n_pages = ke - ks
    kv_len = tl.where(n_pages > 0, (n_pages - 1) * PAGE_SIZE + lpl, 0)
    active = b >= 0
    if GUARD:
        first = h == 0
        bad_ks, bad_ke = check_bounds_pair(ks, ke, num_indices)
        log_violation(
            log_entries_ptr,
            log_count_ptr,
            log_capacity,
            kernel_id,
            kv_indptr_id,
            b,
            ks,
            first & (b == 0) & bad_ks,
        )
        log_violation(
            log_entries_ptr,
            log_count_ptr,
            log_capacity,
            kernel_id,
            kv_indptr_id,
            b + 1,
            ke,
            first & bad_ke,
        )
        kv_ok = ~bad_ks & ~bad_ke
        bad_lpl = (lpl < 0) | (lpl > PAGE_SIZE) | (kv_ok & (n_pages > 0) & (lpl < 1))
        log_violation(
            log_entries_ptr, log_count_ptr, log_capacity, kernel_id, lpl_id, b, lpl, first & bad_lpl
        )
        active = kv_ok & ~bad_lpl
    kv_hi = tl.where(active, kv_len, 0)

    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < head_dim
    q = tl.load(q_ptr + b.to(tl.int64) * stride_qt + h * stride_qh + offs_d, mask=d_ok, other=0.0)
    q = q.to(tl.float32)
    page_base = kv_indices_ptr + ks.to(tl.int64)

    m_i = tl.full([], float("-inf"), tl.float32)
    l_i = tl.zeros([], tl.float32)
    acc = tl.zeros([BLOCK_D], tl.float32)
    for start in range(0, kv_hi, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        n_ok = offs_n < kv_hi
        page_idx = offs_n // PAGE_SIZE
        page = tl.load(page_base + page_idx, mask=n_ok, other=0).to(tl.int64)
        if GUARD:
            bad_page = n_ok & ((page < 0) | (page >= num_blocks))
            log_violation(
                log_entries_ptr,
                log_count_ptr,
                log_capacity,
                kernel_id,
                kv_indices_id,
                ks + page_idx,
                page,
                bad_page & splat_mask(h == 0, offs_n) & (offs_n % PAGE_SIZE == 0),
            )
            n_ok = n_ok & ~bad_page
        slot_off = offs_n % PAGE_SIZE
        kv_mask = n_ok[:, None] & d_ok[None, :]
        k = tl.load(
            k_cache_ptr
            + page[:, None] * stride_kb
            + slot_off[:, None] * stride_ko
            + kvh * stride_kh
            + offs_d[None, :],
            mask=kv_mask,
            other=0.0,
        ).to(tl.float32)
        v = tl.load(
            v_cache_ptr
            + page[:, None] * stride_vb
            + slot_off[:, None] * stride_vo
            + kvh * stride_vh
            + offs_d[None, :],
            mask=kv_mask,
            other=0.0,
        ).to(tl.float32)
        s = tl.sum(k * q[None, :], 1) * qk_scale
        s = tl.where(n_ok, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 0))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.exp2(s - m_safe)
        alpha = tl.exp2(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, 0)
        acc = acc * alpha + tl.sum(p[:, None] * v, 0)
        m_i = m_new

    o = acc / tl.where(l_i > 0.0, l_i, 1.0)
    tl.store(
        out_ptr + b.to(tl.int64) * stride_ot + h * stride_oh + offs_d,
        o.to(out_ptr.dtype.element_ty),
        mask=d_ok & splat_mask(active, offs_d),
    )


@triton.jit
def _copy_page_indices_kernel(
    kv_indices_ptr,
    block_table_ptr,
    kv_indptr_ptr,
    bt_stride,
    n_cols,
    num_indices,
    log_entries_ptr,
    log_count_ptr,
    log_capacity,
    kernel_id,
    kv_indptr_id,
    BLOCK: tl.constexpr,
    GUARD: tl.constexpr,
):
    r = tl.program_id(0)
    start = tl.load(kv_indptr_ptr + r)
    end = tl.load(kv_indptr_ptr + r + 1)
    n = end - start
    if GUARD:
        bad_start, bad_end = check_bounds_pair(start, end, num_indices)
        bad_end = bad_end | (~bad_start & (n > n_cols))
        log_violation(
            log_entries_ptr,
            log_count_ptr,
            log_capacity,
            kernel_id,
            kv_indptr_id,
            r,
            start,
            (r == 0) & bad_start,
        )
        log_violation(
            log_entries_ptr,
            log_count_ptr,
            log_capacity,
            kernel_id,
            kv_indptr_id,
            r + 1,
            end,
            bad_end,
        )
        n = tl.where(bad_start | bad_end, 0, n)
    src = block_table_ptr + r.to(tl.int64) * bt_stride
    dst = kv_indices_ptr + start.to(tl.int64)
    for j0 in range(0, n, BLOCK):
        j = j0 + tl.arange(0, BLOCK)
        m = j < n
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


def _prefill_tiles(head_dim: int, max_query_len: int) -> tuple[int, int, int]:
    """(BLOCK_M, BLOCK_N, BLOCK_D): tl.dot needs every tile dimension >= 16."""
    block_d = next_pow2(head_dim, 16)
    block_m = min(next_pow2(max_query_len, 16), 64 if block_d <= 128 else 32)
    block_n = 64 if block_d <= 128 else 32
    return block_m, block_n, block_d


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
    block_m, block_n, block_d = _prefill_tiles(head_dim, max_query_len)
    g = guard_args(guard, kernel, roles, qo)
    grid = (num_reqs, num_heads, triton.cdiv(max_query_len, block_m))
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
        num_heads // num_kv_heads,
        g.entries,
        g.count,
        g.capacity,
        g.kernel_id,
        *g.buffer_ids,
        CSR=csr,
        PAGE_SIZE=block_size,
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        BLOCK_D=block_d,
        DOT_F32=_dot_in_f32(q, k_cache),
        GUARD=g.enabled,
        num_warps=4,
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
    hold there — the PIECEWISE draft-decode stale read of vLLM #39773; the guard checks every
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
    block_d = next_pow2(head_dim)
    g = guard_args(
        guard, "csr_paged_decode", ("kv_indptr", "last_page_len", "kv_indices"), kv_indptr
    )
    _csr_decode_kernel[(batch_size, num_heads)](
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
        num_heads // num_kv_heads,
        g.entries,
        g.count,
        g.capacity,
        g.kernel_id,
        *g.buffer_ids,
        PAGE_SIZE=block_size,
        BLOCK_N=64 if block_d <= 128 else 32,
        BLOCK_D=block_d,
        GUARD=g.enabled,
        num_warps=4,
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
    _copy_page_indices_kernel[(num_reqs,)](
        kv_indices,
        block_table,
        kv_indptr,
        block_table.stride(0),
        block_table.shape[1],
        kv_indices.numel(),
        g.entries,
        g.count,
        g.capacity,
        g.kernel_id,
        *g.buffer_ids,
        BLOCK=min(next_pow2(block_table.shape[1]), 1024),
        GUARD=g.enabled,
    )


def default_scale(head_dim: int) -> float:
    """The softmax scale every kernel here expects callers to pass: 1/sqrt(head_dim)."""
    return 1.0 / math.sqrt(head_dim)
