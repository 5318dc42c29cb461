"""Token-embedding gather that poisons instead of faulting.

`input_ids` buffers are persistent and their padding is stale or deliberately poisoned by the
probe. `torch.embedding` would raise a device-side assert on such an id (and kill the process);
this kernel writes a NaN row instead, so a stale id surfaces as NaN in whatever valid output
later reads that row. One launch, grid from Python ints, no host sync: capture-safe.
"""

from __future__ import annotations

import torch

# The package init sets TRITON_INTERPRET when there is no CUDA device; it must run first.
import eaglegraph.kernels  # noqa: F401

# isort: split
import triton
import triton.language as tl

_MAX_BLOCK = 4096


@triton.jit
def _embedding_kernel(
    weight_ptr,
    ids_ptr,
    out_ptr,
    vocab,
    hidden,
    weight_stride,
    out_stride,
    BLOCK: tl.constexpr,
):
    token = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < hidden
    tok = tl.load(ids_ptr + token).to(tl.int64)
    valid = (tok >= 0) & (tok < vocab)
    row = tl.load(weight_ptr + tl.where(valid, tok, 0) * weight_stride + cols, mask=mask, other=0.0)
    row = tl.where(valid, row.to(tl.float32), float("nan"))
    tl.store(out_ptr + token * out_stride + cols, row.to(out_ptr.dtype.element_ty), mask=mask)


def embedding_lookup(
    weight: torch.Tensor, ids: torch.Tensor, out: torch.Tensor, num_tokens: int
) -> None:
    """`out[t] = weight[ids[t]]` for t < num_tokens; an id outside `[0, V)` gives a NaN row."""
    if weight.dim() != 2 or out.dim() != 2 or out.shape[1] != weight.shape[1]:
        raise ValueError(
            f"embedding_lookup: weight {tuple(weight.shape)} and out {tuple(out.shape)} must be "
            "[V, H] and [T, H]"
        )
    if ids.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"embedding_lookup: ids must be int32 or int64, found {ids.dtype}")
    if weight.stride(1) != 1 or out.stride(1) != 1:
        raise ValueError("embedding_lookup: rows of weight and out must be contiguous")
    if num_tokens > min(ids.shape[0], out.shape[0]):
        raise ValueError(f"embedding_lookup: num_tokens {num_tokens} exceeds the buffers")
    if num_tokens <= 0:
        return
    hidden = weight.shape[1]
    block = min(triton.next_power_of_2(hidden), _MAX_BLOCK)
    grid = (num_tokens, triton.cdiv(hidden, block))
    _embedding_kernel[grid](
        weight,
        ids,
        out,
        weight.shape[0],
        hidden,
        weight.stride(0),
        out.stride(0),
        BLOCK=block,
    )
