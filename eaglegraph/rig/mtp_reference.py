"""Dense reference of multi-module MTP (several `num_nextn_predict_layers`), plain torch.

Module s predicts the token s+2 ahead of a position: at position i it reads the token at
i+s+1 and module s-1's recycled hidden at i (the target's final hidden for s = 0). Every
module runs over the whole accepted sequence each step, so nothing is cached: the draft for
depth s+1 is module s's argmax at the last position, and that token is the input the deeper
modules see past the known sequence. A rig that keeps module KV across steps (vLLM's
multi-module speculator re-prefills the slots rejected drafts left stale) must match it.
"""

from __future__ import annotations

import torch

from eaglegraph.rig.driver import StepOutput
from eaglegraph.rig.reference import ReferenceEngine, _attn
from eaglegraph.rig.workload import ScheduledRequest


class MultiModuleMTPReference(ReferenceEngine):
    """The reference step engine for an MTP draft run module by module over the sequence."""

    @torch.inference_mode()
    def step(self, batch: list[ScheduledRequest]) -> StepOutput:
        nexts, accepted, drafts = [], [], []
        for req in batch:
            s, n, d = self._one_window(req)
            nexts.append(s)
            accepted.append(n)
            drafts.append(d)
        return StepOutput(nexts, accepted, drafts, {"reference": "dense multi-module"})

    def _one_window(self, req: ScheduledRequest) -> tuple[int, int, list[int]]:
        m, k = self.models, self.num_speculative_tokens
        context = self.history.get(req.rid, [])[: req.start_pos] + req.query
        ids, pos = self._tensor(context)
        hidden, _ = m.target(ids, pos, _attn, ())
        verdict = m.target.compute_logits(hidden)[req.start_pos :].argmax(-1).tolist()
        n = 0
        while n < req.num_drafts and req.query[n + 1] == verdict[n]:
            n += 1
        next_token = verdict[n] if req.num_drafts else verdict[len(req.query) - 1]
        valid = req.start_pos + len(req.query) - (req.num_drafts - n)
        known = [*context[:valid], next_token]
        self.history[req.rid] = known[:valid]

        draft = m.draft
        feature = hidden[:valid]
        out: list[int] = []
        for s in range(k):
            tokens = (known + out)[s + 1 : s + 1 + valid]
            d_ids, d_pos = self._tensor(tokens)
            draft.step = s  # type: ignore[union-attr]
            logit_h, feature = draft(d_ids, d_pos, feature, _attn)
            logits = draft.compute_logits(logit_h[-1:])
            out.append(int(draft.draft_to_target(logits.argmax(-1))[0]))
        draft.step = 0  # type: ignore[union-attr]
        return next_token, n, out
