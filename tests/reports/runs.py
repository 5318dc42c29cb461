"""Synthetic capture and memdiff runs shaped like the rig's: the reports' test fixtures.

The runs follow vLLM MRV2's capture order (target PIECEWISE then FULL, then the draft phases,
largest size first) with K=3, so the views are exercised on data that looks like a real run:
a CUDA run with byte figures, an emulated run without them, one that hit OOM mid-capture, and
a memdiff of shared against dedicated pools.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from eaglegraph.results.capture import CaptureEvent, CaptureRun, CaptureTotals
from eaglegraph.results.findings import Finding, Severity
from eaglegraph.results.memdiff import MemdiffRun
from eaglegraph.results.pools import PoolDiff, PoolId, PoolUsage

MiB = 2**20
K = 3
SIZES = (32, 16, 8, 4)

# (phase, mode, num_tokens, num_reqs, uniform, segments, bytes)
_PLAN: list[tuple[str, str, int, int | None, int | None, int, int]] = [
    *[("target", "PIECEWISE", n, None, None, 5, n * 3 * MiB) for n in SIZES],
    *[("target", "FULL", n, n // (K + 1), K + 1, 1, n * 2 * MiB) for n in SIZES],
    *[("draft_prefill", "FULL", n, n // (K + 1), K + 1, 1, n * MiB) for n in SIZES],
    *[("draft_decode", "FULL", n, n, 1, 1, n * MiB // 2) for n in (8, 4)],
]

CONFIG: dict[str, Any] = {
    "model": "tiny-llama-eagle3",
    "framework": "vllm",
    "mode": "FULL_AND_PIECEWISE",
    "num_speculative_tokens": K,
    "attention_backend": "flash_attn",
    "behavior": "vllm-current",
    "capture_sizes": list(SIZES),
}


def _pool_of(phase: str, mode: str, policy: str) -> PoolId:
    if policy == "dedicated" and phase != "target" and mode == "FULL":
        return PoolId.of((0, 2))
    return PoolId.of((0, 1))


def _events(backend: str, policy: str) -> list[CaptureEvent]:
    events: list[CaptureEvent] = []
    t = 0.05
    allocated = reserved = 512 * MiB
    for i, (phase, mode, tokens, reqs, uniform, segments, nbytes) in enumerate(_PLAN):
        duration = 0.004 + tokens * 0.0003
        warmup = duration / 2
        e = CaptureEvent(
            index=i,
            phase=phase,
            mode=mode,
            num_tokens=tokens,
            num_reqs=reqs,
            uniform_token_count=uniform,
            pool=_pool_of(phase, mode, policy),
            backend=backend,
            start_s=t + warmup,
            duration_s=duration,
            warmup_s=warmup,
            segments=segments,
        )
        if backend == "cuda":
            e.allocated_before, e.reserved_before = allocated, reserved
            allocated += nbytes // 4
            reserved += nbytes
            e.allocated_after, e.reserved_after, e.bytes = allocated, reserved, nbytes
        events.append(e)
        t = e.start_s + duration + 0.001
    return events


def _pools(events: list[CaptureEvent], policy: str) -> list[PoolUsage]:
    labels = {PoolId.of((0, 1)): "global", PoolId.of((0, 2)): "eagle"}
    pools = []
    for pid, label in labels.items():
        mine = [e for e in events if e.pool == pid]
        if not mine:
            continue
        per_phase: dict[str, int] = {}
        for e in mine:
            per_phase[e.phase] = per_phase.get(e.phase, 0) + (e.bytes or 0)
        pools.append(
            PoolUsage(
                id=pid,
                label=label,
                policy=policy,
                reserved_bytes=sum(per_phase.values()),
                allocated_bytes=sum(per_phase.values()) // 4,
                graphs=len(mine),
                bytes_per_phase=per_phase,
                ideal_bytes=max(e.bytes or 0 for e in mine),
                segments=len(mine) // 2,
            )
        )
    return pools


def cuda_run(policy: str = "shared") -> CaptureRun:
    events = _events("cuda", policy)
    pools = _pools(events, policy)
    pool_total = sum(p.reserved_bytes for p in pools)
    totals = CaptureTotals(
        capture_seconds=events[-1].start_s + events[-1].duration_s,
        graphs=len(events),
        took_bytes=pool_total + 6 * MiB,
        pool_reserved_bytes=pool_total,
        reserved_bytes=pool_total + 512 * MiB,
        snapshot_reserved_bytes=pool_total + 512 * MiB,
        accounted=True,
    )
    findings = [
        Finding(
            id="pool-slack",
            severity=Severity.INFO,
            message="pool (0, 1) reserves [4.2x] its largest graph",
            ref="vllm#44078",
        )
    ]
    return CaptureRun(
        config={**CONFIG, "pool": policy},
        environment={"device": "NVIDIA H200", "torch": "2.11.0", "cuda": "12.9"},
        backend="cuda",
        pool_policy=policy,
        events=events,
        pools=pools,
        totals=totals,
        findings=findings,
    )


def emulated_run() -> CaptureRun:
    events = _events("emulated", "shared")
    pools = [
        replace(p, reserved_bytes=0, allocated_bytes=0, bytes_per_phase={}, ideal_bytes=0)
        for p in _pools(events, "shared")
    ]
    totals = CaptureTotals(
        capture_seconds=events[-1].start_s + events[-1].duration_s,
        graphs=len(events),
        took_bytes=None,
        pool_reserved_bytes=None,
        reserved_bytes=None,
        snapshot_reserved_bytes=None,
        accounted=None,
    )
    return CaptureRun(
        config={**CONFIG, "pool": "shared"},
        environment={"device": "cpu", "torch": "2.11.0"},
        backend="emulated",
        pool_policy="shared",
        events=events,
        pools=pools,
        totals=totals,
        replay={"steps": 12, "draft_tokens_match_eager": True},
    )


OOM_ERROR = "CUDA out of memory. Tried to allocate 2.00 GiB [rank0] (GPU 0; 139.8 GiB total)"


def oom_run() -> CaptureRun:
    """Capture died on the second draft-prefill graph: the partial timeline plus the failure."""
    run = cuda_run()
    done = run.events[:9]
    last = done[-1]
    failed = replace(
        run.events[9],
        allocated_after=None,
        reserved_after=None,
        bytes=None,
        status="oom",
        error=OOM_ERROR,
        start_s=last.start_s + last.duration_s + 0.002,
    )
    run.events = done
    run.failed = failed
    run.pools = _pools(done, "shared")
    pool_total = sum(p.reserved_bytes for p in run.pools)
    run.totals = replace(
        run.totals,
        graphs=len(done),
        took_bytes=pool_total + 2 * MiB,
        pool_reserved_bytes=pool_total,
        snapshot_reserved_bytes=pool_total + 512 * MiB,
        reserved_bytes=pool_total + 514 * MiB,
        accounted=False,
    )
    run.findings = [
        Finding(
            id="capture-oom",
            severity=Severity.ERROR,
            message="capture ran out of memory at draft_prefill FULL(tokens=16, reqs=4)",
            fix="lower max_num_seqs or capture sizes",
        )
    ]
    return run


def memdiff_run() -> MemdiffRun:
    a, b = cuda_run("shared"), cuda_run("dedicated")
    pools_a = {p.label: p.reserved_bytes for p in a.pools}
    pools_b = {p.label: p.reserved_bytes for p in b.pools}
    per_pool = [
        PoolDiff(label, pools_a.get(label, 0), pools_b.get(label, 0) + extra)
        for label, extra in (("global", 0), ("eagle", 17 * MiB))
    ]
    phases: list[PoolDiff] = []
    for phase in ("target", "draft_prefill", "draft_decode"):
        sa = sum(e.bytes or 0 for e in a.events if e.phase == phase)
        sb = sum(e.bytes or 0 for e in b.events if e.phase == phase)
        phases.append(PoolDiff(phase, sa, sb + (0 if phase == "target" else 3 * MiB)))
    per_graph = [
        PoolDiff(
            f"{ea.phase} {ea.descriptor}", ea.bytes or 0, (eb.bytes or 0) + (ea.index % 3) * MiB
        )
        for ea, eb in zip(a.events, b.events, strict=True)
    ]
    total_a = sum(d.a_bytes for d in per_pool)
    total_b = sum(d.b_bytes for d in per_pool)
    return MemdiffRun(
        config={**CONFIG, "pool": "shared", "against": "dedicated"},
        a=a,
        b=b,
        per_pool=per_pool,
        per_phase=phases,
        per_graph=per_graph,
        total_a=total_a,
        total_b=total_b,
        tokens_identical=True,
        token_steps=48,
    )
