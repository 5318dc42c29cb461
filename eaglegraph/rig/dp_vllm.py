"""vLLM's DP agreement and each rank's local dispatch, per runner and release (torch-free).

Each function is one rank's step program (`rig.dp_trace`): it builds the vote row the way the
engine does from the rank's batch, yields it, and dispatches from every rank's rows. Idle ranks
run what the engine runs for them: V1's `execute_dummy_batch` (`_dummy_run(1,
uniform_decode=True)`) and the drafter's `dummy_run`, MRV2's uniform-decode dummy run and
`propose(dummy_run=True)`. The target and drafter dispatchers are reduced to what the agreement
needs: FULL for a uniform decode within the largest capture size, PIECEWISE for other batches
within it (FULL_AND_PIECEWISE), else eager; the V1 drafter dispatches PIECEWISE or eager.
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.known.dp_batch import BatchKind, DpSetup, RankBatch, VllmGraphMode
from eaglegraph.known.dp_rules import DpRule, DpRuleKind
from eaglegraph.rig.dp_trace import FULL, NONE, PIECEWISE, Program, Rows, Trace, pad_up


def _target_mode(tokens: int, uniform: bool, setup: DpSetup) -> int:
    """The mode the target's dispatcher picks for a batch on its own."""
    if pad_up(tokens, setup.capture_sizes) is None:
        return NONE
    if uniform:
        return FULL
    return PIECEWISE if setup.graph_mode is VllmGraphMode.FULL_AND_PIECEWISE else NONE


def _drafter_mode(tokens: int, setup: DpSetup) -> int:
    return PIECEWISE if pad_up(tokens, setup.capture_sizes) is not None else NONE


@dataclass(frozen=True)
class _Agreed:
    """coordinate_batch_across_dp's answer for this rank: the synced mode and the token count
    it runs at (every rank's max when a graph mode was agreed, else its own)."""

    mode: int
    tokens: int


def _coordinate(rows: Rows, rank: int) -> _Agreed:
    """`_synchronize_dp_ranks`: min of the modes; pad to the max padded count unless eager."""
    mode = min(r[3] for r in rows)
    if mode != NONE:
        return _Agreed(mode, max(r[1] for r in rows))
    return _Agreed(NONE, rows[rank][1])


def _vote(tokens: int, mode: int, setup: DpSetup) -> list[int]:
    """The 4-row column `_run_ar` fills: orig, padded, should_ubatch, cudagraph_mode."""
    padded = pad_up(tokens, setup.capture_sizes) if mode != NONE else None
    return [tokens, padded or tokens, 0, mode]


def v1_program(rank: int, batch: RankBatch, setup: DpSetup, rule: DpRule, trace: Trace) -> Program:
    """One V1 step: the target's agreement (`GPUModelRunner._determine_batch_execution_and_padding`
    or, before the graph-mode sync, `get_dp_padding`), then the EAGLE drafter's."""
    k = setup.num_speculative_tokens
    idle = batch.kind is BatchKind.IDLE
    tokens = 1 if idle else batch.num_tokens(k)
    uniform = idle or batch.kind is BatchKind.DECODE
    mode = _target_mode(tokens, uniform, setup)
    if rule.kind is DpRuleKind.VLLM_V1_TOKEN_SYNC:
        # 0.11.0: DPMetadata all-reduces the padded counts; every rank pads to the max and
        # dispatches the padded count with its own uniformity (no mode agreement).
        local = pad_up(tokens, setup.capture_sizes) if mode != NONE else tokens
        rows = yield "target", [local or tokens]
        padded = max(r[0] for r in rows)
        # CudagraphDispatcher.dispatch looks the padded descriptor up among the captured keys
        exact = padded in setup.capture_sizes
        run_mode = _target_mode(padded, uniform, setup) if exact else NONE
        size = padded
    else:
        rows = yield "target", _vote(tokens, mode, setup)
        agreed = _coordinate(rows, rank)
        run_mode, padded, size = agreed.mode, agreed.tokens, agreed.tokens
    if idle and not rule.profile.dp_dummy_run_padded_descriptor and run_mode != NONE:
        # before the fix the dummy run dispatched the graph of its unpadded count
        size = pad_up(tokens, setup.capture_sizes) or tokens
        run_mode = _target_mode(tokens, uniform, setup)
    trace.graph("target", run_mode, tokens, padded, size)
    yield from _v1_drafter(rank, batch, setup, rule, trace, padded)


def _v1_drafter(
    rank: int, batch: RankBatch, setup: DpSetup, rule: DpRule, trace: Trace, target_padded: int
) -> Program:
    k = setup.num_speculative_tokens
    idle = batch.kind is BatchKind.IDLE
    fits = batch.near_cap_reqs == 0  # GPUModelRunner._input_fits_in_drafter
    explicit = (
        rule.profile.dp_explicit_drafter_syncs and rule.kind is not DpRuleKind.VLLM_V1_TOKEN_SYNC
    )
    if not idle and not fits and not (rule.profile.dp_unfit_drafter_dummy and explicit):
        return  # the rank skips the drafter, and every DP collective in it
    dummy = idle or not fits
    if not explicit:
        # without explicit drafter syncs: set_forward_context all-reduces the token count once per forward;
        # the drafter ran eager under DP; EagleProposer.dummy_run runs one forward
        forwards = 1 if dummy else k
        for i in range(forwards):
            n = target_padded if dummy else (batch.num_tokens(k) if i == 0 else batch.num_reqs)
            yield "draft_forward", [n]
            phase = "draft_prefill" if i == 0 else "draft_decode"
            trace.graph(phase, NONE, n, n, index=i)
        trace.draft_steps = forwards
        return
    # SpecDecodeBaseProposer: a sync before the draft prefill, another before the K-1 draft
    # decodes; dummy_run(num_tokens) syncs at its forwards 0 and 1 and runs K forwards
    first = (target_padded if idle else 1) if dummy else batch.num_tokens(k)
    rows = yield "draft_prefill", _vote(first, _drafter_mode(first, setup), setup)
    agreed = _coordinate(rows, rank)
    trace.graph("draft_prefill", agreed.mode, first, agreed.tokens)
    if k > 1:
        bs = first if dummy else batch.num_reqs
        rows = yield "draft_decode", _vote(bs, _drafter_mode(bs, setup), setup)
        agreed = _coordinate(rows, rank)
        for i in range(1, k):
            trace.graph("draft_decode", agreed.mode, bs, agreed.tokens, index=i)
    trace.draft_steps = k


def mrv2_program(
    rank: int, batch: RankBatch, setup: DpSetup, rule: DpRule, trace: Trace
) -> Program:
    """One MRV2 step: `sync_cudagraph_and_dp_padding` over the 7-row vote, the target's dispatch,
    then the speculator reusing the agreement (`DPSyncState`) for its prefill and sizing its
    draft decodes from the agreed request count (`_build_uniform_batch_dp_sync`)."""
    k = setup.num_speculative_tokens
    q = 1 + k  # decode_query_len
    idle = batch.kind is BatchKind.IDLE
    if idle:  # execute_dummy_batch: one uniform decode request (aligned to the decode length)
        reqs, tokens, uniform, max_query_len, skip_ok = 1, q, q, q, False
    else:
        decode = batch.kind is BatchKind.DECODE
        reqs, tokens = batch.num_reqs, batch.num_tokens(k)
        uniform = q if decode else 0
        max_query_len = q if decode else -1  # a batch with a prefill keeps out of varlen graphs
        skip_ok = decode and batch.near_cap_reqs == reqs
    mode = _target_mode(tokens, uniform > 0, setup)
    row = [tokens, mode, uniform, max_query_len, 0, reqs, int(skip_ok)]
    rows = yield "target", row
    eager = min(r[1] for r in rows) == NONE
    padded = tokens if eager else max(r[0] for r in rows)
    agreed_uniform = rows[0][2] if all(r[2] == rows[0][2] for r in rows) else 0
    run_mode = NONE if eager else _target_mode(padded, agreed_uniform > 0, setup)
    size = pad_up(padded, setup.capture_sizes) or padded
    trace.graph("target", run_mode, tokens, size if run_mode != NONE else padded)
    max_reqs = max(r[5] for r in rows)
    if all(r[6] == 1 for r in rows):
        return  # every rank allows skipping the drafts: all skip together
    if idle and not rule.profile.dp_idle_ranks_propose:
        return  # without idle-rank propose an idle rank ran the target's dummy forward only
    if not rule.profile.dp_draft_reuses_target_sync:
        yield "draft_prefill", row  # without reuse the draft prefill ran its own DP sync
    trace.graph("draft_prefill", run_mode, tokens, size if run_mode != NONE else padded)
    bs = pad_up(max_reqs, setup.capture_sizes)
    decode_mode = NONE if eager or bs is None else FULL
    for i in range(1, k):
        run_at = bs if bs is not None and decode_mode != NONE else max_reqs
        trace.graph("draft_decode", decode_mode, max_reqs, run_at, index=i)
    trace.draft_steps = k
