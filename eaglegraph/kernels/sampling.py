"""Greedy sampling for the emulated step: row argmax, EAGLE-3 vocab mapping, greedy verify.

All three are single launches with no host synchronisation, so they can sit inside a
captured draft graph (vLLM's default ``draft_sample_method="greedy"`` is just an argmax).
The argmax matches ``torch.argmax``: ties go to the lowest index and a NaN wins (first NaN),
so a NaN logits row — poison that reached the logits — is visible in the sampled token.
"""

from __future__ import annotations

import torch

from eaglegraph.kernels._triton import (
    check_device,
    next_pow2,
    pow2_block,
    program_rows,
    reduce_max,
    reduce_min,
    row_extents,
    tl,
    triton,
)
from eaglegraph.kernels.launch import launch_rows

__all__ = ["argmax_map_draft", "argmax_rows", "greedy_verify"]

_VOCAB_BLOCK = 4096
_VOCAB_BLOCK_INTERPRETED = 1 << 16


@triton.jit
def _argmax_kernel(
    logits_ptr,
    d2t_ptr,
    out_ptr,
    logits_stride,
    vocab,
    num_rows,
    HAS_D2T: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_V: tl.constexpr,
):
    rows, row_ok = program_rows(num_rows, BLOCK_R)
    base = logits_ptr + rows.to(tl.int64)[:, None] * logits_stride
    offs = tl.arange(0, BLOCK_V)[None, :]
    big = vocab + BLOCK_V  # larger than any index
    best_val = tl.full([BLOCK_R], float("-inf"), tl.float32)
    best_idx = tl.full([BLOCK_R], 0, tl.int32)
    first_nan = tl.full([BLOCK_R], 0, tl.int32) + big
    for v0 in range(0, vocab, BLOCK_V):
        idx = v0 + offs
        in_vocab = idx < vocab
        x = tl.load(base + idx, mask=row_ok[:, None] & in_vocab, other=float("-inf"))
        x = x.to(tl.float32)
        is_nan = x != x
        first_nan = tl.minimum(first_nan, reduce_min(tl.where(is_nan, idx, big), 1))
        blk_max = reduce_max(tl.where(is_nan, float("-inf"), x), 1)
        blk_idx = reduce_min(tl.where(in_vocab & (x == blk_max[:, None]), idx, big), 1)
        take = blk_max > best_val  # strict: an earlier block keeps a tie
        best_idx = tl.where(take, blk_idx, best_idx)
        best_val = tl.where(take, blk_max, best_val)
    result = tl.where(first_nan < big, first_nan, best_idx).to(tl.int64)
    if HAS_D2T:
        result = result + tl.load(d2t_ptr + result, mask=row_ok, other=0).to(tl.int64)
    tl.store(out_ptr + rows, result, mask=row_ok)


def _launch_argmax(
    logits: torch.Tensor, d2t: torch.Tensor | None, out: torch.Tensor, num_rows: int
) -> None:
    check_device(logits, out, *(() if d2t is None else (d2t,)))
    if logits.dim() != 2 or logits.stride(1) != 1:
        raise ValueError(f"logits {tuple(logits.shape)} must be a row-major [N, V] tensor")
    if num_rows > min(logits.shape[0], out.numel()):
        raise ValueError(f"num_rows {num_rows} exceeds logits rows or out")
    if d2t is not None and d2t.numel() < logits.shape[1]:
        raise ValueError(f"d2t has {d2t.numel()} entries for a vocab of {logits.shape[1]}")
    vocab = logits.shape[1]
    # Compiled: one row per program, 4K-wide vocab blocks. Interpreted: as many rows and as
    # wide a block as fit in ~64K elements (each executed operation costs the same).
    block_v = pow2_block(vocab, _VOCAB_BLOCK, _VOCAB_BLOCK_INTERPRETED)
    launch_rows(
        _argmax_kernel,
        num_rows,
        block_v,
        logits,
        logits if d2t is None else d2t,
        out,
        logits.stride(0),
        vocab,
        num_rows,
        HAS_D2T=d2t is not None,
        BLOCK_V=block_v,
    )


def argmax_rows(logits: torch.Tensor, out: torch.Tensor, num_rows: int) -> None:
    """``out[i] = argmax(logits[i])`` (int64) for ``i < num_rows``, like ``torch.argmax``."""
    _launch_argmax(logits, None, out, num_rows)


def argmax_map_draft(
    logits: torch.Tensor, d2t: torch.Tensor | None, out: torch.Tensor, num_rows: int
) -> None:
    """Greedy draft token in the target vocabulary: ``j + d2t[j]`` with ``j`` the argmax.

    EAGLE-3 drafts predict over a reduced vocabulary and ship ``d2t`` (draft → target
    offsets); ``d2t=None`` means the vocabularies are shared.
    """
    _launch_argmax(logits, d2t, out, num_rows)


@triton.jit
def _greedy_verify_kernel(
    target_argmax_ptr,
    draft_tokens_ptr,
    draft_stride,
    qsl_ptr,
    num_spec_ptr,
    num_accepted_ptr,
    num_rejected_ptr,
    next_token_ptr,
    accepted_ptr,
    accepted_stride,
    max_spec,
    num_reqs,
    PER_REQUEST: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    r, r_ok = program_rows(num_reqs, BLOCK_R)
    qs, qe = row_extents(qsl_ptr, r, r_ok)
    if PER_REQUEST:
        # Clamped so a bad count cannot read past the request's draft row.
        k_r = tl.load(num_spec_ptr + r, mask=r_ok, other=0).to(tl.int32)
        k_r = tl.minimum(tl.maximum(k_r, 0), max_spec)
    else:
        k_r = max_spec
    # A request verifies drafts only when its query is its last token + its K drafts.
    k = tl.where(qe - qs == k_r + 1, k_r, 0)
    i = tl.arange(0, BLOCK_K)[None, :]
    m = r_ok[:, None] & (i < k[:, None])
    drafts = tl.load(draft_tokens_ptr + r.to(tl.int64)[:, None] * draft_stride + i, mask=m, other=0)
    targets = tl.load(target_argmax_ptr + qs[:, None] + i, mask=m, other=0)
    n = reduce_min(tl.where(m & (drafts != targets), i, k[:, None]), 1)
    next_idx = tl.where(k > 0, qs + n, qe - 1)
    next_token = tl.load(target_argmax_ptr + next_idx, mask=r_ok & (qe > qs), other=-1)
    next_token = next_token.to(tl.int64)
    tl.store(num_accepted_ptr + r, n.to(tl.int32), mask=r_ok)
    tl.store(num_rejected_ptr + r, (k - n).to(tl.int32), mask=r_ok)
    tl.store(next_token_ptr + r, next_token, mask=r_ok)
    n = n[:, None]
    row = tl.where(i < n, drafts.to(tl.int64), tl.where(i == n, next_token[:, None], -1))
    tl.store(
        accepted_ptr + r.to(tl.int64)[:, None] * accepted_stride + i,
        row,
        mask=r_ok[:, None] & (i <= max_spec),
    )


def greedy_verify(
    target_argmax: torch.Tensor,
    draft_tokens: torch.Tensor,
    query_start_loc: torch.Tensor,
    num_reqs: int,
    num_spec: int | torch.Tensor,
    out_num_accepted: torch.Tensor,
    out_num_rejected: torch.Tensor,
    out_next_token: torch.Tensor,
    out_accepted_tokens: torch.Tensor,
) -> None:
    """Greedy rejection sampling of each request's drafts against the target argmax.

    ``num_spec`` is K for every request, or a per-request device tensor of draft counts
    (``[>= num_reqs]``, 0 for a request without drafts, clamped to
    ``[0, draft_tokens.shape[1]]``), read on the device so the call stays capturable.
    A request whose query is its last token + its K drafts (``q_len == K + 1``) accepts the
    longest prefix with
    ``draft_tokens[r, i] == target_argmax[qs + i]``: ``n`` accepted,
    ``next_token = target_argmax[qs + n]``, ``num_rejected = K - n``. Any other query length
    (a prefill) has ``n = 0``, ``num_rejected = 0``, ``next_token = target_argmax[qe - 1]``
    (-1 for an empty query). ``out_accepted_tokens[r]`` (``[R, >= K_max + 1]`` int64) holds
    the ``n`` accepted drafts, then ``next_token``, then -1 up to column ``K_max``.
    """
    per_request = isinstance(num_spec, torch.Tensor)
    spec_tensors = (num_spec,) if isinstance(num_spec, torch.Tensor) else ()
    if isinstance(num_spec, torch.Tensor) and num_spec.numel() < num_reqs:
        raise ValueError(f"num_spec has {num_spec.numel()} entries for {num_reqs} requests")
    check_device(
        target_argmax,
        draft_tokens,
        query_start_loc,
        out_num_accepted,
        out_num_rejected,
        out_next_token,
        out_accepted_tokens,
        *spec_tensors,
    )
    max_spec = draft_tokens.shape[1] if per_request else int(num_spec)
    if draft_tokens.dim() != 2 or draft_tokens.shape[1] < max_spec or draft_tokens.stride(1) != 1:
        raise ValueError(f"draft_tokens {tuple(draft_tokens.shape)} must be row-major [R, >=K]")
    if out_accepted_tokens.dim() != 2 or out_accepted_tokens.shape[1] < max_spec + 1:
        raise ValueError(f"out_accepted_tokens must be [R, >= {max_spec + 1}]")
    if out_accepted_tokens.stride(1) != 1 or query_start_loc.numel() < num_reqs + 1:
        raise ValueError("out_accepted_tokens must be row-major; qsl needs num_reqs + 1")
    block_k = next_pow2(max_spec + 1)
    launch_rows(
        _greedy_verify_kernel,
        num_reqs,
        block_k,
        target_argmax,
        draft_tokens,
        draft_tokens.stride(0),
        query_start_loc,
        num_spec if per_request else query_start_loc,
        out_num_accepted,
        out_num_rejected,
        out_next_token,
        out_accepted_tokens,
        out_accepted_tokens.stride(0),
        max_spec,
        num_reqs,
        PER_REQUEST=per_request,
        BLOCK_K=block_k,
    )
