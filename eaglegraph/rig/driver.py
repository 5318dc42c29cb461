"""The workload driver: runs a schedule through any step engine (the rig, or the reference).

Both engines get identical batches, so their token traces can be compared step by step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from eaglegraph.errors import BadInput
from eaglegraph.rig.workload import (
    Request,
    Schedule,
    ScheduledRequest,
    StepRecord,
    WorkloadResult,
    make_prompts,
)


@dataclass
class StepOutput:
    next_tokens: list[int]
    num_accepted: list[int]
    draft_tokens: list[list[int]]
    descriptors: dict[str, str] = field(default_factory=dict)


class StepEngine(Protocol):
    max_num_seqs: int
    num_speculative_tokens: int
    max_model_len: int
    vocab_size: int

    def step(self, batch: list[ScheduledRequest]) -> StepOutput: ...

    def allocate(self, request: Request, num_tokens: int) -> None: ...

    def release(self, request: Request) -> None: ...


def run_workload(
    engine: StepEngine,
    schedule: Schedule,
    on_step: Callable[[StepRecord], None] | None = None,
) -> WorkloadResult:
    k = engine.num_speculative_tokens
    prompts = make_prompts(schedule, engine.vocab_size)
    pending = sorted(range(len(schedule.arrivals)), key=lambda i: schedule.arrivals[i].step)
    for i, arrival in enumerate(schedule.arrivals):
        need = arrival.prompt_len + arrival.max_new_tokens + 2 * k + 2
        if need > engine.max_model_len:
            raise BadInput(
                f"request {i} needs {need} positions but max_model_len is {engine.max_model_len}"
            )
    running: list[Request] = []
    free_slots = list(range(engine.max_num_seqs - 1, -1, -1))
    records: list[StepRecord] = []
    step = 0
    while (pending or running) and step < schedule.max_steps:
        while pending and schedule.arrivals[pending[0]].step <= step and free_slots:
            i = pending.pop(0)
            running.append(
                Request(i, prompts[i], schedule.arrivals[i].max_new_tokens, free_slots.pop())
            )
        if not running:
            step += 1
            continue
        batch = []
        for r in running:
            if r.is_new:
                query, start, drafts = list(r.prompt), 0, 0
            else:
                query, start, drafts = [r.tokens[-1], *r.drafts], len(r.tokens) - 1, len(r.drafts)
            engine.allocate(r, start + len(query) + k)
            batch.append(ScheduledRequest(r.rid, r.slot, query, start, drafts, r.blocks))
        out = engine.step(batch)
        proposed = []
        for j, r in enumerate(running):
            n = out.num_accepted[j]
            new = (r.drafts[:n] if not r.is_new else []) + [out.next_tokens[j]]
            proposed.append(0 if r.is_new else len(r.drafts))
            if r.is_new:
                r.tokens = list(r.prompt)
            room = r.max_new_tokens - r.generated
            r.tokens += new[:room]
            r.generated += min(len(new), room)
            r.proposed += proposed[-1]
            r.accepted += n
            r.drafts = list(out.draft_tokens[j])
        record = StepRecord(
            step=step,
            num_reqs=len(batch),
            num_tokens=sum(len(b.query) for b in batch),
            rids=[b.rid for b in batch],
            draft_tokens=[list(d) for d in out.draft_tokens],
            accepted=list(out.num_accepted),
            proposed=proposed,
            next_tokens=list(out.next_tokens),
            descriptors=dict(out.descriptors),
        )
        records.append(record)
        if on_step is not None:
            on_step(record)
        for r in [r for r in running if r.done]:
            engine.release(r)
            free_slots.append(r.slot)
            running.remove(r)
        step += 1
    return WorkloadResult(schedule.name, records)
