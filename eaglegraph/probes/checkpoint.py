"""Breadcrumbs of a probe case: where it was when it died.

An illegal address or a device assert kills the CUDA context, so after it nothing can be asked
of the device, and a worker killed outright returns nothing at all. Before each kernel launch
and each phase of the probed schedule the case therefore records, on the host, the case, the
step, the phase, the last kernel launched (with the buffers its guard roles name) and the
invariants that were already broken — in memory, and, in a worker, in a small shared-memory
file the parent reads back when the worker dies. A crash finding then names the phase, the
kernel and the buffer as any other finding does.

`sync` (a crashed case's rerun) synchronises before every eager launch, so an asynchronous
fault surfaces while the breadcrumb still names the kernel that caused it.
"""

from __future__ import annotations

import json
import mmap
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from eaglegraph.kernels import launch as kernel_launch
from eaglegraph.kernels.guard import KERNEL_NAMES, GuardArgs

SIZE = 1 << 16
# test-only fault injection at the launch of KERNEL in PHASE of a probed step:
# "abort-in:KERNEL@PHASE" kills the worker (as an illegal address does), "oob-in:KERNEL@PHASE"
# gathers far out of bounds on the kernel's device (a device assert on CUDA, IndexError on CPU)
_FAULT = "EAGLEGRAPH_PROBE_FAULT"


def kernel_name(kernel: Any, guard: GuardArgs | None) -> str:
    """The registry name of a guarded kernel, else its function's name without the
    underscores and `_kernel` suffix."""
    if guard is not None and 0 <= guard.kernel_id < len(KERNEL_NAMES):
        return KERNEL_NAMES[guard.kernel_id]
    name = getattr(kernel, "__name__", None) or getattr(getattr(kernel, "fn", None), "__name__", "")
    return str(name or type(kernel).__name__).strip("_").removesuffix("_kernel")


class Checkpoint:
    """The last completed checkpoint of one case (see the module doc)."""

    def __init__(self, path: str | None = None, sync: bool = False) -> None:
        self.state: dict[str, Any] = {
            "case": None, "stage": "build", "step": None, "phase": None, "draft_step": None,
            "kernel": None, "buffers": [], "launches": 0, "broken": [],
        }  # fmt: skip
        self.sync = sync
        self.names: Callable[[tuple[int, ...]], list[str]] = lambda ids: []
        self._map: mmap.mmap | None = None
        if path is not None:
            with open(path, "r+b") as f:
                f.truncate(SIZE)
                self._map = mmap.mmap(f.fileno(), SIZE)
        fault, _, where = os.environ.get(_FAULT, "").partition(":")
        self._fault = fault if fault in ("abort-in", "oob-in") else None
        self._fault_at = tuple(where.split("@"))

    def update(self, **fields: Any) -> None:
        self.state.update(fields)
        self._flush()

    def broken(self, records: list[dict[str, Any]]) -> None:
        """Invariants found broken (before or after a launch), kept for a crash finding."""
        if records:
            self.state["broken"] = (self.state["broken"] + records)[:8]
            self._flush()

    def launched(self, kernel: Any, guard: GuardArgs | None) -> None:
        """The launch hook: called before each Triton launch."""
        if self.sync and torch.cuda.is_available() and not torch.cuda.is_current_stream_capturing():
            torch.cuda.synchronize()  # the previous kernel's fault surfaces under its name
        name = kernel_name(kernel, guard)
        ids = tuple(i for i in guard.buffer_ids if i >= 0) if guard is not None else ()
        st = self.state
        st["kernel"], st["buffers"] = name, self.names(ids)
        st["launches"] += 1
        self._flush()
        if self._fault and (name, st["phase"]) == self._fault_at and st["stage"] == "step":
            if self._fault == "abort-in":
                os.abort()  # as an illegal address would end the worker
            device = guard.entries.device if guard is not None else torch.device("cpu")
            torch.zeros(4, device=device)[torch.tensor([1 << 40], device=device)].sum()

    def _flush(self) -> None:
        if self._map is None:
            return
        data = json.dumps(self.state).encode()[: SIZE - 1]
        self._map[: len(data) + 1] = data + b"\0"

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None


def read(path: str | Path) -> dict[str, Any] | None:
    """The checkpoint a (dead) worker left in `path`, or None."""
    try:
        raw = Path(path).read_bytes()
    except OSError:
        return None
    text = raw.split(b"\0", 1)[0]
    try:
        data = json.loads(text) if text else None
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


@contextmanager
def recording(checkpoint: Checkpoint) -> Iterator[Checkpoint]:
    """Route every kernel launch through `checkpoint.launched` while the block runs."""
    previous = kernel_launch.on_launch
    kernel_launch.on_launch = checkpoint.launched
    try:
        yield checkpoint
    finally:
        kernel_launch.on_launch = previous
