"""Predict each graph pool's reserved bytes before launch, with no GPU.

The rig captures every planned graph on the emulated backend over meta tensors (shapes only,
Triton launches skipped: they allocate nothing) while `AllocationRecorder` logs each storage
a capture allocates and when it dies. That one sequence is then replayed through the caching
allocator's rules (`allocator_sim`) once per pool policy, with each capture routed to the pool
that policy gives it — the same routing `PoolManager` does on CUDA — so per graph, per phase
and per pool the prediction says what `memory_reserved()` growth a CUDA capture would show.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import torch

from eaglegraph.known.compilation import engine_compiles_target
from eaglegraph.pair.model import Pair
from eaglegraph.probes.alloc_recorder import AllocationRecorder, Scope, shape_only_kernels
from eaglegraph.probes.allocator_sim import Event, simulate
from eaglegraph.results.inspect import MemoryEstimate
from eaglegraph.results.prediction import (
    MemoryPrediction,
    PolicyPrediction,
    PredictedGraph,
    PredictedPool,
)
from eaglegraph.rig.config import RigConfig
from eaglegraph.rig.model_setup import resolve_model_dtype
from eaglegraph.rig.modes import Mode
from eaglegraph.rig.pools import POLICIES, PoolManager
from eaglegraph.rig.step import Rig


@dataclass
class Recording:
    """The allocation sequence of one full capture, independent of the pool policy."""

    scopes: list[Scope]
    events: list[Event]
    dtype: str


def record_capture(pair: Pair, config: RigConfig) -> Recording:
    """Capture every planned graph over meta tensors and record what each allocates."""
    dtype = resolve_model_dtype(config.dtype, pair, torch.device("cuda"))
    name = str(dtype).removeprefix("torch.")
    meta = dataclasses.replace(
        config,
        device=torch.device("meta"),
        backend="emulated",
        dtype=name,
        random_weights=True,
        compile=False,  # the recording models the uncompiled forward
    )
    recorder = AllocationRecorder()
    with shape_only_kernels():
        rig = Rig(pair, meta)
        with recorder:
            rig.capture(tracer=recorder)
            del rig
            events = recorder.finish()
    return Recording(recorder.scopes, list(events), name)


def _pool_labels(scopes: Iterable[Scope], policy: str) -> dict[int, str]:
    """Each capture's pool under `policy`, as PoolManager routes it on CUDA."""
    manager = PoolManager(policy, "emulated")
    out: dict[int, str] = {}
    for scope in scopes:
        mode = Mode.PIECEWISE if scope.piece else Mode[scope.mode]
        assignment = manager.assign(scope.phase, mode)
        if assignment.handle is None:  # its own private pool
            out[scope.index] = f"private #{scope.index}"
        else:
            out[scope.index] = manager.labels[assignment.key]
    return out


def predict_policy(recording: Recording, policy: str) -> PolicyPrediction:
    labels = _pool_labels(recording.scopes, policy)
    result = simulate(recording.events, labels)
    by_name = {p.name: p for p in result.pools}
    graphs = [
        PredictedGraph(
            s.phase, s.mode, s.num_tokens, s.num_reqs, labels[s.index], result.graph_bytes[s.index]
        )
        for s in recording.scopes
    ]
    per_phase: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    counts: dict[str, int] = defaultdict(int)
    for g in graphs:
        per_phase[g.pool][g.phase] += g.bytes
        counts[g.pool] += 1
    pools = [
        PredictedPool(
            label,
            by_name[label].reserved_bytes if label in by_name else 0,
            by_name[label].segments if label in by_name else 0,
            by_name[label].peak_allocated_bytes if label in by_name else 0,
            counts[label],
            dict(per_phase[label]),
        )
        for label in dict.fromkeys(labels.values())
    ]
    return PolicyPrediction(policy, pools, graphs)


def predict_memory(
    pair: Pair, config: RigConfig, policies: Iterable[str] = POLICIES
) -> MemoryPrediction:
    recording = record_capture(pair, config)
    method = MemoryPrediction.method
    opts = config.options
    if engine_compiles_target(opts.framework, opts.compiled, opts.breakable):
        method += (
            " (the engine compiles it with Inductor, whose fusions the simulation does not see)"
        )
    return MemoryPrediction(
        recording.dtype, [predict_policy(recording, p) for p in policies], method
    )


def apply_prediction(memory: MemoryEstimate, prediction: MemoryPrediction, policy: str) -> None:
    """Make the prediction the report's one graph-memory answer: the plan's pool policy's
    predicted reservation replaces the estimate, and a profiled KV budget follows it."""
    chosen = prediction.policy(policy)
    predicted = chosen.reserved_bytes
    old = memory.graph_memory_bytes
    if memory.graph_memory_in_kv_budget and old is not None and memory.kv_budget_bytes:
        budget = memory.kv_budget_bytes + old - predicted
        per_token = (memory.kv_bytes_per_token_target or 0) + (memory.kv_bytes_per_token_draft or 0)
        memory.kv_budget_bytes = budget
        memory.kv_budget_tokens = budget // per_token if per_token and budget > 0 else None
    memory.graph_memory_bytes = predicted
    memory.graph_memory_source = (
        f"predicted ({policy} pool, allocator simulation; replaces the estimate of "
        f"{old / (1 << 20):.2f} MiB)"
        if old is not None
        else f"predicted ({policy} pool, allocator simulation)"
    )
