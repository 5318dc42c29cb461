"""Live-server schedules for the probe: the default set, a user's JSON, and their validation.

The probe's padding cases run three steps in which batch row and request slot coincide; a live
server's batch is a permutation of request slots that changes every step (vLLM MRV2's
`idx_mapping`, SGLang's `req_pool_indices`): requests arrive into freed slots, finish, are
preempted and resumed, and chunked prefills run beside decodes. A schedule says all of that
per step (`rig.workload.LiveSchedule`); the probe runs it in lockstep with the dense
reference, checking the step's invariants and the reference differential at every step, so
per-request state read by batch row instead of by slot is seen.

A schedule file (`probe --schedule FILE.json`)::

    {"name": "mine",
     "steps": [
       {"arrive": [{"rid": 0, "prompt_len": 9, "slot": 3},
                   {"rid": 1, "prompt_len": 21, "slot": 1, "chunk": 8}]},
       {"arrive": [{"rid": 2, "prompt_len": 6, "slot": 0}], "order": [2, 1, 0],
        "accept": {"0": 0}},
       {"preempt": [0], "finish": [2], "resume": [{"rid": 0, "slot": 2}]},
       {"arrive": [{"rid": 3, "prompt_len": 30, "prefix": {"rid": 1, "blocks": 1}}]}
     ]}

`prefix`: a prefix-cache hit — the request's prompt begins with the first `blocks` full KV
blocks of a running request's prompt (and the K + 1 tokens after them, so the draft KV of the
hit's last position, computed from the next token, is the same: vLLM drops the last hit block
for EAGLE for that reason), and it takes those physical blocks instead of computing them.

Everything is checked against the run (request slots, K, max_model_len, the step's token
budget) before any work; a bad file is refused in one line naming the step and the field.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from eaglegraph.errors import BadInput
from eaglegraph.rig.config import RigConfig
from eaglegraph.rig.workload import Arrive, LiveSchedule, LiveStep

STEP_KEYS = ("arrive", "finish", "preempt", "resume", "order", "accept")
ARRIVE_KEYS = ("rid", "prompt_len", "max_new_tokens", "slot", "chunk", "prefix")


def _fail(where: str, why: str) -> BadInput:
    return BadInput(f"schedule {where}: {why}")


def _int(value: Any, where: str, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(where, f"expected an integer, got {json.dumps(value)}")
    if value < low:
        raise _fail(where, f"must be at least {low}, got {value}")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(where, f"expected a list, got {json.dumps(value)}")
    return value


def _arrive(data: Any, where: str) -> Arrive:
    if not isinstance(data, dict):
        raise _fail(where, f"expected an object, got {json.dumps(data)}")
    unknown = sorted(set(data) - set(ARRIVE_KEYS))
    if unknown:
        raise _fail(f"{where}.{unknown[0]}", f"unknown field (fields: {', '.join(ARRIVE_KEYS)})")
    for key in ("rid", "prompt_len"):
        if key not in data:
            raise _fail(f"{where}.{key}", "missing")
    opt = {k: _int(data[k], f"{where}.{k}", 1) for k in ("chunk",) if data.get(k) is not None}
    if data.get("slot") is not None:
        opt["slot"] = _int(data["slot"], f"{where}.slot")
    return Arrive(
        rid=_int(data["rid"], f"{where}.rid"),
        prompt_len=_int(data["prompt_len"], f"{where}.prompt_len", 1),
        max_new_tokens=_int(data.get("max_new_tokens", 64), f"{where}.max_new_tokens", 1),
        prefix=_prefix(data.get("prefix"), f"{where}.prefix"),
        **opt,
    )


def _prefix(data: Any, where: str) -> tuple[int, int] | None:
    if data is None:
        return None
    if not isinstance(data, dict) or set(data) != {"rid", "blocks"}:
        raise _fail(where, 'expected {"rid": N, "blocks": B}')
    return _int(data["rid"], f"{where}.rid"), _int(data["blocks"], f"{where}.blocks", 1)


def _resume(data: Any, where: str) -> tuple[int, int | None]:
    if isinstance(data, int) and not isinstance(data, bool):
        return _int(data, where), None
    if not isinstance(data, dict) or "rid" not in data or set(data) - {"rid", "slot"}:
        raise _fail(where, 'expected a request id or {"rid": N, "slot": S}')
    slot = data.get("slot")
    return _int(data["rid"], f"{where}.rid"), None if slot is None else _int(slot, f"{where}.slot")


def _step(data: Any, i: int) -> LiveStep:
    where = f"step {i}"
    if not isinstance(data, dict):
        raise _fail(where, f"expected an object, got {json.dumps(data)}")
    unknown = sorted(set(data) - set(STEP_KEYS))
    if unknown:
        raise _fail(f"{where} {unknown[0]}", f"unknown field (fields: {', '.join(STEP_KEYS)})")
    accept = data.get("accept", {})
    if not isinstance(accept, dict):
        raise _fail(f"{where} accept", 'expected an object {"rid": accepted drafts}')
    pairs = []
    for rid, n in accept.items():
        try:
            key = int(rid)
        except ValueError:
            raise _fail(f"{where} accept", f"key {rid!r} is not a request id") from None
        pairs.append((key, _int(n, f"{where} accept.{rid}")))

    def each(key: str, parse: Callable[[Any, str], Any]) -> tuple[Any, ...]:
        items = _list(data.get(key, []), f"{where} {key}")
        return tuple(parse(item, f"{where} {key}[{j}]") for j, item in enumerate(items))

    return LiveStep(
        arrive=each("arrive", _arrive),
        finish=each("finish", _int),
        preempt=each("preempt", _int),
        resume=each("resume", _resume),
        order=each("order", _int),
        accept=tuple(pairs),
    )


def schedule_from_json(data: Any, name: str = "user") -> LiveSchedule:
    """A schedule from its JSON form (the file's layout is this module's docstring)."""
    if not isinstance(data, dict):
        raise _fail("file", "expected an object with a list of steps")
    unknown = sorted(set(data) - {"name", "steps", "what", "seed"})
    if unknown:
        raise _fail(unknown[0], "unknown field (fields: name, steps, what, seed)")
    steps = _list(data.get("steps"), "steps")
    if not steps:
        raise _fail("steps", "no steps")
    return LiveSchedule(
        name=str(data.get("name", name)),
        steps=tuple(_step(s, i) for i, s in enumerate(steps)),
        what=str(data.get("what", "")),
        seed=_int(data.get("seed", 0), "seed"),
    )


def schedule_to_json(schedule: LiveSchedule) -> dict[str, Any]:
    """The JSON form `schedule_from_json` reads (what a probe case carries to its worker)."""
    steps = []
    for s in schedule.steps:
        step: dict[str, Any] = {}
        if s.arrive:
            step["arrive"] = [_arrive_json(a) for a in s.arrive]
        for key in ("finish", "preempt", "order"):
            if getattr(s, key):
                step[key] = list(getattr(s, key))
        if s.resume:
            step["resume"] = [{"rid": r, "slot": slot} for r, slot in s.resume]
        if s.accept:
            step["accept"] = {str(r): n for r, n in s.accept}
        steps.append(step)
    return {"name": schedule.name, "what": schedule.what, "seed": schedule.seed, "steps": steps}


def _arrive_json(a: Arrive) -> dict[str, Any]:
    out = {k: v for k, v in vars(a).items() if v is not None and k != "prefix"}
    if a.prefix is not None:
        out["prefix"] = {"rid": a.prefix[0], "blocks": a.prefix[1]}
    return out


def live_prompts(
    schedule: LiveSchedule, vocab_size: int, block_size: int, num_speculative_tokens: int
) -> dict[int, list[int]]:
    """Each arrival's prompt (seeded by the schedule): a prefix hit's begins with its owner's
    hit blocks and the K + 1 tokens after them (`check_schedule` checks the owner has them)."""
    arrivals = [a for s in schedule.steps for a in s.arrive]
    rng = np.random.default_rng(schedule.seed)
    prompts = {a.rid: rng.integers(3, vocab_size, size=a.prompt_len).tolist() for a in arrivals}
    for a in arrivals:
        if a.prefix is not None:
            owner, blocks = a.prefix
            n = blocks * block_size + num_speculative_tokens + 1
            prompts[a.rid][:n] = prompts[owner][:n]
    return prompts


def load_schedule(path: str) -> LiveSchedule:
    """A schedule file: read and parsed (its limits are checked against the run by
    `check_schedule`)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise BadInput(f"--schedule {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"--schedule {path}: not JSON ({exc.msg}, line {exc.lineno})") from None
    return schedule_from_json(data, Path(path).stem)


@dataclass
class _Live:
    """One request as the validation follows it."""

    slot: int
    prompt: int  # prompt tokens (a resumed request's: every token it had)
    chunk: int | None
    max_new: int
    prefilled: int = 0
    generated: int = 0
    decoding: bool = False
    steps: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Limits:
    """What a schedule must fit: the run's request slots, K, context and token budget."""

    max_num_seqs: int
    num_speculative_tokens: int
    max_model_len: int
    max_tokens: int
    block_size: int = RigConfig.block_size  # what a prefix hit counts in (no run changes it)


def check_schedule(schedule: LiveSchedule, limits: Limits) -> int:
    """Follow the schedule on the host and refuse, in one line naming the step and field,
    anything the engine could not run: a slot out of range or held, an unknown or repeated
    request, a batch past max_num_seqs or the token budget, a request past max_model_len, an
    accept count outside 0..K or for a request that has no drafts that step, a prefix hit on
    a request that is not decoding or has fewer prompt tokens. Returns the most KV blocks its
    running requests can hold at once (what the probe sizes its KV pool for: one request
    near a long max_model_len must not size every request's share)."""
    k, r = limits.num_speculative_tokens, limits.max_num_seqs
    running: dict[int, _Live] = {}
    preempted: dict[int, _Live] = {}
    seen: set[int] = set()
    most = 0
    holds: dict[int, int] = {}  # KV blocks each running request can hold
    for i, step in enumerate(schedule.steps):
        w = f"step {i}"
        for field_name, rids in (("finish", step.finish), ("preempt", step.preempt)):
            for j, rid in enumerate(rids):
                if rid not in running:
                    raise _fail(f"{w} {field_name}[{j}]", f"request {rid} is not running")
                live = running.pop(rid)
                if field_name == "preempt":
                    live.prompt += live.generated
                    live.max_new -= live.generated
                    live.prefilled = live.generated = 0
                    live.decoding, live.chunk = False, None
                    preempted[rid] = live
        joins: list[tuple[str, int, _Live, int | None]] = []
        for j, (rid, slot) in enumerate(step.resume):
            if rid not in preempted:
                raise _fail(f"{w} resume[{j}]", f"request {rid} was not preempted")
            joins.append((f"{w} resume[{j}]", rid, preempted.pop(rid), slot))
        for j, a in enumerate(step.arrive):
            if a.rid in seen:
                raise _fail(f"{w} arrive[{j}].rid", f"request {a.rid} already arrived")
            seen.add(a.rid)
            hit = _hit(a, running, limits, f"{w} arrive[{j}].prefix")
            joins.append(
                (
                    f"{w} arrive[{j}]",
                    a.rid,
                    _Live(-1, a.prompt_len, a.chunk, a.max_new_tokens, prefilled=hit),
                    a.slot,
                )
            )
        for where, rid, live, slot in joins:
            held = {x.slot for x in running.values()}
            if slot is not None and not slot < r:
                raise _fail(f"{where}.slot", f"slot {slot} is past max_num_seqs {r}")
            if slot is not None and slot in held:
                owner = next(q for q, x in running.items() if x.slot == slot)
                raise _fail(f"{where}.slot", f"slot {slot} is held by request {owner}")
            # the lowest free slot: at most len(held) + 1 tries, whatever max_num_seqs is
            first_free = next((s for s in range(r) if s not in held), None)
            if first_free is None:
                raise _fail(where, f"no free request slot (max_num_seqs {r})")
            need = live.prompt + live.max_new  # vLLM caps max_tokens at max_model_len - prompt
            if need > limits.max_model_len:
                raise _fail(
                    f"{where}.prompt_len",
                    f"request {rid} needs {need} positions, max_model_len is {limits.max_model_len}",
                )
            # what its KV can hold: K lookahead slots twice over, up to max_model_len
            holds[rid] = -(-min(need + 2 * k + 2, limits.max_model_len) // limits.block_size)
            live.slot = first_free if slot is None else slot
            running[rid] = live
        if not running:
            raise _fail(w, "no request is running")
        most = max(most, sum(holds[rid] for rid in running))
        for j, rid in enumerate(step.order):
            if rid not in running:
                raise _fail(f"{w} order[{j}]", f"request {rid} is not running")
        if len(set(step.order)) != len(step.order):
            raise _fail(f"{w} order", "a request is listed twice")
        for rid, n in step.accept:
            live_or_none = running.get(rid)
            if live_or_none is None or not live_or_none.decoding:
                raise _fail(f"{w} accept.{rid}", f"request {rid} has no drafts this step")
            if n > k:
                raise _fail(f"{w} accept.{rid}", f"{n} accepted drafts is more than K={k}")
        tokens = 0
        for live in running.values():
            if live.decoding:
                tokens += k + 1
            else:
                end = live.prompt if live.chunk is None else live.prefilled + live.chunk
                tokens += min(end, live.prompt) - live.prefilled
        if tokens > limits.max_tokens:
            raise _fail(w, f"{tokens} tokens exceed max_num_batched_tokens {limits.max_tokens}")
        for live in list(running.values()):
            if live.decoding:
                live.generated += 1  # at least the bonus token
            else:
                end = live.prompt if live.chunk is None else live.prefilled + live.chunk
                live.prefilled = min(end, live.prompt)
                if live.prefilled == live.prompt:
                    live.decoding, live.generated = True, 1
    return most


def _hit(a: Arrive, running: dict[int, _Live], limits: Limits, where: str) -> int:
    """The positions a prefix hit skips (0: none), checked against its owner's prompt."""
    if a.prefix is None:
        return 0
    owner, blocks = a.prefix
    live = running.get(owner)
    if live is None or not live.decoding:
        raise _fail(f"{where}.rid", f"request {owner} is not running past its prefill")
    hit = blocks * limits.block_size
    shared = hit + limits.num_speculative_tokens + 1  # the draft KV of the hit needs them
    if shared > live.prompt:
        raise _fail(f"{where}.blocks", f"request {owner}'s prompt has fewer than {shared} tokens")
    if shared >= a.prompt_len:
        raise _fail(where, f"prompt_len {a.prompt_len} leaves nothing past the shared {shared}")
    return hit


def default_schedules(
    max_num_seqs: int,
    num_speculative_tokens: int,
    block_size: int = RigConfig.block_size,
    max_model_len: int | None = None,
) -> tuple[LiveSchedule, ...]:
    """The probe's own live schedule over `max_num_seqs` slots: requests arrive into slots out
    of order, a prefill is chunked beside decodes, one request is preempted and resumed in
    another slot while another finishes and a new one takes a freed slot, the batch rows are
    permuted every step, and the forced accept counts run through every value 0..K (for K up
    to 7). Then a prefix-cache hit: request 5 shares request 4's first KV block, request 4
    finishes while 5 still reads that block and request 6 arrives into the freed blocks (a
    shared block freed with its first owner is overwritten there). Requests 3 and 5 always
    draft freely, so every style's draft KV is compared on them (`reference_diff._draft_kv`).
    Needs three request slots (none with fewer). With `max_model_len`, a second schedule
    (`capped_schedule`) has a request reach it."""
    r, k = max_num_seqs, num_speculative_tokens
    if r < 3:
        return ()
    counts = iter(n % (k + 1) for n in range(64))
    # (step: arrivals, finishes, preemptions, resumptions, row order, requests that decode)
    plan: list[tuple[tuple[Arrive, ...], tuple[int, ...], tuple[int, ...],
                     tuple[tuple[int, int | None], ...], tuple[int, ...], tuple[int, ...]]] = [
        ((Arrive(0, 9, slot=r - 1), Arrive(1, 21, slot=1, chunk=8)), (), (), (), (), ()),
        ((Arrive(2, 6, slot=0),), (), (), (), (2, 1, 0), (0,)),
        ((), (), (), (), (1, 0, 2), (0, 2)),
        ((Arrive(3, 13, slot=r - 1),), (), (0,), (), (3, 2, 1), (2, 1)),
        ((), (2,), (), ((0, 0),), (0, 3, 1), (1,)),
        ((), (), (), (), (1, 0, 3), (0, 1)),
        ((Arrive(4, block_size + k + 3, slot=r - 1),), (3,), (), (), (4, 1, 0), (0, 1)),
        ((Arrive(5, block_size + k + 8, prefix=(4, 1)),), (0,), (), (), (5, 1, 4), (1, 4)),
        ((Arrive(6, 2 * block_size, slot=r - 1),), (4,), (), (), (6, 5, 1), (1,)),
    ]  # fmt: skip
    steps = tuple(
        LiveStep(arrive, finish, preempt, resume, order, tuple((rid, next(counts)) for rid in dec))
        for arrive, finish, preempt, resume, order, dec in plan
    )
    capped = () if max_model_len is None else (capped_schedule(r, k, max_model_len),)
    return (
        LiveSchedule(
            "live",
            steps,
            "slots out of order and reused, chunked prefill beside decodes, preemption and "
            "resumption in another slot, rows permuted each step, every rejected count 0..K, "
            "a prefix-cache hit sharing a block its first owner leaves",
        ),
        *capped,
    )


def capped_schedule(
    max_num_seqs: int, num_speculative_tokens: int, max_model_len: int
) -> LiveSchedule:
    """A request that reaches max_model_len beside one that does not: its prompt leaves
    room for one verify of all K drafts (all accepted) and one of none, so the drafter's
    positions pass max_model_len in both steps (the engines clamp them: positions to
    max_model_len - 1, seq_lens to max_model_len, vLLM's MRV2 drafter; the padding slot, its
    V1 drafter), and the scheduler verifies no draft past it. Then it finishes and a new
    request takes its slot and blocks, the last of which held position max_model_len - 1."""
    r, k = max_num_seqs, num_speculative_tokens
    prompt = max_model_len - k - 3
    steps = (
        LiveStep(
            arrive=(
                Arrive(0, prompt, max_new_tokens=k + 3, slot=r - 1),
                Arrive(1, 9, max_new_tokens=8, slot=0),
            )
        ),
        LiveStep(order=(1, 0), accept=((0, k),)),
        LiveStep(order=(0, 1)),
        LiveStep(arrive=(Arrive(2, 20, max_new_tokens=8, slot=r - 1),), finish=(0,), order=(2, 1)),
    )
    return LiveSchedule(  # a prompt near max_model_len is the probe's longest: one mode
        once=True,
        name="capped",
        steps=steps,
        what="a request reaching max_model_len (its drafts clamped, its last verify "
        "without drafts), then its slot and blocks reused",
    )
