"""FlashInfer style: the decode kernel over CSR ``kv_indptr``/``kv_indices``/``last_page_len``
page lists, and the device build of those lists from a block table. Decode takes its batch size
from the number of query rows and assumes one token per request, which is what makes a
PIECEWISE draft decode read stale ``kv_indptr[num_reqs+1:]`` (hazard ``piecewise-draft-decode``).
"""

from __future__ import annotations

import torch

from eaglegraph.kernels._triton import (
    check_device,
    next_pow2,
    program_rows,
    reduce_max,
    row_extents,
    tl,
    triton,
)
from eaglegraph.kernels.attention.meta import PagedMeta
from eaglegraph.kernels.attention.request import (
    check_csr,
    csr_extent,
    head_columns,
    page_ids,
    qk_scores,
    softmax_step,
)
from eaglegraph.kernels.attention.tiles import LOG2E, Operands, Tiles
from eaglegraph.kernels.guard import (
    Guard,
    check_bounds_pair,
    guard_args,
    log_bounds_pair,
    log_violation,
)
from eaglegraph.kernels.launch import launch, launch_rows


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
    log,
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

    ks, ke, lpl, n_pages, kv_len = csr_extent(kv_indptr_ptr, lpl_ptr, b, PAGE_SIZE)
    first = kvh0 == 0  # logs the row's metadata and pages
    if GUARD:
        kv_ok, bad_ks, bad_ke, bad_lpl = check_csr(ks, ke, lpl, n_pages, num_indices, PAGE_SIZE)
        if first & (~kv_ok | bad_lpl):  # valid metadata (the common case) calls no logger
            log_bounds_pair(log, kv_indptr_id, b, ks, ke, bad_ks, bad_ke)
            log_violation(log, lpl_id, b, lpl, bad_lpl)
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
    offs_d, kv_off, vv_off, q_mask = head_columns(
        kvh0, kv_row, h_ok, stride_kh, stride_vh, head_dim, KV_HEADS, BLOCK_D
    )
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
        offs_n, n_ok, page = page_ids(
            page_base, ks, start, kv_hi, num_blocks, first, log, kv_indices_id, PAGE_SIZE, BLOCK_N,
            GUARD,
        )  # fmt: skip
        slot_off = (offs_n % PAGE_SIZE)[:, None]
        kv_mask = n_ok[:, None] & kv_d_ok
        k = tl.load(
            k_base + page[:, None] * stride_kb + slot_off * stride_ko, mask=kv_mask, other=0.0
        )
        v = tl.load(
            v_base + page[:, None] * stride_vb + slot_off * stride_vo, mask=kv_mask, other=0.0
        )
        s = qk_scores(q, k, DOT_F32)
        acc, m_i, l_i = softmax_step(acc, m_i, l_i, s, n_ok[None, :], qk_scale, v, DOT_F32)

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
    log,
    kv_indptr_id,
    BLOCK_R: tl.constexpr,
    BLOCK: tl.constexpr,
    GUARD: tl.constexpr,
):
    r, r_ok = program_rows(num_reqs, BLOCK_R)
    start, end = row_extents(kv_indptr_ptr, r, r_ok)
    n = end - start
    if GUARD:
        bad_start, bad_end = check_bounds_pair(start, end, num_indices)
        bad_end = bad_end | (~bad_start & (n > n_cols))
        if reduce_max((bad_start | bad_end).to(tl.int32), 0) > 0:  # nothing to log: no call
            log_bounds_pair(log, kv_indptr_id, r, start, end, bad_start, bad_end)
        n = tl.where(bad_start | bad_end, 0, n)
    src = block_table_ptr + r.to(tl.int64)[:, None] * bt_stride
    dst = kv_indices_ptr + start.to(tl.int64)[:, None]
    for j0 in range(0, reduce_max(n, 0), BLOCK):
        j = j0 + tl.arange(0, BLOCK)[None, :]
        m = j < n[:, None]
        tl.store(dst + j, tl.load(src + j, mask=m), mask=m)


def launch_decode(
    ops: Operands, meta: PagedMeta, scale: float, kernel: str, guard: Guard | None
) -> None:
    """The decode kernel over checked operands and a CSR decode meta: ``meta.num_reqs`` rows,
    one query each."""
    if meta.num_reqs <= 0:
        return
    tiles = Tiles.decode(ops.heads, meta.pages_extent * ops.heads.page_size)
    g = guard_args(guard, kernel, ("kv_indptr", "last_page_len", "kv_indices"), meta.kv_indptr)
    launch(
        _csr_decode_kernel,
        (meta.num_reqs, tiles.kv_head_programs),
        *ops.tensors,
        meta.kv_indptr,
        meta.pages,
        meta.lens,
        meta.pages_extent,
        ops.k_cache.shape[0],
        *ops.strides,
        float(scale) * LOG2E,
        ops.heads.head_dim,
        guard=g,
        **tiles.constexprs(),
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
    g = guard_args(guard, "build_csr_page_indices", ("kv_indptr",), kv_indptr)
    block = min(next_pow2(block_table.shape[1]), 1024)
    launch_rows(
        _copy_page_indices_kernel,
        num_reqs,
        block,
        kv_indices,
        block_table,
        kv_indptr,
        block_table.stride(0),
        block_table.shape[1],
        kv_indices.numel(),
        num_reqs,
        guard=g,
        BLOCK=block,
    )
