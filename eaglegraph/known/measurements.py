"""Figures that upstream changes measured, shown beside eaglegraph's own and labelled as theirs.

A tiny preset never reproduces an 8B model's number, so a reader needs upstream's figure and
its setup next to the run's to judge the run.
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.known.upstream import upstream


@dataclass(frozen=True)
class PoolSaving:
    """Graph-pool memory with a dedicated EAGLE pool and with the shared pool, as measured."""

    ref: str
    setup: str
    dedicated_gib: float
    shared_gib: float

    @property
    def saved_gib(self) -> float:
        return round(self.dedicated_gib - self.shared_gib, 2)

    @property
    def source(self) -> str:
        """How a view names it: 'PR #44078'."""
        return upstream(self.ref).pr


# The change that moved MRV2 EAGLE graphs into the shared global pool.
SHARED_POOL_SAVING = PoolSaving(
    "vllm#44078", "Llama-3.1-8B-Instruct + EAGLE, K=5, H200", 1.39, 1.12
)
