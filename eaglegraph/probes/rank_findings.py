"""What a multi-rank run's outcomes mean: the failed rank and its cascade, the stuck rank and
where, the first collective the ranks disagree on, plans that differ, replays that do not
give the eager tokens, and TP > 1 tokens against TP 1.

The order of the findings is the order a support engineer reads them in: the cause first
(a rank's own error, or the collective where the ranks parted), then what followed.
"""

from __future__ import annotations

import dataclasses

from eaglegraph.known.custom_allreduce import DTYPE_BYTES, RULES, RegistrationRule
from eaglegraph.probes.spec import RunSpec
from eaglegraph.results.findings import Finding, Severity
from eaglegraph.results.rank_runs import CollectiveCall, RankOutcome, SingleRankAgreement

# Tokens of a TP > 1 run that must equal the TP 1 run's: all of them in float32 (the sums
# differ in the last bits only), nine in ten in 16-bit types, where a sum taken in another
# order flips near-tied greedy tokens of random weights and the rest of that request follows.
EXACT_DTYPES = ("float32", "fp32")
HALF_PRECISION_AGREEMENT = 0.9


def single_tolerance(spec: RunSpec) -> str:
    if spec.dtype in EXACT_DTYPES or (spec.dtype == "auto" and spec.device != "cuda"):
        return "every draft token equal (float32)"
    return f"at least {HALF_PRECISION_AGREEMENT:.0%} of draft tokens equal (16-bit sums)"


def _required(single: SingleRankAgreement) -> float:
    return 1.0 if single.tolerance.startswith("every") else HALF_PRECISION_AGREEMENT


def _who(o: RankOutcome) -> str:
    return f"rank {o.rank} (TP {o.tp_rank}, DP {o.dp_rank})"


def _failures(outcomes: list[RankOutcome]) -> list[Finding]:
    failed = [o for o in outcomes if o.status == "failed"]
    causes = [o for o in failed if not o.consequence] or failed[:1]
    out = [
        Finding(
            id="rank-failed",
            severity=Severity.ERROR,
            rank=o.rank,
            message=f"{_who(o)} failed: {o.error or f'exit status {o.exit_code}'}",
            fix="this rank's error is the cause; its peers' errors followed it",
        )
        for o in causes
    ]
    for o in failed:
        if o not in causes:
            out.append(
                Finding(
                    id="rank-failed-after-peer",
                    severity=Severity.WARNING,
                    rank=o.rank,
                    message=f"{_who(o)} failed after its peer: {o.error} (a consequence: the "
                    "peer's process was gone, not a cause)",
                )
            )
    return out


def _tp_groups(outcomes: list[RankOutcome]) -> list[list[RankOutcome]]:
    """The ranks of each tensor-parallel group (one per DP replica): whose collectives pair."""
    groups: dict[int, list[RankOutcome]] = {}
    for o in outcomes:
        groups.setdefault(o.dp_rank, []).append(o)
    return list(groups.values())


def _mismatch(
    outcomes: list[RankOutcome], calls: dict[int, list[CollectiveCall]], complete: bool = True
) -> Finding | None:
    """The first collective (by sequence number) where the ranks of one TP group differ in
    op, size or the phase and graph it runs in: ranks in lockstep agree on all three."""
    for members in _tp_groups(outcomes):
        if len(members) < 2:
            continue
        by_seq = {o.rank: {c.seq: c for c in calls[o.rank]} for o in members}
        seqs = (
            set().union(*by_seq.values())
            if complete
            else set.intersection(*(set(t) for t in by_seq.values()))
        )
        for seq in sorted(seqs):
            seen = {rank: table.get(seq) for rank, table in by_seq.items()}
            keys = {(c.op, c.numel, c.scope) if c else None for c in seen.values()}
            if len(keys) == 1:
                continue
            parts = []
            for rank, call in seen.items():
                if call is None:
                    earlier = [c for c in calls[rank] if c.seq < seq]
                    last = earlier[-1].describe() if earlier else "none"
                    parts.append(f"rank {rank} issued no collective #{seq} (its last: {last})")
                else:
                    state = "" if call.finished else ", never finished"
                    parts.append(f"rank {rank}: {call.describe()}{state}")
            return Finding(
                id="collective-mismatch",
                severity=Severity.ERROR,
                rank=members[0].rank,
                message=f"the ranks part at collective #{seq}: "
                + "; ".join(parts)
                + _first_uneven_scope(members, calls),
                fix="every rank must issue the same collectives, of the same size, in the same "
                "order: look for a rank-local choice of graph, padding or eager fallback here",
            )
    return None


def _first_uneven_scope(members: list[RankOutcome], calls: dict[int, list[CollectiveCall]]) -> str:
    """Where the ranks' counts first differ, phase by phase and graph by graph: a rank that
    left one collective out shows its next ones one number early, so the sequence numbers
    point past the place; the counts per scope point at it."""
    counts: dict[int, dict[str, int]] = {}
    order: list[str] = []
    for o in members:
        table = counts.setdefault(o.rank, {})
        for c in calls[o.rank]:
            if c.scope not in table and c.scope not in order:
                order.append(c.scope)
            table[c.scope] = table.get(c.scope, 0) + (c.numel if c.op == "replay" else 1)
    for scope in order:
        per_rank = {rank: table.get(scope, 0) for rank, table in counts.items()}
        if len(set(per_rank.values())) > 1:
            said = ", ".join(f"rank {r} {n}" for r, n in per_rank.items())
            return f". First uneven: {scope} ({said} collectives)"
    return ""


def _out_of_time(outcomes: list[RankOutcome]) -> Finding:
    where = "; ".join(
        f"rank {o.rank}: {o.log_tail[-1] if o.log_tail else 'no progress line'}" for o in outcomes
    )
    return Finding(
        id="ranks-out-of-time",
        severity=Severity.ERROR,
        message=f"the ranks were ended at the run's time limit; where each was: {where}",
        fix="raise --rank-timeout, or read each rank's log tail in --json",
    )


def _stuck(outcomes: list[RankOutcome], deadline_s: float) -> Finding | None:
    waiting = [o for o in outcomes if o.waiting_in is not None]
    if not waiting:  # out of time with no rank in a collective: say where each one was
        where = "; ".join(
            f"rank {o.rank}: {o.log_tail[-1] if o.log_tail else 'no progress line'}"
            for o in outcomes
        )
        return Finding(
            id="ranks-out-of-time",
            severity=Severity.ERROR,
            message=f"the ranks were ended before finishing, none waiting in a collective: {where}",
            fix="raise the run's time limit, or look at each rank's log tail in --json",
        )
    parts = [f"rank {o.rank} waits in {o.waiting_in.describe()}" for o in waiting if o.waiting_in]
    for o in outcomes:
        if o.waiting_in is None:
            last = o.last_collective.describe() if o.last_collective else "no collective"
            parts.append(f"rank {o.rank} is elsewhere (its last finished: {last})")
    return Finding(
        id="ranks-stuck",
        severity=Severity.ERROR,
        rank=waiting[0].rank,
        message=f"no progress for {deadline_s:.0f} s: "
        + "; ".join(parts)
        + "; every rank was ended",
        fix="a rank that waits in a collective its peers never issue hangs with no error "
        "(NCCL's watchdog does not see graph-captured work): make the ranks agree",
    )


def registered(calls: list[CollectiveCall], rule: RegistrationRule) -> list[int]:
    """Byte sizes of the all-reduces this rank captured that `rule` registers, in order."""
    out = []
    for c in calls:
        captured = c.graph or c.scope.endswith(" capture")
        nbytes = c.numel * DTYPE_BYTES.get(c.dtype, 0)
        if c.op == "all_reduce" and captured and rule.registers(nbytes, c.dtype):
            out.append(nbytes)
    return out


def _registrations(
    outcomes: list[RankOutcome], calls: dict[int, list[CollectiveCall]], framework: str
) -> list[Finding]:
    """The custom all-reduce contract: every rank of a TP group registers as many captured
    inputs, of the same sizes, in the same order, and no more than the engine holds."""
    rule = RULES.get(framework)
    tp = len({o.tp_rank for o in outcomes})
    if rule is None or tp not in rule.world_sizes:
        return []
    lists = {o.rank: registered(calls[o.rank], rule) for o in outcomes}
    for o in outcomes:
        o.custom_ar_registrations = len(lists[o.rank])
    out: list[Finding] = []
    for members in _tp_groups(outcomes):
        first = members[0]
        for other in members[1:]:
            a, b = lists[first.rank], lists[other.rank]
            if a == b:
                continue
            at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
            where = (
                f"input {at}: rank {first.rank} registers {a[at]} B, rank {other.rank} {b[at]} B"
                if at is not None
                else f"rank {first.rank} registers {len(a)} inputs, rank {other.rank} {len(b)}"
            )
            out.append(
                Finding(
                    id="custom-allreduce-pairing",
                    severity=Severity.ERROR,
                    rank=other.rank,
                    message=f"{framework}'s custom all-reduce pairs the i-th captured input "
                    f"across ranks, and these differ ({where}): a peer's kernel would read "
                    "another buffer (illegal memory access or silent garbage)",
                    evidence=rule.source,
                )
            )
    most = max((len(v) for v in lists.values()), default=0)
    if most > rule.capacity:
        out.append(
            Finding(
                id="custom-allreduce-capacity",
                severity=Severity.ERROR,
                message=f"{most} graph-captured all-reduce inputs to register; {framework} "
                f"holds {rule.capacity} per rank",
                evidence=rule.source,
            )
        )
    return out


def rank_findings(
    outcomes: list[RankOutcome],
    calls: dict[int, list[CollectiveCall]],
    stuck: str | None,
    deadline_s: float,
    single: SingleRankAgreement | None,
    framework: str = "vllm",
) -> list[Finding]:
    """`calls`: each rank's whole ledger, in order."""
    out: list[Finding] = _registrations(outcomes, calls, framework)
    # out of time, a rank behind its peers is not a divergence: compare what all issued
    mismatch = _mismatch(outcomes, calls, complete=stuck != "out of time")
    if mismatch is not None:
        out.append(mismatch)
    if stuck == "out of time":
        out.append(_out_of_time(outcomes))
    elif stuck:
        hang = _stuck(outcomes, deadline_s)
        if hang is not None:
            out.append(hang)
    out += _failures(outcomes)
    plans = {tuple(o.graphs) for o in outcomes if o.status == "ok"}
    if len(plans) > 1:
        counts = ", ".join(f"rank {o.rank}: {len(o.graphs)} graphs" for o in outcomes)
        out.append(
            Finding(
                id="rank-plans-differ",
                severity=Severity.ERROR,
                message=f"the ranks captured different graphs ({counts}): the i-th captured "
                "all-reduce no longer pairs across ranks (custom all-reduce registration)",
            )
        )
    for o in outcomes:
        if o.replay_equals_eager is False:
            out.append(
                Finding(
                    id="rank-replay-differs",
                    severity=Severity.ERROR,
                    rank=o.rank,
                    message=f"{_who(o)}: replaying the graphs gave other tokens than running "
                    "the same schedule eagerly",
                )
            )
    for o in outcomes:  # what each rank's own probe found, named by its rank
        if o.probe is not None:
            out += [dataclasses.replace(f, rank=o.rank) for f in o.probe.findings]
    if single is not None and single.fraction < _required(single):
        out.append(
            Finding(
                id="tp-differs-from-single-rank",
                severity=Severity.ERROR,
                rank=0,
                message=f"rank 0's draft tokens equal the TP 1 run's for {single.equal} of "
                f"{single.tokens} (needed: {single.tolerance}); first: {single.first_difference}",
            )
        )
    return out
