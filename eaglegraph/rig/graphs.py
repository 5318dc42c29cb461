"""Phase runners: dispatch a batch to a descriptor and run the phase's routine for it.

A routine is the function a graph records: it reads only persistent buffers and Python ints
fixed by the descriptor. Running it eagerly, replaying a captured CUDA graph, or re-running it
at the captured padded shape over the same buffers (the emulated backend) are therefore the
same computation — which is what makes replay correctness testable on CPU.
"""

from __future__ import annotations

from collections.abc import Callable

from eaglegraph.rig.attention import AttentionRuntime, Metadata
from eaglegraph.rig.descriptors import BatchDescriptor, Dispatcher
from eaglegraph.rig.modes import Mode
from eaglegraph.rig.plan import PhasePlan

Routine = Callable[[int, int], None]


class PhaseRunner:
    """One phase (target, draft_prefill, draft_decode): its descriptors and its routine."""

    def __init__(
        self, plan: PhasePlan, routine: Routine, attention: AttentionRuntime
    ) -> None:
        self.plan = plan
        self.phase = plan.phase
        self.routine = routine
        self.attention = attention
        self.dispatcher: Dispatcher = plan.dispatcher()
        self.captured: set[BatchDescriptor] = set()

    def dispatch(self, num_reqs: int, num_tokens: int, uniform: int | None) -> BatchDescriptor:
        """vLLM's dispatch, restricted to descriptors actually captured (eager otherwise)."""
        desc = self.dispatcher.dispatch(num_reqs, num_tokens, uniform)
        if desc.mode is not Mode.NONE and desc not in self.captured:
            return BatchDescriptor(Mode.NONE, num_tokens, num_reqs)
        return desc

    def run(self, desc: BatchDescriptor, num_reqs: int, num_tokens: int, live: Metadata | None) -> None:
        """Eager execution of the routine with the step's live metadata."""
        self.attention.metadata = live
        self.routine(num_reqs, num_tokens)
