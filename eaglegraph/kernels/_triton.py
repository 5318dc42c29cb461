"""The package's single import of Triton, plus launch-size helpers shared by the wrappers.

Importing triton from here (never directly) guarantees `eaglegraph.kernels.__init__` has
already decided whether kernels are compiled or interpreted.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

__all__ = [
    "check_device",
    "interpreting",
    "next_pow2",
    "rows_per_program",
    "splat_mask",
    "tl",
    "triton",
]


def interpreting() -> bool:
    """Whether kernels run in Triton's CPU interpreter (not compiled for a GPU)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def next_pow2(n: int, minimum: int = 1) -> int:
    """Smallest power of two >= max(n, minimum): Triton block shapes must be powers of two."""
    return max(triton.next_power_of_2(max(int(n), 1)), minimum)


def rows_per_program(rows: int, elems_per_row: int, gpu_rows: int = 1) -> int:
    """Rows one program handles: a few on a GPU (many programs in flight), as many as fit in
    one block under the CPU interpreter, where each program costs ~0.1 ms per operation no
    matter how wide its blocks are. A power of two, from Python ints only (capture-safe)."""
    if not interpreting():
        return next_pow2(gpu_rows)
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
