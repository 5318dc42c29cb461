"""The per-rank diff of a multi-rank memdiff, on synthetic rows (no processes; issue 25)."""

from __future__ import annotations

from eaglegraph.probes.memdiff_ranks import pool_findings, spread, tolerance_for
from eaglegraph.results.memdiff_ranks import RankMemory

MIB = 1 << 20


def _row(rank: int, pool_a: int, pool_b: int, graphs: int = 8) -> RankMemory:
    return RankMemory(
        rank=rank, tp_rank=rank, dp_rank=0, status_a="ok", status_b="ok",
        graphs_a=graphs, graphs_b=graphs, pool_a=pool_a, pool_b=pool_b,
        pool_delta=pool_b - pool_a, outside_a=0, outside_b=0, comm_a=MIB, comm_b=MIB,
    )  # fmt: skip


def test_spread_names_max_and_min_rank() -> None:
    s = spread("pool", [(0, 10 * MIB), (1, 30 * MIB), (2, 20 * MIB)])
    assert s is not None
    assert (s.max_rank, s.min_rank, s.spread_bytes) == (1, 0, 20 * MIB)
    assert spread("pool", [(0, 1), (1, None)]) is None  # a rank that measured nothing


def test_pools_within_tolerance_are_quiet() -> None:
    rows = [_row(0, 100 * MIB, 120 * MIB), _row(1, 101 * MIB, 120 * MIB)]
    assert tolerance_for(101 * MIB) == 2 * MIB
    assert pool_findings(rows, "shared", "dedicated") == []


def test_rank_with_more_graphs_is_named() -> None:
    rows = [_row(0, 100 * MIB, 100 * MIB), _row(1, 140 * MIB, 100 * MIB, graphs=10)]
    rows[0].graphs_a = 8
    (finding,) = pool_findings(rows, "shared", "dedicated")
    assert finding.id == "rank-pools-differ" and finding.rank == 1
    assert "under --pool shared rank 1" in finding.message
    assert "more graphs" in finding.message
