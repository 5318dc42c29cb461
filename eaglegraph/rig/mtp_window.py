"""The multi-module MTP speculator: every module runs over each request's window.

Per step (vLLM's multi-module MTP speculator): the eager part builds the draft window (the
target's query window shifted left, re-prefilled rows first), its slot mapping (rows past
the last token write no KV) and one attention metadata; the graph part caches the window's
tail for the next step's re-prefill, then for each module s samples at the last token,
recycles the hidden states and shifts the ids left with the sampled token appended.

It works over the step's parts (the persistent buffers every phase shares, the draft model,
attention and guards); this module registers the two caches it adds, `mtp.cached_ids` and `mtp.cached_hidden`, kept per request
slot across steps (extent "all": they are never padding).
"""

from __future__ import annotations

import torch

from eaglegraph.kernels.gather import gather_rows
from eaglegraph.kernels.mtp import (
    cache_mtp_window,
    pad_trailing_slots,
    prepare_mtp_window,
    shift_mtp_window,
)
from eaglegraph.kernels.sampling import argmax_map_draft
from eaglegraph.models.mtp import MTPDraft
from eaglegraph.rig.parts import StepParts


class MTPWindow:
    """Buffers and routines of a multi-module MTP draft (K module steps in one graph)."""

    def __init__(self, parts: StepParts) -> None:
        self.parts = parts
        self.bufs = b = parts.bufs
        draft: object = parts.models.draft  # the kind's module, behind the generic Draft
        assert isinstance(draft, MTPDraft)
        self.draft = draft
        self.guard = parts.guard
        self.k = parts.config.num_speculative_tokens
        r, cache, hidden = parts.config.max_num_seqs, max(self.k - 1, 0), b.eagle_hidden
        self.cached_ids = parts.registry.register(
            "mtp.cached_ids",
            "draft_prefill",
            torch.zeros((r, cache), dtype=torch.int64, device=hidden.device),
            "all",
        )
        self.cached_hidden = parts.registry.register(
            "mtp.cached_hidden",
            "draft_prefill",
            hidden.new_zeros((r, cache, hidden.shape[1])),
            "all",
        )

    def prepare(self, num_reqs: int, max_query_len: int) -> None:
        """Eager: module-0 window, padded per-request buffers (before slot mappings)."""
        b = self.bufs
        prepare_mtp_window(
            b.query_start_loc, b.input_ids, b.positions, b.seq_lens, b.target_hidden,
            b.num_rejected, b.next_tokens, b.idx_mapping, self.cached_ids, self.cached_hidden,
            b.eagle_qsl, b.eagle_input_ids, b.eagle_positions, b.eagle_seq_lens, b.eagle_hidden,
            b.last_token_indices, num_reqs, max_query_len,
        )  # fmt: skip

    def pad_slots(self, num_reqs: int) -> None:
        """Rows past each request's last token (rejected slots) write no KV."""
        b = self.bufs
        pad_trailing_slots(b.slot_mapping, b.eagle_qsl, b.last_token_indices, num_reqs)

    def routine(self, num_reqs: int, num_tokens: int) -> None:
        """What the speculator graph records: K module steps over the padded window."""
        b, n, r = self.bufs, num_tokens, num_reqs
        dev = b.eagle_hidden.device
        guard = self.guard(last_token_indices="eagle.last_token_indices")
        cache_mtp_window(
            b.eagle_qsl, b.eagle_input_ids, b.eagle_hidden, b.last_token_indices, b.idx_mapping,
            self.cached_ids, self.cached_hidden, r,
        )  # fmt: skip
        for step in range(self.k):
            self.draft.step = step
            name = f"draft.module{step % self.draft.num_modules}"
            logit_h, hidden = self.parts.routines.draft_forward(n, b.eagle_positions, name)
            last = torch.empty((r, logit_h.shape[1]), dtype=logit_h.dtype, device=dev)
            gather_rows(logit_h, b.last_token_indices, last, r, n, guard)
            sampled = torch.empty(r, dtype=torch.int64, device=dev)
            argmax_map_draft(self.draft.compute_logits(last), None, sampled, r)
            b.draft_tokens[:r, step].copy_(sampled)
            if step < self.k - 1:
                b.eagle_hidden[:n].copy_(hidden)
                shift_mtp_window(b.eagle_qsl, b.eagle_input_ids, b.last_token_indices, sampled,
                                 r, n)  # fmt: skip
        self.draft.step = 0
