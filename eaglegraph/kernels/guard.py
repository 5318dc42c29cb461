"""Device-side bounds guards for index-reading kernels.

Stale metadata in padding regions (hazards in ``eaglegraph.known.hazards``) makes kernels read other
requests' rows or pages, or memory outside a buffer; compute-sanitizer cannot see most of it
because the stale value is initialised and often in bounds of the allocator's segment. Every
kernel here that uses a loaded value to address another row, request or page therefore takes
a ``GUARD: tl.constexpr`` switch:

* off — the guard code is compiled out; the kernel reads exactly as an unguarded one would;
* on — each index is checked against its bounds before use; a violation appends
  ``(kernel_id, buffer_id, row, value)`` to a :class:`GuardLog` on the device and the faulting
  access is masked (or replaced by a safe fallback), so the replay continues.

``row`` is the element index read within the buffer (for 2-D buffers the flattened logical
index ``i * n_cols + j`` of the ``[n_rows, n_cols]`` view the kernel was given) and ``value``
the offending value read, or the index computed from it (e.g. a page id). The log appends with
an atomic counter that keeps counting past capacity, so overflow stays visible. Logging and
resetting are device operations and can be captured in CUDA graphs; only :meth:`GuardLog.read`
synchronises.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from eaglegraph.kernels._triton import tl, triton

__all__ = [
    "KERNEL_IDS",
    "KERNEL_NAMES",
    "Guard",
    "GuardArgs",
    "GuardLog",
    "Violation",
    "check_bounds_pair",
    "guard_args",
    "log_bounds_pair",
    "log_violation",
]

# Fixed registry: ids are stored in logs and run files, so only ever append.
KERNEL_NAMES: tuple[str, ...] = (
    "write_kv",
    "varlen_paged_attention",
    "csr_paged_prefill",
    "csr_paged_decode",
    "build_csr_page_indices",
    "gather_block_tables",
    "compute_slot_mappings",
    "compute_slot_mappings_padded_rows",
    "prepare_eagle_inputs",
    "gather_rows",
    "embedding",  # reserved for the token-embedding gather (kernels/embedding.py)
    "mla_varlen_attention",
    "mla_csr_prefill",
    "mla_csr_decode",
)
KERNEL_IDS: Mapping[str, int] = {name: i for i, name in enumerate(KERNEL_NAMES)}

UNKNOWN_BUFFER_ID = -1


@dataclass(frozen=True)
class Violation:
    """One out-of-bounds index a guarded kernel refused to follow."""

    kernel: str
    buffer_id: int
    row: int
    value: int


class GuardLog:
    """Device-resident append-only log of guard violations.

    ``entries`` is int64 ``[capacity, 4]`` holding ``(kernel_id, buffer_id, row, value)``;
    ``count`` is int32 ``[1]`` and counts every violation, including those past capacity.
    Both tensors have fixed addresses, so a graph that captured a guarded kernel keeps
    logging into them on every replay.
    """

    def __init__(self, capacity: int, device: torch.device | str) -> None:
        if capacity < 1:
            raise ValueError(f"GuardLog capacity must be >= 1, got {capacity}")
        self.capacity = int(capacity)
        self.entries = torch.zeros((self.capacity, 4), dtype=torch.int64, device=device)
        self.count = torch.zeros(1, dtype=torch.int32, device=device)

    @property
    def device(self) -> torch.device:
        return self.count.device

    def reset(self) -> None:
        """Forget logged violations; a device op, safe to capture in a graph."""
        self.count.zero_()

    def total(self) -> int:
        """How many violations were detected (may exceed capacity). Synchronises."""
        return int(self.count.item())

    @property
    def overflowed(self) -> bool:
        """True when more violations happened than the log could hold. Synchronises."""
        return self.total() > self.capacity

    def read(self) -> list[Violation]:
        """The stored violations, in append order. Synchronises: call outside graphs."""
        n = min(self.total(), self.capacity)
        rows = self.entries[:n].cpu().tolist()
        return [
            Violation(kernel=_kernel_name(k), buffer_id=b, row=r, value=v) for k, b, r, v in rows
        ]


def _kernel_name(kernel_id: int) -> str:
    if 0 <= kernel_id < len(KERNEL_NAMES):
        return KERNEL_NAMES[kernel_id]
    return f"unknown({kernel_id})"


@dataclass(frozen=True)
class Guard:
    """Turns guards on for one wrapper call.

    ``buffer_ids`` maps the role a kernel reads a buffer in (``"kv_indptr"``, ``"seq_lens"``,
    ...) to the id the caller's buffer registry gave that buffer; roles it does not name log
    with id -1.
    """

    log: GuardLog
    buffer_ids: Mapping[str, int] = field(default_factory=dict)

    def buffer_id(self, role: str) -> int:
        return int(self.buffer_ids.get(role, UNKNOWN_BUFFER_ID))


@dataclass(frozen=True)
class GuardArgs:
    """What a wrapper passes to a kernel for its guard parameters."""

    enabled: bool
    entries: torch.Tensor
    count: torch.Tensor
    capacity: int
    kernel_id: int
    buffer_ids: tuple[int, ...]

    @property
    def log(self) -> tuple[torch.Tensor, torch.Tensor, int, int]:
        """The kernel's ``log`` argument: ``(entries, count, capacity, kernel_id)``, one tuple
        that the kernel hands on to :func:`log_violation` as it is."""
        return (self.entries, self.count, self.capacity, self.kernel_id)

    @property
    def kernel_args(self) -> tuple[Any, ...]:
        """The guard parameters every guarded kernel takes last, in their order: ``log``, then
        one buffer id per role."""
        return (self.log, *self.buffer_ids)


def guard_args(
    guard: Guard | None, kernel: str, roles: Sequence[str], fallback: torch.Tensor
) -> GuardArgs:
    """Resolve a wrapper's ``guard`` argument into kernel arguments.

    Without a guard the log pointers are ``fallback`` (any tensor the kernel already gets):
    the guard code is compiled out, so the pointer is never dereferenced and nothing is
    allocated, which matters inside graph capture.
    """
    kernel_id = KERNEL_IDS[kernel]
    if guard is None:
        return GuardArgs(
            enabled=False,
            entries=fallback,
            count=fallback,
            capacity=0,
            kernel_id=kernel_id,
            buffer_ids=tuple(UNKNOWN_BUFFER_ID for _ in roles),
        )
    if guard.log.device != fallback.device:
        raise ValueError(f"guard log on {guard.log.device}, kernel inputs on {fallback.device}")
    return GuardArgs(
        enabled=True,
        entries=guard.log.entries,
        count=guard.log.count,
        capacity=guard.log.capacity,
        kernel_id=kernel_id,
        buffer_ids=tuple(guard.buffer_id(role) for role in roles),
    )


@triton.jit
def log_violation(log, buffer_id, row, value, bad):
    """Append ``(kernel_id, buffer_id, row, value)`` for every lane where ``bad`` holds.

    ``log`` is the kernel's guard log tuple ``(entries_ptr, count_ptr, capacity, kernel_id)``
    (:attr:`GuardArgs.log`). ``bad`` may be a scalar or a block; ``row`` and ``value`` must
    broadcast to its shape. Each lane takes its own slot from the atomic counter; the counter
    keeps counting past ``capacity`` but entries are only stored below it.
    """
    entries_ptr, count_ptr, capacity, kernel_id = log
    zero = bad.to(tl.int64) * 0
    slot = tl.atomic_add(count_ptr + bad.to(tl.int32) * 0, 1, mask=bad)
    keep = bad & (slot < capacity)
    base = entries_ptr + slot.to(tl.int64) * 4
    tl.store(base, zero + kernel_id, mask=keep)
    tl.store(base + 1, zero + buffer_id, mask=keep)
    # ``zero +`` widens to int64 and also accepts constexpr ints (a count of 1 is one).
    tl.store(base + 2, zero + row, mask=keep)
    tl.store(base + 3, zero + value, mask=keep)


@triton.jit
def check_bounds_pair(start, end, bound):
    """``(bad_start, bad_end)`` for entries ``i`` and ``i+1`` of a cumulative index array.

    Both must lie in ``[0, bound]``; ``end >= start`` is judged only when ``start`` is itself
    valid, so one bad entry is blamed once (by the program that reads it as its end).
    """
    bad_start = (start < 0) | (start > bound)
    bad_end = (end < 0) | (end > bound) | (~bad_start & (end < start))
    return bad_start, bad_end


@triton.jit
def log_bounds_pair(log, buffer_id, i, start, end, bad_start, bad_end):
    """Log entries ``i`` and ``i+1`` of a cumulative index array as ``check_bounds_pair``
    judged them; entry ``i`` only for ``i == 0``, since request ``i-1`` logs it as its end."""
    log_violation(log, buffer_id, i, start, (i == 0) & bad_start)
    log_violation(log, buffer_id, i + 1, end, bad_end)
