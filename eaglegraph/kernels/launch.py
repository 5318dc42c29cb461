"""One way to launch a kernel: its tensors' strides and its guard arguments, in order.

Every kernel here takes, after its own runtime arguments, the strides of its strided tensors
(leading dimensions; the last is contiguous) and, if guarded, the guard log as one tuple
argument ``(entries, count, capacity, kernel_id)``, one buffer id per role and the ``GUARD``
constexpr (:attr:`GuardArgs.kernel_args`). The wrappers build both here instead of spelling
them out launch by launch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from eaglegraph.kernels._triton import rows_per_program, triton
from eaglegraph.kernels.guard import GuardArgs

# Called with (kernel, guard args) before every launch while set: the probe's host-side
# breadcrumb of the last kernel launched, which names the kernel when a launch kills the device.
on_launch: Callable[[Any, GuardArgs | None], None] | None = None
# Called with the kernel once its launch returned, while set: where a replayed step's value
# changed inside the kernel rather than in the torch ops after it (probes/locate.py).
after_launch: Callable[[Any], None] | None = None


def strides(*tensors: torch.Tensor, dims: int | None = None) -> tuple[int, ...]:
    """The leading strides of each tensor in turn: ``dims`` of each, or all but the last
    (which the wrappers require to be contiguous)."""
    out: list[int] = []
    for t in tensors:
        out += t.stride()[: t.dim() - 1 if dims is None else dims]
    return tuple(out)


def launch(
    kernel: Any,
    grid: Sequence[int],
    *args: Any,
    guard: GuardArgs | None = None,
    **constexprs: Any,
) -> None:
    """``kernel[grid](*args, *guard tuple, GUARD=..., **constexprs)``."""
    if on_launch is not None:
        on_launch(kernel, guard)
    if guard is not None:
        args = (*args, *guard.kernel_args)
        constexprs["GUARD"] = guard.enabled
    kernel[tuple(grid)](*args, **constexprs)
    if after_launch is not None:
        after_launch(kernel)


def launch_rows(
    kernel: Any,
    rows: int,
    elems_per_row: int,
    *args: Any,
    guard: GuardArgs | None = None,
    gpu_rows: int = 1,
    extra_programs: int = 0,
    **constexprs: Any,
) -> None:
    """Launch a kernel whose programs take ``BLOCK_R`` rows each (see ``rows_per_program``):
    ``cdiv(rows, BLOCK_R)`` programs, then ``extra_programs`` more, on a 1-D grid; nothing
    when that is no program."""
    block_r = rows_per_program(rows, elems_per_row, gpu_rows)
    grid = (max(triton.cdiv(rows, block_r), 0) + extra_programs,)
    if grid[0] <= 0:
        return
    launch(kernel, grid, *args, guard=guard, BLOCK_R=block_r, **constexprs)
