"""The per-graph memory read: what it costs and what it returns.

The capture-overhead figure of issue 26 hangs on this read, so its cost model is pinned: one
nested statistics call per read (never the flattening `memory_allocated` family), the driver's
free memory only where a capture's figure uses it, and no device synchronisation."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from eaglegraph.rig import graphs
from eaglegraph.rig.graphs import MemoryReading, _MemoryProbe


class _FakeCuda:
    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self.allocated, self.reserved, self.peak, self.free = 100, 4096, 300, 10_000

    def _count(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1

    def stats(self) -> dict[str, Any]:
        self._count("stats")
        return {
            "allocated_bytes": {"all": {"current": self.allocated, "peak": self.peak}},
            "reserved_bytes": {"all": {"current": self.reserved, "peak": self.reserved}},
        }

    def mem_get_info(self) -> tuple[int, int]:
        self._count("mem_get_info")
        return self.free, 80 << 30

    def forbidden(self, name: str) -> Any:
        def call(*_a: Any, **_k: Any) -> Any:
            self._count(name)
            raise AssertionError(f"{name} called during a memory read")

        return call


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> _FakeCuda:
    cuda = _FakeCuda()
    monkeypatch.setattr(torch.cuda, "memory_stats_as_nested_dict", cuda.stats)
    monkeypatch.setattr(torch.cuda, "mem_get_info", cuda.mem_get_info)
    for name in ("synchronize", "memory_allocated", "memory_reserved", "memory_stats"):
        monkeypatch.setattr(torch.cuda, name, cuda.forbidden(name))
    return cuda


def test_one_stats_call_per_read_and_no_sync(fake: _FakeCuda) -> None:
    probe = _MemoryProbe(cuda=True)
    reading = probe.read()
    assert reading == MemoryReading(allocated=100, reserved=4096, free=10_000, peak=300)
    assert fake.calls == {"stats": 1, "mem_get_info": 1}


def test_driver_free_memory_only_when_asked(fake: _FakeCuda) -> None:
    reading = _MemoryProbe(cuda=True).read(driver=False)
    assert reading.free is None and reading.reserved == 4096
    assert fake.calls == {"stats": 1}


def test_off_cuda_reads_nothing(fake: _FakeCuda) -> None:
    assert _MemoryProbe(cuda=False).read() == MemoryReading(None, None, None, None)
    assert fake.calls == {}


def test_capture_deltas_are_differences_of_readings() -> None:
    """The event's fields are `_delta`s of two readings; None wherever a side is unknown."""
    before = MemoryReading(allocated=100, reserved=4096, free=None, peak=None)
    after = MemoryReading(allocated=180, reserved=6144, free=9_000, peak=500)
    assert graphs._delta(before.reserved, after.reserved) == 2048
    assert graphs._delta(before.allocated, after.peak) == 400
    assert graphs._delta(after.free, before.free) is None
