"""Dense reference of DFlash block drafting, plain torch (no paging, no kernels for attention).

Each step recomputes the request from scratch: the target verifies, the accepted sequence's
tapped target states become context features at positions 0..valid-1, and the query block
(the next token then K mask tokens at positions valid..valid+K) attends non-causally to the
context K/V and its own K/V in every draft layer; rows 1..K of the block are the drafts.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from eaglegraph.rig.driver import StepOutput
from eaglegraph.rig.reference import ReferenceEngine, _attn
from eaglegraph.rig.workload import ScheduledRequest


def full_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Every query row attends to every key (GQA expanded), fp32."""
    groups = q.shape[1] // k.shape[1]
    kk = k.float().repeat_interleave(groups, dim=1).transpose(0, 1)
    vv = v.float().repeat_interleave(groups, dim=1).transpose(0, 1)
    out = F.scaled_dot_product_attention(q.float().transpose(0, 1), kk, vv)
    return out.transpose(0, 1)


class DFlashReference(ReferenceEngine):
    """The reference step engine for a DFlash draft."""

    @torch.inference_mode()
    def step(self, batch: list[ScheduledRequest]) -> StepOutput:
        nexts, accepted, drafts = [], [], []
        for req in batch:
            s, n, d = self._one_block(req)
            nexts.append(s)
            accepted.append(n)
            drafts.append(d)
        return StepOutput(nexts, accepted, drafts, {"reference": "dense dflash"})

    def _one_block(self, req: ScheduledRequest) -> tuple[int, int, list[int]]:
        m, k = self.models, self.num_speculative_tokens
        draft = m.draft
        context = self.history.get(req.rid, [])[: req.start_pos] + req.query
        ids, pos = self._tensor(context)
        hidden, aux = m.target(ids, pos, _attn, m.aux_layer_ids)
        verdict = m.target.compute_logits(hidden)[req.start_pos :].argmax(-1).tolist()
        n = 0
        while n < req.num_drafts and req.query[n + 1] == verdict[n]:
            n += 1
        next_token = verdict[n] if req.num_drafts else verdict[len(req.query) - 1]
        valid = req.start_pos + len(req.query) - (req.num_drafts - n)
        self.history[req.rid] = context[:valid]
        assert aux is not None

        ctx_kv: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

        def store(layer: int, kk: torch.Tensor, vv: torch.Tensor) -> None:
            ctx_kv[layer] = (kk, vv)

        draft.context_kv(draft.combine(aux[:valid]), pos[:valid], store)  # type: ignore[union-attr]

        def attend(
            layer: int, q: torch.Tensor, kk: torch.Tensor, vv: torch.Tensor, out: torch.Tensor
        ) -> None:
            ck, cv = ctx_kv[layer]
            out.copy_(full_attention(q, torch.cat([ck, kk]), torch.cat([cv, vv])))

        block = [next_token] + [draft.arch.mask_token_id] * k  # type: ignore[union-attr]
        b_ids = torch.tensor(block, dtype=torch.int64, device=m.device)
        b_pos = torch.arange(valid, valid + k + 1, dtype=torch.int64, device=m.device)
        h = draft(b_ids, b_pos, attend)
        out = draft.compute_logits(h[1:]).argmax(-1)
        return next_token, n, [int(t) for t in draft.draft_to_target(out).tolist()]
