"""Greedy sampling for the emulated step: row argmax, EAGLE-3 vocab mapping, greedy verify.

All three are single launches with no host synchronisation, so they can sit inside a
captured draft graph (vLLM's default ``draft_sample_method="greedy"`` is just an argmax).
The argmax matches ``torch.argmax``: ties go to the lowest index and a NaN wins (first NaN),
so a NaN logits row — poison that reached the logits — is visible in the sampled token.
"""

from __future__ import annotations

import torch

from eaglegraph.kernels._triton import check_device, next_pow2, tl, triton

__all__ = ["argmax_map_draft", "argmax_rows", "greedy_verify"]

_VOCAB_BLOCK = 4096


@triton.jit
def _argmax_kernel(
    logits_ptr,
    d2t_ptr,
    out_ptr,
    logits_stride,
    vocab,
    HAS_D2T: tl.constexpr,
    BLOCK_V: tl.constexpr,
):
    r = tl.program_id(0)
    base = logits_ptr + r.to(tl.int64) * logits_stride
    offs = tl.arange(0, BLOCK_V)
    big = vocab + BLOCK_V  # larger than any index
    best_val = tl.full([], float("-inf"), tl.float32)
    best_idx = tl.zeros([], tl.int32)
    first_nan = tl.zeros([], tl.int32) + big
    for v0 in range(0, vocab, BLOCK_V):
        idx = v0 + offs
        in_vocab = idx < vocab
        x = tl.load(base + idx, mask=in_vocab, other=float("-inf")).to(tl.float32)
        is_nan = x != x
        first_nan = tl.minimum(first_nan, tl.min(tl.where(is_nan, idx, big), 0))
        blk_max = tl.max(tl.where(is_nan, float("-inf"), x), 0)
        blk_idx = tl.min(tl.where(in_vocab & (x == blk_max), idx, big), 0)
        take = blk_max > best_val  # strict: an earlier block keeps a tie
        best_idx = tl.where(take, blk_idx, best_idx)
        best_val = tl.where(take, blk_max, best_val)
    result = tl.where(first_nan < big, first_nan, best_idx).to(tl.int64)
    if HAS_D2T:
        result = result + tl.load(d2t_ptr + result).to(tl.int64)
    tl.store(out_ptr + r, result)


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
    if num_rows <= 0:
        return
    vocab = logits.shape[1]
    _argmax_kernel[(num_rows,)](
        logits,
        logits if d2t is None else d2t,
        out,
        logits.stride(0),
        vocab,
        HAS_D2T=d2t is not None,
        BLOCK_V=min(next_pow2(vocab), _VOCAB_BLOCK),
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
    PER_REQUEST: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    r = tl.program_id(0)
    qs = tl.load(qsl_ptr + r)
    qe = tl.load(qsl_ptr + r + 1)
    if PER_REQUEST:
        # Clamped so a bad count cannot read past the request's draft row.
        k_r = tl.minimum(tl.maximum(tl.load(num_spec_ptr + r).to(tl.int32), 0), max_spec)
    else:
        k_r = max_spec
    # A request verifies drafts only when its query is its last token + its K drafts.
    k = tl.where(qe - qs == k_r + 1, k_r, 0)
    i = tl.arange(0, BLOCK_K)
    m = i < k
    drafts = tl.load(draft_tokens_ptr + r.to(tl.int64) * draft_stride + i, mask=m, other=0)
    targets = tl.load(target_argmax_ptr + qs + i, mask=m, other=0)
    n = tl.min(tl.where(m & (drafts != targets), i, k), 0)
    next_idx = tl.where(k > 0, qs + n, qe - 1)
    next_token = tl.load(target_argmax_ptr + next_idx, mask=qe > qs, other=-1).to(tl.int64)
    tl.store(num_accepted_ptr + r, n.to(tl.int32))
    tl.store(num_rejected_ptr + r, (k - n).to(tl.int32))
    tl.store(next_token_ptr + r, next_token)
    row = tl.where(i < n, drafts.to(tl.int64), tl.where(i == n, next_token, -1))
    tl.store(accepted_ptr + r.to(tl.int64) * accepted_stride + i, row, mask=i <= max_spec)


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
    if num_reqs <= 0:
        return
    _greedy_verify_kernel[(num_reqs,)](
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
        PER_REQUEST=per_request,
        BLOCK_K=next_pow2(max_spec + 1),
    )
