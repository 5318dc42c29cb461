"""Scatter the step's new K/V rows into the paged KV cache through ``slot_mapping``.

This is the only writer of the cache, and its index is a per-token slot computed by the slot
mapping kernel; padded tokens carry ``PAD_SLOT_ID`` (-1) and must be skipped. A stale slot in
the padding region silently overwrites another request's cache, which is why the write is
guarded.
"""

from __future__ import annotations

import torch

from eaglegraph.kernels._triton import check_device, next_pow2, program_rows, reduce_max, tl, triton
from eaglegraph.kernels.guard import Guard, guard_args, log_violation
from eaglegraph.kernels.launch import launch_rows, strides

__all__ = ["PAD_SLOT_ID", "write_kv"]

PAD_SLOT_ID = -1


@triton.jit
def _write_kv_kernel(
    k_ptr,
    v_ptr,
    k_cache_ptr,
    v_cache_ptr,
    slot_mapping_ptr,
    num_tokens,
    num_slots,
    num_kv_heads,
    head_dim,
    stride_kt,
    stride_kh,
    stride_vt,
    stride_vh,
    stride_kcb,
    stride_kco,
    stride_kch,
    stride_vcb,
    stride_vco,
    stride_vch,
    log,
    slot_mapping_id,
    PAGE_SIZE: tl.constexpr,
    BLOCK_R: tl.constexpr,  # tokens per program
    BLOCK_H: tl.constexpr,
    BLOCK_D: tl.constexpr,
    GUARD: tl.constexpr,
):
    t, t_ok = program_rows(num_tokens, BLOCK_R)
    t = t.to(tl.int64)
    slot = tl.load(slot_mapping_ptr + t, mask=t_ok, other=-1).to(tl.int64)
    # vLLM's reshape_and_cache skips every negative slot, not just PAD_SLOT_ID.
    do_write = slot >= 0
    if GUARD:
        bad = t_ok & ((slot < -1) | (slot >= num_slots))  # -1 is PAD_SLOT_ID
        if reduce_max(bad.to(tl.int32), 0) > 0:  # no logger call in the common, valid case
            log_violation(log, slot_mapping_id, t, slot, bad)
        do_write = do_write & (slot < num_slots)
    cache_row = (slot // PAGE_SIZE)[:, None, None]
    offset = (slot % PAGE_SIZE)[:, None, None]
    tok = t[:, None, None]
    h = tl.arange(0, BLOCK_H)[None, :, None]
    d = tl.arange(0, BLOCK_D)[None, None, :]
    mask = do_write[:, None, None] & (h < num_kv_heads) & (d < head_dim)
    k = tl.load(k_ptr + tok * stride_kt + h * stride_kh + d, mask=mask)
    v = tl.load(v_ptr + tok * stride_vt + h * stride_vh + d, mask=mask)
    k_dst = k_cache_ptr + cache_row * stride_kcb + offset * stride_kco + h * stride_kch + d
    v_dst = v_cache_ptr + cache_row * stride_vcb + offset * stride_vco + h * stride_vch + d
    tl.store(k_dst, k.to(k_cache_ptr.dtype.element_ty), mask=mask)
    tl.store(v_dst, v.to(v_cache_ptr.dtype.element_ty), mask=mask)


def write_kv(
    k: torch.Tensor,
    v: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    num_tokens: int,
    guard: Guard | None = None,
) -> None:
    """Write ``k[t], v[t]`` for ``t < num_tokens`` to cache slot ``slot_mapping[t]``.

    ``k``, ``v``: ``[T, num_kv_heads, head_dim]`` (any row/head strides, contiguous last dim);
    caches ``[num_blocks, block_size, num_kv_heads, head_dim]``; ``slot_mapping`` int64 with
    at least ``num_tokens`` entries. Negative slots are skipped (``PAD_SLOT_ID``). Guard role
    ``"slot_mapping"``: a slot ``< -1`` or ``>= num_blocks * block_size`` is logged (row = token
    index, value = slot) and not written.
    """
    check_device(k, v, k_cache, v_cache, slot_mapping)
    num_blocks, block_size, num_kv_heads, head_dim = k_cache.shape
    if v_cache.shape != k_cache.shape:
        raise ValueError(f"k_cache {tuple(k_cache.shape)} != v_cache {tuple(v_cache.shape)}")
    if k.shape[1:] != (num_kv_heads, head_dim) or v.shape[1:] != (num_kv_heads, head_dim):
        raise ValueError(f"k/v rows {tuple(k.shape[1:])} do not match the cache heads")
    if num_tokens > min(k.shape[0], v.shape[0], slot_mapping.shape[0]):
        raise ValueError(f"num_tokens {num_tokens} exceeds k/v/slot_mapping rows")
    for t in (k, v, k_cache, v_cache):
        if t.stride(-1) != 1:
            raise ValueError("k, v and the caches need a contiguous last dimension")
    g = guard_args(guard, "write_kv", ("slot_mapping",), slot_mapping)
    block_h, block_d = next_pow2(num_kv_heads), next_pow2(head_dim)
    # Tokens per program: all of them under the interpreter (cost is per operation, not per
    # element); compiled, enough to give each program ~1K elements.
    launch_rows(
        _write_kv_kernel,
        num_tokens,
        block_h * block_d,
        k,
        v,
        k_cache,
        v_cache,
        slot_mapping,
        num_tokens,
        num_blocks * block_size,
        num_kv_heads,
        head_dim,
        *strides(k, v, k_cache, v_cache),
        guard=g,
        gpu_rows=max(1, 1024 // (block_h * block_d)),
        PAGE_SIZE=block_size,
        BLOCK_H=block_h,
        BLOCK_D=block_d,
    )
