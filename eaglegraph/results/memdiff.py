"""Memdiff results: two captures under different pool policies and their differences
(eaglegraph.memdiff/1). Deltas read as b − a."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eaglegraph.results.capture import CaptureRun
from eaglegraph.results.findings import Finding
from eaglegraph.results.pools import PoolDiff

MEMDIFF_SCHEMA = "eaglegraph.memdiff/1"


@dataclass
class MemdiffRun:
    config: dict[str, Any]
    a: CaptureRun
    b: CaptureRun
    per_pool: list[PoolDiff]
    per_phase: list[PoolDiff]
    per_graph: list[PoolDiff]
    total_a: int
    total_b: int
    tokens_identical: bool | None
    token_steps: int
    findings: list[Finding] = field(default_factory=list)

    @property
    def total_delta(self) -> int:
        return self.total_b - self.total_a
