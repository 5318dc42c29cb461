"""The parts one rebuilt step is made of, in one object the rig, its speculator and its capture
share — so none of them reaches into the others' attributes, and `capture` and the
speculators do not import the rig (`Rig` composes them; they import this module).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from eaglegraph.kernels.guard import Guard, GuardLog
from eaglegraph.known.profiles import Profile
from eaglegraph.rig.attention import AttentionRuntime, Metadata
from eaglegraph.rig.buffers import BufferRegistry
from eaglegraph.rig.config import RigConfig
from eaglegraph.rig.descriptors import BatchDescriptor
from eaglegraph.rig.graphs import PhaseRunner
from eaglegraph.rig.hooks import StepHooks
from eaglegraph.rig.kv_cache import BlockAllocator
from eaglegraph.rig.model_setup import LoadedPair
from eaglegraph.rig.plan import CapturePlan
from eaglegraph.rig.routines import PhaseRoutines
from eaglegraph.rig.step_buffers import StepBuffers
from eaglegraph.rig.step_metadata import StepMetadata


@dataclass
class StepParts:
    """Models, buffers, KV cache, metadata builders, routines, phase runners and hooks."""

    config: RigConfig
    plan: CapturePlan
    models: LoadedPair
    registry: BufferRegistry
    bufs: StepBuffers
    kv_caches: list[tuple[torch.Tensor, torch.Tensor]]
    allocator: BlockAllocator
    attention: AttentionRuntime
    metadata: StepMetadata
    routines: PhaseRoutines
    guard_log: GuardLog | None
    max_tokens: int
    hooks: StepHooks = field(default_factory=StepHooks)
    # one graph manager per phase (filled once the speculator has given its routines)
    runners: dict[str, PhaseRunner] = field(default_factory=dict)
    # the target's FULL graphs' attention state, by descriptor (captured, then handed on)
    captured_states: dict[BatchDescriptor, Metadata | None] = field(default_factory=dict)

    @property
    def behavior(self) -> Profile:
        return self.config.options.behavior

    def guard(self, **roles: str) -> Guard | None:
        """A guard naming the registered buffer behind each index role (None: guards off)."""
        return guard_for(self.guard_log, self.registry, roles)


def guard_for(
    log: GuardLog | None, registry: BufferRegistry, roles: dict[str, str]
) -> Guard | None:
    """A guard over `log` whose index roles name `registry`'s buffers (None without a log)."""
    return None if log is None else Guard(log, registry.ids(**roles))
