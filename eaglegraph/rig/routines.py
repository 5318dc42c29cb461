"""The phase bodies graphs record: routines of (num_reqs, num_tokens) over persistent buffers.

Every tensor a routine reads or writes outside its own scratch is a registered buffer, so the
same routine runs eagerly, under CUDA graphs, or under the emulated backend; the model call
goes through the graph context when one is capturing (PIECEWISE / BREAKABLE pieces).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from eaglegraph.kernels.eagle import update_eagle_draft_inputs
from eaglegraph.kernels.gather import gather_rows
from eaglegraph.kernels.guard import Guard
from eaglegraph.kernels.sampling import argmax_map_draft
from eaglegraph.models.drafts import DraftStep
from eaglegraph.rig.attention import AttentionRuntime
from eaglegraph.rig.graphs import GraphContext
from eaglegraph.rig.model_setup import LoadedPair
from eaglegraph.rig.step_buffers import StepBuffers


class PhaseRoutines:
    """vLLM's target forward, `EagleSpeculator.prefill` and `generate_draft`."""

    def __init__(
        self,
        models: LoadedPair,
        bufs: StepBuffers,
        attention: AttentionRuntime,
        guard: Callable[..., Guard | None],
        num_speculative_tokens: int,
        max_model_len: int,
    ) -> None:
        self.models = models
        self.bufs = bufs
        self.attention = attention
        self.guard = guard
        self.num_speculative_tokens = num_speculative_tokens
        self.max_model_len = max_model_len
        self.graph_context: GraphContext | None = None
        # the target forward as the engine runs it: compiled (vLLM, on CUDA) or eager
        self.target_forward: Any = models.target
        # the draft's logits stay in the head dtype unless the engine widens them (known.heads)
        self.widen_draft_logits = False
        # slot mapping of one draft-decode step for (num_reqs, num_tokens); set by the rig
        self.draft_slots: Callable[[int, int], None] | None = None

    def model_call(self, name: str, fn: Any, num_tokens: int, *args: Any) -> Any:
        """Run a model forward, through the capturing graph context's pieces when one is
        capturing or replaying (PIECEWISE / BREAKABLE)."""
        ctx = self.graph_context
        return fn(*args) if ctx is None else ctx.call_model(name, fn, num_tokens, *args)

    def draft_forward(
        self, num_tokens: int, positions: torch.Tensor, name: str = "draft"
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The draft over its first `num_tokens` input rows (the EAGLE inputs: ids and hidden
        states) at `positions`: (rows its logits come from, hidden states it hands on)."""
        n, b = num_tokens, self.bufs
        draft = self.models.draft
        step = DraftStep(b.eagle_input_ids[:n], positions[:n], b.eagle_hidden[:n], self.attention)
        out = self.model_call(name, draft, n, step)
        return out[0], out[1]

    def target(self, num_reqs: int, num_tokens: int) -> None:
        n, m = num_tokens, self.models
        hidden, aux = self.model_call(
            "target",
            self.target_forward,
            n,
            self.bufs.input_ids[:n],
            self.bufs.positions[:n],
            self.attention,
            m.aux_layer_ids,
        )
        self.bufs.target_hidden[:n].copy_(hidden)
        if self.bufs.target_aux is not None and aux is not None:
            self.bufs.target_aux[:n].copy_(aux)

    def prefill(self, num_reqs: int, num_tokens: int) -> None:
        """vLLM `EagleSpeculator.prefill`: what a FULL draft-prefill graph records."""
        n, r, m = num_tokens, num_reqs, self.models
        dev, width = self.bufs.eagle_hidden.device, self.bufs.eagle_hidden.shape[1]
        guard = self.guard(last_token_indices="eagle.last_token_indices")
        pos = torch.empty(r, dtype=torch.int64, device=dev)
        gather_rows(self.bufs.eagle_positions, self.bufs.last_token_indices, pos, r, n, guard)
        logit_h, hidden = self.draft_forward(n, self.bufs.eagle_positions)
        last = torch.empty((r, logit_h.shape[1]), dtype=logit_h.dtype, device=dev)
        gather_rows(logit_h, self.bufs.last_token_indices, last, r, n, guard)
        logits = m.draft.compute_logits(last)
        if self.widen_draft_logits:
            logits = logits.float()
        sampled = torch.empty(r, dtype=torch.int64, device=dev)
        argmax_map_draft(logits, getattr(m.draft, "d2t", None), sampled, r)
        self.bufs.draft_tokens[:r, 0].copy_(sampled)
        nxt = torch.empty((r, width), dtype=hidden.dtype, device=dev)
        gather_rows(hidden, self.bufs.last_token_indices, nxt, r, n, guard)
        self.bufs.eagle_hidden[:r].copy_(nxt)
        self.bufs.eagle_positions[:r].copy_(pos)

    def decode(self, num_reqs: int, num_tokens: int) -> None:
        """vLLM `generate_draft`: one draft step; a FULL decode graph serves every step."""
        n, r, m = num_tokens, num_reqs, self.models
        logit_h, hidden = self.draft_forward(n, self.bufs.decode_positions)
        logits = m.draft.compute_logits(logit_h[:r])
        if self.widen_draft_logits:
            logits = logits.float()
        sampled = torch.empty(r, dtype=torch.int64, device=logit_h.device)
        argmax_map_draft(logits, getattr(m.draft, "d2t", None), sampled, r)
        b = self.bufs
        update_eagle_draft_inputs(
            sampled, hidden, b.draft_tokens, b.eagle_input_ids, b.eagle_hidden,
            b.decode_positions, b.eagle_seq_lens, b.current_draft_step, r,
            self.num_speculative_tokens, self.max_model_len,
        )  # fmt: skip

    def decode_fused(self, num_reqs: int, num_tokens: int) -> None:
        """vLLM `_generate_fused_drafts`: the K-1 draft decodes in one routine, so one FULL
        graph records them all. The step counter and slot mapping are updated inside; the
        metadata is built once (its views of seq_lens, query_start_loc and the block table are
        advanced in place by `update_eagle_draft_inputs`). Padded requests have empty queries
        (query_start_loc clamped at num_reqs), so their slots stay PAD."""
        assert self.draft_slots is not None, "the rig sets draft_slots before capture"
        for step in range(1, self.num_speculative_tokens):
            self.bufs.current_draft_step.fill_(step)
            self.draft_slots(num_reqs, num_tokens)
            self.decode(num_reqs, num_tokens)
