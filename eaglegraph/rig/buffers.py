"""The registry of persistent buffers: every tensor whose address a graph records.

Each buffer has an owning phase and a valid-extent rule in terms of the step's counts
(num_reqs, num_tokens, and for CSR page lists the number of pages). Everything past the extent
is the buffer's padding region: what graphs may read when a batch is padded, what the probe
poisons, and what reports list.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class StepCounts:
    """The real (unpadded) counts of one phase of one step."""

    num_reqs: int
    num_tokens: int
    num_pages: int = 0


Extent = Callable[[StepCounts], int]

EXTENTS: dict[str, Extent] = {
    "num_reqs": lambda c: c.num_reqs,
    "num_reqs+1": lambda c: c.num_reqs + 1,
    "num_tokens": lambda c: c.num_tokens,
    "num_pages": lambda c: c.num_pages,
    "all": lambda c: -1,
}


@dataclass
class PersistentBuffer:
    name: str
    phase: str
    tensor: torch.Tensor = field(repr=False)
    extent: str
    role: str = ""
    buffer_id: int = -1

    def valid_rows(self, counts: StepCounts) -> int:
        rows = EXTENTS[self.extent](counts)
        return self.tensor.shape[0] if rows < 0 else min(rows, self.tensor.shape[0])

    @property
    def capacity(self) -> int:
        return self.tensor.shape[0]

    @property
    def dtype(self) -> str:
        return str(self.tensor.dtype).removeprefix("torch.")

    def describe(self) -> str:
        shape = "×".join(str(s) for s in self.tensor.shape)
        return f"{self.name} [{shape}] {self.dtype}, valid [:{self.extent}]"


class BufferRegistry:
    """Name → buffer; ids are stable small ints the guard log can carry."""

    def __init__(self) -> None:
        self._by_name: dict[str, PersistentBuffer] = {}
        self._by_id: list[PersistentBuffer] = []

    def register(
        self, name: str, phase: str, tensor: torch.Tensor, extent: str, role: str = ""
    ) -> torch.Tensor:
        if name in self._by_name:
            raise ValueError(f"buffer {name} registered twice")
        if extent not in EXTENTS:
            raise ValueError(f"unknown extent rule {extent}")
        buf = PersistentBuffer(name, phase, tensor, extent, role or name, len(self._by_id))
        self._by_name[name] = buf
        self._by_id.append(buf)
        return tensor

    def __getitem__(self, name: str) -> PersistentBuffer:
        return self._by_name[name]

    def __iter__(self) -> Iterator[PersistentBuffer]:
        return iter(self._by_id)

    def __len__(self) -> int:
        return len(self._by_id)

    def by_id(self, buffer_id: int) -> PersistentBuffer | None:
        return self._by_id[buffer_id] if 0 <= buffer_id < len(self._by_id) else None

    def ids(self, **roles: str) -> dict[str, int]:
        """Kernel role name → registry id, for a kernel's guard (e.g. kv_indptr='draft.kv_indptr')."""
        return {role: self._by_name[name].buffer_id for role, name in roles.items()}
