"""Paged Multi-head Latent Attention (DeepSeek-V2/V3, GLM-5) over a latent KV cache.

MLA caches one row per token: the normed latent ``c`` (``kv_lora_rank`` wide) followed by the
roped key part ``k_pe`` (``qk_rope_head_dim`` wide), shared by every head. With the key
up-projection absorbed into the query (``q_lat = q_nope · W_UK``) attention is multi-query
attention whose key is the whole row and whose value is its latent prefix:
``softmax(q_lat·c + q_pe·k_pe) · c``; the caller applies ``W_UV`` to the latent output.
That absorbed form is what vLLM's MLA decode backends run, and it is exact for every query
length, so one kernel serves decode, verify and prefill here.

:func:`mla_attention` takes the batch's :class:`~eaglegraph.kernels.attention.meta.PagedMeta`,
as ``paged_attention`` does, in the layouts of :mod:`eaglegraph.kernels.attention`:

* flash-attn style (``block_table_meta``): ``query_start_loc``, ``seq_lens``, block table
  (FlashMLA / Triton MLA); rows past ``query_start_loc[num_reqs]`` are never touched; reported
  as ``"mla_varlen_attention"``.
* FlashInfer style (``csr_meta``, ``csr_decode_meta``): CSR page lists; the decode takes its
  batch size from the number of query rows, one token per row (FlashInfer MLA), so padded rows
  read whatever ``kv_indptr``/``last_page_len`` hold there; reported as ``"mla_csr_prefill"``
  and ``"mla_csr_decode"``.

Guards follow ``guard.py`` and the conventions of the standard attention kernels: every
metadata entry and page id read is checked, logged once (by the first head block of the
request; pages by the last query block) and a bad request is skipped, a bad page masked.
The softmax scale is ``1/sqrt(kv_lora_rank + rope_dim)`` unless given: the MLA module folds
the model's own scale into ``q`` so every attention callback can use the row width's.
"""

from __future__ import annotations

import math

import torch

from eaglegraph.kernels._triton import check_device, interpreting, next_pow2, tl, triton
from eaglegraph.kernels.attention.meta import PagedLayout, PagedMeta
from eaglegraph.kernels.attention.request import page_ids, qk_scores, request_kv, softmax_step
from eaglegraph.kernels.attention.tiles import (
    INTERP_MAX_TILE,
    LOG2E,
    dot_in_f32,
    fit_interpreted,
)
from eaglegraph.kernels.guard import Guard, guard_args
from eaglegraph.kernels.launch import launch, strides

__all__ = ["mla_attention", "mla_scale"]


@triton.jit
def _mla_kernel(
    q_ptr,
    cache_ptr,
    out_ptr,
    qo_ptr,  # query_start_loc / qo_indptr [R+1]; unused by DECODE
    len_ptr,  # flash-attn: seq_lens [R]; CSR: last_page_len [R]
    pages_ptr,  # flash-attn: block_table [R, n_cols]; CSR: kv_indices
    kv_indptr_ptr,  # CSR only
    num_q_rows,
    num_heads,
    num_blocks,
    pages_extent,  # flash-attn: n_cols; CSR: kv_indices.numel()
    bt_stride,
    stride_qt,
    stride_qh,
    stride_ot,
    stride_oh,
    stride_cb,
    stride_co,
    qk_scale,
    log,
    qo_id,
    len_id,
    pages_id,
    kv_indptr_id,
    LATENT: tl.constexpr,  # kv_lora_rank (a power of two in every real model; masked anyway)
    ROPE: tl.constexpr,
    CSR: tl.constexpr,
    DECODE: tl.constexpr,  # one query row per program id 0, batch = query rows
    PAGE_SIZE: tl.constexpr,
    BLOCK_H: tl.constexpr,  # heads per program
    BLOCK_M: tl.constexpr,  # query tokens per program
    BLOCK_N: tl.constexpr,
    BLOCK_L: tl.constexpr,
    BLOCK_R: tl.constexpr,
    DOT_F32: tl.constexpr,
    GUARD: tl.constexpr,
):
    r = tl.program_id(0)
    hb = tl.program_id(1)
    mb = tl.program_id(2)
    qs, q_len, kv_len, page_base, page_row0, active, log_pages = request_kv(
        r, hb, mb, qo_ptr, len_ptr, pages_ptr, kv_indptr_ptr, num_q_rows, pages_extent, bt_stride,
        log, qo_id, len_id, kv_indptr_id, CSR, DECODE, PAGE_SIZE, BLOCK_M, GUARD,
    )  # fmt: skip

    # Rows are token-major: row i is token i // BLOCK_H, head hb*BLOCK_H + i % BLOCK_H.
    m_start = mb * BLOCK_M
    offs_r = tl.arange(0, BLOCK_M * BLOCK_H)
    offs_m = m_start + offs_r // BLOCK_H
    head = hb * BLOCK_H + offs_r % BLOCK_H
    row_ok = (offs_m < tl.where(active, q_len, 0)) & (head < num_heads)
    rows = (qs + offs_m).to(tl.int64)
    offs_l = tl.arange(0, BLOCK_L)
    offs_p = tl.arange(0, BLOCK_R)
    l_ok = offs_l < LATENT
    p_ok = offs_p < ROPE
    q_row = q_ptr + rows[:, None] * stride_qt + head[:, None] * stride_qh
    q_lat = tl.load(q_row + offs_l[None, :], mask=row_ok[:, None] & l_ok[None, :], other=0.0)
    q_pe = tl.load(
        q_row + LATENT + offs_p[None, :], mask=row_ok[:, None] & p_ok[None, :], other=0.0
    )
    if DOT_F32:
        q_lat = q_lat.to(tl.float32)
        q_pe = q_pe.to(tl.float32)
    # Causal: query row i sits at position kv_len - q_len + i.
    q_pos = kv_len - q_len + offs_m
    kv_hi = tl.minimum(kv_len, kv_len - q_len + m_start + BLOCK_M)
    kv_hi = tl.where(active & (m_start < q_len), kv_hi, 0)

    m_i = tl.full([BLOCK_M * BLOCK_H], float("-inf"), tl.float32)
    l_i = tl.full([BLOCK_M * BLOCK_H], 0.0, tl.float32)
    acc = tl.full([BLOCK_M * BLOCK_H, BLOCK_L], 0.0, tl.float32)
    for start in range(0, kv_hi, BLOCK_N):
        offs_n, n_ok, page = page_ids(
            page_base, page_row0, start, kv_hi, num_blocks, log_pages, log, pages_id, PAGE_SIZE,
            BLOCK_N, GUARD,
        )  # fmt: skip
        row_base = cache_ptr + page[:, None] * stride_cb + (offs_n % PAGE_SIZE)[:, None] * stride_co
        c = tl.load(row_base + offs_l[None, :], mask=n_ok[:, None] & l_ok[None, :], other=0.0)
        kpe = tl.load(
            row_base + LATENT + offs_p[None, :], mask=n_ok[:, None] & p_ok[None, :], other=0.0
        )
        s = qk_scores(q_lat, c, DOT_F32)
        s += qk_scores(q_pe, kpe, DOT_F32)
        allowed = n_ok[None, :] & (offs_n[None, :] <= q_pos[:, None])
        acc, m_i, l_i = softmax_step(acc, m_i, l_i, s, allowed, qk_scale, c, DOT_F32)

    o = acc / tl.where(l_i > 0.0, l_i, 1.0)[:, None]
    tl.store(
        out_ptr + rows[:, None] * stride_ot + head[:, None] * stride_oh + offs_l[None, :],
        o.to(out_ptr.dtype.element_ty),
        mask=row_ok[:, None] & l_ok[None, :],
    )


def mla_scale(latent: int, rope: int) -> float:
    """The softmax scale the kernels use by default: 1/sqrt of the cached row width."""
    return 1.0 / math.sqrt(latent + rope)


def _check_shapes(q: torch.Tensor, cache: torch.Tensor, out: torch.Tensor) -> tuple[int, int, int]:
    """(latent, rope, page size) from ``q [T, nh, L+R]``, ``out [T, nh, L]``, cache
    ``[num_blocks, block_size, 1, L+R]``."""
    if cache.dim() != 4 or cache.shape[2] != 1:
        raise ValueError(f"MLA cache {tuple(cache.shape)} must be [num_blocks, block_size, 1, L+R]")
    width = cache.shape[3]
    if q.dim() != 3 or q.shape[2] != width:
        raise ValueError(f"q {tuple(q.shape)} must be [T, nh, {width}] (latent + rope)")
    latent = out.shape[-1]
    if out.dim() != 3 or out.shape[:2] != q.shape[:2] or not 0 < latent < width:
        raise ValueError(f"out {tuple(out.shape)} must be [T, nh, latent < {width}]")
    for t in (q, out, cache):
        if t.stride(-1) != 1:
            raise ValueError("q, out and the cache need a contiguous last dimension")
    return latent, width - latent, cache.shape[1]


def _tiles(num_heads: int, max_query_len: int, max_kv_len: int, latent: int) -> tuple[int, ...]:
    """(BLOCK_H, BLOCK_M, BLOCK_N): compiled, register-sized tiles; interpreted, one program
    per request covering every head and the whole query (each program costs per operation)."""
    heads = next_pow2(num_heads)
    if interpreting():
        block_m = next_pow2(max_query_len)
        while block_m > 1 and block_m * heads > INTERP_MAX_TILE:
            block_m //= 2
        rows = block_m * heads
        block_n = min(next_pow2(max_kv_len, 16), INTERP_MAX_TILE)
        _, block_n = fit_interpreted(rows, block_n, next_pow2(latent), rows)  # rows stay
        return heads, block_m, block_n
    block_h = min(heads, 16)
    rows_cap = 32 if latent >= 256 else 64
    block_m = max(1, min(next_pow2(max_query_len), rows_cap // block_h))
    if block_m * block_h < 16:
        block_h = 16  # tl.dot needs >= 16 rows: pad heads (masked)
    return block_h, block_m, 32 if latent >= 256 else 64


# The name a launch is logged and reported under, by layout (``guard.KERNEL_NAMES``): guard
# logs, run files and findings carry it, so it stays what the entry points were once called.
_KERNEL_NAMES: dict[PagedLayout, str] = {
    PagedLayout.BLOCK_TABLE: "mla_varlen_attention",
    PagedLayout.CSR: "mla_csr_prefill",
    PagedLayout.CSR_DECODE: "mla_csr_decode",
}


def mla_attention(
    q: torch.Tensor,
    cache: torch.Tensor,
    out: torch.Tensor,
    meta: PagedMeta,
    *,
    max_query_len: int,
    scale: float | None = None,
    guard: Guard | None = None,
) -> None:
    """Causal MLA of ``q`` over the latent ``cache``, written to ``out``, for ``meta``'s batch.

    The layouts' rules are those of ``paged_attention``: a block table or CSR prefill lists
    (``max_query_len`` sizes the grid), or a CSR decode, one query row per request and
    ``meta.num_reqs`` rows, so padded rows read the CSR entries past the real requests.
    Guard roles: those the meta's builder names.
    """
    check_device(q, cache, out, *meta.tensors)
    meta.check_query_rows(q.shape[0])
    latent, rope, block_size = _check_shapes(q, cache, out)
    query_len = 1 if meta.decode else max_query_len
    if meta.num_reqs <= 0 or query_len <= 0:
        return
    num_heads = q.shape[1]
    block_h, block_m, block_n = _tiles(num_heads, query_len, meta.pages_extent * block_size, latent)
    grid = (meta.num_reqs, triton.cdiv(num_heads, block_h), triton.cdiv(query_len, block_m))
    softmax_scale = mla_scale(latent, rope) if scale is None else scale
    launch(
        _mla_kernel, grid,
        q, cache, out, *meta.tensors,
        q.shape[0], num_heads, cache.shape[0], meta.pages_extent, meta.bt_stride,
        *strides(q, out, cache, dims=2), float(softmax_scale) * LOG2E,
        guard=guard_args(guard, _KERNEL_NAMES[meta.layout], meta.roles, meta.lens),
        LATENT=latent, ROPE=rope, CSR=meta.csr, DECODE=meta.decode, PAGE_SIZE=block_size,
        BLOCK_H=block_h, BLOCK_M=block_m, BLOCK_N=block_n,
        BLOCK_L=next_pow2(latent, 16), BLOCK_R=next_pow2(rope, 16),
        DOT_F32=dot_in_f32(q, cache), num_warps=8 if latent >= 256 else 4,
    )  # fmt: skip
