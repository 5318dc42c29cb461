"""The DFlash speculator (vLLM's DFlash proposer): one graph takes the context step, the
parallel query blocks and the sampling, and drafts the whole block; no draft decodes.

Its buffers and graph routine are `rig.dflash_window.DFlashWindow`; its draft phases are
`rig.dflash_plan.dflash_plan` (its `rig.style_plans` row). Its draft layers attend
non-causally within a block.
"""

from __future__ import annotations

from dataclasses import replace

from eaglegraph.kernels.block_table import compute_slot_mappings
from eaglegraph.known.speculator_styles import SpeculatorStyle
from eaglegraph.pair.model import Pair
from eaglegraph.rig.attention import CommonMetadata, Metadata
from eaglegraph.rig.descriptors import BatchDescriptor, uniform_token_count
from eaglegraph.rig.dflash_window import DFlashWindow
from eaglegraph.rig.graphs import Routine
from eaglegraph.rig.parts import StepParts
from eaglegraph.rig.speculators.base import DraftFacts, DummyBatch, Speculator, VerifiedStep
from eaglegraph.rig.step_buffers import h2d


class BlockSpeculator(Speculator):
    style = SpeculatorStyle.BLOCK
    facts = DraftFacts.NONE

    def __init__(self, parts: StepParts, pair: Pair) -> None:
        super().__init__(parts, pair)
        assert pair.target is not None
        descriptors = parts.plan.phase("draft_prefill").descriptors
        self.block = DFlashWindow(
            parts,
            capacity_reqs=max((d.num_reqs or 0 for d in descriptors), default=0),
            unpadded_query_buffers=not parts.behavior.dflash_padded_query_buffers,
        )
        target_layers = pair.target.geometry.num_hidden_layers
        parts.attention.non_causal = frozenset(range(target_layers, len(parts.kv_caches)))

    def prefill_routine(self) -> Routine:
        return self.block.routine

    def _metadata(self, lens: list[int], num_reqs: int) -> Metadata:
        """Metadata over the query blocks: K+1 rows per request, over its own query buffers."""
        p, d, k1 = self.parts, self.block, self.parts.config.num_speculative_tokens + 1
        common = CommonMetadata(
            d.qsl, d.seq_lens, p.bufs.block_table, num_reqs, num_reqs * k1, k1, lens, "dflash"
        )
        return p.metadata.build(p.metadata.draft_builder, common)

    def capture_metadata(
        self, desc: BatchDescriptor, num_reqs: int, num_tokens: int, dummy: DummyBatch
    ) -> Metadata:
        """Uniform K+1-token blocks, KV length K+1, no context or block KV written."""
        p, d, k1 = self.parts, self.block, self.parts.config.num_speculative_tokens + 1
        rows = num_reqs * k1
        d.input_ids[:rows].zero_()
        d.positions[:rows].zero_()
        d.sample_indices.zero_()
        d.context_slots.fill_(-1)
        h2d(d.qsl[: num_reqs + 1], [i * k1 for i in range(num_reqs + 1)])
        h2d(d.seq_lens[:num_reqs], [k1] * num_reqs)
        p.bufs.slot_mapping.fill_(-1)
        return self._metadata([k1] * num_reqs, num_reqs)

    def draft(self, step: VerifiedStep, descriptors: dict[str, str]) -> None:
        """Context step, parallel query blocks and sampling in one draft graph."""
        p = self.parts
        bufs, hooks, rb, k = p.bufs, p.hooks, step.num_reqs, p.config.num_speculative_tokens
        hooks.mark("draft_prefill", 0, "prepare")
        runner = p.runners["draft_prefill"]
        uniform = uniform_token_count(rb, step.num_tokens, step.max_query_len)
        batch = runner.pad(rb, step.num_tokens, uniform)
        # the context rows a FULL graph computes are its padded tokens; elsewhere the batch's
        context_rows = batch.num_tokens if batch.full else step.num_tokens
        self.block.prepare(rb, batch.num_reqs, step.num_tokens, context_rows)
        q_rows = batch.num_reqs * (k + 1)
        compute_slot_mappings(
            bufs.block_table, self.block.qsl, self.block.positions, bufs.slot_mapping, rb,
            q_rows, p.config.block_size, p.allocator.num_blocks,
            p.guard(query_start_loc="dflash.query_start_loc", positions="dflash.positions", block_table="block_table"),
        )  # fmt: skip
        anchors = [
            s - (b.num_drafts - a)
            for s, b, a in zip(step.seq_lens, step.batch, step.accepted, strict=True)
        ]
        mml = p.config.max_model_len  # clamped as the block kernel clamps its KV lengths
        lens = [min(a + k + 1, mml) for a in anchors] + [0] * (batch.num_reqs - rb)
        md = self._metadata(lens, batch.num_reqs)
        hooks.mark("draft_prefill", 0, "launch")
        runner.run(replace(batch, num_tokens=context_rows), md)
        descriptors["draft_prefill"] = batch.desc.label()
        hooks.phase_done("draft_prefill")


SPECULATOR = BlockSpeculator
