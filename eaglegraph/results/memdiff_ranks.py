"""A multi-rank memdiff: every rank captured under two pool policies, and how ranks differ
(eaglegraph.memdiff-ranks/1).

At TP/DP > 1 one rank that captures more or larger graphs than its peers, or whose
communicators took more device memory, is the rank that runs out first; so beside each rank's
two policies this keeps the max − min across ranks of every figure, and which ranks hold them.
Deltas read as b − a, as in the single-rank memdiff.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eaglegraph.results.findings import Finding
from eaglegraph.results.parallel import ParallelLayout
from eaglegraph.results.rank_runs import RankedRun

MEMDIFF_RANKS_SCHEMA = "eaglegraph.memdiff-ranks/1"


@dataclass
class RankMemory:
    """One rank under both policies. Byte figures are None where not measured (the emulated
    backend on CPU, or a rank that did not finish)."""

    rank: int
    tp_rank: int
    dp_rank: int
    status_a: str
    status_b: str
    graphs_a: int | None
    graphs_b: int | None
    pool_a: int | None  # graph-pool bytes reserved
    pool_b: int | None
    pool_delta: int | None  # pool_b − pool_a
    outside_a: int | None  # device memory the capture took outside the caching allocator
    outside_b: int | None
    comm_a: int | None  # device memory the communicators took (process-group init, warm-up)
    comm_b: int | None


@dataclass
class RankSpread:
    """One figure across ranks: its largest and smallest value, where, and max − min."""

    figure: str  # e.g. "graph pool (a: shared)"
    max_bytes: int
    min_bytes: int
    spread_bytes: int
    max_rank: int
    min_rank: int


@dataclass
class MemdiffRanksRun:
    config: dict[str, Any]
    layout: ParallelLayout
    device: str
    backend: str  # nccl | gloo
    pool: str  # policy a
    against: str  # policy b
    a: RankedRun
    b: RankedRun
    ranks: list[RankMemory]
    spreads: list[RankSpread]
    memory_measured: bool
    tolerance_bytes: int  # pools may differ across ranks by this much before it is a finding
    tolerance: str  # the rule behind tolerance_bytes, in words
    memory_note: str | None = None  # why memory reads N/A, and where the CPU answer is
    seconds: float = 0.0
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.a.ok and self.b.ok

    @property
    def exit_code(self) -> int:
        """Either run's interruption first (130 / 143), else 0 or 1 as a ranked capture."""
        for run in (self.a, self.b):
            if run.interrupted is not None:
                return run.exit_code
        return 0 if self.ok and not self.findings else 1
