"""Runs with real-sized figures, rebuilt from the 8B pair's saved CPU prediction.

`tests/fixtures/runs/inspect-llama3.1-8b-eagle3-predicted.json` is the real output of
`eaglegraph inspect llama3.1-8b-eagle3 --predict-memory --json` (the caching-allocator
simulation of the engine's whole default plan: 251 graphs, MiB-to-GiB pools). The CUDA figures
a capture or memdiff of that pair would show cannot be produced on a CPU, so these builders
turn the predicted graphs into the capture runs an H100 would record — one event per graph,
its pool's predicted growth as its bytes — and diff two of them with the library's own
`diff_runs`, so the views are exercised on the widths a real 8B run has.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from eaglegraph.probes.memdiff import diff_runs
from eaglegraph.results import load_run
from eaglegraph.results.capture import CaptureEvent, CaptureRun, CaptureTotals
from eaglegraph.results.inspect import InspectReport
from eaglegraph.results.memdiff import MemdiffRun
from eaglegraph.results.pools import PoolId, PoolUsage
from eaglegraph.results.prediction import PolicyPrediction

PREDICTED = (
    Path(__file__).resolve().parents[1] / "fixtures/runs/inspect-llama3.1-8b-eagle3-predicted.json"
)
K = 3


@cache
def predicted_report() -> InspectReport:
    report = load_run(PREDICTED)
    assert isinstance(report, InspectReport) and report.memory_prediction is not None
    return report


def _policy(name: str) -> PolicyPrediction:
    prediction = predicted_report().memory_prediction
    assert prediction is not None
    return prediction.policy(name)


def capture_8b(policy: str = "shared") -> CaptureRun:
    """The capture an H100 would record for the 8B pair under `policy`, as predicted."""
    predicted = _policy(policy)
    ids = {p.label: PoolId.of((0, i + 1)) for i, p in enumerate(predicted.pools)}
    events: list[CaptureEvent] = []
    t, reserved = 1.5, 17_179_869_184
    for i, g in enumerate(predicted.graphs):
        duration = 0.011 + g.num_tokens * 0.00004
        uniform = None if g.num_reqs is None else g.num_tokens // g.num_reqs
        e = CaptureEvent(
            i, g.phase, g.mode, g.num_tokens, g.num_reqs, uniform, ids[g.pool], "cuda",
            t + duration / 2, duration, duration / 2, segments=33 if g.num_reqs is None else 1,
            reserved_before=reserved, reserved_after=reserved + g.bytes, bytes=g.bytes,
            allocated_before=reserved // 2, allocated_after=(reserved + g.bytes) // 2,
        )  # fmt: skip
        events.append(e)
        reserved += g.bytes
        t += 1.6 * duration
    pools = [
        PoolUsage(
            ids[p.label],
            p.label,
            policy,
            p.reserved_bytes,
            p.peak_allocated_bytes,
            p.graphs,
            dict(p.bytes_per_phase),
            max((g.bytes for g in predicted.graphs if g.pool == p.label), default=0),
            p.segments,
        )
        for p in predicted.pools
    ]
    total = predicted.reserved_bytes
    totals = CaptureTotals(
        capture_seconds=t, graphs=len(events), took_bytes=total + 1_380_974_592,
        pool_reserved_bytes=total, reserved_bytes=reserved, snapshot_reserved_bytes=reserved,
        accounted=True, allocator_bytes=total, outside_allocator_bytes=1_380_974_592,
        outside_in_captures_bytes=1_166_016_512,
    )  # fmt: skip
    config = {
        "model": "llama3.1-8b-eagle3", "framework": "vllm", "behavior": "vllm-current",
        "mode": "FULL_AND_PIECEWISE", "attention_backend": "flash_attn", "pool": policy,
        "num_speculative_tokens": K, "max_num_seqs": 128, "max_num_batched_tokens": 8192,
        "capture_sizes": sorted({g.num_tokens for g in predicted.graphs}),
        "dtype": "bfloat16", "device": "cuda", "random_weights": True,
    }  # fmt: skip
    prediction = {
        "policy": policy,
        "reserved_bytes": total,
        "available_bytes": 79_646_851_072,
        "pools": {p.label: p.reserved_bytes for p in predicted.pools},
    }
    return CaptureRun(
        config=config,
        environment={"device": "NVIDIA H100 80GB HBM3", "torch": "2.13.0+cu130", "cuda": "13.0"},
        backend="cuda",
        pool_policy=policy,
        events=events,
        pools=pools,
        totals=totals,
        replay={"steps": 48, "draft_tokens": [[1, 2, 3]], "accepted": [3]},
        prediction=prediction,
    )


def memdiff_8b() -> MemdiffRun:
    """shared against dedicated for the 8B pair, diffed by the library's own `diff_runs`."""
    a, b = capture_8b("shared"), capture_8b("dedicated")
    config = {"model": "llama3.1-8b-eagle3", "pool": "shared", "against": "dedicated"}
    config.update({k: v for k, v in a.config.items() if k not in ("pool", "model")})
    return diff_runs(a, b, config)
