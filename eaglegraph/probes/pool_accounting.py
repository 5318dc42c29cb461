"""Pool accounting from the caching allocator's own snapshot.

Segments are grouped by `segment_pool_id`: (0,0) is the default allocator, (n,0) a capture's
own private pool, (0,n) a shared `graph_pool_handle()`. Growth of `memory_reserved()` during
each capture is attributed to that graph; the snapshot's segments must add up to the
allocator's reserved total, which the report shows as a check.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from eaglegraph.rig.pools import PoolManager, pool_label
from eaglegraph.rig.timeline import CaptureEvent, PoolUsage


def snapshot_segments() -> list[dict[str, Any]]:
    import torch

    snap = torch.cuda.memory._snapshot()
    return list(snap.get("segments", []))


def pools_from_segments(
    segments: list[dict[str, Any]], events: list[CaptureEvent], manager: PoolManager
) -> list[PoolUsage]:
    reserved: dict[tuple[int, int], int] = defaultdict(int)
    allocated: dict[tuple[int, int], int] = defaultdict(int)
    count: dict[tuple[int, int], int] = defaultdict(int)
    for seg in segments:
        pid = tuple(seg.get("segment_pool_id", (0, 0)))
        reserved[pid] += int(seg.get("total_size", 0))
        allocated[pid] += int(seg.get("allocated_size", 0))
        count[pid] += 1
    out = []
    for pid in sorted(reserved, key=lambda p: (p != (0, 0), p)):
        label = pool_label(pid)
        graphs = [e for e in events if e.pool == label and e.status == "ok"]
        per_phase: dict[str, int] = defaultdict(int)
        for e in graphs:
            per_phase[e.phase] += e.bytes or 0
        if pid == (0, 0):
            name, policy = "default", "eager allocator: weights, KV cache, buffers"
        elif not graphs and manager.label_for(pid) == "private":
            name, policy = "foreign (not this capture's)", "unknown"
        else:
            name, policy = manager.label_for(pid), manager.policy
        out.append(
            PoolUsage(
                id=label,
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
    labels: dict[str, list[CaptureEvent]] = defaultdict(list)
    for e in events:
        labels[e.pool or "private"].append(e)
    out = []
    for label, graphs in labels.items():
        name = next(
            (manager.labels[k] for k, h in manager.handles.items() if pool_label(h) == label),
            "private",
        )
        out.append(PoolUsage(label, name, manager.policy, 0, 0, len(graphs), {}, 0, 0))
    return out
