"""vLLM's V1 GPU model runner ("MRV1") drafting EAGLE, EAGLE-3 and one-module MTP.

MRV1's `EagleProposer` (`vllm/v1/spec_decode/eagle.py`, 0.11-0.15; `llm_base_proposer.py`
`SpecDecodeBaseProposer` from 0.2x, read in 0.22.0) keeps its own persistent `input_ids`,
`positions` and `hidden_states` buffers (here the `eagle.*` buffers), and drafts by other rules
than Model Runner V2:

- one `CudagraphDispatcher` for every draft pass (`initialize_cudagraph_keys`): PIECEWISE keys
  at every global capture size when the target's `mixed_mode()` is PIECEWISE or FULL, else
  none (eager). No FULL draft graph: num_tokens is padded up to the next capture size, num_reqs
  never is (`_determine_batch_execution_and_padding`);
- those graphs are captured once, during the target's PIECEWISE capture pass
  (`GPUModelRunner._dummy_run` calls `drafter.dummy_run(is_graph_capturing=True)`, one
  forward), into the global graph pool; the draft prefill and each draft decode dispatch into
  them by token count;
- every pass builds its attention metadata for the real batch through the drafter's own
  builders (`build_per_group_and_layer_attn_metadata`): attention runs eagerly between the
  pieces, so padded rows never reach it; padded decode rows get the pad slot
  (`eagle_step_update_slot_mapping_and_metadata`);
- with the padded drafter batch (the default since 0.11) the draft decodes drop each request's
  rejected drafts from seq_lens (`propose`: `seq_lens -= num_rejected_tokens_gpu`, in 0.14);
  0.11-0.13 did not (flag `draft_decode_excludes_rejected`, hazard `draft-decode-rejected-kv`,
  predicted by the plan: `rig.style_plans.mrv1_eagle_plan`).

DeepSeek-style MTP (`deepseek_mtp`) drafts through the same proposer, its first module reused
for every step (the model is called without `spec_step_idx`), which is EAGLE-style drafting.
"""

from __future__ import annotations

import torch

from eaglegraph.pair.model import Pair
from eaglegraph.rig.attention import Metadata
from eaglegraph.rig.descriptors import BatchDescriptor, PaddedBatch
from eaglegraph.rig.parts import StepParts
from eaglegraph.rig.speculators.base import VerifiedStep
from eaglegraph.rig.speculators.eagle import EagleSpeculator


class Mrv1EagleSpeculator(EagleSpeculator):
    def __init__(self, parts: StepParts, pair: Pair) -> None:
        super().__init__(parts, pair)
        self._fused = False  # MRV1 runs every draft decode as its own pass
        # what the decodes subtract before 0.14: nothing (a constant, not a registered buffer)
        self._no_rejections = torch.zeros_like(parts.bufs.num_rejected)

    # ------------------------------------------------------------------ graphs

    def graph_source(self, phase: str) -> str | None:
        return "draft_prefill" if phase == "draft_decode" else None

    def capture_sequence(self) -> list[tuple[str, BatchDescriptor]]:
        """`capture_model`: the target's PIECEWISE pass captures the drafter's graph of each
        size right after its own (`_dummy_run` → `drafter.dummy_run`), then its FULL pass;
        without a PIECEWISE target pass the drafter's graphs are never captured."""
        runners = self.parts.runners
        drafts = {d.num_tokens: d for d in runners["draft_prefill"].dispatcher.capture_order()}
        out: list[tuple[str, BatchDescriptor]] = []
        for desc in runners["target"].dispatcher.capture_order():
            out.append(("target", desc))
            if desc.mode.is_segmented() and desc.num_tokens in drafts:
                out.append(("draft_prefill", drafts[desc.num_tokens]))
        return out

    # ------------------------------------------------------------------ the step

    def _prefill_metadata(self, batch: PaddedBatch, step: VerifiedStep) -> Metadata:
        """The drafter's own builders over the real batch (the target's query layout)."""
        return self.parts.metadata.draft(
            step.seq_lens, step.num_reqs, step.num_tokens, step.max_query_len
        )

    def _rejected(self, step: VerifiedStep) -> tuple[torch.Tensor, list[int]]:
        if self.parts.behavior.draft_decode_excludes_rejected:
            return super()._rejected(step)
        return self._no_rejections, [0] * step.num_reqs

    def _decode_metadata_tokens(self, batch: PaddedBatch) -> int:
        return batch.real_tokens


SPECULATOR = Mrv1EagleSpeculator
