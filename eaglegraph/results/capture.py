"""Capture results: one event per captured graph, the pools, the totals (eaglegraph.capture/1).

A `CaptureRun` is what `capture --save` writes and what `report` re-renders, so it must load
back from JSON exactly; the decoder in `codec.py` rejects foreign or corrupt files with a
one-line error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eaglegraph.results.findings import Finding
from eaglegraph.results.pools import PoolId, PoolUsage

CAPTURE_SCHEMA = "eaglegraph.capture/1"

# The phases of one speculative step, in the order they are captured and shown.
PHASES = ("target", "draft_prefill", "draft_decode")


@dataclass
class CaptureEvent:
    """One captured graph (or one failed attempt) on the capture timeline."""

    index: int
    phase: str
    mode: str
    num_tokens: int
    num_reqs: int | None
    uniform_token_count: int | None
    pool: PoolId | None
    backend: str
    start_s: float
    duration_s: float
    warmup_s: float = 0.0
    segments: int = 1
    allocated_before: int | None = None
    allocated_after: int | None = None
    reserved_before: int | None = None
    reserved_after: int | None = None
    bytes: int | None = None
    status: str = "ok"
    error: str | None = None
    need_bytes: int | None = None
    warmup_reserved_bytes: int | None = None  # allocator growth during the eager warmup
    device_bytes: int | None = None  # the driver's free-memory drop over warmup + capture

    @property
    def outside_allocator_bytes(self) -> int | None:
        """What the driver lost beyond the allocator's growth: graph instantiation, kernel
        modules loaded by the warmup, library workspaces."""
        if self.device_bytes is None or self.bytes is None:
            return None
        return self.device_bytes - self.bytes - (self.warmup_reserved_bytes or 0)

    @property
    def descriptor(self) -> str:
        reqs = "—" if self.num_reqs is None else str(self.num_reqs)
        return f"{self.mode}(tokens={self.num_tokens}, reqs={reqs})"


@dataclass
class CaptureTotals:
    capture_seconds: float
    graphs: int
    took_bytes: int | None
    pool_reserved_bytes: int | None
    reserved_bytes: int | None
    snapshot_reserved_bytes: int | None
    accounted: bool | None
    # took_bytes = allocator_bytes + outside_allocator_bytes, both over the whole capture
    allocator_bytes: int | None = None  # growth of memory_reserved() (every pool)
    outside_allocator_bytes: int | None = None  # what the driver lost beyond it
    outside_in_captures_bytes: int | None = None  # the part seen around each graph's capture

    @property
    def vllm_line(self) -> str:
        """The totals as vLLM logs them, so a user can hold ours against their server log."""
        took = (
            "N/A (emulated backend)"
            if self.took_bytes is None
            else f"{self.took_bytes / 2**30:.2f} GiB"
        )
        return f"Graph capturing finished in {self.capture_seconds:.0f} secs, took {took}"


@dataclass
class CaptureRun:
    config: dict[str, Any]
    environment: dict[str, Any]
    backend: str
    pool_policy: str
    events: list[CaptureEvent]
    pools: list[PoolUsage]
    totals: CaptureTotals
    findings: list[Finding] = field(default_factory=list)
    failed: CaptureEvent | None = None
    replay: dict[str, Any] | None = None
    prediction: dict[str, Any] | None = None  # the CPU prediction made before capturing

    @property
    def ok(self) -> bool:
        return self.failed is None

    @property
    def memory_measured(self) -> bool:
        """The emulated backend measures no memory: every byte figure reads N/A."""
        return self.backend != "emulated"

    def pool_label(self, pool: PoolId | None) -> str | None:
        """The label the pool table gives `pool`, so timeline rows and pools name it alike."""
        if pool is None:
            return None
        return next((p.label for p in self.pools if p.id == pool), str(pool))
