"""A multi-rank run: every rank's outcome, its collectives and memory, and what diverged.

`capture --tp 2` (and the other commands at TP/DP > 1) run one process per rank; the parent
supervises them and gathers this. Each rank's own capture run is kept whole (`capture`), so
the single-rank views and exporters read it unchanged; the multi-rank facts sit beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from eaglegraph.results.capture import CaptureRun
from eaglegraph.results.dp import DpRun
from eaglegraph.results.findings import Finding
from eaglegraph.results.parallel import ParallelLayout
from eaglegraph.results.probe import ProbeRun

RANKS_SCHEMA = "eaglegraph.ranks/1"


@dataclass
class CollectiveCall:
    """One collective of one rank's ledger: eager, captured, or a replay running `numel`
    captured collectives."""

    seq: int
    op: str
    numel: int
    dtype: str
    scope: str
    graph: bool
    finished: bool

    def describe(self) -> str:
        if self.op == "replay":
            return f"replay of {self.scope} ({self.numel} captured collectives from #{self.seq})"
        where = "captured in " if self.graph else "inside "
        if self.scope.startswith("outside"):  # the ledger's label for no phase scope
            where = ""
        return f"{self.op} #{self.seq} ({self.numel} × {self.dtype}) {where}{self.scope}"


@dataclass
class RankOutcome:
    """How one rank ended, and what it measured."""

    rank: int
    tp_rank: int
    dp_rank: int
    status: str  # ok | failed | stuck | stopped (ended by the supervisor after a peer failed)
    exit_code: int | None = None
    error: str | None = None  # the rank's first error line
    consequence: bool = False  # its error followed a peer's failure (peer closed, timeout)
    capture: CaptureRun | None = None
    probe: ProbeRun | None = None
    collectives: int = 0  # ledger entries this rank issued
    # how many of each op (all_reduce, all_gather, replay) the ledger holds, eager or captured
    collective_ops: dict[str, int] = field(default_factory=dict)
    last_collective: CollectiveCall | None = None
    waiting_in: CollectiveCall | None = None  # entered, never finished
    replay_equals_eager: bool | None = None
    collectives_per_forward: int = 0
    comm_bytes: int | None = None  # device memory the communicators took (CUDA)
    graph_pool_bytes: int | None = None
    graphs: list[str] = field(default_factory=list)  # phase + descriptor, in capture order
    # graph-captured all-reduces the engine's custom all-reduce would register, in order
    custom_ar_registrations: int | None = None
    log_tail: list[str] = field(default_factory=list)  # the rank's last progress/error lines


@dataclass
class SingleRankAgreement:
    """Rank 0's tokens against the same schedule rebuilt at TP 1 (no sharding)."""

    tokens: int
    equal: int
    tolerance: str
    first_difference: str | None = None

    @property
    def fraction(self) -> float:
        return self.equal / self.tokens if self.tokens else 1.0


@dataclass
class RankedRun:
    layout: ParallelLayout
    command: str
    device: str
    backend: str  # nccl | gloo
    ranks: list[RankOutcome]
    findings: list[Finding]
    seconds: float
    deadline_s: float
    single_rank: SingleRankAgreement | None = None
    pool_spread_bytes: int | None = None  # max − min graph-pool bytes across ranks
    comm_spread_bytes: int | None = None
    interrupted: str | None = None  # "SIGINT" / "SIGTERM": the ranks were ended early
    # the DP agreement across the real replicas (probe at DP > 1): rank 0's record; every
    # replica computes the same from the gathered rows
    dp_agreement: list[DpRun] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.interrupted is None and all(r.status == "ok" for r in self.ranks)

    @property
    def exit_code(self) -> int:
        """130 / 143 after Ctrl-C / SIGTERM (what was measured is kept), else 0 or 1."""
        if self.interrupted is not None:
            return 143 if self.interrupted == "SIGTERM" else 130
        return 0 if self.ok and not self.findings else 1
