"""Probe runs that several test files only read, run once per test process.

A probe on the CPU spends seconds per case in Triton's interpreter; tests that ask the same
question of the same unmutated rig share its run here instead of each probing again. Every run
is cached per process (one per xdist worker at most) and must not be mutated by its readers.
Mutants are never planted around these calls: a planted run is its own test's.
"""

from __future__ import annotations

import functools

from benchmarks.bench_mutants import probe_once
from eaglegraph.results.probe import ProbeRun


@functools.cache
def clean_eager_run() -> ProbeRun:
    """The unmutated tiny EAGLE-3 rig probed eager (NONE) at the padded batch 3 under the
    default live schedules (live and capped). NONE captures no graph, so the capture sizes
    (4 and 16, as the mutant tests use) change nothing the run reports about the cases."""
    run: ProbeRun = probe_once("flash_attn", "NONE", 3, capture_sizes=(4, 16))
    return run
