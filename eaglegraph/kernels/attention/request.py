"""``@triton.jit`` pieces every paged attention kernel inlines: a request's KV extent and page
list from either metadata style (with its guard), the page ids of one KV block, and one step of
the online softmax.

The prefill kernel, the CSR decode kernel and the MLA kernel read metadata, pages and scores
the same way; written once here, a fix to a guard rule or to the softmax reaches all three.
They are inlined into each kernel at compile time, so every kernel stays one launch and runs
exactly the operations it ran before.
"""

from __future__ import annotations

from eaglegraph.kernels._triton import reduce_max, reduce_sum, tl, triton
from eaglegraph.kernels.guard import check_bounds_pair, log_bounds_pair, log_violation


@triton.jit
def csr_extent(kv_indptr_ptr, lpl_ptr, r, PAGE_SIZE: tl.constexpr):
    """``(ks, ke, last_page_len, n_pages, kv_len)`` of CSR request ``r``: its pages are
    ``kv_indices[ks:ke]``, its KV length ``(n_pages - 1) * PAGE_SIZE + last_page_len``."""
    ks = tl.load(kv_indptr_ptr + r)
    ke = tl.load(kv_indptr_ptr + r + 1)
    lpl = tl.load(lpl_ptr + r)
    n_pages = ke - ks
    kv_len = tl.where(n_pages > 0, (n_pages - 1) * PAGE_SIZE + lpl, 0)
    return ks, ke, lpl, n_pages, kv_len


@triton.jit
def check_csr(ks, ke, lpl, n_pages, num_indices, PAGE_SIZE: tl.constexpr):
    """``(kv_ok, bad_ks, bad_ke, bad_lpl)``: indptr entries in ``[0, num_indices]`` and
    monotone, ``last_page_len`` in ``1..PAGE_SIZE`` when the request has pages."""
    bad_ks, bad_ke = check_bounds_pair(ks, ke, num_indices)
    kv_ok = ~bad_ks & ~bad_ke
    bad_lpl = (lpl < 0) | (lpl > PAGE_SIZE) | (kv_ok & (n_pages > 0) & (lpl < 1))
    return kv_ok, bad_ks, bad_ke, bad_lpl


@triton.jit
def request_kv(
    r,
    head_block,  # program id 1: the program's kv head (block) within the request
    mb,  # program id 2: the program's query block within the request
    qo_ptr,  # query_start_loc / qo_indptr [R+1]; unused by DECODE
    len_ptr,  # flash-attn: seq_lens [R]; CSR: last_page_len [R]
    pages_ptr,  # flash-attn: block_table [R, n_cols]; CSR: kv_indices
    kv_indptr_ptr,  # CSR only
    num_q_rows,
    pages_extent,  # flash-attn: n_cols; CSR: kv_indices.numel()
    bt_stride,
    log,
    qo_id,
    len_id,
    kv_indptr_id,
    CSR: tl.constexpr,
    DECODE: tl.constexpr,  # one query row per request: rows (r, r + 1), no query-start array
    PAGE_SIZE: tl.constexpr,
    BLOCK_M: tl.constexpr,
    GUARD: tl.constexpr,
):
    """``(qs, q_len, kv_len, page_base, page_row0, active, log_pages)`` of request ``r``.

    Its query rows are ``[qs, qs + q_len)``; ``page_base + j`` addresses its ``j``-th page id,
    which the guard logs as row ``page_row0 + j`` of the page buffer. Guarded, every metadata
    entry is checked and logged by the request's first program (``active`` is false for a
    request with bad metadata); its pages are logged by the program of its last query block
    (``log_pages``), which reads every page the request's other blocks read.
    """
    if DECODE:
        qs = r
        qe = r + 1
    else:
        qs = tl.load(qo_ptr + r)
        qe = tl.load(qo_ptr + r + 1)
    q_len = qe - qs
    if CSR:
        ks, ke, lpl, n_pages, kv_len = csr_extent(kv_indptr_ptr, len_ptr, r, PAGE_SIZE)
        page_base = pages_ptr + ks.to(tl.int64)
        page_row0 = ks
    else:
        kv_len = tl.load(len_ptr + r)
        page_base = pages_ptr + r.to(tl.int64) * bt_stride
        page_row0 = r * pages_extent
    active = q_len > 0
    first = (head_block == 0) & (mb == 0)
    log_pages = (head_block == 0) & (mb == (q_len - 1) // BLOCK_M)
    if GUARD:
        meta_ok = q_len >= 0
        bad_qs = q_len < 0  # DECODE: never
        bad_qe = q_len < 0
        if not DECODE:
            bad_qs, bad_qe = check_bounds_pair(qs, qe, num_q_rows)
            meta_ok = ~bad_qs & ~bad_qe
        if CSR:
            kv_ok, bad_ks, bad_ke, bad_len = check_csr(
                ks, ke, lpl, n_pages, pages_extent, PAGE_SIZE
            )
            len_value = lpl
            meta_ok = meta_ok & kv_ok & ~bad_len
        else:
            bad_len = (
                (kv_len < 0) | (kv_len > pages_extent * PAGE_SIZE) | (meta_ok & (kv_len < q_len))
            )
            len_value = kv_len
            meta_ok = meta_ok & ~bad_len
        if first & ~meta_ok:  # valid metadata (the common case) calls no logger
            if not DECODE:
                log_bounds_pair(log, qo_id, r, qs, qe, bad_qs, bad_qe)
            log_violation(log, len_id, r, len_value, bad_len)
            if CSR:
                log_bounds_pair(log, kv_indptr_id, r, ks, ke, bad_ks, bad_ke)
        active = active & meta_ok
    return qs, q_len, kv_len, page_base, page_row0, active, log_pages


@triton.jit
def page_ids(
    page_base,
    page_row0,
    start,
    kv_hi,
    num_blocks,
    log_pages,  # this program logs bad page ids (one program per request does)
    log,
    pages_id,
    PAGE_SIZE: tl.constexpr,
    BLOCK_N: tl.constexpr,
    GUARD: tl.constexpr,
):
    """``(offs_n, n_ok, page)`` for KV positions ``start + [0, BLOCK_N)``: the page each
    position sits in; guarded, a page id outside ``[0, num_blocks)`` is logged once per page
    and its positions masked out."""
    offs_n = start + tl.arange(0, BLOCK_N)
    n_ok = offs_n < kv_hi
    page_idx = offs_n // PAGE_SIZE
    page = tl.load(page_base + page_idx, mask=n_ok, other=0).to(tl.int64)
    if GUARD:
        bad_page = n_ok & ((page < 0) | (page >= num_blocks))
        if log_pages & (reduce_max(bad_page.to(tl.int32), 0) > 0):
            log_violation(
                log, pages_id, page_row0 + page_idx, page, bad_page & (offs_n % PAGE_SIZE == 0)
            )
        n_ok = n_ok & ~bad_page
    return offs_n, n_ok, page


@triton.jit
def head_columns(
    kvh0,
    kv_row,
    row_ok,
    stride_kh,
    stride_vh,
    head_dim,
    KV_HEADS: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    """``(offs_d, k column offsets, v column offsets, q_mask)`` of a GQA tile whose rows
    belong to kv head ``kv_row``. Several kv heads sit side by side along the columns; each
    row's q is zero outside its own kv head's columns (block-diagonal), so one dot scores
    every head at once."""
    if KV_HEADS == 1:
        offs_d = tl.arange(0, BLOCK_D)
        kv_off = kvh0 * stride_kh + offs_d
        vv_off = kvh0 * stride_vh + offs_d
        q_mask = row_ok[:, None] & (offs_d < head_dim)[None, :]
    else:
        offs_c = tl.arange(0, KV_HEADS * BLOCK_D)
        offs_d = offs_c % BLOCK_D
        kv_col = kvh0 + offs_c // BLOCK_D
        kv_off = kv_col * stride_kh + offs_d
        vv_off = kv_col * stride_vh + offs_d
        q_mask = row_ok[:, None] & (offs_d < head_dim)[None, :]
        q_mask = q_mask & (kv_row[:, None] == kv_col[None, :])
    return offs_d, kv_off, vv_off, q_mask


@triton.jit
def qk_scores(q, k, DOT_F32: tl.constexpr):
    """``q · kᵀ``: fp32 at IEEE precision when the inputs are fp32, else the input dtype's
    tensor-core dot (fp32 accumulate)."""
    if DOT_F32:
        s = tl.dot(q, tl.trans(k.to(tl.float32)), input_precision="ieee")
    else:
        s = tl.dot(q, tl.trans(k))
    return s


@triton.jit
def softmax_step(acc, m_i, l_i, s, allowed, qk_scale, v, DOT_F32: tl.constexpr):
    """One online-softmax step over a KV block: ``(acc, m_i, l_i)`` after adding the block's
    scores ``s`` (where ``allowed``; ``qk_scale`` includes log2(e)) and values ``v``."""
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
    return acc, m_new, l_i
