"""Query-block inputs of DFlash drafting: one launch over the batch.

Request r's block is K+1 rows at `r·(K+1)`: the next (bonus) token at the position after its
last accepted token, then K mask tokens at the following positions; its KV length is that
position + K + 1, and rows 1..K are sampled (`sample_indices[r·K + j] = r·(K+1) + 1 + j`).
Per-request rows from `num_reqs` up to `pad_reqs` are padded (empty queries, KV length 0,
sample index 0) so a graph captured for more requests reads defined values; vLLM before its
fix wrote only the real requests' rows, leaving the rows a padded replay reads stale.
"""

from __future__ import annotations

import torch

from eaglegraph.kernels._triton import check_device, next_pow2, tl, triton

__all__ = ["prepare_dflash_block"]


@triton.jit
def _block_kernel(
    t_qsl_ptr,
    t_pos_ptr,
    num_rejected_ptr,
    next_tokens_ptr,
    ids_ptr,
    pos_ptr,
    qsl_ptr,
    seq_ptr,
    sample_ptr,
    num_reqs,
    pad_reqs,
    mask_token,
    max_model_len,
    K: tl.constexpr,
    BLOCK_Q: tl.constexpr,
):
    r = tl.program_id(0)
    offs = tl.arange(0, BLOCK_Q)
    if r < num_reqs:
        qs = tl.load(t_qsl_ptr + r)
        qe = tl.load(t_qsl_ptr + r + 1)
        kept = qe - qs - tl.load(num_rejected_ptr + r)
        anchor = tl.load(t_pos_ptr + qs + kept - 1) + 1  # position of the next token
        base = r * (K + 1)
        row = offs < K + 1
        nxt = tl.load(next_tokens_ptr + r)
        ids = tl.where(offs == 0, nxt, mask_token)
        tl.store(ids_ptr + base + offs, ids.to(ids_ptr.dtype.element_ty), mask=row)
        # clamped at max_model_len as vLLM's _prepare_dflash_inputs_kernel clamps them: a
        # request near it drafts past the end, and those drafts are never verified
        pos = tl.minimum(anchor + offs, max_model_len - 1)
        tl.store(pos_ptr + base + offs, pos.to(tl.int64), mask=row)
        tl.store(qsl_ptr + r, base)
        tl.store(seq_ptr + r, tl.minimum(anchor + K + 1, max_model_len).to(tl.int32))
        tl.store(sample_ptr + r * K + offs, (base + 1 + offs).to(tl.int64), mask=offs < K)
    else:  # padded request rows, up to pad_reqs
        end = num_reqs * (K + 1)
        tl.store(qsl_ptr + r, end)
        tl.store(seq_ptr + r, 0)
        tl.store(sample_ptr + r * K + offs, tl.zeros_like(offs).to(tl.int64), mask=offs < K)
    if r == pad_reqs - 1:
        tl.store(qsl_ptr + pad_reqs, num_reqs * (K + 1))


def prepare_dflash_block(
    target_qsl: torch.Tensor,
    target_positions: torch.Tensor,
    num_rejected: torch.Tensor,
    next_tokens: torch.Tensor,
    ids: torch.Tensor,
    positions: torch.Tensor,
    qsl: torch.Tensor,
    seq_lens: torch.Tensor,
    sample_indices: torch.Tensor,
    num_reqs: int,
    pad_reqs: int,
    num_speculative_tokens: int,
    mask_token_id: int,
    max_model_len: int | None = None,
) -> None:
    """Write the query blocks of `num_reqs` requests and pad per-request rows up to
    `pad_reqs` (>= num_reqs); positions are clamped to `max_model_len - 1` and KV lengths to
    `max_model_len` (None: no clamp)."""
    check_device(target_qsl, target_positions, ids, positions, qsl, seq_lens, sample_indices)
    k = num_speculative_tokens
    if pad_reqs < num_reqs or qsl.numel() < pad_reqs + 1 or sample_indices.numel() < pad_reqs * k:
        raise ValueError(f"DFlash buffers hold fewer than {pad_reqs} requests")
    if pad_reqs <= 0:
        return
    _block_kernel[(pad_reqs,)](
        target_qsl, target_positions, num_rejected, next_tokens, ids, positions, qsl, seq_lens,
        sample_indices, num_reqs, pad_reqs, mask_token_id,
        (1 << 30) if max_model_len is None else max_model_len, K=k,
        BLOCK_Q=next_pow2(k + 1),
    )  # fmt: skip
