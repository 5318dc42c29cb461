"""Input preparation of multi-module MTP: one window per request, all modules over it.

The draft window of a request is its target query window: the accepted tokens shifted left
by one (the sampled next token last), preceded by `max(0, num_rejected - 1)` tokens
*re-prefilled* from the previous step, whose deeper-module KV was computed from drafts that
were just rejected. Their ids and module-0 hidden states come from a per-request cache of
the previous window's last K-1 rows. After module s samples, the window's ids shift left by
one and the sampled token is appended, so module s+1 reads the token one further ahead at
the same positions. Rows past a request's last token keep computing but write no KV.

Each wrapper is one launch; the grid is `num_reqs` programs (a Python int), nothing syncs
with the host, so all of it can be captured in a graph.
"""

from __future__ import annotations

import torch

from eaglegraph.kernels._triton import check_device, next_pow2, tl, triton

__all__ = ["cache_mtp_window", "pad_trailing_slots", "prepare_mtp_window", "shift_mtp_window"]


@triton.jit
def _prepare_kernel(
    t_qsl_ptr,
    t_ids_ptr,
    t_pos_ptr,
    t_seq_ptr,
    t_hidden_ptr,
    num_rejected_ptr,
    next_tokens_ptr,
    idx_mapping_ptr,
    cached_ids_ptr,
    cached_hidden_ptr,
    d_qsl_ptr,
    d_ids_ptr,
    d_pos_ptr,
    d_seq_ptr,
    d_hidden_ptr,
    last_ptr,
    num_reqs,
    max_num_reqs,
    hidden_size,
    cache_len,  # K - 1
    stride_th,
    stride_dh,
    stride_cs,
    stride_ch_s,
    stride_ch_c,
    BLOCK_T: tl.constexpr,
    BLOCK_H: tl.constexpr,
    BLOCK_R: tl.constexpr,
):
    r = tl.program_id(0)
    qs = tl.load(t_qsl_ptr + r)
    qe = tl.load(t_qsl_ptr + r + 1)
    q = qe - qs
    rejected = tl.load(num_rejected_ptr + r)
    rp = tl.maximum(rejected - 1, 0)
    ni = q - rejected
    state = tl.load(idx_mapping_ptr + r).to(tl.int64)
    tl.store(d_seq_ptr + r, tl.load(t_seq_ptr + r) - rp)
    last = qs + rp + ni - 1
    tl.store(last_ptr + r, last.to(tl.int64))
    tl.store(d_qsl_ptr + r + 1, qe)
    if r == 0:
        tl.store(d_qsl_ptr, qs)
    first_pos = tl.load(t_pos_ptr + qs)
    offs_h = tl.arange(0, BLOCK_H)
    for t0 in range(0, q, BLOCK_T):
        t = t0 + tl.arange(0, BLOCK_T)
        in_win = t < ni
        src = (qs + t).to(tl.int64)
        dst = (qs + rp + t).to(tl.int64)
        nxt = tl.load(t_ids_ptr + src + 1, mask=in_win & (t < ni - 1), other=0)
        nxt = tl.where(t == ni - 1, tl.load(next_tokens_ptr + r).to(nxt.dtype), nxt)
        tl.store(d_ids_ptr + dst, nxt.to(d_ids_ptr.dtype.element_ty), mask=in_win)
        tl.store(d_pos_ptr + dst, tl.load(t_pos_ptr + src, mask=in_win, other=0), mask=in_win)
        # rows past the last token (rejected slots): positions continue, their KV is not kept
        tail = (t >= ni) & (t < q - rp)
        tl.store(d_pos_ptr + dst, (first_pos + t).to(tl.int64), mask=tail)
        tl.store(d_ids_ptr + dst, tl.zeros_like(nxt).to(d_ids_ptr.dtype.element_ty), mask=tail)
        for h0 in range(0, hidden_size, BLOCK_H):
            h = h0 + offs_h
            m = in_win[:, None] & (h < hidden_size)[None, :]
            row = tl.load(t_hidden_ptr + src[:, None] * stride_th + h[None, :], mask=m, other=0.0)
            tl.store(d_hidden_ptr + dst[:, None] * stride_dh + h[None, :], row, mask=m)
    # the re-prefilled rows: cached ids and hidden states of the previous window's tail
    for i in range(0, rp):
        slot = cache_len - rp + i
        tl.store(d_ids_ptr + qs + i, tl.load(cached_ids_ptr + state * stride_cs + slot).to(
            d_ids_ptr.dtype.element_ty))  # fmt: skip
        tl.store(d_pos_ptr + qs + i, (first_pos - rp + i).to(tl.int64))
        for h0 in range(0, hidden_size, BLOCK_H):
            h = h0 + offs_h
            hm = h < hidden_size
            value = tl.load(
                cached_hidden_ptr + state * stride_ch_s + slot * stride_ch_c + h, mask=hm
            )
            tl.store(d_hidden_ptr + (qs + i).to(tl.int64) * stride_dh + h, value, mask=hm)
    if r == num_reqs - 1:  # pad per-request buffers for graphs
        for p0 in range(num_reqs, max_num_reqs, BLOCK_R):
            p = p0 + tl.arange(0, BLOCK_R)
            pm = p < max_num_reqs
            tl.store(d_qsl_ptr + p + 1, tl.zeros_like(p) + qe, mask=pm)
            tl.store(d_seq_ptr + p, tl.zeros_like(p), mask=pm)
            tl.store(last_ptr + p, tl.zeros_like(p).to(tl.int64), mask=pm)


def prepare_mtp_window(
    target_qsl: torch.Tensor,
    target_ids: torch.Tensor,
    target_positions: torch.Tensor,
    target_seq_lens: torch.Tensor,
    target_hidden: torch.Tensor,
    num_rejected: torch.Tensor,
    next_tokens: torch.Tensor,
    idx_mapping: torch.Tensor,
    cached_ids: torch.Tensor,
    cached_hidden: torch.Tensor,
    draft_qsl: torch.Tensor,
    draft_ids: torch.Tensor,
    draft_positions: torch.Tensor,
    draft_seq_lens: torch.Tensor,
    draft_hidden: torch.Tensor,
    last_token_indices: torch.Tensor,
    num_reqs: int,
    max_query_len: int,
) -> None:
    """Write the draft window of every request (module-0 inputs) and pad per-request buffers
    up to their capacity; `cached_*` are `[state slots, K-1(, H)]`."""
    check_device(target_qsl, target_ids, target_hidden, cached_ids, draft_ids, draft_hidden)
    if num_reqs <= 0:
        return
    hidden = target_hidden.shape[1]
    max_num_reqs = last_token_indices.shape[0]
    _prepare_kernel[(num_reqs,)](
        target_qsl, target_ids, target_positions, target_seq_lens, target_hidden,
        num_rejected, next_tokens, idx_mapping, cached_ids, cached_hidden,
        draft_qsl, draft_ids, draft_positions, draft_seq_lens, draft_hidden, last_token_indices,
        num_reqs, max_num_reqs, hidden, cached_ids.shape[1],
        target_hidden.stride(0), draft_hidden.stride(0), cached_ids.stride(0),
        cached_hidden.stride(0), cached_hidden.stride(1),
        BLOCK_T=min(next_pow2(max_query_len), 64), BLOCK_H=min(next_pow2(hidden), 1024),
        BLOCK_R=min(next_pow2(max_num_reqs), 1024),
    )  # fmt: skip


@triton.jit
def _cache_kernel(
    d_qsl_ptr,
    d_ids_ptr,
    d_hidden_ptr,
    last_ptr,
    idx_mapping_ptr,
    cached_ids_ptr,
    cached_hidden_ptr,
    hidden_size,
    cache_len,
    stride_dh,
    stride_cs,
    stride_ch_s,
    stride_ch_c,
    BLOCK_H: tl.constexpr,
):
    r = tl.program_id(0)
    state = tl.load(idx_mapping_ptr + r).to(tl.int64)
    qs = tl.load(d_qsl_ptr + r)
    last = tl.load(last_ptr + r)
    start = last - cache_len + 1
    offs_h = tl.arange(0, BLOCK_H)
    for i in range(tl.maximum(start, qs.to(tl.int64)), last + 1):
        slot = i - start
        tl.store(cached_ids_ptr + state * stride_cs + slot, tl.load(d_ids_ptr + i).to(
            cached_ids_ptr.dtype.element_ty))  # fmt: skip
        for h0 in range(0, hidden_size, BLOCK_H):
            h = h0 + offs_h
            hm = h < hidden_size
            value = tl.load(d_hidden_ptr + i * stride_dh + h, mask=hm)
            tl.store(
                cached_hidden_ptr + state * stride_ch_s + slot * stride_ch_c + h, value, mask=hm
            )


def cache_mtp_window(
    draft_qsl: torch.Tensor,
    draft_ids: torch.Tensor,
    draft_hidden: torch.Tensor,
    last_token_indices: torch.Tensor,
    idx_mapping: torch.Tensor,
    cached_ids: torch.Tensor,
    cached_hidden: torch.Tensor,
    num_reqs: int,
) -> None:
    """Keep each request's last K-1 window rows (module-0 ids and hidden states) for the
    re-prefill of the next step."""
    check_device(draft_qsl, draft_ids, draft_hidden, cached_ids, cached_hidden)
    if num_reqs <= 0 or cached_ids.shape[1] == 0:
        return
    hidden = draft_hidden.shape[1]
    _cache_kernel[(num_reqs,)](
        draft_qsl, draft_ids, draft_hidden, last_token_indices, idx_mapping, cached_ids,
        cached_hidden, hidden, cached_ids.shape[1], draft_hidden.stride(0), cached_ids.stride(0),
        cached_hidden.stride(0), cached_hidden.stride(1), BLOCK_H=min(next_pow2(hidden), 1024),
    )  # fmt: skip


@triton.jit
def _shift_kernel(d_qsl_ptr, d_ids_ptr, last_ptr, sampled_ptr, BLOCK_T: tl.constexpr):
    r = tl.program_id(0)
    qs = tl.load(d_qsl_ptr + r)
    last = tl.load(last_ptr + r)
    n = last - qs + 1
    for t0 in range(1, n, BLOCK_T):
        t = t0 + tl.arange(0, BLOCK_T)
        m = t < n
        ids = tl.load(d_ids_ptr + qs + t, mask=m)
        tl.store(d_ids_ptr + qs + t - 1, ids, mask=m)
    if n > 0:  # padded requests (graph replays) have an empty window
        tl.store(d_ids_ptr + last, tl.load(sampled_ptr + r).to(d_ids_ptr.dtype.element_ty))


def shift_mtp_window(
    draft_qsl: torch.Tensor,
    draft_ids: torch.Tensor,
    last_token_indices: torch.Tensor,
    sampled: torch.Tensor,
    num_reqs: int,
    max_query_len: int,
) -> None:
    """Shift each request's window ids left by one and append its sampled token."""
    check_device(draft_qsl, draft_ids, last_token_indices, sampled)
    if num_reqs <= 0:
        return
    _shift_kernel[(num_reqs,)](
        draft_qsl, draft_ids, last_token_indices, sampled,
        BLOCK_T=min(next_pow2(max_query_len), 64),
    )  # fmt: skip


@triton.jit
def _pad_slots_kernel(slot_ptr, d_qsl_ptr, last_ptr, PAD: tl.constexpr, BLOCK_T: tl.constexpr):
    r = tl.program_id(0)
    start = tl.load(last_ptr + r) + 1
    end = tl.load(d_qsl_ptr + r + 1).to(tl.int64)
    for t0 in range(start, end, BLOCK_T):
        t = t0 + tl.arange(0, BLOCK_T)
        tl.store(slot_ptr + t, tl.full([BLOCK_T], PAD, tl.int64), mask=t < end)


def pad_trailing_slots(
    slot_mapping: torch.Tensor, draft_qsl: torch.Tensor, last_token_indices: torch.Tensor,
    num_reqs: int,
) -> None:  # fmt: skip
    """Slots of rows past each request's last token (rejected-draft rows) become PAD (-1)."""
    check_device(slot_mapping, draft_qsl, last_token_indices)
    if num_reqs <= 0:
        return
    _pad_slots_kernel[(num_reqs,)](slot_mapping, draft_qsl, last_token_indices, PAD=-1, BLOCK_T=16)
