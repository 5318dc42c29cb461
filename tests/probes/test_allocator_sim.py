"""The caching-allocator simulator on sequences whose outcome the allocator's rules fix."""

from __future__ import annotations

import random

import pytest

from eaglegraph.probes.allocator_sim import (
    LARGE_SEGMENT,
    MIN_BLOCK,
    SMALL_SEGMENT,
    Alloc,
    Free,
    PoolSim,
    round_size,
    segment_size,
    simulate,
)

MiB = 1 << 20


def test_rounding_and_segment_sizes() -> None:
    assert round_size(1) == MIN_BLOCK
    assert round_size(512) == 512
    assert round_size(513) == 1024
    assert segment_size(round_size(100)) == SMALL_SEGMENT
    assert segment_size(MiB) == SMALL_SEGMENT  # exactly 1 MiB is still small
    assert segment_size(MiB + 512) == LARGE_SEGMENT
    assert segment_size(10 * MiB - 512) == LARGE_SEGMENT
    assert segment_size(10 * MiB) == 10 * MiB
    assert segment_size(12 * MiB + 512) == 14 * MiB


def test_small_requests_pack_into_one_segment() -> None:
    pool = PoolSim("p")
    for _ in range(4):
        pool.malloc(512 * 1024)
    assert (pool.reserved, pool.segments) == (SMALL_SEGMENT, 1)
    pool.malloc(1)
    assert (pool.reserved, pool.segments) == (SMALL_SEGMENT * 2, 2)


def test_large_split_needs_more_than_one_mib_left() -> None:
    pool = PoolSim("p")
    block, grown = pool.malloc(12 * MiB)
    assert grown == 12 * MiB
    pool.free(block)
    # 11 MiB from a 12 MiB block leaves exactly 1 MiB: not split, the whole block is handed out
    whole, grown = pool.malloc(11 * MiB)
    assert grown == 0 and whole.size == 12 * MiB
    _, grown = pool.malloc(2 * MiB)
    assert grown == LARGE_SEGMENT
    pool.free(whole)
    # 8 MiB from the 12 MiB block leaves 4 MiB: split, and the rest serves a 3 MiB request
    _, grown_a = pool.malloc(8 * MiB)
    _, grown_b = pool.malloc(3 * MiB)
    assert grown_a == grown_b == 0
    assert pool.reserved == 12 * MiB + LARGE_SEGMENT


def test_freed_neighbours_merge() -> None:
    pool = PoolSim("p")
    a, _ = pool.malloc(5 * MiB)
    b, _ = pool.malloc(5 * MiB)
    assert pool.reserved == LARGE_SEGMENT
    pool.free(a)
    pool.free(b)
    _, grown = pool.malloc(18 * MiB)
    assert grown == 0 and pool.reserved == LARGE_SEGMENT


def test_best_fit_takes_the_smallest_block() -> None:
    pool = PoolSim("p")
    big, _ = pool.malloc(16 * MiB)
    small, _ = pool.malloc(12 * MiB)
    pool.free(big)
    pool.free(small)
    got, grown = pool.malloc(11 * MiB)
    assert grown == 0 and got.size == 12 * MiB


def test_pools_are_isolated_and_graphs_attributed() -> None:
    events = [
        Alloc(0, 12 * MiB, graph=0),
        Free(0),
        Alloc(1, 8 * MiB, graph=1),  # same pool: reuses graph 0's freed block
        Free(1),
        Alloc(2, 8 * MiB, graph=2),  # another pool: its own segment
        Free(2),
    ]
    shared = simulate(events, {0: "a", 1: "a", 2: "a"})
    assert shared.reserved_bytes == 12 * MiB
    assert shared.graph_bytes == {0: 12 * MiB, 1: 0, 2: 0}
    split = simulate(events, {0: "a", 1: "a", 2: "b"})
    assert split.reserved_bytes == 12 * MiB + LARGE_SEGMENT  # 8 MiB < 10 MiB: a 20 MiB segment
    assert split.graph_bytes[2] == LARGE_SEGMENT
    assert {p.name: p.graphs for p in split.pools} == {"a": 2, "b": 1}


def test_a_live_block_is_not_reused() -> None:
    events = [Alloc(0, 12 * MiB, 0), Alloc(1, 12 * MiB, 1), Free(0), Free(1)]
    assert simulate(events, {0: "a", 1: "a"}).reserved_bytes == 24 * MiB


def test_empty_tensors_take_no_block() -> None:
    result = simulate([Alloc(0, 0, 0), Free(0)], {0: "a"})
    assert result.reserved_bytes == 0 and result.graph_bytes == {0: 0}


@pytest.mark.parametrize("seed", range(5))
def test_invariants_on_random_sequences(seed: int) -> None:
    """Free bytes plus allocated bytes always equal the reserved bytes, and after every free
    no two free neighbours remain unmerged."""
    rng = random.Random(seed)
    pool = PoolSim("p")
    live = []
    for _ in range(400):
        if live and rng.random() < 0.45:
            pool.free(live.pop(rng.randrange(len(live))))
        else:
            size = rng.choice(
                [rng.randint(1, 4096), rng.randint(1, 3 * MiB), rng.randint(1, 40 * MiB)]
            )
            live.append(pool.malloc(size)[0])
        free_bytes = sum(s for lst in pool._free.values() for s, _, _ in lst)
        assert free_bytes + pool.allocated == pool.reserved
        for block in pool._blocks.values():
            assert block.next is None or block.next.allocated
            assert block.prev is None or block.prev.allocated
    for block in live:
        pool.free(block)
    assert pool.allocated == 0
