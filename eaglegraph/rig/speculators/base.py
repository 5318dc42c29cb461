"""The speculator interface: one strategy per drafting style, as vLLM keeps one proposer per
method under `spec_decode/<method>/`.

A strategy owns what differs between styles at run time — its persistent buffers, the
routines its graphs record, the inputs its captures are given, the draft step after the
target's verification, and the facts the probes need — so `Rig`, `capture` and the probes call
this interface and never ask which style they hold. Its plan changes are pure and torch-free,
in its style's row of `rig.style_plans`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from enum import Flag, auto
from typing import ClassVar, Protocol

from eaglegraph.known.speculator_styles import SpeculatorStyle
from eaglegraph.pair.model import Pair
from eaglegraph.results.findings import Finding
from eaglegraph.rig.attention import Metadata
from eaglegraph.rig.descriptors import BatchDescriptor, PaddedBatch
from eaglegraph.rig.graphs import PhaseRunner, Routine
from eaglegraph.rig.parts import StepParts
from eaglegraph.rig.plan import PHASES
from eaglegraph.rig.workload import ScheduledRequest


class DraftFacts(Flag):
    """What a style's drafting does, in the terms the probes check it by."""

    NONE = 0
    # the draft prefill builds the eagle.* inputs (query starts, last_token_indices)
    EAGLE_INPUTS = auto()
    # last_token_indices point at each request's last accepted token (not moved by modules)
    ACCEPTED_LAST_TOKEN = auto()
    # positions 1..K-1 are drafted by draft-decode phases (else all in the prefill graph)
    DECODES = auto()
    # the draft KV it writes is exactly the dense reference's (prefill and decode rows)
    REFERENCE_KV = auto()
    # draft-decode slots follow the query layout: each real row its request's next position,
    # padded rows the pad slot (SGLang computes a slot for every padded row instead)
    DECODE_SLOTS_BY_QUERY = auto()


@dataclass(frozen=True)
class VerifiedStep:
    """The step after the target's verification: what every draft step starts from."""

    batch: list[ScheduledRequest]
    seq_lens: list[int]  # each request's KV length after the target's query
    accepted: list[int]  # drafts each request accepted
    target: PaddedBatch  # the target's dispatched, padded batch
    target_metadata: Metadata
    max_query_len: int

    @property
    def num_reqs(self) -> int:
        return len(self.batch)

    @property
    def num_tokens(self) -> int:
        return self.target.real_tokens


class Speculator(ABC):
    """One drafting style's strategy over the step's parts."""

    style: ClassVar[SpeculatorStyle]
    facts: ClassVar[DraftFacts]

    def __init__(self, parts: StepParts, pair: Pair) -> None:
        """Allocate and register the style's own persistent buffers."""
        self.parts = parts

    # ------------------------------------------------------------------ graphs

    @abstractmethod
    def prefill_routine(self) -> Routine:
        """What the draft-prefill graph records, as a routine of (num_reqs, num_tokens)."""

    def decode_routine(self) -> Routine:
        """What a draft-decode graph records (styles without decodes capture none)."""
        return self.parts.routines.decode

    @property
    def fused_draft_decode(self) -> bool:
        """Whether the K-1 draft decodes are one graph (only styles with decodes fuse)."""
        return False

    @abstractmethod
    def capture_metadata(
        self, desc: BatchDescriptor, num_reqs: int, num_tokens: int, dummy: DummyBatch
    ) -> Metadata:
        """Fill the inputs a draft-prefill capture records over (through `dummy`, vLLM's
        `make_dummy`), and return the metadata the graph bakes in."""

    def capture_findings(self, runner: PhaseRunner) -> list[Finding]:
        """Findings about the draft-prefill captures, before they start."""
        return []

    def graph_source(self, phase: str) -> str | None:
        """The phase whose captured graphs `phase` dispatches into instead of capturing its
        own (one dispatcher serving several passes, as MRV1's drafter); None: its own."""
        return None

    def capture_sequence(self) -> list[tuple[str, BatchDescriptor]]:
        """Every (phase, descriptor) to capture, in the engine's order: target before the
        speculator, each phase's graphs PIECEWISE-like first and largest first."""
        runners = self.parts.runners
        return [
            (phase, desc)
            for phase in PHASES
            if self.graph_source(phase) is None
            for desc in runners[phase].dispatcher.capture_order()
        ]

    # ------------------------------------------------------------------ the step

    @abstractmethod
    def draft(self, step: VerifiedStep, descriptors: dict[str, str]) -> None:
        """Draft K tokens per request into `draft_tokens`, naming each phase's descriptor."""

    # ------------------------------------------------------------------ probe facts

    def reprefilled_positions(self) -> int:
        """Committed positions at each request's tail whose draft KV a step may rewrite."""
        return 0


class DummyBatch(Protocol):
    """vLLM's dummy batch for a capture (`capture.CaptureDummies`)."""

    def inputs(self, owner: str, num_reqs: int, num_tokens: int) -> list[int]:
        """Fill the target's ("target") or the EAGLE draft's query buffers with an even
        split of `num_tokens` over `num_reqs`; the query lengths."""
        ...

    def target(self, desc: BatchDescriptor, num_reqs: int, num_tokens: int) -> Metadata:
        """The target's dummy inputs, and the metadata its builders make of them."""
        ...
