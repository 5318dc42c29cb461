"""Findings that locate (issue 27): the reference differential names the first buffer a wrong
value reached in dataflow order, not a value computed from it.

kv-write-one-short (benchmarks/mutants.py) leaves one token's target K/V unwritten; the
attention that reads it then gives wrong hidden rows. Compared in pipeline order, the finding
named `target.hidden` (what the K/V fed); it must name the K/V row the write missed.
"""

from __future__ import annotations

from benchmarks.bench_mutants import probe_once
from benchmarks.mutants import by_name, planted


def test_kv_write_one_short_is_located_at_the_kv_write() -> None:
    mutant = by_name("kv-write-one-short")
    with planted(mutant):
        run = probe_once(mutant.backend, "NONE", 3, capture_sizes=(4, 16))
    assert run.cases[0].status == "ok", run.cases[0].stderr
    ref = [f for f in run.findings if f.kind == "reference-divergence"]
    assert ref, [f.id for f in run.findings]
    f = ref[0]
    assert (f.phase, f.buffer, f.kernel) == ("target", "kv_cache", "write_kv"), f
    # the lowest target layer: where the write itself went wrong, not a layer fed by it
    assert "target layer 0 " in f.message, f.message
    assert "block " in f.message and "slot " in f.message, f.message
