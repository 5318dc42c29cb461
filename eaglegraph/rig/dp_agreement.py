"""The DP agreement as a profile computes it, one rank at a time or all ranks in one process.

`rank_step(rank, batch, profile, exchange)` runs one rank's step: it builds the rank's vote
rows as the release's engine does, hands each to `exchange` (which returns every rank's row:
a real gloo/NCCL all_gather in a multi-process rank runtime, an in-process stand-in in tests),
and takes its local dispatch from the agreed values. Because each engine all-reduces or gathers
the rows, every rank computes the agreement from the gathered rows alone.

Ranks may issue different numbers of collectives (that is the bug some profiles reproduce).
To stay answerable over a real collective, every exchanged row carries its collective's tag in
front, and a rank whose step is over keeps exchanging an end row until every rank's is: a round
whose tags differ is recorded as unmatched (where the engine would hang), and each rank then
agrees with the ranks that issued the same collective, its own row standing in for the others.
`simulate(batches_per_rank, profile)` drives every rank's step in lockstep in one process.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence

from eaglegraph.known.dp_batch import BatchKind, DpSetup, RankBatch
from eaglegraph.known.dp_rules import DpRule, DpRuleKind, dp_rule
from eaglegraph.known.profiles import Profile
from eaglegraph.known.runners import ModelRunner
from eaglegraph.results.dp import RankStep, SyncRecord
from eaglegraph.rig.dp_sglang import sglang_program
from eaglegraph.rig.dp_trace import END, TAGS, Program, Rows, Trace
from eaglegraph.rig.dp_vllm import mrv2_program, v1_program

Exchange = Callable[[list[int]], list[list[int]]]
Driver = Generator[list[int], Rows, RankStep]

_PROGRAMS = {
    DpRuleKind.VLLM_V1_TOKEN_SYNC: v1_program,
    DpRuleKind.VLLM_V1_COORDINATE: v1_program,
    DpRuleKind.VLLM_MRV2_SYNC: mrv2_program,
    DpRuleKind.SGLANG_MLP_SYNC: sglang_program,
}


def _program(rank: int, batch: RankBatch, setup: DpSetup, rule: DpRule, trace: Trace) -> Program:
    return _PROGRAMS[rule.kind](rank, batch, setup, rule, trace)


def _drive(rank: int, batch: RankBatch, setup: DpSetup, rule: DpRule) -> Driver:
    """One rank's step as a generator of wire rows ([tag code, *row padded to the rule's
    width]) that receives every rank's wire row back and returns the rank's `RankStep`."""
    trace = Trace()
    program = _program(rank, batch, setup, rule, trace)
    pending = next(program, None)
    syncs: list[SyncRecord] = []
    width = rule.spec.width
    while True:
        if pending is None:
            wire = [END] + [0] * width
        else:
            tag, row = pending
            wire = [TAGS.index(tag) + 1, *row, *[0] * (width - len(row))]
        gathered = yield wire
        codes = [w[0] for w in gathered]
        if all(c == END for c in codes):
            break
        if pending is None:
            continue
        tag, row = pending
        same = [list(w[1 : 1 + len(row)]) if w[0] == wire[0] else list(row) for w in gathered]
        syncs.append(SyncRecord(tag, tuple(row), matched=len(set(codes)) == 1))
        try:
            pending = program.send(same)
        except StopIteration:
            pending = None
    return RankStep(rank, batch.label(), tuple(syncs), tuple(trace.phases), trace.draft_steps)


def rank_step(
    rank: int,
    batch: RankBatch,
    profile: Profile,
    exchange: Exchange,
    setup: DpSetup | None = None,
    runner: ModelRunner | None = None,
) -> RankStep:
    """Run one DP rank's step under `profile`'s agreement rule (`known.dp_rules.dp_rule`; for
    vLLM `runner` picks V1 or MRV2). `exchange(row)` must return every rank's row, in rank
    order, each call matched by one call on every rank (an all_gather); rows are lists of
    ints of one width. A step where every rank is idle runs nothing under vLLM (its DP
    coordinator does not step the engines): callers skip it, as `simulate` does."""
    driver = _drive(rank, batch, setup or DpSetup(), dp_rule(profile, runner))
    wire = next(driver)
    while True:
        try:
            wire = driver.send(exchange(wire))
        except StopIteration as stop:
            result: RankStep = stop.value
            return result


def simulate(
    batches_per_rank: Sequence[RankBatch],
    profile: Profile,
    setup: DpSetup | None = None,
    runner: ModelRunner | None = None,
) -> tuple[RankStep, ...]:
    """Every rank's step in one process: the rows each round are handed to all ranks at once,
    exactly as an all_gather would."""
    setup = setup or DpSetup()
    rule = dp_rule(profile, runner)
    if rule.spec.engine == "vllm" and all(b.kind is BatchKind.IDLE for b in batches_per_rank):
        return tuple(RankStep(r, b.label(), (), (), 0) for r, b in enumerate(batches_per_rank))
    drivers = [_drive(r, b, setup, rule) for r, b in enumerate(batches_per_rank)]
    wires = [next(d) for d in drivers]
    results: list[RankStep | None] = [None] * len(drivers)
    while any(r is None for r in results):
        gathered = [list(w) for w in wires]
        for i, driver in enumerate(drivers):
            try:
                wires[i] = driver.send(gathered)
            except StopIteration as stop:
                results[i] = stop.value
    return tuple(r for r in results if r is not None)
