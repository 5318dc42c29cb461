"""The multi-module MTP speculator (vLLM's multi-module MTP proposer): every module runs over
each request's window, all K module steps in one draft graph, no draft decodes.

Its buffers and graph routine are `rig.mtp_window.MTPWindow`; its draft phases are
`rig.mtp_plan.multi_module_plan` (its `rig.style_plans` row). The window re-prefills up to
K-1 rejected positions of each request's tail, so those positions' draft KV is rewritten
legally.
"""

from __future__ import annotations

from eaglegraph.kernels.block_table import compute_slot_mappings
from eaglegraph.known.speculator_styles import SpeculatorStyle
from eaglegraph.pair.model import Pair
from eaglegraph.rig.attention import Metadata
from eaglegraph.rig.descriptors import BatchDescriptor, graph_max_query_len, uniform_token_count
from eaglegraph.rig.graphs import Routine
from eaglegraph.rig.modes import Mode
from eaglegraph.rig.mtp_window import MTPWindow
from eaglegraph.rig.parts import StepParts
from eaglegraph.rig.speculators.base import DraftFacts, DummyBatch, Speculator, VerifiedStep


class WindowSpeculator(Speculator):
    style = SpeculatorStyle.WINDOW
    facts = DraftFacts.EAGLE_INPUTS

    def __init__(self, parts: StepParts, pair: Pair) -> None:
        super().__init__(parts, pair)
        self.window = MTPWindow(parts)

    def prefill_routine(self) -> Routine:
        return self.window.routine

    def capture_metadata(
        self, desc: BatchDescriptor, num_reqs: int, num_tokens: int, dummy: DummyBatch
    ) -> Metadata:
        """Its own window metadata for FULL graphs, never the target's captured state."""
        if desc.mode is not Mode.FULL:
            md = dummy.target(desc, num_reqs, num_tokens)
            dummy.inputs("eagle", num_reqs, num_tokens)
            return md
        lens = dummy.inputs("eagle", num_reqs, num_tokens)
        max_q = graph_max_query_len(desc, max(lens))
        return self.parts.metadata.draft(lens, num_reqs, num_tokens, max_q)

    def draft(self, step: VerifiedStep, descriptors: dict[str, str]) -> None:
        """Every module over the request's window, in one draft graph."""
        p = self.parts
        bufs, hooks, rb = p.bufs, p.hooks, step.num_reqs
        hooks.mark("draft_prefill", 0, "prepare")
        self.window.prepare(rb, step.max_query_len)
        runner = p.runners["draft_prefill"]
        uniform = uniform_token_count(rb, step.num_tokens, step.max_query_len)
        batch = runner.pad(rb, step.num_tokens, uniform)
        compute_slot_mappings(
            bufs.block_table, bufs.eagle_qsl, bufs.eagle_positions, bufs.slot_mapping, rb,
            batch.num_tokens, p.config.block_size, p.allocator.num_blocks,
            p.guard(query_start_loc="eagle.query_start_loc", positions="eagle.positions", block_table="block_table"),
        )  # fmt: skip
        self.window.pad_slots(rb)
        reprefill = [
            max(0, b.num_drafts - a - 1) for b, a in zip(step.batch, step.accepted, strict=True)
        ]
        lens = [s - r for s, r in zip(step.seq_lens, reprefill, strict=True)]
        lens += [0] * (batch.num_reqs - rb)
        max_q = graph_max_query_len(batch.desc, step.max_query_len)
        md = p.metadata.draft(lens, batch.num_reqs, batch.num_tokens, max_q)
        hooks.mark("draft_prefill", 0, "launch")
        runner.run(batch, md)
        descriptors["draft_prefill"] = batch.desc.label()
        hooks.phase_done("draft_prefill")

    def reprefilled_positions(self) -> int:
        return self.parts.config.num_speculative_tokens - 1


SPECULATOR = WindowSpeculator
