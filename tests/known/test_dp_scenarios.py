"""The DP agreement as each profile computes it: the rows the engines build, the named
rank-divergence scenarios (each diverges under its old profile and is clean under the fixed
ones) and seeded explorations of per-rank batch mixes beyond them."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import pytest

from eaglegraph.known.dp_batch import IDLE, A2ABackend, DpSetup, RankBatch, decode, prefill
from eaglegraph.known.dp_rules import RULES, DpRuleKind, dp_rule
from eaglegraph.known.dp_scenarios import SCENARIOS, DpScenario, get_scenario
from eaglegraph.known.hazards import HAZARDS
from eaglegraph.known.profiles import PROFILES, get_profile
from eaglegraph.known.runners import ModelRunner
from eaglegraph.probes.dp_scenarios import explore, run_scenario
from eaglegraph.rig.dp_agreement import rank_step, simulate
from eaglegraph.serial import to_jsonable


def _rows(batches: Sequence[RankBatch], profile: str, runner: ModelRunner | None = None,
          setup: DpSetup | None = None) -> list[list[list[int]]]:  # fmt: skip
    """Each rank's rows as it put them on the wire (tag code stripped), via `rank_step` with an
    in-process all_gather stand-in (one thread per rank, a barrier per round)."""
    n = len(batches)
    slots: list[list[int]] = [[] for _ in range(n)]
    barrier = threading.Barrier(n)
    sent: list[list[list[int]]] = [[] for _ in range(n)]

    def exchange_for(rank: int) -> Callable[[list[int]], list[list[int]]]:
        def exchange(row: list[int]) -> list[list[int]]:
            slots[rank] = row
            if row[0]:
                sent[rank].append(row[1:])
            barrier.wait(timeout=5)
            out = [list(s) for s in slots]
            barrier.wait(timeout=5)
            return out

        return exchange

    prof = get_profile(profile, "sglang" if profile.startswith("sglang") else "vllm")
    steps: list[object] = [None] * n

    def run(rank: int) -> None:
        steps[rank] = rank_step(rank, batches[rank], prof, exchange_for(rank), setup, runner)

    threads = [threading.Thread(target=run, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert steps == list(simulate(batches, prof, setup, runner))  # rank_step == simulate
    return sent


def test_v1_rows_are_coordinate_batch_across_dp_columns() -> None:
    """vllm/v1/worker/dp_utils.py::_run_ar fills [orig tokens, padded tokens, should_ubatch,
    cudagraph_mode] (NONE 0, PIECEWISE 1, FULL 2); the drafter's own call comes from
    v1/spec_decode/llm_base_proposer.py::SpecDecodeBaseProposer._determine_batch_execution_
    and_padding (draft prefill, then draft decodes at the request count); an idle rank's
    target vote is execute_dummy_batch's _dummy_run(1, uniform_decode=True)."""
    busy, idle = _rows([decode(2), IDLE], "vllm-current", ModelRunner.MRV1)
    assert RULES[DpRuleKind.VLLM_V1_COORDINATE].width == 4
    assert busy[0] == [8, 8, 0, 2]  # 2 requests x (1 + K=3), a uniform decode: FULL
    assert idle[0] == [1, 1, 0, 2]
    assert busy[1] == [8, 8, 0, 1] and busy[2] == [2, 2, 0, 1]  # drafter: PIECEWISE
    assert idle[1] == [8, 8, 0, 1] == idle[2]  # dummy_run(num_tokens) at forwards 0 and 1
    mixed, _ = _rows([prefill(1, 600), decode(1)], "vllm-current", ModelRunner.MRV1)
    assert mixed[0] == [600, 600, 0, 0]  # past the largest capture size: eager


def test_mrv2_rows_are_sync_cudagraph_and_dp_padding_columns() -> None:
    """vllm/v1/worker/gpu/dp_utils.py::sync_cudagraph_and_dp_padding fills [num_tokens,
    cg_mode, uniform_token_count (0 = None), max_query_len (-1 = None), allow_ubatching,
    num_reqs, allow_skip_drafts]; gpu/model_runner.py::execute_model drops max_query_len for a
    batch with a prefill; the draft reuses the agreement (no second row)."""
    busy, pre = _rows([decode(2), prefill(1, 100)], "vllm-current", ModelRunner.MRV2)
    assert busy == [[8, 2, 4, 4, 0, 2, 0]]
    assert pre == [[100, 1, 0, -1, 0, 1, 0]]
    cap, _ = _rows([decode(2, near_cap=2), decode(1)], "vllm-current", ModelRunner.MRV2)
    assert cap == [[8, 2, 4, 4, 0, 2, 1]]
    old, _ = _rows([decode(2), IDLE], "vllm-0.28", ModelRunner.MRV2)
    assert len(old) == 2 and old[0] == old[1]  # before #53694 the draft prefill synced again


def test_sglang_rows_are_mlp_sync_batch_info_columns() -> None:
    """sglang/srt/managers/scheduler_components/dp_attn.py::prepare_mlp_sync_batch_raw builds
    MLPSyncBatchInfo._get_local_tensor's 11 columns: decode rounds gather request counts,
    extend rounds extend_num_tokens; _local_decode_cuda_graph_vote (decode or idle),
    is_extend_in_batch, TBO off, ForwardMode (EXTEND 1, DECODE 2, MIXED 3, IDLE 4), the
    prefill vote (idle permissive), _spec_input_cuda_graph_compatible (idle permissive),
    health check, _local_attention_pairs."""
    dec, idle = _rows([RankBatch(decode_reqs=4, dsa_seed=False, seq_len=100), IDLE],
                      "sglang-current")  # fmt: skip
    assert RULES[DpRuleKind.SGLANG_MLP_SYNC].width == 11
    assert dec == [[4, 4, 1, 0, 0, 2, 0, 0, 0, 0, 400]]
    assert idle == [[0, 0, 1, 0, 0, 4, 1, 0, 1, 0, 0]]
    ext, _ = _rows([prefill(2, 10), decode(1)], "sglang-current")
    assert ext == [[10, 2, 0, 1, 0, 1, 0, 0, 1, 0, 30]]  # two 5-token chunks: 15 pairs each


@pytest.mark.parametrize("scenario", SCENARIOS.values(), ids=lambda s: s.name)
def test_each_scenario_diverges_under_its_old_profiles_and_is_clean_under_the_fixed(
    scenario: DpScenario,
) -> None:
    assert scenario.diverges_under and scenario.clean_under
    assert scenario.hazard in HAZARDS and HAZARDS[scenario.hazard].flag
    for name in scenario.diverges_under:
        assert PROFILES[name].engine == scenario.engine
        run = run_scenario(scenario, name)
        assert run.verdict == "diverges" and run.as_expected, (scenario.name, name)
        first = run.findings[0]
        # the finding names every rank, the phase, and the hazard it reproduces
        for rank in range(scenario.dp_size):
            assert f"rank {rank}" in first.message or f", {rank}" in first.message
        assert first.phase and first.message.startswith(f"step {0} {first.phase}:")
        assert first.hazard == scenario.hazard and first.ref
        assert first.fix
    for name in scenario.clean_under:
        run = run_scenario(scenario, name)
        assert run.verdict == "clean" and run.as_expected, (scenario.name, name, run.findings)


def test_scenario_findings_say_who_does_what() -> None:
    seed = run_scenario(SCENARIOS["sglang-idle-vs-missing-seed"], "sglang-0.5.15")
    assert seed.findings[0].message.startswith(
        "step 0 draft_decode: rank 0 runs eager (4 tokens), rank 1 replays FULL(bs 4) — "
    )
    shift = run_scenario(SCENARIOS["vllm-drafter-phase-shift"], "vllm-v1-0.11-dp")
    assert "rank 0 enters draft_forward sync, rank 1 has no such sync" in shift.findings[0].message
    idle = run_scenario(SCENARIOS["vllm-mrv2-idle-rank-skips-propose"], "vllm-mrv2-pre-35294")
    assert "rank 1 does not run it" in idle.findings[0].message
    assert idle.findings[0].phase == "draft_prefill"
    doc = to_jsonable(idle)
    assert doc["verdict"] == "diverges" and doc["as_expected"] is True
    assert doc["steps"][0]["ranks"][0]["syncs"][0]["row"] == [8, 2, 4, 4, 0, 2, 0]


def test_profiles_pick_their_rule() -> None:
    v1 = ModelRunner.MRV1
    assert dp_rule(get_profile("vllm-current"), v1).kind is DpRuleKind.VLLM_V1_COORDINATE
    assert dp_rule(get_profile("vllm-v1-0.11-dp")).kind is DpRuleKind.VLLM_V1_TOKEN_SYNC
    assert dp_rule(get_profile("vllm-current")).kind is DpRuleKind.VLLM_MRV2_SYNC
    assert dp_rule(get_profile(None, "sglang")).kind is DpRuleKind.SGLANG_MLP_SYNC
    assert dp_rule(get_profile("vllm-current"), v1).hazards == ()
    assert dp_rule(get_profile("vllm-0.23"), v1).hazards == ("dp-drafter-skip-near-max-len",)
    with pytest.raises(Exception, match="did you mean"):
        get_scenario("vllm-drafter-phase-shfit")


# Setups the exploration runs per engine: the default and the A2A/prefill-graph variants the
# SGLang bugs need.
_SETUPS = {
    "vllm": (DpSetup(), DpSetup(num_speculative_tokens=1, capture_sizes=(1, 2, 4, 8, 16, 32))),
    "sglang": (
        DpSetup(),
        DpSetup(moe_a2a=A2ABackend.FLASHINFER),
        DpSetup(
            moe_a2a=A2ABackend.DEEPEP,
            draft_moe_a2a=A2ABackend.NONE,
            prefill_graph_tokens=(64, 128, 256, 512),
        ),
        DpSetup(
            moe_a2a=A2ABackend.FLASHINFER,
            prefill_graph_tokens=(64, 128, 256, 512),
            prefill_graph_dp_gather=True,
        ),
    ),
}
_CURRENT = (
    ("vllm-current", ModelRunner.MRV1),
    ("vllm-current", ModelRunner.MRV2),
    ("vllm-0.29", ModelRunner.MRV2),
    ("sglang-current", None),
)
_OLD = (
    ("vllm-v1-0.11-dp", None),
    ("vllm-v1-pre-25906", None),
    ("vllm-0.23", ModelRunner.MRV1),
    ("vllm-mrv2-pre-35294", None),
    ("sglang-0.5.15", None),
)


def _explore(profile: str, runner: ModelRunner | None, seeds: range) -> dict[str, set[str]]:
    """Every finding id per setup over the seeds, on 2 to 4 ranks."""
    engine = "sglang" if profile.startswith("sglang") else "vllm"
    found: dict[str, set[str]] = {}
    for i, setup in enumerate(_SETUPS[engine]):
        for seed in seeds:
            run = explore(profile, seed, dp_size=2 + seed % 3, steps=4, setup=setup,
                          runner=runner, engine=engine)  # fmt: skip
            found.setdefault(str(i), set()).update(f.id for f in run.findings)
    return found


@pytest.mark.parametrize(("profile", "runner"), _CURRENT)
def test_exploration_finds_no_divergence_under_current_profiles(
    profile: str, runner: ModelRunner | None
) -> None:
    """A few hundred seeded random per-rank batch mixes per setup: every invariant holds."""
    assert _explore(profile, runner, range(200)) == {
        str(i): set() for i in range(len(_SETUPS["sglang" if "sglang" in profile else "vllm"]))
    }


@pytest.mark.parametrize(("profile", "runner"), _OLD)
def test_exploration_finds_the_old_profiles_divergences(
    profile: str, runner: ModelRunner | None
) -> None:
    found = set().union(*_explore(profile, runner, range(60)).values())
    assert found, profile
    if profile == "sglang-0.5.15":
        assert {"dp.graph-key", "dp.graph-vs-eager"} <= found
    elif profile == "vllm-mrv2-pre-35294":
        assert "dp.absent" in found
    else:
        assert "dp.collectives" in found


def test_batches_and_setups_refuse_nonsense() -> None:
    with pytest.raises(ValueError):
        RankBatch(prefill_reqs=1)
    with pytest.raises(ValueError):
        RankBatch(decode_reqs=1, near_cap_reqs=2)
    with pytest.raises(ValueError):
        DpSetup(capture_sizes=(4, 2))
    assert decode(3, near_cap=1).label() == "decode 3 near-cap 1"
    assert RankBatch(decode_reqs=1, prefill_reqs=1, prefill_tokens=9).label() == "mixed 1+1×9"
