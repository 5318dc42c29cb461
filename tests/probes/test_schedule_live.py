"""Live-server schedules (issue 27): the default set covers what a server does, a user's JSON
round-trips, a bad one is refused in one line naming step and field before any work, and the
driver runs it with batch rows that are a changing permutation of request slots."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.errors import BadInput
from eaglegraph.probes.schedules import (
    Limits,
    check_schedule,
    default_schedules,
    load_schedule,
    schedule_from_json,
    schedule_to_json,
)
from eaglegraph.rig.driver import Session, StepOutput
from eaglegraph.rig.workload import Request, ScheduledRequest

LIMITS = Limits(max_num_seqs=4, num_speculative_tokens=3, max_model_len=256, max_tokens=64)


class _Recorder:
    """A step engine that records each batch and drafts K fixed tokens (no model)."""

    max_num_seqs, num_speculative_tokens, max_model_len, vocab_size = 4, 3, 256, 100

    def __init__(self) -> None:
        self.batches: list[list[ScheduledRequest]] = []

    def step(self, batch: list[ScheduledRequest]) -> StepOutput:
        self.batches.append(batch)
        n = len(batch)
        return StepOutput([7] * n, [0] * n, [[5, 6, 8]] * n)

    def allocate(self, request: Request, num_tokens: int) -> None:
        return None

    def release(self, request: Request) -> None:
        return None

    def share(self, request: Request, owner: Request) -> None:
        request.blocks = [owner.rid]  # the owner's block, by a name the test can read


def _run(schedule_steps: int = 99) -> list[list[ScheduledRequest]]:
    """The default schedule through the driver alone (what the probe's live case does)."""
    (schedule,) = default_schedules(4, 3)
    engine = _Recorder()
    session = Session(engine)
    kept: dict[int, tuple[list[int], int]] = {}
    for step in schedule.steps[:schedule_steps]:
        by_rid = {r.rid: r for r in session.running}
        for rid in step.finish:
            session.finish(by_rid[rid])
        for rid in step.preempt:
            r = by_rid[rid]
            kept[rid] = (session.preempt(r), r.max_new_tokens - r.generated)
        for rid, slot in step.resume:
            session.resume(rid, *kept[rid], slot)
        for a in step.arrive:
            hit = None
            if a.prefix is not None:
                owner = next(r for r in session.running if r.rid == a.prefix[0])
                hit = (owner, a.prefix[1] * 16)
            session.admit(
                a.rid, list(range(3, 3 + a.prompt_len)), a.max_new_tokens, a.slot, a.chunk, hit
            )
        session.reorder(step.order)
        session.step()
    return engine.batches


def test_default_schedule_covers_a_live_server() -> None:
    (schedule,) = default_schedules(4, 3)
    assert check_schedule(schedule, LIMITS) > 0
    batches = _run()
    slots = [[b.slot for b in batch] for batch in batches]
    # batch rows are not their slots, and the permutation changes from step to step
    assert any(s != list(range(len(s))) for s in slots)
    assert all(a != b for a, b in itertools.pairwise(slots))
    # a chunked prefill (start > 0, no drafts, a backup token) beside decodes
    mixed = [b for b in batches if any(r.num_drafts for r in b)
             and any(r.num_drafts == 0 and r.start_pos > 0 for r in b)]  # fmt: skip
    assert mixed
    assert any(r.backup_token is not None for b in batches for r in b)
    # a preempted request comes back in another slot and recomputes its tokens from 0
    rid0 = [(i, r.slot, r.start_pos) for i, b in enumerate(batches) for r in b if r.rid == 0]
    assert rid0[0][1] == 3 and any(slot == 0 and start == 0 for _, slot, start in rid0[1:])
    # a freed slot is taken by a new request in the same step
    assert any(r.rid == 3 and r.slot == 3 for r in batches[3])
    # every accept count 0..K is forced somewhere
    counts = {n for s in schedule.steps for _, n in s.accept}
    assert counts == set(range(4))
    # a prefix-cache hit: request 5 starts past request 4's first block and holds it, and
    # request 4 finishes while 5 runs, with a new request arriving into what 4 freed
    (hit,) = [r for b in batches for r in b if r.rid == 5 and r.num_drafts == 0]
    assert hit.start_pos == 16 and hit.blocks[:1] == [4] and len(hit.query) == 3 + 8
    assert 4 in schedule.steps[8].finish and [a.rid for a in schedule.steps[8].arrive] == [6]
    assert any(r.rid == 5 for r in batches[8])


def test_default_needs_three_slots() -> None:
    assert default_schedules(2, 3) == ()


def test_json_round_trip(tmp_path: Path) -> None:
    (schedule,) = default_schedules(4, 3)
    path = tmp_path / "live.json"
    path.write_text(json.dumps(schedule_to_json(schedule)))
    assert load_schedule(str(path)) == schedule


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([{"arrive": [{"rid": 0, "prompt_len": 9, "slot": 4}]}],
         "schedule step 0 arrive[0].slot: slot 4 is past max_num_seqs 4"),
        ([{"arrive": [{"rid": 0, "prompt_len": 9, "slot": 1}]},
          {"arrive": [{"rid": 1, "prompt_len": 9, "slot": 1}]}],
         "schedule step 1 arrive[0].slot: slot 1 is held by request 0"),
        ([{"arrive": [{"rid": 0, "prompt_len": "9"}]}],
         'schedule step 0 arrive[0].prompt_len: expected an integer, got "9"'),
        ([{"arrive": [{"rid": 0}]}], "schedule step 0 arrive[0].prompt_len: missing"),
        ([{"arrive": [{"rid": 0, "prompt_len": 9}]}, {"finish": [3]}],
         "schedule step 1 finish[0]: request 3 is not running"),
        ([{"arrive": [{"rid": 0, "prompt_len": 9}], "accept": {"0": 1}}],
         "schedule step 0 accept.0: request 0 has no drafts this step"),
        ([{"arrive": [{"rid": 0, "prompt_len": 9}]}, {"accept": {"0": 4}}],
         "schedule step 1 accept.0: 4 accepted drafts is more than K=3"),
        ([{"arrive": [{"rid": 0, "prompt_len": 250}]}],
         "schedule step 0 arrive[0].prompt_len: request 0 needs 314 positions, max_model_len is 256"),
        ([{"arrive": [{"rid": 0, "prompt_len": 65}]}],
         "schedule step 0: 65 tokens exceed max_num_batched_tokens 64"),
        ([{"arrive": [{"rid": 0, "prompt_len": 9}]}, {"resume": [0]}],
         "schedule step 1 resume[0]: request 0 was not preempted"),
        ([{"arrive": [{"rid": 0, "prompt_len": 9}]}, {"order": [0, 0]}],
         "schedule step 1 order: a request is listed twice"),
        ([{"arrive": [{"rid": 0, "prompt_len": 9}], "when": 3}],
         "schedule step 0 when: unknown field"),
        ([{"finish": [0]}], "schedule step 0 finish[0]: request 0 is not running"),
        ([{"arrive": [{"rid": 0, "prompt_len": 18}]},
          {"arrive": [{"rid": 1, "prompt_len": 30, "prefix": {"rid": 0, "blocks": 1}}]}],
         "schedule step 1 arrive[0].prefix.blocks: request 0's prompt has fewer than 20"),
        ([{"arrive": [{"rid": 0, "prompt_len": 40, "chunk": 8}]},
          {"arrive": [{"rid": 1, "prompt_len": 30, "prefix": {"rid": 0, "blocks": 1}}]}],
         "schedule step 1 arrive[0].prefix.rid: request 0 is not running past its prefill"),
        ([{"arrive": [{"rid": 0, "prompt_len": 40}]},
          {"arrive": [{"rid": 1, "prompt_len": 20, "prefix": {"rid": 0, "blocks": 1}}]}],
         "schedule step 1 arrive[0].prefix: prompt_len 20 leaves nothing past the shared 20"),
        ([{"arrive": [{"rid": 1, "prompt_len": 30, "prefix": {"rid": 0}}]}],
         'schedule step 0 arrive[0].prefix: expected {"rid": N, "blocks": B}'),
    ],
)  # fmt: skip
def test_bad_schedule_names_step_and_field(steps: list[dict], message: str) -> None:
    with pytest.raises(BadInput) as err:
        check_schedule(schedule_from_json({"steps": steps}), LIMITS)
    assert str(err.value).startswith(message), str(err.value)
    assert "\n" not in str(err.value)


def test_cli_refuses_a_bad_schedule_before_any_work(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    steps = [{"arrive": [{"rid": 0, "prompt_len": 9, "slot": 3}]},
             {"arrive": [{"rid": 1, "prompt_len": 5, "slot": 3}]}]  # fmt: skip
    path.write_text(json.dumps({"steps": steps}))
    out = CliRunner().invoke(cli, ["probe", "tiny-llama-eagle3", "--schedule", str(path)])
    assert out.exit_code == 2
    assert "schedule step 1 arrive[0].slot: slot 3 is held by request 0" in out.output
    path.write_text("{not json")
    out = CliRunner().invoke(cli, ["probe", "tiny-llama-eagle3", "--schedule", str(path)])
    assert out.exit_code == 2 and "not JSON" in out.output


def test_default_left_out_where_it_cannot_fit_a_given_one_refused() -> None:
    from eaglegraph.probes.probing import live_schedules
    from eaglegraph.probes.spec import resolve_run

    plan = {"max_num_seqs": 4, "num_speculative_tokens": 3}
    roomy = resolve_run("tiny-llama-eagle3", plan=plan, device="cpu", max_model_len=256)
    assert [s.name for s in live_schedules(roomy)] == ["live", "capped"]
    assert live_schedules(roomy, batches=[3]) == ()  # named batches only
    tight = resolve_run(
        "tiny-llama-eagle3", plan={**plan, "max_num_batched_tokens": 8}, device="cpu"
    )
    assert live_schedules(tight) == ()
    with pytest.raises(BadInput, match="schedule step 0: 17 tokens exceed"):
        live_schedules(tight, default_schedules(4, 3))
