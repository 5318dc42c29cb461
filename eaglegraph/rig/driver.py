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

    def share(self, request: Request, owner: Request) -> None:
        """`request` starts from a hit on `owner`'s first `request.prefilled` positions."""
        ...


class Session:
    """Host-side request bookkeeping around a step engine: admit, step, finish."""

    def __init__(self, engine: StepEngine) -> None:
        self.engine = engine
        self.running: list[Request] = []
        self.free_slots = list(range(engine.max_num_seqs - 1, -1, -1))
        self.steps = 0
        self.last: StepRecord | None = None  # the last step's record

    def admit(
        self,
        rid: int,
        prompt: list[int],
        max_new_tokens: int,
        slot: int | None = None,
        chunk: int | None = None,
        prefix: tuple[Request, int] | None = None,
    ) -> Request:
        """Start a request in `slot` (None: the lowest free one); `chunk`: prompt tokens per
        prefill step (a chunked prefill); `prefix` (owner, tokens): a prefix-cache hit on the
        owner's first `tokens` positions (whole blocks), which the request shares and does
        not recompute (`StepEngine.share`)."""
        if not self.free_slots:
            raise BadInput(f"no free request slot (max_num_seqs {self.engine.max_num_seqs})")
        if slot is not None and slot not in self.free_slots:
            raise BadInput(f"request {rid}: slot {slot} is not free")
        need = len(prompt) + max_new_tokens  # vLLM caps max_tokens at max_model_len - prompt
        if need > self.engine.max_model_len:
            raise BadInput(
                f"request {rid} needs {need} positions but max_model_len is {self.engine.max_model_len}"
            )
        if slot is None:
            slot = self.free_slots[-1]
        self.free_slots.remove(slot)
        request = Request(rid, list(prompt), max_new_tokens, slot, chunk=chunk)
        if prefix is not None:
            owner, hit = prefix
            if not 0 < hit < len(prompt) or owner.prompt[:hit] != request.prompt[:hit]:
                raise BadInput(f"request {rid}: no cache hit of {hit} tokens on {owner.rid}")
            request.prefilled = hit
            self.engine.share(request, owner)
        self.running.append(request)
        return request

    def preempt(self, request: Request) -> list[int]:
        """Evict `request` (its KV and slot freed, as a server under memory pressure does);
        returns the tokens it had, which it recomputes as a prompt when it resumes."""
        tokens = list(request.tokens) if request.tokens else list(request.prompt)
        self.finish(request)
        return tokens

    def resume(
        self, rid: int, tokens: list[int], max_new_tokens: int, slot: int | None = None
    ) -> Request:
        """A preempted request back, in `slot`: its tokens so far are prefilled again."""
        return self.admit(rid, tokens, max_new_tokens, slot)

    def reorder(self, rids: tuple[int, ...]) -> None:
        """Batch rows by request id: `rids` first in that order, the others after."""
        rank = {rid: i for i, rid in enumerate(rids)}
        self.running.sort(key=lambda r: rank.get(r.rid, len(rank)))

    def batch(self) -> list[ScheduledRequest]:
        k = self.engine.num_speculative_tokens
        batch = []
        for r in self.running:
            if r.is_new:
                start, end = r.next_chunk()
                query, drafts = r.prompt[start:end], 0
            else:
                # near max_model_len the scheduler verifies only the drafts whose tokens fit
                # (vllm/v1/core/sched/scheduler.py::Scheduler.schedule: num_new_tokens <=
                # max_model_len - num_computed_tokens - 1)
                room = self.engine.max_model_len - len(r.tokens) - 1
                drafts = max(min(len(r.drafts), room), 0)
                query, start = [r.tokens[-1], *r.drafts[:drafts]], len(r.tokens) - 1
                end = start + len(query)
            self.engine.allocate(r, start + len(query) + k)
            backup = r.prompt[end] if r.is_new and end < len(r.prompt) else None
            batch.append(ScheduledRequest(r.rid, r.slot, query, start, drafts, r.blocks, backup))
        return batch

    def apply(self, batch: list[ScheduledRequest], out: StepOutput) -> StepRecord:
        proposed = []
        for j, r in enumerate(self.running):
            n = out.num_accepted[j]
            if r.is_new and r.next_chunk()[1] < len(r.prompt):
                # a partial prefill: its sampled token and drafts are discarded (the engine
                # samples nothing for a request whose prompt is not complete)
                r.prefilled = r.next_chunk()[1]
                proposed.append(0)
                continue
            new = (r.drafts[:n] if not r.is_new else []) + [out.next_tokens[j]]
            proposed.append(0 if r.is_new else batch[j].num_drafts)
            if r.is_new:
                r.tokens = list(r.prompt)
            room = r.max_new_tokens - r.generated
            r.tokens += new[:room]
            r.generated += min(len(new), room)
            r.proposed += proposed[-1]
            r.accepted += n
            r.drafts = list(out.draft_tokens[j])
        record = StepRecord(
            step=self.steps,
            num_reqs=len(batch),
            num_tokens=sum(len(b.query) for b in batch),
            rids=[b.rid for b in batch],
            draft_tokens=[list(d) for d in out.draft_tokens],
            accepted=list(out.num_accepted),
            proposed=proposed,
            next_tokens=list(out.next_tokens),
            descriptors=dict(out.descriptors),
        )
        self.steps += 1
        self.last = record
        return record

    def step(self) -> StepRecord:
        batch = self.batch()
        return self.apply(batch, self.engine.step(batch))

    def finish(self, request: Request) -> None:
        self.engine.release(request)
        self.free_slots.append(request.slot)
        self.running.remove(request)


def run_workload(
    engine: StepEngine,
    schedule: Schedule,
    on_step: Callable[[StepRecord], None] | None = None,
) -> WorkloadResult:
    prompts = make_prompts(schedule, engine.vocab_size)
    pending = sorted(range(len(schedule.arrivals)), key=lambda i: schedule.arrivals[i].step)
    session = Session(engine)
    records: list[StepRecord] = []
    tick = 0
    while (pending or session.running) and tick < schedule.max_steps:
        while pending and schedule.arrivals[pending[0]].step <= tick and session.free_slots:
            i = pending.pop(0)
            session.admit(i, prompts[i], schedule.arrivals[i].max_new_tokens)
        if session.running:
            record = session.step()
            record.step = tick
            records.append(record)
            if on_step is not None:
                on_step(record)
            for r in [r for r in session.running if r.done]:
                session.finish(r)
        tick += 1
    return WorkloadResult(schedule.name, records)
