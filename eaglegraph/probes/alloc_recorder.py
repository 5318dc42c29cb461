"""Record the tensor storages a capture allocates and when each dies, on any device.

A CUDA graph pool receives every allocation made on the capturing stream between
`capture_begin` and `capture_end`; the same code run eagerly on CPU (or on the meta device)
allocates the same storages in the same order, because the rig's routines are shape-only
functions of (num_reqs, num_tokens). A TorchDispatchMode sees every ATen op: an output whose
storage is none of the op's inputs' is a new allocation; a storage's death is seen by polling
weak references before each op (a free only matters to the next allocation). Allocations are
recorded inside a capture scope only; deaths are recorded wherever they happen, since a block
freed after its capture returns to that pool for the next capture to reuse.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from eaglegraph.probes.allocator_sim import Alloc, Event, Free


@dataclass(frozen=True)
class Scope:
    """One capture as the recording knows it (the pool is chosen later, per policy)."""

    index: int
    phase: str
    mode: str
    num_tokens: int
    num_reqs: int | None
    piece: str | None = None  # a PIECEWISE piece set: the model it belongs to


def _storages(values: Any) -> list[torch.UntypedStorage]:
    flat, _ = tree_flatten(values)
    return [v.untyped_storage() for v in flat if isinstance(v, torch.Tensor)]


class AllocationRecorder(TorchDispatchMode):
    """Collects `Alloc`/`Free` events and the capture scopes they belong to."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[Event] = []
        self.scopes: list[Scope] = []
        self._current: Scope | None = None
        self._live: dict[int, tuple[int, StorageWeakRef]] = {}
        self._next_id = 0
        self._paused = False

    def _poll(self) -> None:
        dead = [key for key, (_, ref) in self._live.items() if ref.expired()]
        for key in dead:
            self.events.append(Free(self._live.pop(key)[0]))

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self._poll()
        out = func(*args, **(kwargs or {}))
        scope = self._current
        if scope is not None and not self._paused:
            inputs = {s._cdata for s in _storages((args, kwargs))}
            for storage in _storages(out):
                key = storage._cdata
                if key in inputs or key in self._live or storage.nbytes() == 0:
                    continue
                self._live[key] = (self._next_id, StorageWeakRef(storage))
                self.events.append(Alloc(self._next_id, int(storage.nbytes()), scope.index))
                self._next_id += 1
        return out

    @contextmanager
    def scope(
        self,
        phase: str,
        mode: str,
        num_tokens: int,
        num_reqs: int | None,
        piece: str | None = None,
    ) -> Iterator[Scope]:
        """Allocations inside belong to one capture (nested scopes are not captures)."""
        if self._current is not None:
            yield self._current
            return
        scope = Scope(len(self.scopes), phase, mode, num_tokens, num_reqs, piece)
        self.scopes.append(scope)
        self._current = scope
        try:
            yield scope
        finally:
            self._current = None
            self._poll()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Work that allocates nothing on a GPU (a Triton launch under the CPU interpreter
        copies its arguments) is not recorded."""
        was, self._paused = self._paused, True
        try:
            yield
        finally:
            self._paused = was

    def finish(self) -> list[Event]:
        """Deaths up to now (call after the rig has dropped what it drops)."""
        self._poll()
        return self.events


@contextmanager
def shape_only_kernels(recorder: AllocationRecorder | None = None) -> Iterator[None]:
    """Triton launches on meta tensors do nothing (they allocate nothing, so recording on the
    meta device loses no allocation); launches on real tensors run, unrecorded."""
    from triton.runtime.jit import KernelInterface

    original = KernelInterface.__getitem__

    def getitem(self: Any, grid: Any) -> Any:
        launch = original(self, grid)

        def run(*args: Any, **kwargs: Any) -> Any:
            if any(isinstance(a, torch.Tensor) and a.is_meta for a in (*args, *kwargs.values())):
                return None
            if recorder is None:
                return launch(*args, **kwargs)
            with recorder.paused():
                return launch(*args, **kwargs)

        return run

    KernelInterface.__getitem__ = getitem
    try:
        yield
    finally:
        KernelInterface.__getitem__ = original
