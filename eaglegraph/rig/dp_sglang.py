"""SGLang's DP-attention agreement and each rank's local dispatch (torch-free).

One gather a scheduler iteration: every rank contributes the 11-column `MLPSyncBatchInfo` row
(`prepare_mlp_sync_batch_raw`) and reads the min/max reductions and gathered counts; then each
runner decides on the rank: the decode runner for the target verify, the EAGLE draft runner
(`EAGLEDraftCudaGraphRunner.can_run_graph`) for the draft decode, the draft-extend runner after
verify; in a round where any rank extends, the prefill graphs (or eager) and the draft's extend.
Idle ranks run an idle batch through every phase (`need_idle_batch`), as the engine does.
"""

from __future__ import annotations

from eaglegraph.known.dp_batch import BatchKind, DpSetup, RankBatch
from eaglegraph.known.dp_rules import (
    FORWARD_MODE,
    DpRule,
    geometry_bound,
    require_mlp_tp_gather,
)
from eaglegraph.results.dp import EAGER, PhaseChoice
from eaglegraph.rig.dp_trace import Program, Trace, pad_up


def _attention_pairs(batch: RankBatch) -> int:
    """`_local_attention_pairs`: one query per decode row over its committed length, the
    causal chunk formula for a prefill (chunks split evenly over the prefill requests)."""
    pairs = batch.decode_reqs * batch.seq_len
    if batch.prefill_reqs:
        chunk, extra = divmod(batch.prefill_tokens, batch.prefill_reqs)
        lengths = [chunk + (1 if i < extra else 0) for i in range(batch.prefill_reqs)]
        pairs += sum(t * (t + 1) // 2 for t in lengths)
    return pairs


def mlp_sync_row(batch: RankBatch, setup: DpSetup, rule: DpRule) -> list[int]:
    """The rank's `MLPSyncBatchInfo._get_local_tensor` row, built as
    `prepare_mlp_sync_batch_raw` builds it from the local batch."""
    kind = batch.kind
    idle = kind is BatchKind.IDLE
    if idle:
        num_tokens = 0
        for_logprob = 0
    elif kind is BatchKind.DECODE:
        num_tokens = batch.decode_reqs  # decode rounds gather request counts (batch_size())
        for_logprob = num_tokens
    else:  # extend_num_tokens: the chunk, plus one token per decode request of a mixed batch
        num_tokens = batch.prefill_tokens + batch.decode_reqs
        for_logprob = batch.num_reqs  # one sampled token per request without logprobs
    extend = kind in (BatchKind.PREFILL, BatchKind.MIXED)
    prefill_graphs = bool(setup.prefill_graph_tokens)
    if idle:
        can_prefill = True
    elif not prefill_graphs:
        can_prefill = False
    else:
        can_prefill = (
            pad_up(num_tokens if extend else batch.num_reqs, setup.prefill_graph_tokens) is not None
        )
    # _spec_input_cuda_graph_compatible: idle inputs stay permissive; before the draft graph
    # vote the row had no such column (filled permissive) and the seed veto stayed local
    seed_ok = batch.dsa_seed or not rule.profile.sglang_dsa_seed_eager_fallback
    can_draft = idle or not rule.profile.sglang_dp_draft_graph_vote or seed_ok
    mode = "idle" if idle else ("decode" if kind is BatchKind.DECODE else "extend")
    if kind is BatchKind.MIXED:
        mode = "mixed"
    return [
        num_tokens,
        for_logprob,
        int(not extend),  # _local_decode_cuda_graph_vote: decode or idle
        int(extend),  # is_extend_in_batch
        0,  # local_can_run_tbo (two-batch overlap off)
        FORWARD_MODE[mode],
        int(can_prefill),
        0,  # prefill_cuda_graph_max_prefix_len (full prefill graphs only)
        int(can_draft),
        0,  # is_health_check
        _attention_pairs(batch),
    ]


def sglang_program(
    rank: int, batch: RankBatch, setup: DpSetup, rule: DpRule, trace: Trace
) -> Program:
    """One SGLang scheduler iteration under DP attention with EAGLE (topk 1, K steps)."""
    k = setup.num_speculative_tokens
    rows = yield "mlp_sync", mlp_sync_row(batch, setup, rule)
    counts = [r[0] for r in rows]
    if max(counts) == 0:
        return  # no rank has work: no idle batch, no forward
    can_graph = min(r[2] for r in rows) == 1
    is_extend = max(r[3] for r in rows) == 1
    idle = batch.kind is BatchKind.IDLE
    local = 0 if idle else rows[rank][0]
    target_gather = require_mlp_tp_gather(setup.moe_a2a, rule)
    draft_gather = require_mlp_tp_gather(setup.draft_a2a, rule)
    target_bound, draft_bound = geometry_bound(setup.moe_a2a), geometry_bound(setup.draft_a2a)
    if is_extend:
        trace.add(_prefill_choice(batch, setup, rule, rows, local, target_bound))
        # the draft's extend after a prompt prefill runs outside the step's graphs
        trace.add(PhaseChoice("draft_extend", EAGER, local, local, bound=draft_bound))
        trace.draft_steps = 1
        return
    verify_bs = max(counts) if target_gather else local
    trace.add(_decode_choice("target_verify", verify_bs, local, can_graph, setup, target_bound))
    # EAGLEDraftCudaGraphRunner.can_run_graph: the draft's counts follow its own A2A backend
    # (draft_global_num_tokens) with the draft token-counts flag, the target's before
    uses_gather = draft_gather if rule.profile.sglang_dp_draft_token_counts else target_gather
    draft_bs = max(counts) if uses_gather else local
    if rule.profile.sglang_dp_draft_graph_vote:
        draft_ok = can_graph and min(r[8] for r in rows) == 1
    else:  # a rank-local veto: only this rank falls back to eager
        draft_ok = can_graph and (
            idle or batch.dsa_seed or not rule.profile.sglang_dsa_seed_eager_fallback
        )
    choice = _decode_choice("draft_decode", draft_bs, local, draft_ok, setup, draft_bound, tokens=1)
    trace.add(choice)
    trace.add(_decode_choice("draft_extend", draft_bs, local, can_graph, setup, draft_bound))
    trace.draft_steps = k


def _decode_choice(
    phase: str,
    bs: int,
    local: int,
    allowed: bool,
    setup: DpSetup,
    bound: bool,
    tokens: int | None = None,
) -> PhaseChoice:
    """A decode-family runner: replay the bucket of `bs` (padded up) when allowed, else eager;
    `tokens` per request (the verify and the draft extend run K + 1)."""
    per_req = 1 + setup.num_speculative_tokens if tokens is None else tokens
    bucket = pad_up(max(bs, 1), setup.graph_bs)
    if bucket is None or not allowed:
        return PhaseChoice(phase, EAGER, local * per_req, local * per_req, unit="bs", bound=bound)
    return PhaseChoice(
        phase, "FULL", local * per_req, bucket * per_req, bucket, unit="bs", bound=bound
    )


def _prefill_choice(
    batch: RankBatch,
    setup: DpSetup,
    rule: DpRule,
    rows: list[list[int]],
    local: int,
    target_bound: bool,
) -> PhaseChoice:
    """The target's forward in an extend round: a prefill graph bucket or eager."""
    counts = [r[0] for r in rows]
    sizes = setup.prefill_graph_tokens
    eager = PhaseChoice("target_extend", EAGER, local, local, bound=target_bound)
    if not sizes or min(r[6] for r in rows) == 0:
        return eager
    if setup.prefill_graph_dp_gather:
        # the graph body holds a DP gather captured at MAX_LEN geometry
        if rule.profile.sglang_prefill_shared_bucket:
            bucket = pad_up(max(counts), sizes)
        elif batch.kind is BatchKind.IDLE:
            return eager  # stays IDLE and runs the SUM_LEN all_reduce eagerly
        else:
            bucket = pad_up(local, sizes)
        if bucket is None:
            return eager
        return PhaseChoice("target_extend", "FULL", local, bucket, bucket, bound=True)
    if min(counts) == 0:
        return eager  # an idle rank makes the prefill runner reject replay for every rank
    bucket = pad_up(local, sizes)
    if bucket is None:
        return eager
    # nothing in the graph depends on the DP geometry: per-rank buckets are allowed
    return PhaseChoice("target_extend", "FULL", local, bucket, bucket, bound=False)
