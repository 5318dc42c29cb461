"""Record every memory access a kernel makes under Triton's CPU interpreter.

The interpreter dereferences raw addresses without bounds checks, so an out-of-bounds read
either returns garbage or crashes the process. To prove a guarded kernel never touches
memory outside the buffers it was given (and that an unguarded one reads nothing in a
padding region), the tests wrap the interpreter's load/store/atomic builders and compare
each masked-in address against byte ranges of tensor views. Buffers are carved out of larger
arenas (:func:`carve`) so that accesses just outside a view land in owned memory: they are
detected, never fatal.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from eaglegraph.kernels._triton import interpreting

_ARENA_PAD = 256


@dataclass
class Access:
    kind: str  # "load", "store" or "atomic"
    addresses: np.ndarray  # uint64 byte addresses actually accessed (mask applied)
    itemsize: int


@dataclass
class AccessLog:
    accesses: list[Access] = field(default_factory=list)

    def outside(self, allowed: Sequence[torch.Tensor], kinds: Sequence[str] = ()) -> list[int]:
        """Addresses (of the given kinds; all if empty) outside every allowed view."""
        ranges = [_byte_range(t) for t in allowed]
        bad: list[int] = []
        for acc in self.accesses:
            if kinds and acc.kind not in kinds:
                continue
            ok = np.zeros(acc.addresses.shape, dtype=bool)
            for lo, hi in ranges:
                ok |= (acc.addresses >= lo) & (acc.addresses + acc.itemsize <= hi)
            bad += acc.addresses[~ok].tolist()
        return bad

    def touching(self, region: torch.Tensor, kinds: Sequence[str] = ()) -> list[int]:
        """Accessed addresses (of the given kinds) inside ``region``."""
        lo, hi = _byte_range(region)
        hits: list[int] = []
        for acc in self.accesses:
            if kinds and acc.kind not in kinds:
                continue
            inside = (acc.addresses + acc.itemsize > lo) & (acc.addresses < hi)
            hits += acc.addresses[inside].tolist()
        return hits


def _byte_range(t: torch.Tensor) -> tuple[int, int]:
    if t.numel() == 0:
        return (0, 0)
    if not t.is_contiguous():
        raise ValueError("allowed regions must be contiguous views")
    start = t.data_ptr()
    return start, start + t.numel() * t.element_size()


@contextmanager
def record_accesses() -> Iterator[AccessLog]:
    """Log the addresses of every load, store and atomic the interpreter performs."""
    if not interpreting():
        raise RuntimeError("access recording needs Triton's interpreter")
    from triton.runtime import interpreter as interp

    log = AccessLog()
    builder = interp.InterpreterBuilder
    orig_load = builder.create_masked_load
    orig_store = builder.create_masked_store
    orig_atomic = builder.create_atomic_rmw

    def record(kind: str, ptrs: Any, mask: Any) -> None:
        data = np.asarray(ptrs.data)
        m = np.broadcast_to(np.asarray(mask.data, dtype=bool), data.shape)
        itemsize = np.dtype(interp._get_np_dtype(ptrs.get_element_ty())).itemsize
        log.accesses.append(Access(kind, data[m].astype(np.uint64), itemsize))

    def load(self: Any, ptrs: Any, mask: Any, *args: Any, **kwargs: Any) -> Any:
        record("load", ptrs, mask)
        return orig_load(self, ptrs, mask, *args, **kwargs)

    def store(self: Any, ptrs: Any, value: Any, mask: Any, *args: Any, **kwargs: Any) -> Any:
        record("store", ptrs, mask)
        return orig_store(self, ptrs, value, mask, *args, **kwargs)

    def atomic(self: Any, op: Any, ptr: Any, val: Any, mask: Any, *args: Any, **kwargs: Any) -> Any:
        record("atomic", ptr, mask)
        return orig_atomic(self, op, ptr, val, mask, *args, **kwargs)

    builder.create_masked_load = load
    builder.create_masked_store = store
    builder.create_atomic_rmw = atomic
    try:
        yield log
    finally:
        builder.create_masked_load = orig_load
        builder.create_masked_store = orig_store
        builder.create_atomic_rmw = orig_atomic


def carve(values: torch.Tensor, fill: float | int = 0) -> torch.Tensor:
    """A copy of ``values`` living in the middle of a larger arena filled with ``fill``."""
    n = values.numel()
    arena = torch.full((n + 2 * _ARENA_PAD,), fill, dtype=values.dtype, device=values.device)
    view = arena[_ARENA_PAD : _ARENA_PAD + n].view(values.shape)
    view.copy_(values)
    return view
