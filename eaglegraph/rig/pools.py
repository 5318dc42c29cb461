"""Pool policies at work: which graph-memory pool each capture allocates from.

The policies are `known.pool_policies.PoolPolicy`. Under `dedicated` the target graphs and
every PIECEWISE piece stay in the global pool and only the EAGLE FULL prefill/decode graphs go
to the extra pool. On the emulated backend pools are labels only: nothing is allocated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eaglegraph.errors import BadInput
from eaglegraph.known.pool_policies import PoolPolicy
from eaglegraph.results.pools import PoolId
from eaglegraph.rig.modes import Mode

POLICIES = tuple(PoolPolicy.values())


@dataclass
class PoolAssignment:
    """Where one capture goes: an existing handle, or a fresh private pool (None)."""

    key: str
    handle: Any


@dataclass
class PoolManager:
    policy: PoolPolicy | str
    backend: str
    handles: dict[str, Any] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise BadInput(f"unknown pool policy {self.policy!r}; choose {', '.join(POLICIES)}")
        self.policy = PoolPolicy(self.policy)

    def _handle(self, key: str, label: str) -> Any:
        if key not in self.handles:
            if self.backend == "cuda":
                import torch

                self.handles[key] = torch.cuda.graph_pool_handle()
            else:
                self.handles[key] = (0, len(self.handles) + 1)
            self.labels[key] = label
        return self.handles[key]

    def assign(self, phase: str, mode: Mode) -> PoolAssignment:
        if self.policy is PoolPolicy.PER_GRAPH:
            return PoolAssignment("private", None)
        if self.policy is PoolPolicy.DEDICATED and phase != "target" and mode is Mode.FULL:
            return PoolAssignment("eagle", self._handle("eagle", "eagle (dedicated)"))
        return PoolAssignment("global", self._handle("global", "global"))

    def label_for(self, pool: PoolId) -> str:
        """The policy's name for a pool ("global", "eagle (dedicated)"), else "private"."""
        for key, handle in self.handles.items():
            if PoolId.of(handle) == pool:
                return self.labels[key]
        return "private"

    def made(self, pool: PoolId) -> bool:
        """Whether this manager handed `pool` out (a shared handle of this run)."""
        return any(PoolId.of(handle) == pool for handle in self.handles.values())
