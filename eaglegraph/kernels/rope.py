"""Rotary position embedding applied in place to q and k in one launch.

Neox / rotate-half style, as HF Llama, Qwen2/3 and Mistral use. The cos/sin cache is
`[max_pos, head_dim]` fp32 with cos in the first half of each row and sin in the second
(vLLM's layout), built by `eaglegraph.models.rope`.

Padded rows of the persistent position buffer legitimately flow through this kernel with stale
or poisoned values. An index outside the cache must never fault: the kernel writes NaN into
that token's q and k rows instead, so the probe sees the poison reach any valid output that
reads it. The grid comes from a Python int and nothing here syncs with the host, so the launch
can be captured in a CUDA graph.
"""

from __future__ import annotations

import torch

from eaglegraph.kernels._triton import check_device, next_pow2, program_rows, tl, triton
from eaglegraph.kernels.launch import launch_rows, strides


@triton.jit
def _rotate_heads(
    base,
    stride_t,
    stride_h,
    rows,
    row_ok,
    n_heads,
    cos,
    sin,
    valid,
    HALF: tl.constexpr,
    BLOCK_H: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    heads = tl.arange(0, BLOCK_H)[None, :, None]
    cols = tl.arange(0, BLOCK_D)[None, None, :]
    mask = row_ok[:, None, None] & (heads < n_heads) & (cols < HALF)
    first = base + rows[:, None, None] * stride_t + heads * stride_h + cols
    x1 = tl.load(first, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(first + HALF, mask=mask, other=0.0).to(tl.float32)
    c = cos[:, None, :]
    s = sin[:, None, :]
    ok = valid[:, None, None]
    out1 = tl.where(ok, x1 * c - x2 * s, float("nan"))
    out2 = tl.where(ok, x2 * c + x1 * s, float("nan"))
    tl.store(first, out1.to(base.dtype.element_ty), mask=mask)
    tl.store(first + HALF, out2.to(base.dtype.element_ty), mask=mask)


@triton.jit
def _rope_kernel(
    q_ptr,
    k_ptr,
    pos_ptr,
    cache_ptr,
    num_tokens,
    q_stride_t,
    q_stride_h,
    k_stride_t,
    k_stride_h,
    cache_stride,
    max_pos,
    NUM_Q_HEADS: tl.constexpr,
    NUM_K_HEADS: tl.constexpr,
    HALF: tl.constexpr,
    BLOCK_R: tl.constexpr,  # tokens per program
    BLOCK_QH: tl.constexpr,
    BLOCK_KH: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    rows, row_ok = program_rows(num_tokens, BLOCK_R)
    rows = rows.to(tl.int64)
    pos = tl.load(pos_ptr + rows, mask=row_ok, other=0).to(tl.int64)
    valid = (pos >= 0) & (pos < max_pos)
    cols = tl.arange(0, BLOCK_D)[None, :]
    row = cache_ptr + tl.where(valid, pos, 0)[:, None] * cache_stride
    cmask = row_ok[:, None] & (cols < HALF)
    cos = tl.load(row + cols, mask=cmask, other=0.0).to(tl.float32)
    sin = tl.load(row + HALF + cols, mask=cmask, other=0.0).to(tl.float32)
    _rotate_heads(
        q_ptr, q_stride_t, q_stride_h, rows, row_ok, NUM_Q_HEADS, cos, sin, valid,
        HALF, BLOCK_QH, BLOCK_D,
    )  # fmt: skip
    _rotate_heads(
        k_ptr, k_stride_t, k_stride_h, rows, row_ok, NUM_K_HEADS, cos, sin, valid,
        HALF, BLOCK_KH, BLOCK_D,
    )  # fmt: skip


def apply_rotary(
    q: torch.Tensor,
    k: torch.Tensor,
    positions: torch.Tensor,
    cos_sin_cache: torch.Tensor,
    num_tokens: int,
) -> None:
    """Rotate `q [T, nh, hd]` and `k [T, nkv, hd]` in place for the first `num_tokens` rows.

    q and k may be strided views (e.g. slices of a fused qkv output) as long as the last
    dimension is contiguous. A position outside `[0, cos_sin_cache.shape[0])` turns that
    token's q and k rows into NaN.
    """
    if q.dim() != 3 or k.dim() != 3 or q.shape[2] != k.shape[2]:
        raise ValueError(
            f"apply_rotary: q {tuple(q.shape)} and k {tuple(k.shape)} must be [T, heads, hd]"
        )
    head_dim = q.shape[2]
    if head_dim % 2 or cos_sin_cache.shape[1] != head_dim:
        raise ValueError(
            f"apply_rotary: head_dim {head_dim} must be even and match the cache width "
            f"{cos_sin_cache.shape[1]}"
        )
    if q.stride(2) != 1 or k.stride(2) != 1 or cos_sin_cache.stride(1) != 1:
        raise ValueError(
            "apply_rotary: the last dimension of q, k and the cache must be contiguous"
        )
    if num_tokens > min(q.shape[0], k.shape[0], positions.shape[0]):
        raise ValueError(f"apply_rotary: num_tokens {num_tokens} exceeds the buffers")
    check_device(q, k, positions, cos_sin_cache)
    half = head_dim // 2
    launch_rows(
        _rope_kernel,
        num_tokens,
        (q.shape[1] + k.shape[1]) * head_dim,
        q,
        k,
        positions,
        cos_sin_cache,
        num_tokens,
        *strides(q, k, cos_sin_cache),
        cos_sin_cache.shape[0],
        NUM_Q_HEADS=q.shape[1],
        NUM_K_HEADS=k.shape[1],
        HALF=half,
        BLOCK_QH=next_pow2(q.shape[1]),
        BLOCK_KH=next_pow2(k.shape[1]),
        BLOCK_D=next_pow2(half),
    )
