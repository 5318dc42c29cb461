"""The three EAGLE input kernels of vLLM MRV2's speculator, padding fills included.

What each writes into the padding regions decides what a replayed graph reads there, so the
fills follow vLLM 0.22 exactly (research notes §3.5, §5): prepare-inputs pads
``query_start_loc`` with the end of the last request, ``seq_lens`` with 0 and — since the
``unpadded-last-token-indices`` fix — ``last_token_indices`` with 0
(``pad_last_token_indices=False`` reproduces the pre-fix stale indices); input ids and positions
at rejected or padded token slots are left stale. ``current_draft_step`` is a device scalar so
one captured decode graph serves every step.
"""

from __future__ import annotations

import torch

from eaglegraph.kernels._triton import (
    check_device,
    next_pow2,
    pow2_block,
    program_rows,
    reduce_max,
    row_extents,
    tl,
    triton,
)
from eaglegraph.kernels.guard import Guard, check_bounds_pair, guard_args, log_violation
from eaglegraph.kernels.launch import launch, launch_rows, strides

__all__ = ["prepare_eagle_decode", "prepare_eagle_inputs", "update_eagle_draft_inputs"]

_TOKEN_BLOCK = 256
_HIDDEN_BLOCK = 1024
_HIDDEN_BLOCK_INTERPRETED = 1 << 16  # per-operation cost: one wide block


def _check_batch(tensors: tuple[torch.Tensor, ...], num_reqs: int, max_num_reqs: int) -> None:
    """A wrapper's pointer arguments share a device and ``0 <= num_reqs <= max_num_reqs``."""
    check_device(*tensors)
    if not 0 <= num_reqs <= max_num_reqs:
        raise ValueError(f"need 0 <= num_reqs {num_reqs} <= max_num_reqs {max_num_reqs}")


@triton.jit
def _prepare_eagle_inputs_kernel(
    target_qsl_ptr,
    target_seq_lens_ptr,
    target_input_ids_ptr,
    target_positions_ptr,
    num_rejected_ptr,
    next_tokens_ptr,
    eagle_input_ids_ptr,
    eagle_positions_ptr,
    eagle_qsl_ptr,
    eagle_seq_lens_ptr,
    last_token_indices_ptr,
    current_draft_step_ptr,
    num_reqs,
    max_num_reqs,
    max_tokens,
    log,
    target_qsl_id,
    num_rejected_id,
    PAD_LAST_TOKEN_INDICES: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK: tl.constexpr,
    GUARD: tl.constexpr,
):
    # Requests [pid * BLOCK_R, (pid + 1) * BLOCK_R), one tile row each; the last program
    # also writes the padding.
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    r, has_req = program_rows(num_reqs, BLOCK_R)
    is_req = has_req
    qs, qe = row_extents(target_qsl_ptr, r, has_req)
    num_rej = tl.load(num_rejected_ptr + r, mask=has_req, other=0)
    query_len = qe - qs - num_rej
    if GUARD:
        bad_qs, bad_qe = check_bounds_pair(qs, qe, max_tokens)
        bad_rej = has_req & ~bad_qs & ~bad_qe & ((num_rej < 0) | (query_len < 1))
        is_req = has_req & ~bad_qs & ~bad_qe & ~bad_rej
        if reduce_max((has_req & ~is_req).to(tl.int32), 0) > 0:  # no call when all are valid
            log_violation(log, target_qsl_id, r, qs, has_req & (r == 0) & bad_qs)
            log_violation(log, target_qsl_id, r + 1, qe, has_req & bad_qe)
            log_violation(log, num_rejected_id, r, num_rej, bad_rej)
    query_len = tl.where(is_req, query_len, 0)

    # Shift ids left by one: eagle_ids[qs + j - 1] = target_ids[qs + j], j in 1..query_len-1;
    # copy positions[qs .. qs + query_len).
    n_pos = query_len[:, None]
    for j0 in range(0, reduce_max(query_len, 0), BLOCK):
        j = j0 + offs[None, :]
        t = qs[:, None] + j
        m_pos = j < n_pos
        m_ids = j < n_pos - 1
        ids = tl.load(target_input_ids_ptr + t + 1, mask=m_ids)
        tl.store(eagle_input_ids_ptr + t, ids, mask=m_ids)
        pos = tl.load(target_positions_ptr + t, mask=m_pos)
        tl.store(eagle_positions_ptr + t, pos, mask=m_pos)
    last = qs + query_len - 1
    next_token = tl.load(next_tokens_ptr + r, mask=is_req)
    tl.store(
        eagle_input_ids_ptr + last,
        next_token.to(eagle_input_ids_ptr.dtype.element_ty),
        mask=is_req,
    )
    tl.store(last_token_indices_ptr + r, last.to(tl.int64), mask=is_req)
    tl.store(eagle_qsl_ptr + r, qs, mask=is_req)
    seq_len = tl.load(target_seq_lens_ptr + r, mask=is_req)
    tl.store(eagle_seq_lens_ptr + r, seq_len, mask=is_req)

    if pid == tl.num_programs(0) - 1:
        # Padding for graphs: query_start_loc past the requests repeats target qsl[num_reqs].
        end = tl.load(target_qsl_ptr + num_reqs)
        tl.store(current_draft_step_ptr, tl.zeros([], tl.int64))
        for i0 in range(num_reqs, max_num_reqs + 1, BLOCK):
            i = i0 + offs
            tl.store(eagle_qsl_ptr + i, (i * 0 + end).to(tl.int32), mask=i <= max_num_reqs)
            pad = i < max_num_reqs
            tl.store(eagle_seq_lens_ptr + i, (i * 0).to(tl.int32), mask=pad)
            if PAD_LAST_TOKEN_INDICES:
                tl.store(last_token_indices_ptr + i, (i * 0).to(tl.int64), mask=pad)


def prepare_eagle_inputs(
    target_query_start_loc: torch.Tensor,
    target_seq_lens: torch.Tensor,
    target_input_ids: torch.Tensor,
    target_positions: torch.Tensor,
    num_rejected: torch.Tensor,
    next_tokens: torch.Tensor,
    eagle_input_ids: torch.Tensor,
    eagle_positions: torch.Tensor,
    eagle_query_start_loc: torch.Tensor,
    eagle_seq_lens: torch.Tensor,
    last_token_indices: torch.Tensor,
    current_draft_step: torch.Tensor,
    num_reqs: int,
    max_num_reqs: int,
    pad_last_token_indices: bool = True,
    guard: Guard | None = None,
) -> None:
    """Build the draft-prefill inputs from the verified target step (vLLM
    ``_prepare_eagle_inputs_kernel``).

    Per request: ``query_len = target q_len - num_rejected``; ids shift left by one with
    ``next_tokens[r]`` at the last valid slot ``last_token_indices[r]``; positions copied;
    EAGLE ``query_start_loc[r]``/``seq_lens[r]`` = the target's (the query still spans the
    rejected slots). The last program zeroes ``current_draft_step``, writes
    ``query_start_loc[num_reqs:max_num_reqs+1] = target qsl[num_reqs]``,
    ``seq_lens[num_reqs:max_num_reqs] = 0`` and, when ``pad_last_token_indices`` (the
    ``unpadded-last-token-indices`` fix), ``last_token_indices[num_reqs:max_num_reqs] = 0``.

    Guard roles: ``"target_query_start_loc"`` (monotone, within the token buffers) and
    ``"num_rejected"`` (``0 <= num_rejected < target q_len``); a bad request writes nothing.
    """
    tensors = (
        target_query_start_loc,
        target_seq_lens,
        target_input_ids,
        target_positions,
        num_rejected,
        next_tokens,
        eagle_input_ids,
        eagle_positions,
        eagle_query_start_loc,
        eagle_seq_lens,
        last_token_indices,
        current_draft_step,
    )  # the kernel's pointer arguments, in order
    _check_batch(tensors, num_reqs, max_num_reqs)
    if eagle_query_start_loc.numel() < max_num_reqs + 1 or target_query_start_loc.numel() < (
        num_reqs + 1
    ):
        raise ValueError("query_start_loc buffers need max_num_reqs + 1 / num_reqs + 1 entries")
    if min(eagle_seq_lens.numel(), last_token_indices.numel()) < max_num_reqs:
        raise ValueError("eagle seq_lens and last_token_indices need max_num_reqs entries")
    if current_draft_step.numel() != 1:
        raise ValueError("current_draft_step must be a one-element tensor")
    max_tokens = min(
        target_input_ids.numel(),
        target_positions.numel(),
        eagle_input_ids.numel(),
        eagle_positions.numel(),
    )
    g = guard_args(
        guard,
        "prepare_eagle_inputs",
        ("target_query_start_loc", "num_rejected"),
        target_query_start_loc,
    )
    # With num_reqs == 0 a single program only pads (it reads target qsl[0]).
    launch_rows(
        _prepare_eagle_inputs_kernel,
        max(num_reqs, 1),
        _TOKEN_BLOCK,
        *tensors,
        num_reqs,
        max_num_reqs,
        max_tokens,
        guard=g,
        PAD_LAST_TOKEN_INDICES=pad_last_token_indices,
        BLOCK=_TOKEN_BLOCK,
    )


@triton.jit
def _prepare_eagle_decode_kernel(
    draft_tokens_ptr,
    target_seq_lens_ptr,
    num_rejected_ptr,
    input_ids_ptr,
    positions_ptr,
    qsl_ptr,
    seq_lens_ptr,
    draft_tokens_stride,
    num_reqs,
    max_num_reqs,
    max_model_len,
    BLOCK: tl.constexpr,
):
    # Entries [pid * BLOCK, (pid + 1) * BLOCK) of every buffer: requests and padding alike.
    i, is_req = program_rows(num_reqs, BLOCK)
    token = tl.load(draft_tokens_ptr + i.to(tl.int64) * draft_tokens_stride, mask=is_req)
    tl.store(input_ids_ptr + i, token.to(input_ids_ptr.dtype.element_ty), mask=is_req)
    pos = tl.load(positions_ptr + i, mask=is_req)
    tl.store(positions_ptr + i, tl.minimum(pos + 1, max_model_len - 1), mask=is_req)
    target_len = tl.load(target_seq_lens_ptr + i, mask=is_req, other=0)
    seq_len = target_len - tl.load(num_rejected_ptr + i, mask=is_req, other=0) + 1
    # Padded requests get zero-length queries and zero seq_lens.
    seq_len = tl.where(is_req, tl.minimum(seq_len, max_model_len), 0)
    tl.store(seq_lens_ptr + i, seq_len.to(tl.int32), mask=i < max_num_reqs)
    tl.store(qsl_ptr + i, tl.minimum(i, num_reqs).to(tl.int32), mask=i <= max_num_reqs)


def prepare_eagle_decode(
    draft_tokens: torch.Tensor,
    target_seq_lens: torch.Tensor,
    num_rejected: torch.Tensor,
    eagle_input_ids: torch.Tensor,
    eagle_positions: torch.Tensor,
    eagle_query_start_loc: torch.Tensor,
    eagle_seq_lens: torch.Tensor,
    num_reqs: int,
    max_num_reqs: int,
    max_model_len: int,
) -> None:
    """Turn the prefill's first draft token into the first decode step's inputs (vLLM
    ``_prepare_eagle_decode_kernel``).

    ``draft_tokens``: the ``[R, K]`` tensor (column 0 is read) or a 1-D (possibly strided)
    view of that column. Per request: ``input_ids[r] = draft_tokens[r, 0]``,
    ``positions[r] = min(positions[r] + 1, max_model_len - 1)``,
    ``seq_lens[r] = min(target_seq_lens[r] - num_rejected[r] + 1, max_model_len)``; and
    ``query_start_loc[i] = min(i, num_reqs)`` for ``i <= max_num_reqs``,
    ``seq_lens[num_reqs:max_num_reqs] = 0``.
    """
    tensors = (
        draft_tokens,
        target_seq_lens,
        num_rejected,
        eagle_input_ids,
        eagle_positions,
        eagle_query_start_loc,
        eagle_seq_lens,
    )  # the kernel's pointer arguments, in order
    _check_batch(tensors, num_reqs, max_num_reqs)
    if eagle_query_start_loc.numel() < max_num_reqs + 1 or eagle_seq_lens.numel() < max_num_reqs:
        raise ValueError("eagle query_start_loc/seq_lens need max_num_reqs + 1/max_num_reqs")
    if draft_tokens.dim() not in (1, 2) or draft_tokens.shape[0] < num_reqs:
        raise ValueError(f"draft_tokens {tuple(draft_tokens.shape)} needs >= {num_reqs} rows")
    block = min(next_pow2(max_num_reqs + 1), 1024)
    launch(
        _prepare_eagle_decode_kernel,
        (triton.cdiv(max_num_reqs + 1, block),),
        *tensors,
        draft_tokens.stride(0),
        num_reqs,
        max_num_reqs,
        max_model_len,
        BLOCK=block,
    )


@triton.jit
def _update_eagle_draft_inputs_kernel(
    sampled_ptr,
    output_hidden_ptr,
    draft_tokens_ptr,
    input_ids_ptr,
    hidden_ptr,
    positions_ptr,
    seq_lens_ptr,
    current_draft_step_ptr,
    out_hidden_stride,
    hidden_stride,
    draft_tokens_stride,
    hidden_size,
    num_spec_tokens,
    max_model_len,
    num_reqs,
    BLOCK_R: tl.constexpr,
    BLOCK: tl.constexpr,
):
    r, r_ok = program_rows(num_reqs, BLOCK_R)
    rows = r.to(tl.int64)
    step = tl.load(current_draft_step_ptr)
    sampled = tl.load(sampled_ptr + r, mask=r_ok)
    tl.store(draft_tokens_ptr + rows * draft_tokens_stride + step, sampled.to(tl.int64), mask=r_ok)
    # After the last step nothing else is needed; masks instead of a branch.
    go = r < tl.where(step < num_spec_tokens - 1, num_reqs, 0)
    tl.store(input_ids_ptr + r, sampled.to(input_ids_ptr.dtype.element_ty), mask=go)
    n = tl.where(step < num_spec_tokens - 1, hidden_size, 0)
    src = output_hidden_ptr + rows[:, None] * out_hidden_stride
    dst = hidden_ptr + rows[:, None] * hidden_stride
    for c0 in range(0, n, BLOCK):
        c = c0 + tl.arange(0, BLOCK)[None, :]
        m = go[:, None] & (c < n)
        tl.store(dst + c, tl.load(src + c, mask=m).to(hidden_ptr.dtype.element_ty), mask=m)
    pos = tl.load(positions_ptr + r, mask=go)
    tl.store(positions_ptr + r, tl.minimum(pos + 1, max_model_len - 1), mask=go)
    seq_len = tl.load(seq_lens_ptr + r, mask=go)
    tl.store(seq_lens_ptr + r, tl.minimum(seq_len + 1, max_model_len), mask=go)


def update_eagle_draft_inputs(
    sampled: torch.Tensor,
    output_hidden: torch.Tensor,
    draft_tokens: torch.Tensor,
    eagle_input_ids: torch.Tensor,
    eagle_hidden_states: torch.Tensor,
    eagle_positions: torch.Tensor,
    eagle_seq_lens: torch.Tensor,
    current_draft_step: torch.Tensor,
    num_reqs: int,
    num_spec_tokens: int,
    max_model_len: int,
) -> None:
    """Record a draft step's sample and prepare the next step (vLLM
    ``_update_eagle_draft_inputs_kernel``).

    ``step = current_draft_step`` (read on the device): ``draft_tokens[r, step] =
    sampled[r]``; unless ``step >= num_spec_tokens - 1``: ``input_ids[r] = sampled[r]``,
    ``hidden_states[r] = output_hidden[r]``, ``positions[r] += 1`` (clamped to
    ``max_model_len - 1``), ``seq_lens[r] += 1`` (clamped to ``max_model_len``).
    """
    tensors = (
        sampled,
        output_hidden,
        draft_tokens,
        eagle_input_ids,
        eagle_hidden_states,
        eagle_positions,
        eagle_seq_lens,
        current_draft_step,
    )  # the kernel's pointer arguments, in order
    check_device(*tensors)
    if output_hidden.dim() != 2 or eagle_hidden_states.dim() != 2:
        raise ValueError("output_hidden and eagle_hidden_states must be [rows, hidden]")
    if output_hidden.shape[1] != eagle_hidden_states.shape[1]:
        raise ValueError("output_hidden and eagle_hidden_states widths differ")
    if output_hidden.stride(1) != 1 or eagle_hidden_states.stride(1) != 1:
        raise ValueError("hidden-state rows must be contiguous")
    if draft_tokens.dim() != 2 or draft_tokens.stride(1) != 1:
        raise ValueError("draft_tokens must be a row-major [R, K] tensor")
    if current_draft_step.numel() != 1:
        raise ValueError("current_draft_step must be a one-element tensor")
    hidden_size = output_hidden.shape[1]
    block = pow2_block(hidden_size, _HIDDEN_BLOCK, _HIDDEN_BLOCK_INTERPRETED)
    launch_rows(
        _update_eagle_draft_inputs_kernel,
        num_reqs,
        block,
        *tensors,
        *strides(output_hidden, eagle_hidden_states, draft_tokens, dims=1),
        hidden_size,
        num_spec_tokens,
        max_model_len,
        num_reqs,
        BLOCK=block,
    )
