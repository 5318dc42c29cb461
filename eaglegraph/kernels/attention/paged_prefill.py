"""The causal paged prefill/verify kernel both metadata styles share (``CSR`` selects how a
request's pages and KV length are read), and its launcher."""

from __future__ import annotations

from eaglegraph.kernels._triton import tl, triton
from eaglegraph.kernels.attention.meta import PagedMeta
from eaglegraph.kernels.attention.request import (
    head_columns,
    page_ids,
    qk_scores,
    request_kv,
    softmax_step,
)
from eaglegraph.kernels.attention.tiles import LOG2E, Operands, Tiles
from eaglegraph.kernels.guard import Guard, guard_args
from eaglegraph.kernels.launch import launch


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
    log,
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

    qs, q_len, kv_len, page_base, page_row0, active, log_pages = request_kv(
        r, kvh0, mb, qo_ptr, len_ptr, pages_ptr, kv_indptr_ptr, num_q_rows, pages_extent,
        bt_stride, log, qo_id, len_id, kv_indptr_id, CSR, False, PAGE_SIZE, BLOCK_M, GUARD,
    )  # fmt: skip

    m_start = mb * BLOCK_M
    offs_r = tl.arange(0, BLOCK_M * KV_HEADS * GROUP_P2)
    offs_m = m_start + offs_r // (KV_HEADS * GROUP_P2)  # token within the request
    kv_row = kvh0 + (offs_r // GROUP_P2) % KV_HEADS
    head = kv_row * GROUP + offs_r % GROUP_P2
    row_ok = offs_m < tl.where(active, q_len, 0)
    if GROUP != GROUP_P2:
        row_ok = row_ok & (offs_r % GROUP_P2 < GROUP)
    rows = (qs + offs_m).to(tl.int64)
    offs_d, kv_off, vv_off, q_mask = head_columns(
        kvh0, kv_row, row_ok, stride_kh, stride_vh, head_dim, KV_HEADS, BLOCK_D
    )
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
        offs_n, n_ok, page = page_ids(
            page_base, page_row0, start, kv_hi, num_blocks, log_pages, log, pages_id, PAGE_SIZE,
            BLOCK_N, GUARD,
        )  # fmt: skip
        slot_off = (offs_n % PAGE_SIZE)[:, None]
        kv_mask = n_ok[:, None] & d_ok[None, :]
        k = tl.load(
            k_base + page[:, None] * stride_kb + slot_off * stride_ko, mask=kv_mask, other=0.0
        )
        v = tl.load(
            v_base + page[:, None] * stride_vb + slot_off * stride_vo, mask=kv_mask, other=0.0
        )
        s = qk_scores(q, k, DOT_F32)
        if CAUSAL:
            allowed = n_ok[None, :] & (offs_n[None, :] <= q_pos[:, None])
        else:
            allowed = n_ok[None, :] & (q_pos[:, None] * 0 == 0)
        acc, m_i, l_i = softmax_step(acc, m_i, l_i, s, allowed, qk_scale, v, DOT_F32)

    o = acc / tl.where(l_i > 0.0, l_i, 1.0)[:, None]
    tl.store(
        out_ptr + rows[:, None] * stride_ot + head[:, None] * stride_oh + offs_d[None, :],
        o.to(out_ptr.dtype.element_ty),
        mask=q_mask,
    )


def launch_prefill(
    ops: Operands,
    meta: PagedMeta,
    max_query_len: int,
    scale: float,
    kernel: str,
    guard: Guard | None,
    causal: bool = True,
) -> None:
    """The prefill kernel over checked operands and a block-table or CSR prefill meta."""
    if meta.num_reqs <= 0 or max_query_len <= 0:
        return
    tiles = Tiles.prefill(ops.heads, max_query_len, meta.pages_extent * ops.heads.page_size)
    g = guard_args(guard, kernel, meta.roles, meta.qo)
    grid = (meta.num_reqs, tiles.kv_head_programs, triton.cdiv(max_query_len, tiles.block_rows))
    launch(
        _paged_prefill_kernel,
        grid,
        *ops.tensors,
        *meta.tensors,
        ops.q.shape[0],
        ops.k_cache.shape[0],
        meta.pages_extent,
        meta.bt_stride,
        *ops.strides,
        float(scale) * LOG2E,
        ops.heads.head_dim,
        guard=g,
        CSR=meta.csr,
        CAUSAL=causal,
        **tiles.constexprs(),
    )
