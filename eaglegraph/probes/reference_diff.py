"""The reference differential: the rig's step against the dense plain-torch reference.

Poison and guards see values in padding; a wrong value inside a valid extent (a row one off,
a stale length, a table not refreshed) leaves every sentinel in place and every index in
bounds. The reference has no padding, no buffers and no kernels, so comparing it with the rig
step by step — accepted and next tokens, draft tokens, the target hidden rows fed to the
draft, and the K/V of every owned block in every layer, the draft's included — catches those.
The first divergence is reported in dataflow order, so a finding names the first buffer the
wrong value reached, not a value computed from it: the target's K/V (written before its
attention reads them; the lowest layer first, since each layer's K/V is computed from the one
below), then the target hidden rows, then verify's outputs; then draft position 0 (prefill:
the draft KV of the accepted positions and its tokens), then 1..K-1 (the draft KV the decodes
wrote). Each divergence comes with the value it was found in (`locate.Site`), so a confirmed
one can be replayed to the kernel that last wrote it (`locate.locate`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from typing import TYPE_CHECKING

import torch

from eaglegraph.probes.locate import Hit, Site
from eaglegraph.results.probe import ReferenceDivergence as Divergence
from eaglegraph.rig.driver import StepOutput
from eaglegraph.rig.reference import ReferenceEngine
from eaglegraph.rig.speculators import DraftFacts
from eaglegraph.rig.workload import ScheduledRequest

if TYPE_CHECKING:
    from eaglegraph.rig.step import Rig


def reference_for(rig: Rig) -> ReferenceEngine:
    """A reference over the rig's own modules (same weights, same dtype)."""
    return ReferenceEngine(
        rig.models, rig.num_speculative_tokens, rig.max_num_seqs, rig.max_model_len
    )


def compared(rig: Rig) -> list[str]:
    """What `first_divergence` compares for the rig's drafting, in words (for the run's result)."""
    style = rig.speculator.style
    exact = DraftFacts.REFERENCE_KV in rig.speculator.facts
    k = rig.num_speculative_tokens
    out = [
        "accepted and rejected counts and next tokens of every request, every step",
        "target hidden rows fed to the draft, per token",
        "target K/V of every position each request owns, every layer",
        f"draft tokens at positions 0..{k - 1}"
        + (" (position 0: draft prefill; the rest: draft decodes)"
           if DraftFacts.DECODES in rig.speculator.facts else " (all in the draft graph)"),
    ]  # fmt: skip
    if exact:
        out.append(
            f"draft K/V ({style}): the accepted positions the draft prefill wrote and the "
            f"{k - 1} the draft decodes wrote, every draft layer"
        )
    else:
        tail = k + rig.speculator.reprefilled_positions()
        out.append(
            f"draft K/V ({style}): each request's committed prefix (all but its last {tail} "
            "positions), every draft layer; the first draft layer only for requests whose "
            "drafts the probe forced or whose prefill was chunked"
        )
    return out


def _tolerance(dtype: torch.dtype) -> float:
    return 1e-3 if dtype == torch.float32 else 5e-2


def _exact(tensor: torch.Tensor, index: tuple[int, ...], want: int) -> Site:
    return Site(tensor, index, torch.tensor(want))


def first_divergence(
    step: int,
    rig: Rig,
    ref: ReferenceEngine,
    batch: list[ScheduledRequest],
    got: StepOutput,
    want: StepOutput,
    forced: Collection[int] = (),
) -> Hit | None:
    """The first value, in dataflow order, in which the rig's step differs from the
    reference's, and where it lives in the rig's state (for `locate`); None when none does.
    `forced`: requests whose drafts the probe replaced at some step (see `_draft_kv`)."""
    hit = _kv_blocks(step, rig, ref, batch) or _hidden_rows(step, rig, ref, batch)
    if hit is not None:
        return hit
    bufs = rig.bufs
    for j, b in enumerate(batch):
        if got.num_accepted[j] != want.num_accepted[j]:
            return Hit(Divergence(step, "target", b.rid, "verify.num_accepted", "greedy_verify",
                                  f"request row {j}", str(got.num_accepted[j]),
                                  str(want.num_accepted[j])),
                       _exact(bufs.num_accepted, (j,), want.num_accepted[j]))  # fmt: skip
        # what the draft's input preparation drops from each query (greedy_verify: drafts
        # minus accepted; a prefill 0): read back, as no step output carries it
        rejected = b.num_drafts - want.num_accepted[j]
        if int(bufs.num_rejected[j]) != rejected:
            return Hit(Divergence(step, "target", b.rid, "verify.num_rejected", "greedy_verify",
                                  f"request row {j}", str(int(bufs.num_rejected[j])),
                                  str(rejected)),
                       _exact(bufs.num_rejected, (j,), rejected))  # fmt: skip
        if got.next_tokens[j] != want.next_tokens[j]:
            return Hit(Divergence(step, "target", b.rid, "verify.next_tokens", "greedy_verify",
                                  f"request row {j}", str(got.next_tokens[j]),
                                  str(want.next_tokens[j])),
                       _exact(bufs.next_tokens, (j,), want.next_tokens[j]))  # fmt: skip
    hit = _draft_kv(step, rig, ref, batch, decodes=False, forced=forced)
    if hit is not None:
        return hit
    k = rig.num_speculative_tokens
    usable = [_usable_drafts(rig, ref, b) for b in batch]
    for pos in range(k):
        for j, b in enumerate(batch):
            a, w = got.draft_tokens[j][pos], want.draft_tokens[j][pos]
            if a != w and pos < usable[j]:
                # without decodes, every position is drafted in the draft_prefill graph
                first = pos == 0 or DraftFacts.DECODES not in rig.speculator.facts
                phase = "draft_prefill" if first else "draft_decode"
                kernel = "argmax_map_draft" if first else "update_eagle_draft_inputs"
                return Hit(Divergence(step, phase, b.rid, "eagle.draft_tokens", kernel,
                                      f"draft position {pos}", str(a), str(w)),
                           _exact(bufs.draft_tokens, (j, pos), w))  # fmt: skip
    return _draft_kv(step, rig, ref, batch, decodes=True)


def _usable_drafts(rig: Rig, ref: ReferenceEngine, b: ScheduledRequest) -> int:
    """How many of a request's K drafts a later step can verify: near max_model_len the
    scheduler verifies only drafts whose tokens fit (`Session.batch`), and the drafter clamps
    the positions past it (vllm/v1/worker/gpu/spec_decode/eagle: positions to
    max_model_len - 1, seq_lens to max_model_len; vllm/v1/spec_decode/utils.py::
    eagle_step_slot_mapping_metadata_kernel: the padding slot), so those drafts are
    discarded and differ from the dense reference's unclamped ones by design."""
    trace = ref.last.get(b.rid)
    if trace is None:
        return rig.num_speculative_tokens
    # after this step the request holds `valid` tokens and the bonus token
    return max(min(rig.num_speculative_tokens, rig.max_model_len - trace.valid - 2), 0)


def _hidden_rows(
    step: int, rig: Rig, ref: ReferenceEngine, batch: list[ScheduledRequest]
) -> Hit | None:
    """The target hidden rows the draft prefill is fed, token by token (those the reference
    computed: once an earlier step diverged, the two sessions' requests may differ)."""
    hidden = rig.bufs.target_hidden
    tol = _tolerance(hidden.dtype)
    t = 0
    for b in batch:
        trace = ref.last.get(b.rid)
        n = len(b.query)
        if trace is not None:
            want = trace.hidden[b.start_pos : b.start_pos + n].float()
            got = hidden[t : t + want.shape[0]].float()
            bad = ~torch.isclose(got, want, atol=tol, rtol=tol).all(dim=1)
            if bool(bad.any()):
                row = int(bad.nonzero()[0, 0])
                return Hit(Divergence(step, "target", b.rid, "target.hidden", "target forward",
                                      f"token row {t + row} (position {b.start_pos + row})",
                                      f"{float(got[row].abs().max()):.4g} max|x|",
                                      f"{float(want[row].abs().max()):.4g} max|x|"),
                           Site(hidden, (t + row,), want[row], tol))  # fmt: skip
        t += n
    return None


def _kv_blocks(
    step: int, rig: Rig, ref: ReferenceEngine, batch: list[ScheduledRequest]
) -> Hit | None:
    """The target layers' K/V of every position each request owns, block by block: the
    lowest layer that differs in any request. Layer L's K/V is computed from layer L-1's
    output, so where a layer above the first differs while the one below matched, the wrong
    value came from that lower layer's attention (what it read) or from this layer's write."""
    layers = sorted({L for b in batch if (t := ref.last.get(b.rid)) for L in t.kv})
    for i, layer in enumerate(layers):
        for b in batch:
            trace = ref.last.get(b.rid)
            if trace is None or layer not in trace.kv:
                continue
            end = b.start_pos + len(b.query)
            hit = _kv_rows(step, rig, b, {layer: trace.kv[layer]}, 0, end, "target", "target")
            if hit is not None and i > 0:  # the write is the same kernel the layer below ran
                below = f"attention (target layer {layers[i - 1]})"
                return replace(hit, divergence=replace(hit.divergence, kernel=below))
            if hit is not None:
                return hit
    return None


def _draft_kv(
    step: int,
    rig: Rig,
    ref: ReferenceEngine,
    batch: list[ScheduledRequest],
    decodes: bool,
    forced: Collection[int] = (),
) -> Hit | None:
    """The draft layers' K/V: the accepted positions [0, valid) the draft prefills wrote, or
    (`decodes`) the K-1 positions after them the draft decodes wrote. EAGLE-style drafting
    recomputes exactly those positions in its dense reference; other styles (a multi-module
    window, a DFlash block) are compared on their committed prefix: the positions before the
    tail a step may rewrite (`Speculator.reprefilled_positions`) and before the last K, whose
    deeper modules were fed drafts rather than tokens. Those styles keep the KV a deeper
    module computed from its own accepted draft, so for a request whose drafts the probe
    replaced (`forced`) only the first draft layer, fed verified tokens alone, is compared."""
    exact = DraftFacts.REFERENCE_KV in rig.speculator.facts
    if decodes and not exact:
        return None
    k = rig.num_speculative_tokens
    tail = 0 if exact else k + rig.speculator.reprefilled_positions()
    for b in batch:
        trace = ref.last.get(b.rid)
        if trace is None or not trace.draft_kv:
            continue
        layers = trace.draft_kv
        if not exact and b.rid in forced:  # the first module alone is fed verified tokens only
            layers = {min(layers): layers[min(layers)]}
        lo, hi = (trace.valid, trace.valid + k - 1) if decodes else (0, trace.valid - tail)
        hi = min(hi, rig.max_model_len - 1)
        phase = "draft_decode" if decodes else "draft_prefill"
        hit = _kv_rows(step, rig, b, layers, lo, hi, phase, "draft")
        if hit is not None:
            return hit
    return None


def _kv_rows(
    step: int,
    rig: Rig,
    b: ScheduledRequest,
    layers: dict[int, tuple[torch.Tensor, torch.Tensor]],
    lo: int,
    hi: int,
    phase: str,
    owner: str,
) -> Hit | None:
    """Positions [lo, hi) of one request in each of `layers` (global KV layer → reference
    K/V by position), through the request's own blocks; the first that differs."""
    bs = rig.block_size
    hi = min(hi, len(b.blocks) * bs)
    if hi <= lo:
        return None
    pos = torch.arange(lo, hi, device=rig.config.device)
    blocks = torch.tensor(b.blocks, dtype=torch.int64, device=pos.device)[pos // bs]
    offs = pos % bs
    for layer in sorted(layers):
        caches: tuple[torch.Tensor, ...] = rig.kv_caches[layer]
        wants: tuple[torch.Tensor, ...] = layers[layer]
        if caches[0] is caches[1]:  # one latent row (MLA): V is a view of K's row
            caches, wants = caches[:1], wants[:1]
        for which, (cache, want) in enumerate(zip(caches, wants, strict=True)):
            if want.shape[0] < hi:
                continue  # the reference computed fewer positions (clamped at the end)
            got = cache[blocks, offs].float().flatten(1)
            ref_rows = want[lo:hi].float().flatten(1)
            tol = _tolerance(cache.dtype)
            bad = ~torch.isclose(got, ref_rows, atol=tol, rtol=tol)
            if bool(bad.any()):
                row, col = (int(i) for i in bad.nonzero()[0])
                p = lo + row
                where = (int(blocks[row]), int(offs[row]))
                return Hit(Divergence(step, phase, b.rid, "kv_cache", "write_kv",
                                      f"{owner} layer {layer} {'KV'[which]} position {p} "
                                      f"(block {b.blocks[p // bs]}, slot {p % bs}, "
                                      f"element {col})",
                                      f"{float(got[row, col]):.4g}",
                                      f"{float(ref_rows[row, col]):.4g}"),
                           Site(cache, where, want[p], tol))  # fmt: skip
    return None
