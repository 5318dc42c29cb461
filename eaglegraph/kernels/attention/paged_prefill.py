"""The causal paged prefill/verify kernel both metadata styles share (``CSR`` selects how a
request's pages and KV length are read), and its launcher."""

from __future__ import annotations

import torch

from eaglegraph.kernels._triton import reduce_max, reduce_sum, tl, triton
from eaglegraph.kernels.attention.tiles import (
    LOG2E,
    check_attention_shapes,
    dot_in_f32,
    num_warps,
    prefill_tiles,
)
from eaglegraph.kernels.guard import Guard, check_bounds_pair, guard_args, log_violation
from eaglegraph.kernels.launch import launch, strides


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
    CAUSAL: tl.constexpr,  # False: every query row attends the request's whole KV (DFlash)
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
    if CAUSAL:  # noqa: SIM108 (a Triton constexpr branch)
        kv_hi = tl.minimum(kv_len, kv_len - q_len + m_start + BLOCK_M)
    else:
        kv_hi = kv_len
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
        if CAUSAL:
            allowed = n_ok[None, :] & (offs_n[None, :] <= q_pos[:, None])
        else:
            allowed = n_ok[None, :] & (q_pos[:, None] * 0 == 0)
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


def launch_prefill(
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
    causal: bool = True,
) -> None:
    num_heads, num_kv_heads, head_dim, block_size = check_attention_shapes(q, k_cache, v_cache, out)
    if num_reqs <= 0 or max_query_len <= 0:
        return
    group = num_heads // num_kv_heads
    block_m, group_p2, kv_heads, block_n, block_d = prefill_tiles(
        head_dim, num_kv_heads, group, max_query_len, pages_extent * block_size
    )
    g = guard_args(guard, kernel, roles, qo)
    grid = (num_reqs, num_kv_heads // kv_heads, triton.cdiv(max_query_len, block_m))
    launch(
        _paged_prefill_kernel,
        grid,
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
        *strides(q, out, k_cache, v_cache),
        float(scale) * LOG2E,
        head_dim,
        guard=g,
        CSR=csr,
        CAUSAL=causal,
        PAGE_SIZE=block_size,
        GROUP=group,
        GROUP_P2=group_p2,
        KV_HEADS=kv_heads,
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        BLOCK_D=block_d,
        DOT_F32=dot_in_f32(q, k_cache),
        num_warps=num_warps(block_m * kv_heads * group_p2, kv_heads * block_d),
    )
