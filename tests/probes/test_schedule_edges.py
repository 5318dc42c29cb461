"""The live schedules' edges (issue 27): a request reaching max_model_len and prefix-cache
hits that share KV blocks. The driver verifies only the drafts that fit under max_model_len,
a hit shares its owner's blocks and the allocator keeps a shared block until its last holder
leaves; under the probe the clean rig stays clean and a planted bug at each edge is found,
named by its buffer."""

from __future__ import annotations

import pytest

from benchmarks.bench_mutants import probe_once
from benchmarks.mutants import by_name, planted
from eaglegraph.probes.schedules import Limits, capped_schedule, check_schedule
from eaglegraph.rig.driver import Session, StepOutput
from eaglegraph.rig.kv_cache import BlockAllocator
from eaglegraph.rig.workload import Request, ScheduledRequest


class _Engine:
    """A step engine without a model: records batches, accepts every draft, drafts K."""

    max_num_seqs, num_speculative_tokens, max_model_len, vocab_size = 4, 3, 64, 100

    def __init__(self) -> None:
        self.batches: list[list[ScheduledRequest]] = []

    def step(self, batch: list[ScheduledRequest]) -> StepOutput:
        self.batches.append(batch)
        return StepOutput([7] * len(batch), [b.num_drafts for b in batch], [[5, 6, 8]] * len(batch))

    def allocate(self, request: Request, num_tokens: int) -> None:
        return None

    def release(self, request: Request) -> None:
        return None

    def share(self, request: Request, owner: Request) -> None:
        return None


def test_capped_request_verifies_only_drafts_that_fit() -> None:
    engine = _Engine()
    schedule = capped_schedule(4, 3, engine.max_model_len)
    # KV blocks held at once: 4 for the capped request, 2 for its neighbour
    assert check_schedule(schedule, Limits(4, 3, engine.max_model_len, 128)) == 6
    session = Session(engine)
    prompts = {a.rid: list(range(3, 3 + a.prompt_len)) for s in schedule.steps for a in s.arrive}
    for step in schedule.steps:
        for rid in step.finish:
            session.finish(next(r for r in session.running if r.rid == rid))
        for a in step.arrive:
            session.admit(a.rid, prompts[a.rid], a.max_new_tokens, a.slot, a.chunk)
        session.reorder(step.order)
        session.step()
    capped = [r for batch in engine.batches for r in batch if r.rid == 0]
    # the prefill, a verify of all K drafts, then one of none: its last position is
    # max_model_len - 2, and the request then holds exactly max_model_len tokens
    assert [r.num_drafts for r in capped] == [0, 3, 0]
    last = capped[-1]
    assert last.start_pos + len(last.query) == engine.max_model_len - 1
    assert all(r.start_pos + len(r.query) < engine.max_model_len for r in capped)


def test_capped_refused_past_max_model_len() -> None:
    schedule = capped_schedule(4, 3, 64)
    with pytest.raises(Exception, match="needs 64 positions, max_model_len is 63"):
        check_schedule(schedule, Limits(4, 3, 63, 128))


def test_shared_block_stays_until_its_last_holder_leaves() -> None:
    alloc = BlockAllocator(8, 16, 8)
    owner: list[int] = []
    alloc.ensure(0, owner, 40)  # three blocks
    shared = owner[:1]
    alloc.share(shared)
    alloc.release(owner)
    assert shared[0] not in alloc.unowned_blocks()  # the sharer still holds it
    fresh: list[int] = []
    alloc.ensure(1, fresh, 16 * 6)  # every other block
    assert shared[0] not in fresh  # never handed out while shared
    alloc.release(list(shared))
    assert shared[0] in alloc.unowned_blocks()


# each planted bug at an edge: found in the live case, by the buffer it is in
EDGE_MUTANTS = ["shared-block-freed-early", "hit-shares-partial-block",
                "draft-positions-not-clamped"]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("name", EDGE_MUTANTS)
def test_edge_mutant_found_by_buffer(name: str) -> None:
    mutant = by_name(name)
    with planted(mutant):
        run = probe_once(mutant.backend, "NONE", 3, capture_sizes=(4, 16))
    assert all(c.status == "ok" for c in run.cases), [c.error for c in run.cases]
    hits = {(f.phase, f.buffer) for f in run.findings if f.kernel}
    assert any(p == mutant.phase and b in mutant.buffers for p, b in hits), hits


# the clean rig at these edges: test_identity_live.test_clean_rig_live_case_sees_permuted_slots
# (the same NONE probe, live and capped schedules included; NONE captures no graph, so the
# capture sizes this file's mutants use change nothing there)


def test_capped_probed_in_one_mode_only() -> None:
    from eaglegraph.probes.probing import plan_cases
    from eaglegraph.probes.spec import resolve_run

    plan = {"max_num_seqs": 4, "num_speculative_tokens": 3}
    spec = resolve_run("tiny-llama-eagle3", plan=plan, device="cpu", max_model_len=256)
    cases = plan_cases(spec, ["all"])
    capped = [c.mode for c in cases if c.schedule is not None and c.schedule.name == "capped"]
    live = [c.mode for c in cases if c.schedule is not None and c.schedule.name == "live"]
    assert capped == [spec.options.mode.name] and len(live) > 1
    alone = plan_cases(spec, ["NONE"])  # a mode probed alone probes it there
    assert {c.schedule.name for c in alone if c.schedule is not None} == {"live", "capped"}
