"""Capture results: one event per captured graph, pools, totals — and their JSON round trip.

A `CaptureRun` is what `capture --save` writes (schema eaglegraph.capture/1) and what `report`
re-renders, so it must load back from JSON exactly and reject foreign or corrupt files with a
one-line error.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from eaglegraph.errors import BadInput
from eaglegraph.findings import Finding, Severity

CAPTURE_SCHEMA = "eaglegraph.capture/1"
MEMDIFF_SCHEMA = "eaglegraph.memdiff/1"


@dataclass
class CaptureEvent:
    """One captured graph (or one failed attempt) on the capture timeline."""

    index: int
    phase: str
    mode: str
    num_tokens: int
    num_reqs: int | None
    uniform_token_count: int | None
    pool: str | None
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

    @property
    def descriptor(self) -> str:
        reqs = "—" if self.num_reqs is None else str(self.num_reqs)
        return f"{self.mode}(tokens={self.num_tokens}, reqs={reqs})"


@dataclass
class PoolUsage:
    """One memory pool as the caching allocator's snapshot shows it after capture."""

    id: str
    label: str
    policy: str
    reserved_bytes: int
    allocated_bytes: int
    graphs: int
    bytes_per_phase: dict[str, int] = field(default_factory=dict)
    ideal_bytes: int = 0
    segments: int = 0


@dataclass
class CaptureTotals:
    capture_seconds: float
    graphs: int
    took_bytes: int | None
    pool_reserved_bytes: int | None
    reserved_bytes: int | None
    snapshot_reserved_bytes: int | None
    accounted: bool | None

    @property
    def vllm_line(self) -> str:
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

    @property
    def ok(self) -> bool:
        return self.failed is None


@dataclass
class PoolDiff:
    label: str
    a_bytes: int
    b_bytes: int

    @property
    def delta(self) -> int:
        return self.b_bytes - self.a_bytes


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


# ------------------------------------------------------------------ JSON → objects


def _build(cls: type, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise BadInput(f"{where}: expected an object")
    names = {f.name: f for f in dataclasses.fields(cls)}
    required = [
        n
        for n, f in names.items()
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    missing = [n for n in required if n not in data]
    if missing:
        raise BadInput(f"{where}: missing {', '.join(missing)}")
    try:
        return cls(**{k: v for k, v in data.items() if k in names})
    except TypeError as exc:
        raise BadInput(f"{where}: {exc}") from None


def _finding(data: Any, where: str) -> Finding:
    if not isinstance(data, dict):
        raise BadInput(f"{where}: expected an object")
    try:
        sev = Severity(data.get("severity"))
    except ValueError:
        raise BadInput(f"{where}: unknown severity {data.get('severity')!r}") from None
    return _build(Finding, {**data, "severity": sev}, where)


def _list(data: Any, key: str, where: str) -> list[Any]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise BadInput(f"{where}: '{key}' must be a list")
    return value


def capture_run_from_json(data: Any, where: str = "run") -> CaptureRun:
    if not isinstance(data, dict):
        raise BadInput(f"{where}: expected a JSON object")
    events = [
        _build(CaptureEvent, e, f"{where}: events[{i}]")
        for i, e in enumerate(_list(data, "events", where))
    ]
    pools = [
        _build(PoolUsage, p, f"{where}: pools[{i}]")
        for i, p in enumerate(_list(data, "pools", where))
    ]
    totals = _build(CaptureTotals, data.get("totals"), f"{where}: totals")
    failed = data.get("failed")
    run = _build(
        CaptureRun,
        {
            **data,
            "events": events,
            "pools": pools,
            "totals": totals,
            "failed": _build(CaptureEvent, failed, f"{where}: failed") if failed else None,
            "findings": [
                _finding(f, f"{where}: findings[{i}]")
                for i, f in enumerate(_list(data, "findings", where))
            ],
        },
        where,
    )
    for name in ("config", "environment"):
        if not isinstance(getattr(run, name), dict):
            raise BadInput(f"{where}: '{name}' must be an object")
    return run


def memdiff_run_from_json(data: Any, where: str = "memdiff") -> MemdiffRun:
    if not isinstance(data, dict):
        raise BadInput(f"{where}: expected a JSON object")

    def diffs(key: str) -> list[PoolDiff]:
        return [
            _build(PoolDiff, d, f"{where}: {key}[{i}]")
            for i, d in enumerate(_list(data, key, where))
        ]

    return _build(
        MemdiffRun,
        {
            **data,
            "a": capture_run_from_json(data.get("a"), f"{where}: a"),
            "b": capture_run_from_json(data.get("b"), f"{where}: b"),
            "per_pool": diffs("per_pool"),
            "per_phase": diffs("per_phase"),
            "per_graph": diffs("per_graph"),
            "findings": [
                _finding(f, f"{where}: findings[{i}]")
                for i, f in enumerate(_list(data, "findings", where))
            ],
        },
        where,
    )
