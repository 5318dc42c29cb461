"""Planted faults reach every collective op, the vocab-parallel logits' all-gather included
(`rig.ranks.RankTensorParallel.issue`): one gloo process, a world of one rank."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from eaglegraph.rig.ledger import Ledger, read_ledger
from eaglegraph.rig.ranks import PlantedFault, RankTensorParallel


@pytest.fixture(scope="module")
def world() -> Iterator[None]:
    import torch.distributed as dist

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def _tp(tmp_path: Path, fault: PlantedFault | None) -> tuple[RankTensorParallel, Ledger]:
    ledger = Ledger(tmp_path / "rank0.ledger", 0)
    tp = RankTensorParallel(0, 1, None, ledger)
    tp.fault, tp.global_rank = fault, 0
    return tp, ledger


def _entries(ledger: Ledger) -> list[tuple[str, int]]:
    ledger.close()
    return [(e["op"], e["numel"]) for e in read_ledger(ledger.path) if e["ev"] == "enter"]


def test_all_gather_is_recorded_and_concatenates_along_the_last_dim(
    world: None, tmp_path: Path
) -> None:
    tp, ledger = _tp(tmp_path, None)
    x = torch.arange(6.0).view(2, 3)
    assert torch.equal(tp.all_gather(x), x)  # one rank: its own rows
    tp.all_reduce(x)
    assert _entries(ledger) == [("all_gather", 6), ("all_reduce", 6)]


def test_skip_planted_on_an_all_gather_leaves_it_out_and_the_rank_goes_on(
    world: None, tmp_path: Path
) -> None:
    tp, ledger = _tp(tmp_path, PlantedFault("skip", 0, 1))
    x = torch.ones(2, 3)
    tp.all_reduce(x.clone())
    out = tp.all_gather(x)  # collective #1: left out, as a rank that took another path
    assert out.shape == (2, 3) and not out.any()
    tp.all_gather(x)  # the next one takes number 1
    assert _entries(ledger) == [("all_reduce", 6), ("all_gather", 6)]


def test_shrink_planted_on_an_all_gather_records_one_element_fewer(
    world: None, tmp_path: Path
) -> None:
    tp, ledger = _tp(tmp_path, PlantedFault("shrink", 0, 0))
    out = tp.all_gather(torch.ones(2, 3))
    assert out.shape == (2, 3)
    assert _entries(ledger) == [("all_gather", 5)]
