"""`memdiff --tp N` / `--dp N`: every rank captured under two pool policies, and how ranks differ.

Each policy is one ranked capture (`probes.ranks.run_ranks`), its own set of processes, so
neither inherits the other's cached blocks or communicators, as in the single-rank memdiff.
Per rank it keeps both policies' graph pools, what the capture took outside the caching
allocator and what the communicators took; across ranks the max − min of each. Ranks of one
layout capture the same plan on shards of the same size, so their pools should agree: a rank
whose pool is larger by more than the tolerance captured more or larger graphs, and it is the
rank that runs out of memory first. On CPU the ranks still run as gloo processes (plans,
collectives and findings are real), but the emulated backend measures no memory.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from eaglegraph.errors import BadInput
from eaglegraph.probes.rank_limits import RankLimits
from eaglegraph.probes.ranks import RankRequest, check_layout, run_ranks
from eaglegraph.probes.spec import RunSpec
from eaglegraph.results.capture import CaptureRun
from eaglegraph.results.findings import Finding, Severity
from eaglegraph.results.memdiff_ranks import MemdiffRanksRun, RankMemory, RankSpread
from eaglegraph.results.parallel import ParallelLayout
from eaglegraph.results.rank_runs import RankedRun, RankOutcome

# Ranks' pools may differ by the allocator's rounding without any graph differing: a large
# segment is 2 MiB-aligned, and a block may land in a fresh segment on one rank only. So the
# tolerance is 2 MiB or 1 % of the larger pool, whichever is more.
TOLERANCE_FLOOR = 2 << 20
TOLERANCE_FRACTION = 0.01
TOLERANCE_RULE = "2 MiB or 1 % of the larger pool, whichever is more"

CPU_NOTE = (
    "the emulated backend measures no device memory; the ranks ran to compare their plans "
    "and collectives. `eaglegraph inspect {model} --predict-memory` predicts each pool under "
    "each pool policy on CPU"
)


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def tolerance_for(largest: int) -> int:
    """How far ranks' pools may be apart before it is a finding (`TOLERANCE_RULE`)."""
    return max(TOLERANCE_FLOOR, int(largest * TOLERANCE_FRACTION))


def _capture(o: RankOutcome | None) -> CaptureRun | None:
    return o.capture if o is not None else None


def _graphs(o: RankOutcome | None) -> int | None:
    capture = _capture(o)
    return capture.totals.graphs if capture is not None else None


def _outside(o: RankOutcome | None) -> int | None:
    capture = _capture(o)
    return capture.totals.outside_allocator_bytes if capture is not None else None


def rank_memory(a: RankOutcome, b: RankOutcome | None) -> RankMemory:
    """One rank's row: both policies side by side."""
    pool_a = a.graph_pool_bytes
    pool_b = b.graph_pool_bytes if b is not None else None
    return RankMemory(
        rank=a.rank,
        tp_rank=a.tp_rank,
        dp_rank=a.dp_rank,
        status_a=a.status,
        status_b=b.status if b is not None else "missing",
        graphs_a=_graphs(a),
        graphs_b=_graphs(b),
        pool_a=pool_a,
        pool_b=pool_b,
        pool_delta=pool_b - pool_a if pool_a is not None and pool_b is not None else None,
        outside_a=_outside(a),
        outside_b=_outside(b),
        comm_a=a.comm_bytes,
        comm_b=b.comm_bytes if b is not None else None,
    )


def spread(figure: str, values: Sequence[tuple[int, int | None]]) -> RankSpread | None:
    """Max − min of one figure over (rank, bytes); None unless every rank measured it."""
    if not values or any(v is None for _, v in values):
        return None
    measured = [(rank, v) for rank, v in values if v is not None]
    hi = max(measured, key=lambda rv: (rv[1], -rv[0]))
    lo = min(measured, key=lambda rv: (rv[1], rv[0]))
    return RankSpread(figure, hi[1], lo[1], hi[1] - lo[1], hi[0], lo[0])


def spreads(rows: Sequence[RankMemory], pool: str, against: str) -> list[RankSpread]:
    figures = (
        (f"graph pool (a: {pool})", [(r.rank, r.pool_a) for r in rows]),
        (f"graph pool (b: {against})", [(r.rank, r.pool_b) for r in rows]),
        ("pool Δ b−a", [(r.rank, r.pool_delta) for r in rows]),
        (f"outside allocator (a: {pool})", [(r.rank, r.outside_a) for r in rows]),
        (f"outside allocator (b: {against})", [(r.rank, r.outside_b) for r in rows]),
        (f"communicators (a: {pool})", [(r.rank, r.comm_a) for r in rows]),
        (f"communicators (b: {against})", [(r.rank, r.comm_b) for r in rows]),
    )
    out = [spread(name, values) for name, values in figures]
    return [s for s in out if s is not None]


def pool_findings(rows: Sequence[RankMemory], pool: str, against: str) -> list[Finding]:
    """A finding per policy whose ranks' pools are further apart than the tolerance, naming
    the rank with the largest pool and its graph count against the smallest's."""
    findings = []
    for side, policy in (("a", pool), ("b", against)):
        s = spread(policy, [(r.rank, getattr(r, f"pool_{side}")) for r in rows])
        if s is None or s.spread_bytes <= tolerance_for(s.max_bytes):
            continue
        graphs = {r.rank: getattr(r, f"graphs_{side}") for r in rows}
        more, fewer = graphs[s.max_rank], graphs[s.min_rank]
        why = (
            f"it captured {more} graphs, rank {s.min_rank} {fewer}: more graphs"
            if more is not None and fewer is not None and more > fewer
            else f"both captured {more} graphs: larger ones"
            if more == fewer
            else f"it captured {more} graphs, rank {s.min_rank} {fewer}"
        )
        findings.append(
            Finding(
                id="rank-pools-differ",
                severity=Severity.WARNING,
                message=(
                    f"under --pool {policy} rank {s.max_rank} reserves {_mib(s.max_bytes)} of "
                    f"graph pools, rank {s.min_rank} {_mib(s.min_bytes)}: "
                    f"{_mib(s.spread_bytes)} apart; {why}"
                ),
                evidence=f"tolerance {_mib(tolerance_for(s.max_bytes))} ({TOLERANCE_RULE})",
                fix=(
                    "compare the ranks' plans (`capture --tp N --json`: ranks[].graphs); the "
                    f"largest rank (rank {s.max_rank}) is the one that runs out of memory first"
                ),
                rank=s.max_rank,
            )
        )
    return findings


def _tagged(run: RankedRun, policy: str) -> list[Finding]:
    return [dataclasses.replace(f, message=f"--pool {policy}: {f.message}") for f in run.findings]


def diff_ranked(
    a: RankedRun, b: RankedRun, pool: str, against: str, config: dict[str, object]
) -> MemdiffRanksRun:
    """The per-rank diff of two ranked captures of one layout (no processes)."""
    by_rank = {o.rank: o for o in b.ranks}
    rows = [rank_memory(o, by_rank.get(o.rank)) for o in a.ranks]
    captures = [o.capture for run in (a, b) for o in run.ranks if o.capture is not None]
    measured = bool(captures) and all(c.memory_measured for c in captures)
    largest = max((r.pool_a or 0 for r in rows), default=0)
    return MemdiffRanksRun(
        config=config,
        layout=a.layout,
        device=a.device,
        backend=a.backend,
        pool=pool,
        against=against,
        a=a,
        b=b,
        ranks=rows,
        spreads=spreads(rows, pool, against) if measured else [],
        memory_measured=measured,
        tolerance_bytes=tolerance_for(largest),
        tolerance=TOLERANCE_RULE,
        memory_note=None if measured else CPU_NOTE.format(model=config.get("model")),
        seconds=a.seconds + b.seconds,
        findings=[
            *(pool_findings(rows, pool, against) if measured else []),
            *_tagged(a, pool),
            *_tagged(b, against),
        ],
    )


def memdiff_ranks(
    spec: RunSpec,
    layout: ParallelLayout,
    against: str,
    limits: RankLimits,
    on_stage: Callable[[str], None] | None = None,
) -> MemdiffRanksRun:
    """Capture every rank of `layout` under `spec`'s pool and under `against` (one set of
    rank processes per policy) and diff them rank by rank."""
    pool = spec.resolved_pool
    if pool == against:
        raise BadInput(f"--pool and --against are both {pool}; pick two different policies")

    def request(policy: str) -> RankRequest:
        return RankRequest(
            spec.with_pool(policy),
            layout,
            args={"replay": False},
            limits=limits,
            command="memdiff",
        )

    check_layout(request(pool))  # both policies' layouts are one: refused before any rank
    stage = on_stage or (lambda _: None)
    runs: list[RankedRun] = []
    for policy in (pool, against):
        stage(f"capturing {layout.world_size} ranks with --pool {policy}")
        run = run_ranks(request(policy), on_stage=stage)
        runs.append(run)
        if run.interrupted is not None:  # Ctrl-C: keep what was measured, start nothing more
            break
    if len(runs) == 1:
        runs.append(dataclasses.replace(runs[0], ranks=[], findings=[]))
    config: dict[str, object] = {"model": spec.model, "pool": pool, "against": against}
    first = next((o.capture for o in runs[0].ranks if o.capture is not None), None)
    if first is not None:
        config.update({k: v for k, v in first.config.items() if k not in ("pool", "model")})
    return diff_ranked(runs[0], runs[1], pool, against, config)
