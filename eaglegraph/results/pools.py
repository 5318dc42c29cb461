"""Graph-memory pools as results: one typed pool identity, per-pool usage and per-pool diffs.

The caching allocator names a pool by `segment_pool_id`: (0,0) the default allocator, (n,0) a
capture's own private pool, (0,n) a shared `graph_pool_handle()`. A pool can also be *foreign*:
present in the snapshot but made by nothing this run captured. `PoolId` carries that kind
explicitly, so no view has to re-parse an id string or sniff a label to know what a pool is.
In JSON a pool id stays the string it always was ("(0,1)", or "private" for an emulated
capture's own pool); a pool's kind is written beside it in the pool table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from eaglegraph.errors import BadInput
from eaglegraph.results.codec import decode, json_type
from eaglegraph.serial import to_jsonable


class PoolKind(str, Enum):
    DEFAULT = "default"  # (0,0): the eager caching allocator (weights, KV cache, buffers)
    PRIVATE = "private"  # (n,0): a capture's own pool (torch's default without pool=)
    SHARED = "shared"  # (0,n): a graph_pool_handle() shared by several captures
    FOREIGN = "foreign"  # in the snapshot, but no capture of this run made it


_PAIR = re.compile(r"^\(\s*(\d+)\s*,\s*(\d+)\s*\)$")


@dataclass(frozen=True)
class PoolId:
    """A pool's identity: its allocator id (None for an emulated private pool) and its kind.

    Two ids are equal when their allocator ids are: the kind says what the run knows about the
    pool, not which pool it is.
    """

    kind: PoolKind = field(compare=False)
    id: tuple[int, int] | None = None

    @classmethod
    def of(cls, pool_id: tuple[int, int] | Any, foreign: bool = False) -> PoolId:
        """The id of an allocator pool tuple; its kind follows from the numbers."""
        first, second = (int(x) for x in tuple(pool_id))
        if foreign:
            kind = PoolKind.FOREIGN
        elif (first, second) == (0, 0):
            kind = PoolKind.DEFAULT
        elif second == 0:
            kind = PoolKind.PRIVATE
        else:
            kind = PoolKind.SHARED
        return cls(kind, (first, second))

    @classmethod
    def private(cls) -> PoolId:
        """A capture's own pool on the emulated backend, where no allocator id exists."""
        return cls(PoolKind.PRIVATE, None)

    @classmethod
    def parse(cls, text: str, kind: PoolKind | None = None) -> PoolId:
        """Read the JSON form back; ValueError when `text` is not a pool id."""
        if text == PoolKind.PRIVATE.value:
            return cls.private()
        match = _PAIR.match(text)
        if match is None:
            raise ValueError(text)
        pid = cls.of((int(match[1]), int(match[2])))
        return pid if kind is None else cls(kind, pid.id)

    @classmethod
    def from_json(cls, data: Any, where: str, path: str) -> PoolId:
        if not isinstance(data, str):
            raise BadInput(f"{where}: {path} must be a pool id string, not {json_type(data)}")
        try:
            return cls.parse(data)
        except ValueError:
            raise BadInput(f"{where}: {path}: {data!r} is not a pool id like '(0,1)'") from None

    def __str__(self) -> str:
        return PoolKind.PRIVATE.value if self.id is None else f"({self.id[0]},{self.id[1]})"

    def to_json(self) -> str:
        return str(self)

    @property
    def graph_pool(self) -> bool:
        """A pool CUDA graphs of this run allocate from (not the default, not foreign)."""
        return self.kind in (PoolKind.PRIVATE, PoolKind.SHARED)


@dataclass
class PoolUsage:
    """One memory pool as the caching allocator's snapshot shows it after capture."""

    id: PoolId
    label: str
    policy: str
    reserved_bytes: int
    allocated_bytes: int
    graphs: int
    bytes_per_phase: dict[str, int] = field(default_factory=dict)
    ideal_bytes: int = 0
    segments: int = 0

    @property
    def kind(self) -> PoolKind:
        return self.id.kind

    def to_json(self) -> dict[str, Any]:
        body = {name: to_jsonable(getattr(self, name)) for name in self.__dataclass_fields__}
        body["kind"] = self.id.kind.value
        return body

    @classmethod
    def from_json(cls, data: Any, where: str, path: str) -> PoolUsage:
        usage = decode(cls, data, where, path, hook=False)
        pool_id = usage.id
        if "kind" in data:
            try:
                pool_id = PoolId(PoolKind(data["kind"]), pool_id.id)
            except ValueError:
                raise BadInput(
                    f"{where}: {path}.kind: unknown kind {data['kind']!r}; expected one of "
                    + ", ".join(k.value for k in PoolKind)
                ) from None
        elif usage.label.startswith(PoolKind.FOREIGN.value):
            # files written before pools carried their kind marked foreign pools by label
            pool_id = PoolId(PoolKind.FOREIGN, pool_id.id)
        usage.id = pool_id
        return usage


@dataclass
class PoolDiff:
    """One row of a memdiff: the same pool, phase or graph under policy a and policy b."""

    label: str
    a_bytes: int
    b_bytes: int

    @property
    def delta(self) -> int:
        return self.b_bytes - self.a_bytes
