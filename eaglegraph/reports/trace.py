"""Chrome trace export: the capture timeline as a trace Perfetto and chrome://tracing open.

One thread track per phase holds a complete (`X`) slice per graph capture; a counter track
per process shows each pool's cumulative bytes after every graph; a failed capture is an
instant (`i`) event. A memdiff becomes two processes (one per pool policy) on the same time
axis, so the two captures can be compared track by track. Perfetto drops or mis-nests slices
that overlap on one track, so slices are placed on an integer-nanosecond grid and never start
before the previous slice on their track has ended.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eaglegraph import __version__
from eaglegraph.reports.exporters import Exporter
from eaglegraph.reports.timeline_view import phase_order, timeline_rows
from eaglegraph.results.capture import CaptureEvent, CaptureRun
from eaglegraph.results.memdiff import MemdiffRun
from eaglegraph.results.rank_runs import RankedRun
from eaglegraph.results.registry import schema_of
from eaglegraph.serial import atomic_write, to_jsonable

COUNTER = "pool bytes"
ALLOCATOR_COUNTER = "allocator bytes"


def trace_document(run: CaptureRun | MemdiffRun | RankedRun) -> dict[str, Any]:
    """The Chrome trace (JSON object form) of a capture run, or of both runs of a memdiff."""
    if isinstance(run, MemdiffRun):
        sides = [(1, f"a: {run.a.pool_policy}", run.a), (2, f"b: {run.b.pool_policy}", run.b)]
    elif isinstance(run, RankedRun):  # one process per rank, pid = rank, one time axis
        sides = [(r.rank, f"rank {r.rank}: {r.status}", r.capture) for r in run.ranks if r.capture]
        if not sides:
            raise ValueError("no rank of this run holds a capture timeline to trace")
    else:
        sides = [(1, f"capture: {run.pool_policy}", run)]
    events: list[dict[str, Any]] = []
    for pid, name, capture in sides:
        events.extend(_process_events(pid, name, capture))
    first = sides[0][2]
    metadata = {
        "generator": f"eaglegraph {__version__}",
        "schema": schema_of(run),
        "backend": first.backend,
        "pool_policy": [capture.pool_policy for _, _, capture in sides],
        "config": to_jsonable(first.config),
    }
    return {"traceEvents": events, "displayTimeUnit": "ms", "metadata": metadata}


def trace_text(run: CaptureRun | MemdiffRun | RankedRun) -> str:
    """The trace as compact JSON (a long capture has thousands of events)."""
    return json.dumps(trace_document(run), allow_nan=False, separators=(",", ":"))


def write_trace(
    run: CaptureRun | MemdiffRun | RankedRun, path: Path | str, overwrite: bool = False
) -> Path:
    """Write the trace atomically; refuses to replace a file unless `overwrite`."""
    return atomic_write(path, trace_text(run), overwrite=overwrite)


EXPORTER = Exporter(
    name="trace",
    help="Write a Chrome trace of the capture timeline (open in Perfetto or chrome://tracing).",
    kinds=(CaptureRun, MemdiffRun, RankedRun),
    render=trace_text,
    unsupported="it has no capture timeline to trace",
    instead="--trace works for capture and memdiff runs; use --html or --json",
)


def _us(ns: int) -> float:
    return ns / 1000


def _ns(seconds: float) -> int:
    return max(0, round(seconds * 1e9))


def _process_events(pid: int, name: str, run: CaptureRun) -> list[dict[str, Any]]:
    rows = timeline_rows(run)
    phases = phase_order(e.phase for e in rows)
    tids = {phase: i + 1 for i, phase in enumerate(phases)}
    out: list[dict[str, Any]] = [
        _meta(pid, 0, "process_name", {"name": f"{name} ({run.backend})"}),
        _meta(pid, 0, "process_sort_index", {"sort_index": pid}),
    ]
    for phase, tid in tids.items():
        out.append(_meta(pid, tid, "thread_name", {"name": phase}))
        out.append(_meta(pid, tid, "thread_sort_index", {"sort_index": tid}))

    track_end = dict.fromkeys(tids.values(), 0)
    # Every series starts at zero, so each pool's counter track begins with the capture.
    pool_bytes = {_pool_name(e, run): 0 for e in rows}
    counted = run.backend != "emulated" and any(e.bytes is not None for e in rows)
    if counted:
        out.append(_counter(pid, 0, COUNTER, dict(pool_bytes)))
    for e in sorted(rows, key=lambda e: (e.start_s, e.index)):
        tid = tids[e.phase]
        start = max(_ns(e.start_s), track_end[tid])
        end = start + _ns(e.duration_s)
        track_end[tid] = end
        pool = _pool_name(e, run)
        out.append(_slice(pid, tid, start, end, e, pool))
        if e.status != "ok":
            out.append(_failure(pid, tid, end, e, pool))
            continue
        if counted and e.bytes is not None:
            pool_bytes[pool] += e.bytes
            out.append(_counter(pid, end, COUNTER, dict(pool_bytes)))
        if e.reserved_after is not None and e.allocated_after is not None:
            values = {"reserved": e.reserved_after, "allocated": e.allocated_after}
            out.append(_counter(pid, end, ALLOCATOR_COUNTER, values))
    return out


def _pool_name(e: CaptureEvent, run: CaptureRun) -> str:
    return run.pool_label(e.pool) or "no pool"


def _meta(pid: int, tid: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "ph": "M", "pid": pid, "tid": tid, "args": args}


def _counter(pid: int, ts_ns: int, name: str, values: dict[str, int]) -> dict[str, Any]:
    return {"name": name, "ph": "C", "ts": _us(ts_ns), "pid": pid, "tid": 0, "args": values}


def _slice(pid: int, tid: int, start: int, end: int, e: CaptureEvent, pool: str) -> dict[str, Any]:
    failed = e.status != "ok"
    return {
        "name": f"{'✖ ' if failed else ''}{e.descriptor}",
        "cat": "capture,failed" if failed else "capture",
        "ph": "X",
        "ts": _us(start),
        "dur": _us(end - start),
        "pid": pid,
        "tid": tid,
        "args": {
            "index": e.index,
            "phase": e.phase,
            "descriptor": e.descriptor,
            "uniform_token_count": e.uniform_token_count,
            "pool": pool,
            "bytes": e.bytes,
            "warmup_ms": round(e.warmup_s * 1e3, 3),
            "segments": e.segments,
            "status": e.status,
            "reserved_after": e.reserved_after,
            "allocated_after": e.allocated_after,
        },
    }


def _failure(pid: int, tid: int, ts: int, e: CaptureEvent, pool: str) -> dict[str, Any]:
    return {
        "name": f"{e.status.upper()}: {e.descriptor}",
        "cat": "capture,failed",
        "ph": "i",
        "s": "t",
        "ts": _us(ts),
        "pid": pid,
        "tid": tid,
        "args": {"phase": e.phase, "pool": pool, "error": e.error},
    }
