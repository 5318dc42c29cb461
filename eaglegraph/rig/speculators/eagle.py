"""The EAGLE speculator (vLLM's `EagleSpeculator`, SGLang's EAGLE worker): a draft prefill at
position 0 over the target's token layout, then K-1 draft decodes of one token per request.

Per step (research vllm-mrv2.md §3.4): the draft prefill takes the target's hidden states (and
EAGLE-3's aux layers) as its feature, ids shifted left with the bonus token at each request's
last valid slot, and samples at `last_token_indices`; each decode feeds the sampled token and
hidden row back. vLLM may fuse the K-1 decodes into one graph; SGLang pads decode rows with its
own positions. EAGLE-1, EAGLE-3 and an MTP checkpoint whose one module is reused per step all
draft this way. SGLang's EAGLE worker pads its draft-decode rows its own way
(`sglang_eagle.py`).
"""

from __future__ import annotations

import torch

from eaglegraph.kernels.block_table import compute_slot_mappings
from eaglegraph.kernels.eagle import prepare_eagle_decode, prepare_eagle_inputs
from eaglegraph.known.profiles import FLAGS
from eaglegraph.known.speculator_styles import SpeculatorStyle
from eaglegraph.pair.model import Pair
from eaglegraph.results.findings import Finding, Severity
from eaglegraph.rig.attention import Metadata
from eaglegraph.rig.descriptors import (
    BatchDescriptor,
    PaddedBatch,
    graph_max_query_len,
    uniform_token_count,
)
from eaglegraph.rig.graphs import PhaseRunner, Routine
from eaglegraph.rig.modes import Mode
from eaglegraph.rig.parts import StepParts
from eaglegraph.rig.speculators.base import DraftFacts, DummyBatch, Speculator, VerifiedStep


class EagleSpeculator(Speculator):
    style = SpeculatorStyle.EAGLE
    facts = (
        DraftFacts.EAGLE_INPUTS
        | DraftFacts.ACCEPTED_LAST_TOKEN
        | DraftFacts.DECODES
        | DraftFacts.REFERENCE_KV
        | DraftFacts.DECODE_SLOTS_BY_QUERY
    )

    def __init__(self, parts: StepParts, pair: Pair) -> None:
        super().__init__(parts, pair)
        opts = parts.config.options
        # K-1 draft decodes in one graph where the plan fuses them and the metadata style lets
        # the step update it in place (flash-attn style: views of the step buffers)
        self._fused = (
            parts.plan.phase("draft_decode").fused_steps > 1
            and opts.framework == "vllm"
            and opts.metadata_style == "flash_attn"
        )
        parts.routines.draft_slots = self._draft_slots

    @property
    def fused_draft_decode(self) -> bool:
        return self._fused

    def prefill_routine(self) -> Routine:
        return self.parts.routines.prefill

    def decode_routine(self) -> Routine:
        r = self.parts.routines
        return r.decode_fused if self._fused else r.decode

    # ------------------------------------------------------------------ capture

    def capture_metadata(
        self, desc: BatchDescriptor, num_reqs: int, num_tokens: int, dummy: DummyBatch
    ) -> Metadata:
        p = self.parts
        if desc.mode is not Mode.FULL or p.behavior.fresh_prefill_capture_metadata:
            # fresh dummy metadata through the target's builders, for every warmup and capture
            md = dummy.target(desc, num_reqs, num_tokens)
            dummy.inputs("eagle", num_reqs, num_tokens)
            return md
        if p.behavior.reuse_target_attn_state:
            state = p.captured_states.get(desc)
            if state is not None:
                dummy.inputs("eagle", num_reqs, num_tokens)
                return state
        lens = dummy.inputs("eagle", num_reqs, num_tokens)
        max_q = graph_max_query_len(desc, max(lens))
        return p.metadata.draft(lens, num_reqs, num_tokens, max_q)

    def capture_findings(self, runner: PhaseRunner) -> list[Finding]:
        """`reuse_target_attn_state` hands the target's captured attention state to the draft
        prefill by descriptor key: both managers must have identical FULL descriptor sets."""
        beh = self.parts.behavior
        if not beh.reuse_target_attn_state or beh.fresh_prefill_capture_metadata:
            return []  # no hand-off by key: the draft prefill builds its own capture metadata
        want = {d for d in runner.dispatcher.descriptors if d.mode is Mode.FULL}
        missing = sorted(want - set(self.parts.captured_states), key=lambda d: d.num_tokens)
        if not missing:
            return []
        return [
            Finding(
                id="attn-state-handoff-mismatch",
                severity=Severity.ERROR,
                phase="draft_prefill",
                message=f"{len(missing)} FULL draft-prefill descriptor(s) have no target-captured "
                f"attention state, e.g. {missing[0].label()}; they are captured with freshly built "
                "metadata instead",
                ref=FLAGS["reuse_target_attn_state"].ref,
            )
        ]

    # ------------------------------------------------------------------ the step

    def draft(self, step: VerifiedStep, descriptors: dict[str, str]) -> None:
        p = self.parts
        bufs, models, hooks = p.bufs, p.models, p.hooks
        rb, tok_pad = step.num_reqs, step.target.num_tokens
        hooks.mark("draft_prefill", 0, "prepare")
        aux = bufs.target_aux[:tok_pad] if bufs.target_aux is not None else None
        feature = models.draft.prefill_feature(bufs.target_hidden[:tok_pad], aux)
        bufs.eagle_hidden[:tok_pad].copy_(feature)
        prepare_eagle_inputs(
            bufs.query_start_loc, bufs.seq_lens, bufs.input_ids, bufs.positions, bufs.num_rejected,
            bufs.next_tokens, bufs.eagle_input_ids, bufs.eagle_positions, bufs.eagle_qsl,
            bufs.eagle_seq_lens, bufs.last_token_indices, bufs.current_draft_step, rb,
            p.config.max_num_seqs, pad_last_token_indices=p.behavior.pad_last_token_indices,
            guard=p.guard(
                target_query_start_loc="target.query_start_loc", num_rejected="verify.num_rejected"
            ),
        )  # fmt: skip
        runner = p.runners["draft_prefill"]
        uniform = uniform_token_count(rb, step.num_tokens, step.max_query_len)
        batch = runner.pad(rb, tok_pad, uniform)
        md = self._prefill_metadata(batch, step)
        hooks.mark("draft_prefill", 0, "launch")
        runner.run(batch, md)
        descriptors["draft_prefill"] = batch.desc.label()
        hooks.phase_done("draft_prefill")
        if p.config.num_speculative_tokens > 1:
            self._draft_decodes(step, descriptors)

    def _prefill_metadata(self, batch: PaddedBatch, step: VerifiedStep) -> Metadata:
        """With `reuse_target_attn_state` the draft prefill reads the target's metadata;
        without it, FULL replays are preceded by a rebuild on the speculator's own builders."""
        p = self.parts
        if p.behavior.reuse_target_attn_state or not batch.full:
            return step.target_metadata
        max_q = graph_max_query_len(batch.desc, p.config.num_speculative_tokens + 1)
        lens = step.seq_lens + [0] * (batch.num_reqs - step.num_reqs)
        return p.metadata.draft(lens, batch.num_reqs, batch.num_tokens, max_q)

    def _draft_slots(self, num_reqs: int, num_tokens: int) -> None:
        """One draft-decode step's slot mapping (also inside the fused graph)."""
        p = self.parts
        bufs = p.bufs
        compute_slot_mappings(
            bufs.block_table, bufs.eagle_qsl, bufs.decode_positions, bufs.slot_mapping, num_reqs,
            num_tokens, p.config.block_size, p.allocator.num_blocks,
            p.guard(query_start_loc="eagle.query_start_loc", positions="eagle.positions", block_table="block_table"),
        )  # fmt: skip

    def _rejected(self, step: VerifiedStep) -> tuple[torch.Tensor, list[int]]:
        """The rejected drafts the draft decodes drop from each request's seq_lens (device
        buffer for `prepare_eagle_decode`, host list for the metadata): every request's."""
        rejected = [b.num_drafts - a for b, a in zip(step.batch, step.accepted, strict=True)]
        return self.parts.bufs.num_rejected, rejected

    def _decode_metadata_tokens(self, batch: PaddedBatch) -> int:
        """The token count a draft decode's metadata is built for: the padded one (MRV2
        builds for the dispatched shape)."""
        return batch.num_tokens

    def _pad_decode_rows(self, batch: PaddedBatch) -> int:
        """Fill the padded rows of a draft-decode replay before its steps; the KV length each
        padded row is given (vLLM: 0, so they attend to nothing)."""
        return 0

    def _decode_slots(self, batch: PaddedBatch) -> None:
        """One draft-decode step's slot mapping: the real rows' (padded ones stay PAD)."""
        self._draft_slots(batch.real_reqs, batch.num_tokens)

    def _draft_decodes(self, step: VerifiedStep, descriptors: dict[str, str]) -> None:
        p = self.parts
        bufs, hooks, mml = p.bufs, p.hooks, p.config.max_model_len
        rb, k = step.num_reqs, p.config.num_speculative_tokens
        hooks.mark("draft_decode", 1, "prepare")
        rejected_dev, rejected = self._rejected(step)
        prepare_eagle_decode(
            bufs.draft_tokens, bufs.seq_lens, rejected_dev, bufs.eagle_input_ids,
            bufs.eagle_positions, bufs.eagle_qsl, bufs.eagle_seq_lens, rb, p.config.max_num_seqs, mml,
        )  # fmt: skip
        runner = p.runners["draft_decode"]
        batch = runner.pad(rb, rb, 1)
        r_pad = batch.num_reqs
        if bufs.decode_positions is not bufs.eagle_positions:
            bufs.decode_positions[:rb].copy_(bufs.eagle_positions[:rb])
        pad_len = self._pad_decode_rows(batch)
        base = [min(s - rej, mml) for s, rej in zip(step.seq_lens, rejected, strict=True)]
        md_tokens = self._decode_metadata_tokens(batch)

        def metadata(draft_step: int) -> Metadata:
            lens = [min(b + draft_step, mml) for b in base] + [pad_len] * (r_pad - rb)
            return p.metadata.draft(lens, r_pad, md_tokens, 1)

        if self._fused:
            md = metadata(1)
            hooks.mark("draft_decode", 1, "launch")  # slots are computed inside the graph
            runner.run(batch, md)  # all K-1 steps, one replay
            descriptors["draft_decode"] = f"{batch.desc.label()} ×{k - 1} steps fused"
            hooks.phase_done("draft_decode")
            return
        for draft_step in range(1, k):
            hooks.mark("draft_decode", draft_step, "prepare")
            self._decode_slots(batch)
            md = metadata(draft_step)
            bufs.current_draft_step.fill_(draft_step)
            hooks.mark("draft_decode", draft_step, "launch")
            runner.run(batch, md)
        descriptors["draft_decode"] = batch.desc.label()
        hooks.phase_done("draft_decode")


SPECULATOR = EagleSpeculator
