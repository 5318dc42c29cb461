"""The package's single import of Triton, plus launch-size helpers shared by the wrappers.

Importing triton from here (never directly) guarantees `eaglegraph.kernels.__init__` has
already decided whether kernels are compiled or interpreted.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl

from eaglegraph.kernels.language_patch import list_members_once, patch_once_per_launch
from eaglegraph.kernels.type_cache import cache_shapes

__all__ = [
    "by_backend",
    "check_device",
    "interpreting",
    "next_pow2",
    "pow2_block",
    "program_rows",
    "reduce_max",
    "reduce_min",
    "reduce_sum",
    "row_extents",
    "rows_per_program",
    "splat_mask",
    "tl",
    "triton",
]


def interpreting() -> bool:
    """Whether kernels run in Triton's CPU interpreter (not compiled for a GPU)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def _skip_discarded_overflow_checks() -> None:
    """Stop the interpreter from computing integer-overflow checks it then throws away.

    With ``sanitize_overflow`` on, every int32 add/sub/mul is redone in int64 and compared
    with the type's range, but the result only feeds a ``device_assert``, which is a no-op
    unless ``debug`` is on (the compiled default, and the interpreter's fixed one). Under
    the interpreter that dead check costs ~0.2 ms per operation, most of an index-heavy
    kernel's time. Results are unchanged; if Triton's internals differ, nothing is done.
    """
    try:
        interpreter = importlib.import_module("triton.runtime.interpreter")
    except ImportError:  # pragma: no cover - every supported triton has it
        return
    builder: Any = getattr(interpreter, "interpreter_builder", None)
    options: Any = getattr(builder, "options", None)
    if not dataclasses.is_dataclass(options) or isinstance(options, type):
        return
    if getattr(options, "debug", True) or not getattr(options, "sanitize_overflow", False):
        return
    builder.options = dataclasses.replace(options, sanitize_overflow=False)


Reduction = Callable[..., Any]


def _direct_reduction(combine_name: str, jitted: Reduction) -> Reduction:
    """Under the interpreter, ``tl.max``/``tl.min``/``tl.sum`` are jitted helpers and every
    call to a jitted helper re-patches the whole ``triton.language`` module (~0.4 ms, as much
    as a dozen tile operations). Calling ``tl.reduce`` with the same combine function takes
    the interpreter's numpy fast path directly. For the 32/64-bit inputs kernels here reduce,
    both give the same result; compiled kernels use the jitted helpers themselves."""
    combine = getattr(tl.standard, combine_name, None)
    if combine is None:  # pragma: no cover - a triton without it keeps the helper
        return jitted

    def reduction(x: Any, axis: Any) -> Any:
        return tl.reduce(x, axis, combine)

    return reduction


reduce_max: Reduction = tl.max
reduce_min: Reduction = tl.min
reduce_sum: Reduction = tl.sum
if interpreting():
    _skip_discarded_overflow_checks()
    patch_once_per_launch()
    list_members_once()
    cache_shapes()
    reduce_max = _direct_reduction("_elementwise_max", tl.max)
    reduce_min = _direct_reduction("_elementwise_min", tl.min)
    reduce_sum = _direct_reduction("_sum_combine", tl.sum)


def next_pow2(n: int, minimum: int = 1) -> int:
    """Smallest power of two >= max(n, minimum): Triton block shapes must be powers of two."""
    return max(triton.next_power_of_2(max(int(n), 1)), minimum)


def by_backend(compiled: int, interpreted: int) -> int:
    """A launch size for compiled kernels, or the (wider) one for the interpreter, where each
    executed operation costs the same whatever its width."""
    return interpreted if interpreting() else compiled


def pow2_block(n: int, cap: int, interpreted_cap: int) -> int:
    """A power-of-two block covering ``n`` elements, at most ``cap`` compiled and
    ``interpreted_cap`` under the interpreter."""
    return min(next_pow2(n), by_backend(cap, interpreted_cap))


def rows_per_program(rows: int, elems_per_row: int, gpu_rows: int = 1) -> int:
    """Rows one program handles: ``gpu_rows`` on a GPU (many programs in flight), as many as
    fit in one ~64K-element block under the CPU interpreter, where each program costs ~0.1 ms
    per operation no matter how wide its blocks are; never more than ``rows`` rounded up. A
    power of two, from Python ints only (capture-safe)."""
    if not interpreting():
        return min(next_pow2(rows), next_pow2(gpu_rows))
    budget = max(1, (1 << 16) // max(1, next_pow2(elems_per_row)))
    return min(
        next_pow2(rows), next_pow2(budget) if budget & (budget - 1) == 0 else next_pow2(budget) // 2
    )


def check_device(*tensors: torch.Tensor) -> None:
    """Raise if tensors live on different devices or on CPU without the interpreter.

    Shape/device checks only read Python metadata, so they are safe inside graph capture.
    """
    device = tensors[0].device
    for t in tensors:
        if t.device != device:
            raise ValueError(f"tensors on different devices: {t.device} vs {device}")
    if device.type == "cpu" and not interpreting():
        raise ValueError("CPU tensors need TRITON_INTERPRET=1 (set when no CUDA device exists)")


@triton.jit
def splat_mask(cond, like):
    """Broadcast the scalar boolean ``cond`` to the shape of the integer block ``like``.

    Kernels use this instead of ``block & scalar_bool``: Triton's CPU interpreter tags a
    scalar comparison result with its operands' dtype, so splatting it yields integers (or
    floats) and the combined mask is rejected. Going through int32 is exact everywhere and
    folds away when compiled.
    """
    return (like * 0 + cond.to(tl.int32)) != 0


@triton.jit
def program_rows(n, BLOCK_R: tl.constexpr):
    """``(rows, rows < n)``: the ``BLOCK_R`` rows this program (id 0) handles, and which exist."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    return rows, rows < n


@triton.jit
def row_extents(indptr_ptr, r, r_ok):
    """``(indptr[r], indptr[r + 1])`` for the rows ``r`` where ``r_ok`` (0 elsewhere): each
    row's span in a cumulative index array."""
    start = tl.load(indptr_ptr + r, mask=r_ok, other=0)
    end = tl.load(indptr_ptr + r + 1, mask=r_ok, other=0)
    return start, end
