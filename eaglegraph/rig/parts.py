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

    @property
    def framework(self) -> str:
        return self.config.options.framework

    @property
    def num_speculative_tokens(self) -> int:
        return self.config.num_speculative_tokens

    @property
    def max_num_seqs(self) -> int:
        return self.config.max_num_seqs

    @property
    def max_model_len(self) -> int:
        return self.config.max_model_len

    @property
    def block_size(self) -> int:
        return self.config.block_size

    def guard(self, **roles: str) -> Guard | None:
        """A guard naming the registered buffer behind each index role (None: guards off)."""
        if self.guard_log is None:
            return None
        return Guard(self.guard_log, self.registry.ids(**roles))
