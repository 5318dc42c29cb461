"""Pool accounting from the caching allocator's own snapshot.

Segments are grouped by `segment_pool_id`: (0,0) is the default allocator, (n,0) a capture's
own private pool, (0,n) a shared `graph_pool_handle()`. Growth of `memory_reserved()` during
each capture is attributed to that graph; the snapshot's segments must add up to the
allocator's reserved total, which the report shows as a check.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from eaglegraph.results.capture import CaptureEvent
from eaglegraph.results.pools import PoolId, PoolKind, PoolUsage
from eaglegraph.rig.pools import PoolManager


def snapshot_segments() -> list[dict[str, Any]]:
    import torch

    snap = torch.cuda.memory._snapshot()
    return list(snap.get("segments", []))


def releasable_bytes(segments: list[dict[str, Any]]) -> int:
    """Bytes the allocator can hand back to the driver when a capture's pool needs more.

    Only whole default-pool segments with nothing allocated in them are released (the
    allocator frees cached segments, never the free tail of a segment in use), and a graph
    pool cannot take a block of the default pool. The free space inside partly used segments
    (`memory_reserved() - memory_allocated()` counts it) is no use to a graph pool.
    """
    total = 0
    for seg in segments:
        if PoolId.of(seg.get("segment_pool_id", (0, 0))).graph_pool:
            continue
        if int(seg.get("allocated_size", 0)) == 0 and int(seg.get("active_size", 0)) == 0:
            total += int(seg.get("total_size", 0))
    return total


def pools_from_segments(
    segments: list[dict[str, Any]], events: list[CaptureEvent], manager: PoolManager
) -> list[PoolUsage]:
    reserved: dict[PoolId, int] = defaultdict(int)
    allocated: dict[PoolId, int] = defaultdict(int)
    count: dict[PoolId, int] = defaultdict(int)
    for seg in segments:
        pid = PoolId.of(seg.get("segment_pool_id", (0, 0)))
        reserved[pid] += int(seg.get("total_size", 0))
        allocated[pid] += int(seg.get("allocated_size", 0))
        count[pid] += 1
    out = []
    for pid in sorted(reserved, key=lambda p: (p.kind is not PoolKind.DEFAULT, p.id)):
        graphs = [e for e in events if e.pool == pid and e.status == "ok"]
        per_phase: dict[str, int] = defaultdict(int)
        for e in graphs:
            per_phase[e.phase] += e.bytes or 0
        if pid.kind is PoolKind.DEFAULT:
            name, policy = "default", "eager allocator: weights, KV cache, buffers"
        elif not graphs and not manager.made(pid):
            pid = PoolId.of(pid.id, foreign=True)
            name, policy = "foreign (not this capture's)", "unknown"
        else:
            name, policy = manager.label_for(pid), manager.policy
        out.append(
            PoolUsage(
                id=pid,
                label=name,
                policy=policy,
                reserved_bytes=reserved[pid],
                allocated_bytes=allocated[pid],
                graphs=len(graphs),
                bytes_per_phase=dict(per_phase),
                ideal_bytes=max((e.need_bytes or 0 for e in graphs), default=0),
                segments=count[pid],
            )
        )
    return out


def emulated_pools(events: list[CaptureEvent], manager: PoolManager) -> list[PoolUsage]:
    """On CPU pools are labels: graphs are counted, bytes are not measured (0 → N/A)."""
    by_pool: dict[PoolId, list[CaptureEvent]] = defaultdict(list)
    for e in events:
        by_pool[e.pool or PoolId.private()].append(e)
    return [
        PoolUsage(pid, manager.label_for(pid), manager.policy, 0, 0, len(graphs), {}, 0, 0)
        for pid, graphs in by_pool.items()
    ]
