"""Probe results: every case (mode × padded batch), its guard hits, and the findings
(eaglegraph.probe/1).

What a case observed is typed here (violations, padding regions, canary hits) so a saved
probe can be re-rendered and explored without the probe's code; counts a view shows (hits per
case) are computed when the result is built.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eaglegraph.results.findings import Finding

PROBE_SCHEMA = "eaglegraph.probe/1"


@dataclass
class GuardViolation:
    """One read a guarded kernel saw outside a buffer's valid extent (or out of range)."""

    run: str
    phase: str
    kernel: str
    buffer: str
    row: int
    value: int


@dataclass
class PaddingRegion:
    """A buffer's padding region in one case: how much poison was left after each run."""

    buffer: str
    phase: str
    extent: str
    first_row: int
    rows: int
    elements: int
    poisoned_after_a: int
    poisoned_after_b: int


@dataclass
class CanaryHit:
    """A run of KV blocks no request owns (or the null block past its pad slots) that a phase
    of the step wrote into; or, with `request` set, slots of a request's committed prefix
    (positions written by earlier steps) that the phase overwrote."""

    first_block: int
    elements: int
    written: int
    phase: str = "step"
    kernel: str = "write_kv"
    null_block: bool = False
    request: int | None = None
    layer: int | None = None
    position: int | None = None


@dataclass
class InvariantViolation:
    """A metadata invariant that did not hold after a phase: the first element that broke it."""

    invariant: str
    phase: str
    buffer: str
    kernel: str
    what: str
    violations: int
    element: int
    value: int
    expected: int | None = None
    step: int | None = None  # the case's step (0: prefill, 1: verify at the large batch, 2: probed)


@dataclass
class ReferenceDivergence:
    """The first value in which the rig differed from the dense plain-torch reference."""

    step: int
    phase: str
    request: int
    buffer: str
    kernel: str
    index: str
    got: str
    want: str
    # how phase and kernel were found (probes/locate.py): "kernel" / "phase" (the segment of a
    # replay that last wrote the value), "unwritten", "unreproduced"; None: not replayed
    location: str | None = None
    location_note: str | None = None


@dataclass
class CaseGraph:
    """A graph the case captured and the pool it lives in, so a padded descriptor leads to
    its captured graph, its pool, and the other graphs sharing that pool."""

    index: int
    phase: str
    descriptor: str  # as the step's descriptors name it: the key the padded step replayed
    pool: str | None  # the pool id as capture runs write it: "(0,1)", "private"
    pool_label: str  # the policy's name for it: "global", "eagle (dedicated)", "private"
    bytes: int | None = None  # None on the emulated backend


@dataclass
class CaseResult:
    name: str
    mode: str
    batch: int
    large: int
    status: str
    duration_s: float
    counts: dict[str, list[int]] = field(default_factory=dict)
    descriptors: dict[str, str] = field(default_factory=dict)
    violations: list[GuardViolation] = field(default_factory=list)
    regions: list[PaddingRegion] = field(default_factory=list)
    differential: list[str] = field(default_factory=list)
    nan_outputs: list[str] = field(default_factory=list)
    canaries: list[CanaryHit] = field(default_factory=list)
    invariants: list[InvariantViolation] = field(default_factory=list)
    divergence: ReferenceDivergence | None = None
    # the graphs captured for the case; `replayed` is the index the probed step used per phase
    graphs: list[CaseGraph] = field(default_factory=list)
    replayed: dict[str, int] = field(default_factory=dict)
    # how to rerun the case: mode, batches, K, prompt and weight seeds, steps
    reproduction: dict[str, Any] = field(default_factory=dict)
    # seconds spent on each signal beyond the probed step itself
    signal_s: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    stderr: str | None = None
    # where a case that failed was last seen (probes/checkpoint.py): stage, step, phase,
    # the last kernel launched and the buffers it reads, invariants already broken
    checkpoint: dict[str, Any] | None = None
    # a live-schedule case: the schedule's name (its steps are in `reproduction`); None for
    # a padding case (one probed step at `batch` requests)
    schedule: str | None = None
    # what the reference differential compared for the rig's draft kind (`ProbeRun`'s)
    compared: list[str] = field(default_factory=list)

    @property
    def hits(self) -> int:
        """Everything this case caught: guard violations, differential changes, NaN, canaries,
        broken invariants and a divergence from the reference."""
        return (
            len(self.violations) + len(self.differential) + len(self.nan_outputs)
            + len(self.canaries) + len(self.invariants) + (self.divergence is not None)
        )  # fmt: skip


@dataclass
class MatrixRow:
    """One buffer of the padding-region × phase matrix: stale reads seen per phase."""

    buffer: str
    owner: str
    padding: str
    reads: dict[str, int]
    after_step: str


@dataclass
class ProbeRun:
    config: dict[str, Any]
    environment: dict[str, Any]
    backend: str
    cases: list[CaseResult]
    findings: list[Finding]
    matrix: list[MatrixRow]
    duration_s: float
    isolated: bool = True
    phases: list[str] = field(default_factory=lambda: ["target", "draft_prefill", "draft_decode"])
    # what the reference differential compares for this run's draft kind, one line each
    reference_compares: list[str] = field(default_factory=list)
