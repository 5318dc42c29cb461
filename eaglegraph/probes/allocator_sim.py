"""The CUDA caching allocator's block rules, simulated on a CPU.

What a graph pool reserves is decided by PyTorch's `c10/cuda/CUDACachingAllocator.cpp`, not by
the sum of the tensors a capture allocates: requests round up to 512 B; requests of at most
1 MiB come from 2 MiB "small" segments, larger ones from 20 MiB segments (up to 10 MiB) or
from a segment of their own rounded up to 2 MiB; a free block is found best-fit (smallest size,
then lowest address); a block is split when the rest is at least 512 B (small) or more than
1 MiB (large); freed blocks merge with free neighbours of the same segment. A private graph
pool keeps its own free lists and never returns a segment while a graph that used it lives,
so its reserved bytes only grow, and a later capture into the same pool reuses what earlier
ones freed. The simulator replays an allocation sequence through those rules and says which
graph made each pool grow. Defaults only: no `max_split_size_mb`, no expandable segments, no
`roundup_power2_divisions` (the settings vLLM and SGLang run with).

Not in any graph pool, though a capture's `memory_reserved()` delta shows it: the first capture
while no graph is alive allocates the generator's seed and offset (two int64 tensors, a 2 MiB
small segment) on the capture stream but in the default pool (H100, torch 2.11), so pools are
compared by their segments' `segment_pool_id`, never by reserved deltas.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

MIN_BLOCK = 512  # kMinBlockSize: every request rounds up to a multiple of this
SMALL_SIZE = 1 << 20  # kSmallSize: requests up to here are "small"
SMALL_SEGMENT = 2 << 20  # kSmallBuffer
LARGE_SEGMENT = 20 << 20  # kLargeBuffer: requests below MIN_LARGE_ALLOC share one
MIN_LARGE_ALLOC = 10 << 20  # kMinLargeAlloc
ROUND_LARGE = 2 << 20  # kRoundLarge: bigger requests get a segment of their own, rounded


def round_size(nbytes: int) -> int:
    """The block size a request of `nbytes` occupies."""
    if nbytes < MIN_BLOCK:
        return MIN_BLOCK
    return MIN_BLOCK * -(-nbytes // MIN_BLOCK)


def segment_size(size: int) -> int:
    """The cudaMalloc the allocator makes when no cached block fits a rounded `size`."""
    if size <= SMALL_SIZE:
        return SMALL_SEGMENT
    if size < MIN_LARGE_ALLOC:
        return LARGE_SEGMENT
    return ROUND_LARGE * -(-size // ROUND_LARGE)


@dataclass(eq=False)
class _Block:
    addr: int
    size: int
    small: bool
    allocated: bool = False
    prev: _Block | None = None
    next: _Block | None = None


class PoolSim:
    """One memory pool (its small and large free lists, its segments)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.reserved = 0
        self.segments = 0
        self.allocated = 0
        self.peak_allocated = 0
        self._free: dict[bool, list[tuple[int, int, int]]] = {True: [], False: []}
        self._blocks: dict[int, _Block] = {}  # addr -> free block, for the free lists
        self._next_addr = 1 << 40  # synthetic addresses: segments never overlap

    def _insert(self, block: _Block) -> None:
        bisect.insort(self._free[block.small], (block.size, block.addr, id(block)))
        self._blocks[block.addr] = block

    def _remove(self, block: _Block) -> None:
        lst = self._free[block.small]
        i = bisect.bisect_left(lst, (block.size, block.addr, id(block)))
        del lst[i]
        del self._blocks[block.addr]

    def malloc(self, nbytes: int) -> tuple[_Block, int]:
        """Serve one request; returns the block and the bytes of any new segment."""
        size = round_size(nbytes)
        small = size <= SMALL_SIZE
        lst = self._free[small]
        i = bisect.bisect_left(lst, (size, 0, 0))
        grown = 0
        if i < len(lst):
            block = self._blocks[lst[i][1]]
            self._remove(block)
        else:
            grown = segment_size(size)
            block = _Block(self._next_addr, grown, small)
            self._next_addr += grown + ROUND_LARGE
            self.reserved += grown
            self.segments += 1
        remaining = block.size - size
        if (remaining >= MIN_BLOCK) if small else (remaining > SMALL_SIZE):
            rest = _Block(block.addr + size, remaining, small, False, block, block.next)
            if block.next is not None:
                block.next.prev = rest
            block.next = rest
            block.size = size
            self._insert(rest)
        block.allocated = True
        self.allocated += block.size
        self.peak_allocated = max(self.peak_allocated, self.allocated)
        return block, grown

    def free(self, block: _Block) -> None:
        """Return a block; it merges with free neighbours of its segment."""
        block.allocated = False
        self.allocated -= block.size
        for neighbour in (block.prev, block.next):
            if neighbour is None or neighbour.allocated:
                continue
            self._remove(neighbour)
            if neighbour is block.prev:
                block.addr, block.prev = neighbour.addr, neighbour.prev
                if block.prev is not None:
                    block.prev.next = block
            else:
                block.next = neighbour.next
                if block.next is not None:
                    block.next.prev = block
            block.size += neighbour.size
        self._insert(block)


@dataclass(frozen=True)
class Alloc:
    """A tensor storage allocated inside a capture (`graph` indexes the captures)."""

    id: int
    nbytes: int
    graph: int


@dataclass(frozen=True)
class Free:
    id: int


Event = Alloc | Free


@dataclass
class PoolPrediction:
    """One pool after every capture: what the allocator would have reserved."""

    name: str
    reserved_bytes: int
    segments: int
    peak_allocated_bytes: int
    live_bytes: int
    graphs: int


@dataclass
class SimResult:
    pools: list[PoolPrediction]
    graph_bytes: dict[int, int] = field(default_factory=dict)  # graph -> reserved growth

    @property
    def reserved_bytes(self) -> int:
        return sum(p.reserved_bytes for p in self.pools)


def simulate(events: Iterable[Event], pool_of: dict[int, str]) -> SimResult:
    """Replay `events` through the allocator rules; `pool_of` maps each graph to its pool."""
    pools: dict[str, PoolSim] = {}
    live: dict[int, tuple[PoolSim, _Block]] = {}
    graph_bytes: dict[int, int] = defaultdict(int)
    graphs: dict[str, set[int]] = defaultdict(set)
    for event in events:
        if isinstance(event, Free):
            entry = live.pop(event.id, None)
            if entry is not None:
                entry[0].free(entry[1])
            continue
        if event.nbytes <= 0:  # the allocator hands out no block for an empty tensor
            continue
        name = pool_of[event.graph]
        pool = pools.get(name) or pools.setdefault(name, PoolSim(name))
        graphs[name].add(event.graph)
        block, grown = pool.malloc(event.nbytes)
        graph_bytes[event.graph] += grown
        live[event.id] = (pool, block)
    for graph in pool_of:
        graph_bytes.setdefault(graph, 0)
    return SimResult(
        pools=[
            PoolPrediction(
                p.name, p.reserved, p.segments, p.peak_allocated, p.allocated, len(graphs[n])
            )
            for n, p in pools.items()
        ],
        graph_bytes=dict(graph_bytes),
    )
