"""The pre-launch graph-memory prediction as results: pools per policy, per phase, per graph.

Made by `probes.memory_predict` (a caching-allocator simulation over the rig's capture
sequence recorded on the CPU); shown by `inspect --predict-memory` and beside the measured
pools of a CUDA capture. Every figure is a prediction, never a measurement.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class PredictedGraph:
    phase: str
    mode: str
    num_tokens: int
    num_reqs: int | None
    pool: str
    bytes: int  # reserved growth of its pool while it was captured


@dataclass
class PredictedPool:
    label: str
    reserved_bytes: int
    segments: int
    peak_allocated_bytes: int
    graphs: int
    bytes_per_phase: dict[str, int] = field(default_factory=dict)


@dataclass
class PolicyPrediction:
    policy: str
    pools: list[PredictedPool]
    graphs: list[PredictedGraph]

    @property
    def reserved_bytes(self) -> int:
        return sum(p.reserved_bytes for p in self.pools)

    def pool(self, label: str) -> PredictedPool | None:
        return next((p for p in self.pools if p.label == label), None)


@dataclass
class MemoryPrediction:
    """Predicted graph-pool memory under each pool policy."""

    dtype: str
    policies: list[PolicyPrediction]
    # the recording runs the target eager: a compiled run's Inductor buffers are not in it
    method: str = "allocator simulation of the rig's capture sequence, eager target"

    def policy(self, name: str) -> PolicyPrediction:
        return next(p for p in self.policies if p.policy == name)
