"""What the supervisor concludes from the ranks' ledgers (pure: no processes)."""

from __future__ import annotations

from eaglegraph.known.custom_allreduce import RULES
from eaglegraph.probes.rank_findings import rank_findings, registered
from eaglegraph.results.rank_runs import CollectiveCall, RankOutcome


def _call(seq: int, numel: int, scope: str = "target FULL(8) capture", done: bool = True):
    return CollectiveCall(seq, "all_reduce", numel, "bfloat16", scope, True, done)


def _ranks(n: int = 2) -> list[RankOutcome]:
    return [RankOutcome(rank=r, tp_rank=r, dp_rank=0, status="ok") for r in range(n)]


def test_registration_rule_follows_vllm_should_custom_ar() -> None:
    rule = RULES["vllm"]
    calls = [_call(0, 8 * 64), _call(1, 4 << 20), _call(2, 7), _call(3, 64, "target eager")]
    calls.append(CollectiveCall(4, "all_reduce", 64, "bfloat16", "x", False, True))
    # 1 KiB registers; 8 MiB is not below max_size; 14 B is not a multiple of 16; the call
    # in the eager scope was captured (graph=True) so it counts; the last was not captured
    assert registered(calls, rule) == [1024, 128]


def test_unpaired_registration_is_an_error_naming_the_input() -> None:
    outcomes = _ranks()
    calls = {0: [_call(0, 512), _call(1, 512)], 1: [_call(0, 512), _call(1, 320)]}
    findings = rank_findings(outcomes, calls, None, 60.0, None, "vllm")
    ids = [f.id for f in findings]
    assert "custom-allreduce-pairing" in ids and "collective-mismatch" in ids
    pairing = next(f for f in findings if f.id == "custom-allreduce-pairing")
    assert "input 1: rank 0 registers 1024 B, rank 1 640 B" in pairing.message
    assert [o.custom_ar_registrations for o in outcomes] == [2, 2]


def test_a_missing_collective_is_named_with_the_uneven_scope() -> None:
    outcomes = _ranks()
    a = [_call(0, 64, "s1"), _call(1, 64, "s1"), _call(2, 64, "s2", done=False)]
    b = [_call(0, 64, "s1"), _call(1, 64, "s2")]
    outcomes[0].waiting_in = a[-1]
    outcomes[1].last_collective = b[-1]
    findings = rank_findings(outcomes, {0: a, 1: b}, "stuck", 30.0, None, "vllm")
    mismatch = next(f for f in findings if f.id == "collective-mismatch")
    assert "part at collective #1" in mismatch.message
    assert "First uneven: s1 (rank 0 2, rank 1 1 collectives)" in mismatch.message
    stuck = next(f for f in findings if f.id == "ranks-stuck")
    assert "rank 0 waits in all_reduce #2" in stuck.message
    assert "rank 1 is elsewhere" in stuck.message


def test_agreeing_ranks_have_no_findings() -> None:
    calls = {r: [_call(0, 512), _call(1, 512)] for r in range(2)}
    assert rank_findings(_ranks(), calls, None, 60.0, None, "sglang") == []


def test_token_agreement_counts_drafts_and_missing_steps() -> None:
    from eaglegraph.probes.rank_tasks import token_agreement

    ours = [(0, (1,), ((5, 6),)), (1, (2,), ((7, 8),))]
    same = token_agreement(ours, list(ours))
    assert same == {"tokens": 4, "equal": 4, "first_difference": None}
    other = [(0, (1,), ((5, 9),))]
    got = token_agreement(ours, other)
    assert got["tokens"] == 3 and got["equal"] == 1
    assert got["first_difference"] == "step 0, request 0, draft token 1: 6 vs 9 at TP 1"


def test_a_collective_outside_any_phase_reads_as_such() -> None:
    from eaglegraph.rig.ledger import OUTSIDE_PHASES

    eager = CollectiveCall(607, "all_gather", 1280, "bfloat16", OUTSIDE_PHASES, False, False)
    assert eager.describe() == "all_gather #607 (1280 × bfloat16) outside any phase"
    phase = CollectiveCall(5, "all_reduce", 64, "float32", "target FULL(tokens=4)", False, True)
    assert phase.describe() == "all_reduce #5 (64 × float32) inside target FULL(tokens=4)"
    captured = CollectiveCall(6, "all_reduce", 64, "float32", "target FULL(tokens=4)", True, True)
    assert captured.describe().endswith("captured in target FULL(tokens=4)")
