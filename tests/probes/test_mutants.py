"""Planted bugs (benchmarks/mutants.py) are found, each with the buffer and phase it is in.

A subset, one per phase, that leaves wrong but plausible values inside valid extents — what
poison and guards alone cannot see. The whole set runs in benchmarks/bench_mutants.py.
"""

from __future__ import annotations

import pytest

from benchmarks.bench_mutants import probe_once
from benchmarks.mutants import by_name, planted

SUBSET = [
    ("block-table-row-off", {"invariant", "reference-divergence"}),
    ("last-token-one-off", {"invariant", "reference-divergence"}),
    ("draft-seq-len-carried", {"invariant"}),
]


@pytest.mark.parametrize(("name", "kinds"), SUBSET)
def test_mutant_is_found_and_located(name: str, kinds: set[str]) -> None:
    mutant = by_name(name)
    with planted(mutant):
        run = probe_once(mutant.backend, "NONE", 3)
    assert run.cases[0].status == "ok", run.cases[0].stderr
    assert run.findings, f"{name} was not found"
    for f in run.findings:
        assert f.buffer and f.phase and f.kernel, f"{f.id} lacks buffer/phase/kernel"
        assert "id -1" not in (f.buffer or "")
    hit = {(f.kind, f.phase, f.buffer) for f in run.findings}
    assert any(p == mutant.phase and b in mutant.buffers for _, p, b in hit), hit
    assert kinds <= {k for k, _, _ in hit}, hit
