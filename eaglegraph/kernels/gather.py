"""Row gather at ``last_token_indices`` (hidden states, positions, tokens).

In a FULL draft-prefill graph the gather runs over the padded request count, so without the
``unpadded-last-token-indices`` fix stale ``last_token_indices`` past the real requests could
exceed the number of rows the graph's source tensor has: PyTorch's index kernel then asserts on
the device. Unguarded, this kernel reads exactly what the ATen gather would (and may fault on
CUDA: intended). Guarded, it logs the index and writes poison instead — NaN for floating
outputs, 0 for integers — so the bad row also shows up downstream through NaN propagation.
"""

from __future__ import annotations

import torch

from eaglegraph.kernels._triton import (
    check_device,
    pow2_block,
    program_rows,
    reduce_max,
    rows_per_program,
    tl,
    triton,
)
from eaglegraph.kernels.guard import Guard, guard_args, log_violation
from eaglegraph.kernels.launch import launch, strides

__all__ = ["gather_rows"]

_MAX_TILE = 4096
_MAX_COLS = 1024


@triton.jit
def _gather_rows_kernel(
    src_ptr,
    indices_ptr,
    out_ptr,
    src_stride,
    out_stride,
    width,
    num_rows,
    num_src_rows,
    log,
    indices_id,
    BLOCK_R: tl.constexpr,
    BLOCK_W: tl.constexpr,
    IS_FLOAT: tl.constexpr,
    GUARD: tl.constexpr,
):
    rows, row_ok = program_rows(num_rows, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_W + tl.arange(0, BLOCK_W)
    idx = tl.load(indices_ptr + rows, mask=row_ok, other=0).to(tl.int64)
    read_ok = row_ok
    if GUARD:
        bad = row_ok & ((idx < 0) | (idx >= num_src_rows))
        # Each index is logged once, by the first column block; valid indices call no logger.
        if (tl.program_id(1) == 0) & (reduce_max(bad.to(tl.int32), 0) > 0):
            log_violation(log, indices_id, rows, idx, bad)
        read_ok = row_ok & ~bad
    col_ok = cols[None, :] < width
    vals = tl.load(
        src_ptr + idx[:, None] * src_stride + cols[None, :],
        mask=read_ok[:, None] & col_ok,
        other=0,
    )
    if GUARD:
        poison = float("nan") if IS_FLOAT else 0
        vals = tl.where(read_ok[:, None], vals, poison)
    tl.store(
        out_ptr + rows[:, None].to(tl.int64) * out_stride + cols[None, :],
        vals.to(out_ptr.dtype.element_ty),
        mask=row_ok[:, None] & col_ok,
    )


def gather_rows(
    src: torch.Tensor,
    indices: torch.Tensor,
    out: torch.Tensor,
    num_rows: int,
    num_src_rows: int,
    guard: Guard | None = None,
    role: str = "last_token_indices",
) -> None:
    """``out[i] = src[indices[i]]`` for ``i < num_rows``; ``src`` ``[N, W]`` or ``[N]``.

    ``num_src_rows`` is the number of rows the gather may legally address (in a captured
    graph, the rows the source tensor of that graph has, e.g. the padded token count), which
    can be smaller than ``src``'s allocation. Guard role ``role``: an index outside
    ``[0, num_src_rows)`` is logged (row = ``i``, value = index) and its output row is
    written as NaN (floating ``out``) or 0 (integer ``out``).
    """
    check_device(src, indices, out)
    if src.dim() not in (1, 2) or out.dim() != src.dim():
        raise ValueError(f"src {tuple(src.shape)} and out {tuple(out.shape)}: both 1-D or 2-D")
    width = 1 if src.dim() == 1 else src.shape[1]
    if src.dim() == 2 and (out.shape[1] != width or src.stride(1) != 1 or out.stride(1) != 1):
        raise ValueError("src and out need the same, contiguous row width")
    if num_rows > min(out.shape[0], indices.numel()):
        raise ValueError(f"num_rows {num_rows} exceeds out rows or indices")
    if num_rows <= 0:
        return
    g = guard_args(guard, "gather_rows", (role,), indices)
    block_w = pow2_block(width, _MAX_COLS, 1 << 16)
    block_r = rows_per_program(num_rows, block_w, gpu_rows=max(_MAX_TILE // block_w, 1))
    grid = (triton.cdiv(num_rows, block_r), triton.cdiv(width, block_w))
    launch(
        _gather_rows_kernel,
        grid,
        src,
        indices,
        out,
        *strides(src, out, dims=1),
        width,
        num_rows,
        num_src_rows,
        guard=g,
        BLOCK_R=block_r,
        BLOCK_W=block_w,
        IS_FLOAT=out.dtype.is_floating_point,
    )
