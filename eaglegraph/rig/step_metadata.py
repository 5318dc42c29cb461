"""The step's attention-metadata builders: the target's, and the one the speculator's phases
share (vLLM keeps one builder per KV-cache group; the EAGLE draft's is separate from the
target's, so their persistent CSR buffers are two registered buffers).

Which builders exist follows the metadata style: flash-attn style reads the step's own
query_start_loc / seq_lens / block table views; FlashInfer style owns CSR buffers
(`target.kv_indptr`, `draft.kv_indptr`, …) rebuilt per step. Everything that builds metadata —
the step, the speculators, the capture's dummy batches — goes through `StepMetadata`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from eaglegraph.kernels.guard import Guard
from eaglegraph.known.attention_workspace import SplitKvScratch
from eaglegraph.rig.attention import CommonMetadata, FlashAttnBuilder, FlashInferBuilder, Metadata
from eaglegraph.rig.buffers import BufferRegistry
from eaglegraph.rig.step_buffers import StepBuffers

Builder = FlashAttnBuilder | FlashInferBuilder


class StepMetadata:
    """Builds the metadata of one phase from the host's view of its batch."""

    def __init__(
        self,
        style: str,
        registry: BufferRegistry,
        bufs: StepBuffers,
        guard: Callable[..., Guard | None],
        *,
        max_num_seqs: int,
        max_blocks: int,
        block_size: int,
        max_tokens: int,
        device: torch.device,
        split_kv_scratch: Callable[[], SplitKvScratch | None],
    ) -> None:
        self.bufs = bufs
        self.guard = guard
        self.scratch: SplitKvScratch | None = None
        if style == "flashinfer":
            pages = max_num_seqs * max_blocks
            self.target_builder: Builder = FlashInferBuilder(
                registry, "target", max_num_seqs, pages, block_size, device, max_tokens
            )
            self.draft_builder: Builder = FlashInferBuilder(
                registry, "draft", max_num_seqs, pages, block_size, device, max_tokens
            )
        else:
            # FA3's split-KV scratch, as the engine's builder caps it for this plan's GPU
            self.scratch = split_kv_scratch()
            self.target_builder = FlashAttnBuilder(registry, "target", self.scratch)
            self.draft_builder = FlashAttnBuilder(registry, "eagle", self.scratch)

    def common(
        self, owner: str, seq_lens_cpu: list[int], num_reqs: int, num_tokens: int, max_q: int
    ) -> CommonMetadata:
        """The common metadata over the target's query buffers or the EAGLE draft's."""
        b = self.bufs
        qsl, sl = (
            (b.query_start_loc, b.seq_lens)
            if owner == "target"
            else (b.eagle_qsl, b.eagle_seq_lens)
        )
        return CommonMetadata(
            qsl, sl, b.block_table, num_reqs, num_tokens, max_q, seq_lens_cpu, owner
        )

    def build(self, builder: Builder, common: CommonMetadata) -> Metadata:
        if isinstance(builder, FlashInferBuilder):
            return builder.build(
                common,
                self.guard(block_table="block_table", kv_indptr=f"{builder.owner}.kv_indptr"),
            )
        return builder.build(common)

    def target(self, lens: list[int], num_reqs: int, num_tokens: int, max_q: int) -> Metadata:
        """The target's metadata; `lens` lists each (padded) request's KV length."""
        return self.build(
            self.target_builder, self.common("target", lens, num_reqs, num_tokens, max_q)
        )

    def draft(self, lens: list[int], num_reqs: int, num_tokens: int, max_q: int) -> Metadata:
        """The EAGLE draft's metadata, over its own query buffers and builder."""
        return self.build(
            self.draft_builder, self.common("eagle", lens, num_reqs, num_tokens, max_q)
        )
