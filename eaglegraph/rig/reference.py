"""A straightforward EAGLE reference: no paging, no buffers, no graphs, no kernels.

Each request is recomputed from scratch every step with dense causal attention over its whole
sequence: the target verifies, greedy rejection keeps the longest agreeing prefix, the draft
drafts as its kind's `dense_drafts` says (EAGLE and one-module MTP: rerun over the accepted
sequence, then extend itself K-1 times; multi-module MTP: module by module over the sequence;
DFlash: one non-causal block over the context). The rig's paged, padded, buffer-reusing step
must produce exactly the same draft and accepted tokens.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from unittest import mock

import torch
import torch.nn.functional as F

from eaglegraph.models import ops
from eaglegraph.models.drafts import Verified, draft_build
from eaglegraph.models.mla import is_latent_call, with_up_projections
from eaglegraph.rig.driver import StepOutput
from eaglegraph.rig.model_setup import LoadedPair
from eaglegraph.rig.workload import Request, ScheduledRequest


@dataclass
class Trace:
    """One request's pass in the reference: the target's hidden rows and K/V per layer, by
    position, and the draft layers' K/V of its last (longest) drafting pass, keyed by the
    global KV layer (target layers first); `valid` is how many positions were accepted."""

    hidden: torch.Tensor
    kv: dict[int, tuple[torch.Tensor, torch.Tensor]]
    draft_kv: dict[int, tuple[torch.Tensor, torch.Tensor]] = field(default_factory=dict)
    valid: int = 0


def _torch_rotary(
    q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor, cache: torch.Tensor, n: int
) -> None:
    """Neox-style rotary embedding in plain torch (cache rows hold [cos | sin])."""
    half = q.shape[2] // 2
    row = cache[positions[:n].long()].float()
    cos, sin = row[:, None, :half], row[:, None, half:]
    for x in (q[:n], k[:n]):
        x1, x2 = x[..., :half].float(), x[..., half:].float()
        out = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
        x.copy_(out.to(x.dtype))


def _torch_embedding(weight: torch.Tensor, ids: torch.Tensor, out: torch.Tensor, n: int) -> None:
    out[:n].copy_(weight[ids[:n].long()])


@contextmanager
def plain_torch() -> Iterator[None]:
    """Run the shared model modules with plain-torch rotary and embedding instead of Triton:
    the reference then shares no kernel with the rig it checks, and runs fast under the CPU
    interpreter (one module call per request per draft position)."""
    with (
        mock.patch.object(ops, "apply_rotary", _torch_rotary),
        mock.patch.object(ops, "embedding_lookup", _torch_embedding),
    ):
        yield


def dense_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor) -> None:
    """Causal attention over all T tokens of one sequence (GQA expanded)."""
    groups = q.shape[1] // k.shape[1]
    kk = k.repeat_interleave(groups, dim=1).transpose(0, 1)
    vv = v.repeat_interleave(groups, dim=1).transpose(0, 1)
    res = F.scaled_dot_product_attention(q.transpose(0, 1), kk, vv, is_causal=True)
    out.copy_(res.transpose(0, 1))


def _dense_core(
    layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor
) -> None:
    dense_attention(q.float(), k.float(), v.float(), out)


_attn = with_up_projections(_dense_core)


def _kv(k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """What a layer's call writes to its KV cache (MLA: the row, and its latent prefix as
    the value, as the rig's latent cache holds them)."""
    if is_latent_call(v):
        return k.clone(), k[:, :, : v.shape[1]].clone()
    return k.clone(), v.clone()


class ReferenceEngine:
    """The step engine of the reference; same interface as the rig for the workload driver."""

    def __init__(
        self, models: LoadedPair, num_speculative_tokens: int, max_num_seqs: int, max_model_len: int
    ) -> None:
        self.models = models
        self.num_speculative_tokens = num_speculative_tokens
        self.max_num_seqs = max_num_seqs
        self.max_model_len = max_model_len
        self.vocab_size = models.vocab_size
        self.history: dict[int, list[int]] = {}
        # rid -> what the last step computed for it (target hidden rows and per-layer K/V over
        # the whole context), kept for the probe's step-by-step comparison
        self.last: dict[int, Trace] = {}

    def allocate(self, request: Request, num_tokens: int) -> None:
        return None

    def share(self, request: Request, owner: Request) -> None:
        """A prefix-cache hit: the dense reference recomputes the shared prefix itself."""
        self.history[request.rid] = request.prompt[: request.prefilled]

    def release(self, request: Request) -> None:
        self.history.pop(request.rid, None)

    @torch.inference_mode()
    def step(self, batch: list[ScheduledRequest]) -> StepOutput:
        nexts, accepted, drafts = [], [], []
        for req in batch:
            with plain_torch():
                s, n, d = self._one(req)
            nexts.append(s)
            accepted.append(n)
            drafts.append(d)
        return StepOutput(nexts, accepted, drafts, {"reference": "dense"})

    @torch.inference_mode()
    def greedy_continuation(self, tokens: list[int], n: int) -> list[int]:
        """The target's own next `n` tokens after `tokens`: drafts it accepts in full."""
        m, out = self.models, list(tokens)
        for _ in range(n):
            ids, pos = self._tensor(out)
            with plain_torch():
                hidden, _ = m.target(ids, pos, _attn, m.aux_layer_ids)
            out.append(int(m.target.compute_logits(hidden[-1:]).argmax(-1)[0]))
        return out[len(tokens) :]

    def _tensor(self, ids: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        dev = self.models.device
        return (
            torch.tensor(ids, dtype=torch.int64, device=dev),
            torch.arange(len(ids), dtype=torch.int64, device=dev),
        )

    def _one(self, req: ScheduledRequest) -> tuple[int, int, list[int]]:
        m, k = self.models, self.num_speculative_tokens
        context = self.history.get(req.rid, [])[: req.start_pos] + req.query
        ids, pos = self._tensor(context)
        kv: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

        def attn(
            layer: int, q: torch.Tensor, k_: torch.Tensor, v: torch.Tensor, out: torch.Tensor
        ) -> None:
            kv[layer] = _kv(k_, v)
            _attn(layer, q, k_, v, out)

        hidden, aux = m.target(ids, pos, attn, m.aux_layer_ids)
        trace = self.last[req.rid] = Trace(hidden.clone(), kv)
        logits = m.target.compute_logits(hidden)
        verdict = logits[req.start_pos :].argmax(-1).tolist()
        n = 0
        while n < req.num_drafts and req.query[n + 1] == verdict[n]:
            n += 1
        next_token = verdict[n] if req.num_drafts else verdict[len(req.query) - 1]
        if req.backup_token is not None:  # a partial prefill drafts from its next prompt token
            next_token = req.backup_token
        valid = req.start_pos + len(req.query) - (req.num_drafts - n)
        full = [*context[:valid], next_token]
        self.history[req.rid] = full[:valid]
        trace.valid = valid

        def draft_attn(
            layer: int, q: torch.Tensor, k_: torch.Tensor, v: torch.Tensor, out: torch.Tensor
        ) -> None:
            # every drafting pass recomputes all positions: the last one covers the most
            trace.draft_kv[layer] = _kv(k_, v)
            _attn(layer, q, k_, v, out)

        verified = Verified(
            full, hidden[:valid], aux[:valid] if aux is not None else None, k, draft_attn
        )
        out_drafts = draft_build(m.kind).dense_drafts(m.draft, verified)
        return next_token, n, out_drafts
