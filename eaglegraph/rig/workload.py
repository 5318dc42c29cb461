"""Workloads: schedules in which requests join and finish, so batches grow and shrink.

Shrinking batches are the real trigger of stale padding: a graph captured for a larger batch
replays over buffers whose tails still hold the larger batch's values. The driver keeps all
request bookkeeping on the host (tokens, drafts, blocks) and hands the rig one batch per step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Arrival:
    step: int
    prompt_len: int
    max_new_tokens: int


@dataclass(frozen=True)
class Schedule:
    name: str
    arrivals: tuple[Arrival, ...]
    seed: int = 0
    max_steps: int = 200

    @classmethod
    def grow_shrink(cls, max_num_seqs: int, seed: int = 0, waves: int = 2) -> Schedule:
        """Requests join one per step up to max_num_seqs, leave at staggered times, then a
        second wave joins while the first drains: batch sizes rise, fall and rise again."""
        arrivals = []
        step = 0
        for wave in range(waves):
            for i in range(max_num_seqs):
                arrivals.append(
                    Arrival(
                        step=step + i,
                        prompt_len=3 + (5 * i + 3 * wave) % 9,
                        max_new_tokens=6 + (7 * (max_num_seqs - i) + 5 * wave) % 17,
                    )
                )
            step += max_num_seqs + 6
        return cls("grow-shrink", tuple(arrivals), seed)


@dataclass(frozen=True)
class Arrive:
    """A request joining a live schedule: its prompt, the request slot it takes (its row of
    every per-request table; None: the lowest free one) and, for a chunked prefill, the most
    prompt tokens it is given per step. `prefix` (rid, blocks): a prefix-cache hit, the
    first `blocks` full KV blocks of that running request's prompt, shared (not copied)."""

    rid: int
    prompt_len: int
    max_new_tokens: int = 64
    slot: int | None = None
    chunk: int | None = None
    prefix: tuple[int, int] | None = None


@dataclass(frozen=True)
class LiveStep:
    """One step of a live server's schedule. Before the step runs: `finish` leave (KV and slot
    freed), `preempt` are evicted (KV and slot freed, tokens kept), `resume` (rid, slot) come
    back and recompute their tokens as a prefill, `arrive` join. `order`: the batch rows by
    request id (the rest follow in running order), so batch row and request slot differ and
    change from step to step. `accept`: drafts the target accepts per request id (the others
    draft freely): K - accept are rejected."""

    arrive: tuple[Arrive, ...] = ()
    finish: tuple[int, ...] = ()
    preempt: tuple[int, ...] = ()
    resume: tuple[tuple[int, int | None], ...] = ()
    order: tuple[int, ...] = ()
    accept: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class LiveSchedule:
    """Steps over which requests arrive, finish, are preempted and resumed, as a server runs."""

    name: str
    steps: tuple[LiveStep, ...]
    what: str = ""
    seed: int = 0
    # probed in one mode only (the run's own, where probed): a long one's cost, every mode
    once: bool = False


@dataclass
class Request:
    rid: int
    prompt: list[int]
    max_new_tokens: int
    slot: int
    tokens: list[int] = field(default_factory=list)
    drafts: list[int] = field(default_factory=list)
    blocks: list[int] = field(default_factory=list)
    generated: int = 0
    proposed: int = 0
    accepted: int = 0
    chunk: int | None = None  # chunked prefill: prompt tokens per step (None: all at once)
    prefilled: int = 0  # prompt tokens a chunked prefill has computed so far
    forced: bool = False  # its drafts were replaced by a caller (the probe) at some step

    @property
    def is_new(self) -> bool:
        return not self.tokens

    def next_chunk(self) -> tuple[int, int]:
        """(start, end) of the prompt tokens this request's next prefill step computes."""
        end = len(self.prompt) if self.chunk is None else self.prefilled + self.chunk
        return self.prefilled, min(end, len(self.prompt))

    @property
    def done(self) -> bool:
        return self.generated >= self.max_new_tokens


@dataclass
class ScheduledRequest:
    """What the rig sees of one request in one step."""

    rid: int
    slot: int
    query: list[int]
    start_pos: int
    num_drafts: int
    blocks: list[int]
    # a partial (chunked) prefill's next prompt token: the draft is fed it in place of a
    # sampled one, whose value is discarded (vLLM: vllm/v1/spec_decode/eagle.py::
    # prepare_next_token_ids_padded, the backup token of each discarded request)
    backup_token: int | None = None


@dataclass
class StepRecord:
    step: int
    num_reqs: int
    num_tokens: int
    rids: list[int]
    draft_tokens: list[list[int]]
    accepted: list[int]
    proposed: list[int]
    next_tokens: list[int]
    descriptors: dict[str, str]

    @property
    def acceptance_rate(self) -> float | None:
        proposed = sum(self.proposed)
        return sum(self.accepted) / proposed if proposed else None


@dataclass
class WorkloadResult:
    schedule: str
    steps: list[StepRecord]

    @property
    def acceptance_rate(self) -> float | None:
        proposed = sum(sum(s.proposed) for s in self.steps)
        accepted = sum(sum(s.accepted) for s in self.steps)
        return accepted / proposed if proposed else None

    def token_trace(self) -> list[tuple[int, tuple[int, ...], tuple[tuple[int, ...], ...]]]:
        """Per step: (step, accepted counts, draft tokens) — what equivalence tests compare."""
        return [
            (s.step, tuple(s.accepted), tuple(tuple(d) for d in s.draft_tokens)) for s in self.steps
        ]


def make_prompts(schedule: Schedule, vocab_size: int) -> list[list[int]]:
    rng = np.random.default_rng(schedule.seed)
    low = min(3, vocab_size - 1)  # skip the lowest ids (bos/eos/pad in real vocabularies)
    return [rng.integers(low, vocab_size, size=a.prompt_len).tolist() for a in schedule.arrivals]
