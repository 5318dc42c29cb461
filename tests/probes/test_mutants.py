"""Planted bugs (benchmarks/mutants.py) are found, each with the buffer and phase it is in.

A subset, one per class, of bugs that leave wrong but plausible values inside valid extents —
what poison and guards alone cannot see — and of padded rows writing where they must not. The
whole set runs in benchmarks/bench_mutants.py.
"""

from __future__ import annotations

import pytest

from benchmarks.bench_mutants import probe_once
from benchmarks.mutants import by_name, planted

# (mutant, mode, finding kinds that must be among the findings)
SUBSET = [
    ("block-table-row-off", "NONE", {"invariant", "reference-divergence"}),
    ("last-token-one-off", "NONE", {"invariant", "reference-divergence"}),
    ("draft-seq-len-carried", "NONE", {"invariant"}),
    ("device-table-not-refreshed", "NONE", {"invariant", "reference-divergence"}),
    ("stale-csr-offsets", "NONE", {"invariant"}),
    ("decode-pad-row-writes-committed-kv", "FULL", {"kv-canary", "invariant"}),
    ("pad-slot-zero", "FULL", {"kv-canary", "invariant"}),  # named before the kernels ran
    # only the draft layers' KV is wrong: the reference compares every layer's owned blocks
    ("draft-kv-write-one-short", "NONE", {"reference-divergence"}),
]


@pytest.mark.parametrize(("name", "mode", "kinds"), SUBSET)
def test_mutant_is_found_and_located(name: str, mode: str, kinds: set[str]) -> None:
    mutant = by_name(name)
    with planted(mutant):
        # capture sizes 4 and 16: batch 3 pads to 4 requests in every phase
        run = probe_once(mutant.backend, mode, 3, capture_sizes=(4, 16))
    assert run.cases[0].status == "ok", run.cases[0].stderr
    assert run.findings, f"{name} was not found"
    for f in run.findings:
        assert f.buffer and f.phase and f.kernel, f"{f.id} lacks buffer/phase/kernel"
        assert "id -1" not in (f.buffer or "")
    hit = {(f.kind, f.phase, f.buffer) for f in run.findings}
    assert any(p == mutant.phase and b in mutant.buffers for _, p, b in hit), hit
    assert kinds <= {k for k, _, _ in hit}, hit
    if name == "pad-slot-zero":  # checked before the target's kernels: slot 0, not the pad -1
        pre = [i for i in run.cases[0].invariants if i.invariant == "pad-slots"]
        assert pre and (pre[0].phase, pre[0].buffer) == ("target", "slot_mapping"), pre
        assert (pre[0].value, pre[0].expected) == (0, -1), pre
