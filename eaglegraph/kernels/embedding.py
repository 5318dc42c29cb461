"""Token-embedding gather that poisons instead of faulting.

`input_ids` buffers are persistent and their padding is stale or deliberately poisoned by the
probe. `torch.embedding` would raise a device-side assert on such an id (and kill the process);
this kernel writes a NaN row instead, so a stale id surfaces as NaN in whatever valid output
later reads that row. One launch, grid from Python ints, no host sync: capture-safe.
"""

from __future__ import annotations

import torch

from eaglegraph.kernels._triton import check_device, next_pow2, rows_per_program, tl, triton
from eaglegraph.kernels.launch import launch, strides

_MAX_BLOCK = 4096


@triton.jit
def _embedding_kernel(
    weight_ptr,
    ids_ptr,
    out_ptr,
    num_tokens,
    vocab,
    hidden,
    weight_stride,
    out_stride,
    BLOCK_T: tl.constexpr,
    BLOCK: tl.constexpr,
):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_T + tl.arange(0, BLOCK_T)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    row_ok = rows < num_tokens
    mask = row_ok[:, None] & (cols < hidden)[None, :]
    tok = tl.load(ids_ptr + rows, mask=row_ok, other=0).to(tl.int64)
    valid = (tok >= 0) & (tok < vocab)
    src = weight_ptr + tl.where(valid, tok, 0)[:, None] * weight_stride + cols[None, :]
    row = tl.load(src, mask=mask, other=0.0)
    row = tl.where(valid[:, None], row.to(tl.float32), float("nan"))
    dst = out_ptr + rows[:, None] * out_stride + cols[None, :]
    tl.store(dst, row.to(out_ptr.dtype.element_ty), mask=mask)


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
    check_device(weight, ids, out)
    if num_tokens <= 0:
        return
    hidden = weight.shape[1]
    block = min(next_pow2(hidden), _MAX_BLOCK)
    block_t = rows_per_program(num_tokens, block)
    grid = (triton.cdiv(num_tokens, block_t), triton.cdiv(hidden, block))
    launch(
        _embedding_kernel,
        grid,
        weight,
        ids,
        out,
        num_tokens,
        weight.shape[0],
        hidden,
        *strides(weight, out, dims=1),
        BLOCK_T=block_t,
        BLOCK=block,
    )
