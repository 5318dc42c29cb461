"""What both metadata styles share: shape checks, tile sizes and launch constants.

Compiled, tiles keep register-friendly sizes; under the CPU interpreter, where a program costs
~0.1 ms per executed operation whatever its tile size, tiles grow to cover a short request in
one step and one program takes every kv head.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from eaglegraph.kernels._triton import interpreting, next_pow2
from eaglegraph.kernels.blas import one_blas_thread
from eaglegraph.kernels.launch import strides

LOG2E = 1.4426950408889634


@dataclass(frozen=True)
class Heads:
    """What q and the caches of one launch say: kv heads, the query heads sharing each
    (``group``, GQA), the head width, the page size, and whether the kernel's dots run in
    fp32 (:func:`dot_in_f32`)."""

    num_kv_heads: int
    group: int
    head_dim: int
    page_size: int
    dot_f32: bool


@dataclass(frozen=True)
class Operands:
    """One layer's q, caches and output, checked against each other once by the entry point,
    and what they say of the launch (``heads``): the kernels' launchers take them as one."""

    q: torch.Tensor
    k_cache: torch.Tensor
    v_cache: torch.Tensor
    out: torch.Tensor
    heads: Heads

    @property
    def tensors(self) -> tuple[torch.Tensor, ...]:
        """The kernels' first pointer arguments, in their order."""
        return (self.q, self.k_cache, self.v_cache, self.out)

    @property
    def strides(self) -> tuple[int, ...]:
        """The kernels' stride arguments: leading strides of q, out, k_cache, v_cache."""
        return strides(self.q, self.out, self.k_cache, self.v_cache)


def check_attention_shapes(
    q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, out: torch.Tensor
) -> Operands:
    """Validate q/out/cache shapes; returns them with what they say of the launch."""
    if q.dim() != 3 or out.shape != q.shape:
        raise ValueError(f"q {tuple(q.shape)} and out {tuple(out.shape)} must be [T, nh, hd]")
    if k_cache.dim() != 4 or v_cache.shape != k_cache.shape:
        raise ValueError("k_cache and v_cache must both be [num_blocks, block_size, nkv, hd]")
    _, block_size, num_kv_heads, head_dim = k_cache.shape
    num_heads = q.shape[1]
    if q.shape[2] != head_dim or num_heads % num_kv_heads:
        raise ValueError(
            f"q {tuple(q.shape)} does not fit cache heads ({num_kv_heads}, {head_dim})"
        )
    for t in (q, out, k_cache, v_cache):
        if t.stride(-1) != 1:
            raise ValueError("q, out and the caches need a contiguous last dimension")
    group = num_heads // num_kv_heads
    heads = Heads(num_kv_heads, group, head_dim, block_size, dot_in_f32(q, k_cache))
    return Operands(q, k_cache, v_cache, out, heads)


# Under the interpreter a program costs ~0.1 ms per executed operation however wide its tiles
# are, so tiles grow until one query block and one KV block cover a short request. Caps:
# rows and KV positions per tile (numpy's work per operation stays small next to the
# interpreter's), and rows * BLOCK_N * cols per dot. numpy's OpenBLAS splits a dot of more
# than 2**18 multiply-adds over threads that make it 10-1000x slower on a busy 2-core
# machine; once it is told to use one thread (`kernels.blas`), a dot may grow to 2**24,
# which with every tile dimension >= 16 keeps each tile under Triton's 2**20 elements, and a
# 1,000-token prefill takes 20 KV steps per layer instead of 272. Compiled, tiles keep their
# register-friendly sizes.
ONE_BLAS_THREAD = interpreting() and one_blas_thread()
INTERP_MAX_TILE = 256
INTERP_MAX_DOT = 1 << 24 if ONE_BLAS_THREAD else 1 << 18
# a prefill tile's query rows and KV positions: the KV cap sizes every launch (a launch knows
# only the block table's width, not the requests' lengths), so it stays at 128, where short
# requests lose least (measured on the tiny presets: 128 beat 64, 256 and 512)
INTERP_MAX_ROWS, INTERP_MAX_KV = (1024, 128) if ONE_BLAS_THREAD else (256, 256)


def fit_interpreted(rows: int, block_n: int, cols: int, min_rows: int) -> tuple[int, int]:
    """Halve the larger of (rows, BLOCK_N) until one tile's dot fits the single-thread size."""
    while rows * block_n * cols > INTERP_MAX_DOT:
        if block_n >= rows and block_n > 16:
            block_n //= 2
        elif rows > min_rows:
            rows //= 2
        elif block_n > 16:
            block_n //= 2
        else:
            break
    return rows, block_n


def interpreted_kv_heads(num_kv_heads: int) -> int:
    """Kv heads per program under the interpreter: all of them when they tile evenly.

    Scoring every kv head in one block-diagonal dot wastes (kv heads - 1)/kv heads of the
    dot's multiply-adds, which is free in numpy, and divides the programs (and so the
    interpreter's per-operation cost) by the number of kv heads. Compiled, always 1.
    """
    if num_kv_heads & (num_kv_heads - 1) == 0 and num_kv_heads <= 16:
        return num_kv_heads
    return 1


def prefill_tiles(
    head_dim: int, num_kv_heads: int, group: int, max_query_len: int, max_kv_len: int
) -> tuple[int, int, int, int, int]:
    """(BLOCK_M, GROUP_P2, KV_HEADS, BLOCK_N, BLOCK_D) for a bound ``max_kv_len`` on any
    request's KV length.

    A program's tile has BLOCK_M query tokens times KV_HEADS * GROUP_P2 heads as rows; tl.dot
    needs every tile dimension >= 16, so short queries are padded up to 16 rows.
    """
    block_d = next_pow2(head_dim, 16)
    group_p2 = next_pow2(group)
    if not interpreting():
        heads = group_p2
        rows = max(min(heads * next_pow2(max_query_len), 64 if block_d <= 128 else 32), heads, 16)
        return rows // heads, group_p2, 1, 64 if block_d <= 128 else 32, block_d
    kv_heads = interpreted_kv_heads(num_kv_heads)
    while True:
        heads = kv_heads * group_p2
        rows = min(heads * next_pow2(max_query_len), max(INTERP_MAX_ROWS, heads))
        block_n = min(next_pow2(max_kv_len, 16), INTERP_MAX_KV)
        min_rows = max(heads, 16)
        rows, block_n = fit_interpreted(max(rows, 16), block_n, kv_heads * block_d, min_rows)
        if kv_heads == 1 or rows * block_n * kv_heads * block_d <= INTERP_MAX_DOT:
            return rows // heads, group_p2, kv_heads, block_n, block_d
        kv_heads //= 2


def decode_tiles(
    head_dim: int, num_kv_heads: int, group: int, max_kv_len: int
) -> tuple[int, int, int, int]:
    """(KV_HEADS, BLOCK_H, BLOCK_N, BLOCK_D): KV_HEADS * GROUP_P2 query heads as rows."""
    block_d = next_pow2(head_dim, 16)
    group_p2 = next_pow2(group)
    if not interpreting():
        return 1, max(group_p2, 16), 64 if block_d <= 128 else 32, block_d
    kv_heads = interpreted_kv_heads(num_kv_heads)
    while True:
        block_h = max(kv_heads * group_p2, 16)
        block_n = min(next_pow2(max_kv_len, 16), INTERP_MAX_TILE)
        _, block_n = fit_interpreted(block_h, block_n, kv_heads * block_d, block_h)
        if kv_heads == 1 or block_h * block_n * kv_heads * block_d <= INTERP_MAX_DOT:
            return kv_heads, block_h, block_n, block_d
        kv_heads //= 2


def num_warps(rows: int, block_d: int) -> int:
    return 4 if rows * block_d <= 64 * 128 else 8


@dataclass(frozen=True)
class Tiles:
    """One program's tile and the constants an attention kernel compiles for it.

    A tile's rows are KV_HEADS kv heads of GROUP_P2 query heads each, times ``block_rows``
    query tokens for a prefill (the kernel's ``BLOCK_M``) or padded to ``block_rows`` rows
    for a decode (``BLOCK_H``); ``rows_name`` says which. Both kernels take the same
    constants otherwise, so they are built here once instead of spelled out per launch.
    """

    heads: Heads
    rows_name: str
    block_rows: int
    rows: int
    kv_heads: int
    block_n: int
    block_d: int

    @classmethod
    def prefill(cls, heads: Heads, max_query_len: int, max_kv_len: int) -> Tiles:
        """The prefill kernel's tile (:func:`prefill_tiles`)."""
        block_m, group_p2, kv_heads, block_n, block_d = prefill_tiles(
            heads.head_dim, heads.num_kv_heads, heads.group, max_query_len, max_kv_len
        )
        rows = block_m * kv_heads * group_p2
        return cls(heads, "BLOCK_M", block_m, rows, kv_heads, block_n, block_d)

    @classmethod
    def decode(cls, heads: Heads, max_kv_len: int) -> Tiles:
        """The decode kernel's tile (:func:`decode_tiles`)."""
        kv_heads, block_h, block_n, block_d = decode_tiles(
            heads.head_dim, heads.num_kv_heads, heads.group, max_kv_len
        )
        return cls(heads, "BLOCK_H", block_h, block_h, kv_heads, block_n, block_d)

    @property
    def kv_head_programs(self) -> int:
        """Programs per request (or decode row) along the kv heads."""
        return self.heads.num_kv_heads // self.kv_heads

    def constexprs(self) -> dict[str, Any]:
        """The kernel's compile-time keyword arguments and its warp count."""
        return {
            "PAGE_SIZE": self.heads.page_size,
            "GROUP": self.heads.group,
            "GROUP_P2": next_pow2(self.heads.group),
            "KV_HEADS": self.kv_heads,
            self.rows_name: self.block_rows,
            "BLOCK_N": self.block_n,
            "BLOCK_D": self.block_d,
            "DOT_F32": self.heads.dot_f32,
            "num_warps": num_warps(self.rows, self.kv_heads * self.block_d),
        }


def dot_in_f32(q: torch.Tensor, k_cache: torch.Tensor) -> bool:
    """fp32 inputs need IEEE dots (tf32 is not 1e-5 accurate); mixed dtypes and the
    interpreter (whose bf16 dot is wrong) also go through fp32."""
    return q.dtype == torch.float32 or q.dtype != k_cache.dtype or interpreting()


def default_scale(head_dim: int) -> float:
    """The softmax scale every kernel here expects callers to pass: 1/sqrt(head_dim)."""
    return 1.0 / math.sqrt(head_dim)
