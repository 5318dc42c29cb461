"""The DFlash speculator: context step, parallel query forward and sampling in one graph.

Per step (vLLM's DFlash speculator): eagerly, the query blocks (next token + K mask tokens
per request), their slot mapping and metadata, and a copy of the target's slot mapping for
the context rows; in the graph, the context step (tapped target states → fc → each draft
layer's K/V written at the context slots), the non-causal block forward and the sampling of
rows 1..K of every block.

The query buffers cover the largest batch a graph can pad to, and each step pads the rows of
the padded requests. Before vLLM's fix they were sized and written for the unpadded batch
(`unpadded_query_buffers`), so a FULL replay padded past the real requests reads rows no
step wrote.
"""

from __future__ import annotations

from typing import Any

import torch

from eaglegraph.kernels.dflash import prepare_dflash_block
from eaglegraph.kernels.gather import gather_rows
from eaglegraph.kernels.kv_cache import write_kv
from eaglegraph.kernels.sampling import argmax_map_draft
from eaglegraph.models.dflash import DFlashDraft
from eaglegraph.rig.parts import StepParts


class DFlashWindow:
    """Buffers and routine of a DFlash draft; `capacity_reqs` is the largest padded batch."""

    def __init__(self, parts: StepParts, capacity_reqs: int, unpadded_query_buffers: bool) -> None:
        self.parts = parts
        draft: object = parts.models.draft  # the kind's module, behind the generic Draft
        assert isinstance(draft, DFlashDraft)
        self.bufs, self.draft, self.kv_caches = parts.bufs, draft, parts.kv_caches
        self.guard = parts.guard
        self.k = k = parts.config.num_speculative_tokens
        self.capacity = cap = max(capacity_reqs, parts.config.max_num_seqs)
        self.unpadded_query_buffers = unpadded_query_buffers
        device, max_tokens = parts.config.device, parts.max_tokens

        def buf(name: str, shape: tuple[int, ...], dtype: torch.dtype, extent: str) -> Any:
            tensor = torch.zeros(shape, dtype=dtype, device=device)
            return parts.registry.register(name, "draft_prefill", tensor, extent)

        self.input_ids = buf("dflash.input_ids", (cap * (k + 1),), torch.int32, "num_tokens")
        self.positions = buf("dflash.positions", (cap * (k + 1),), torch.int64, "num_tokens")
        self.qsl = buf("dflash.query_start_loc", (cap + 1,), torch.int32, "num_reqs+1")
        self.seq_lens = buf("dflash.seq_lens", (cap,), torch.int32, "num_reqs")
        self.sample_indices = buf("dflash.sample_indices", (cap, k), torch.int64, "num_reqs")
        self.context_slots = buf("dflash.context_slots", (max_tokens,), torch.int64, "num_tokens")

    def prepare(self, num_reqs: int, pad_reqs: int, num_tokens: int, context_rows: int) -> None:
        """Eager: query blocks (padded up to `pad_reqs`; before the fix only the real
        requests) and the context rows' slots (the target's; padded rows write nothing)."""
        b = self.bufs
        written = num_reqs if self.unpadded_query_buffers else pad_reqs
        prepare_dflash_block(
            b.query_start_loc, b.positions, b.num_rejected, b.next_tokens, self.input_ids,
            self.positions, self.qsl, self.seq_lens, self.sample_indices.view(-1), num_reqs,
            written, self.k, self.draft.arch.mask_token_id, self.parts.config.max_model_len,
        )  # fmt: skip
        self.context_slots[:num_tokens].copy_(b.slot_mapping[:num_tokens])
        self.context_slots[num_tokens:context_rows].fill_(-1)

    def routine(self, num_reqs: int, num_tokens: int) -> None:
        """What the DFlash graph records: `num_tokens` context rows, `num_reqs` blocks."""
        b, k, r = self.bufs, self.k, num_reqs
        q_rows = r * (k + 1)
        slot_guard = self.guard(slot_mapping="dflash.context_slots")

        def write(layer: int, kk: torch.Tensor, vv: torch.Tensor) -> None:
            k_cache, v_cache = self.kv_caches[layer]
            write_kv(kk, vv, k_cache, v_cache, self.context_slots, num_tokens, slot_guard)

        assert b.target_aux is not None  # DFlash taps the target's aux layers
        context = self.draft.combine(b.target_aux[:num_tokens])
        self.draft.context_kv(context, b.positions[:num_tokens], write)
        hidden = self.parts.routines.model_call(
            "draft", self.draft, q_rows, self.input_ids[:q_rows], self.positions[:q_rows],
            self.parts.attention,
        )  # fmt: skip
        rows = torch.empty((r * k, hidden.shape[1]), dtype=hidden.dtype, device=hidden.device)
        guard = self.guard(sample_indices="dflash.sample_indices")
        gather_rows(hidden, self.sample_indices.view(-1), rows, r * k, q_rows, guard,
                    role="sample_indices")  # fmt: skip
        sampled = torch.empty(r * k, dtype=torch.int64, device=hidden.device)
        argmax_map_draft(self.draft.compute_logits(rows), None, sampled, r * k)
        b.draft_tokens[:r, :k].copy_(sampled.view(r, k))
