"""Probe cases: one (mode, batch) each, run in a fresh worker process or in-process.

A case builds the rig with guards on, captures its graphs, dirties every buffer with a large
batch, shrinks the batch (the real trigger of stale padding), snapshots all device state, and
then runs the probed step twice — once per sentinel — poisoning every padding region and every
unowned KV block first. It returns what the guards logged per phase, which padding regions
were still poisoned afterwards, which valid outputs differed between the two runs or turned
NaN, and which canary blocks were written.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import torch

from eaglegraph.kernels.poison import poison, scan
from eaglegraph.probes.checkpoint import Checkpoint, recording
from eaglegraph.probes.invariants import StepView, check_phase
from eaglegraph.probes.kv_writes import CommittedKV
from eaglegraph.probes.locate import locate
from eaglegraph.probes.poisoning import (
    Canary,
    canary_regions,
    null_block_regions,
    padding_regions,
    per_slot_rows,
    table,
    unmapped_buffer,
)
from eaglegraph.probes.reference_diff import compared, first_divergence, reference_for
from eaglegraph.probes.schedules import (
    Limits,
    check_schedule,
    live_prompts,
    schedule_from_json,
    schedule_to_json,
)
from eaglegraph.probes.spec import RunSpec
from eaglegraph.results.capture import CaptureEvent
from eaglegraph.results.codec import decode
from eaglegraph.results.probe import (
    CanaryHit,
    CaseGraph,
    CaseResult,
    GuardViolation,
    InvariantViolation,
    PaddingRegion,
    ReferenceDivergence,
)
from eaglegraph.rig.buffers import StepCounts
from eaglegraph.rig.capture import CaptureFailed
from eaglegraph.rig.descriptors import BatchDescriptor
from eaglegraph.rig.driver import Session
from eaglegraph.rig.kv_cache import NULL_BLOCK, BlockAllocator
from eaglegraph.rig.modes import Mode
from eaglegraph.rig.reference import ReferenceEngine
from eaglegraph.rig.step import Rig
from eaglegraph.rig.workload import LiveSchedule, ScheduledRequest


@dataclass(frozen=True)
class ProbeCase:
    """One (mode, batch): the run's spec under that mode, dirtied at `large` requests and
    probed at `batch`."""

    name: str
    spec: RunSpec
    large: int
    batch: int
    # a live-server schedule run step by step instead of the padded step (`probes.schedules`)
    schedule: LiveSchedule | None = None

    @property
    def mode(self) -> str:
        return self.spec.options.mode.name

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "spec": self.spec.to_json(),
            "large": self.large,
            "batch": self.batch,
            "schedule": None if self.schedule is None else schedule_to_json(self.schedule),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProbeCase:
        live = data.get("schedule")
        schedule = None if live is None else schedule_from_json(live)
        spec = RunSpec.from_json(data["spec"])
        return cls(data["name"], spec, data["large"], data["batch"], schedule)


def _bits(t: torch.Tensor) -> torch.Tensor:
    """Bitwise view for comparisons that treat NaN payloads as values."""
    width = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return t.contiguous().view(width)


class _Snapshot:
    """Every device tensor the probed step reads or writes, cloned so runs A and B start equal."""

    def __init__(self, rig: Rig) -> None:
        self.tensors = [b.tensor for b in rig.registry] + [c for kv in rig.kv_caches for c in kv]
        self.saved = [t.clone() for t in self.tensors]
        self.rig = rig
        self.table_dirty = rig._bt_dirty  # runs A and B both upload the host table, or neither

    def restore(self) -> None:
        for t, s in zip(self.tensors, self.saved, strict=True):
            t.copy_(s)
        self.rig._bt_dirty = self.table_dirty


PROMPT_SEED = 7
# prompt lengths (block size 16): requests own different page counts (1 to 3), and some cross
# a page boundary in the verify steps, so a stale but in-range CSR offset or block-table row
# differs from the right one; the last request joins one step late (the batch grows)
PROMPT_LENGTHS = (12, 9, 28, 5, 41, 14, 7, 25, 10, 3)
STEPS = 3  # prefill at large-1 requests; verify at large with one request joining; probed


def _prompts(count: int, vocab: int, seed: int = PROMPT_SEED) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    n = len(PROMPT_LENGTHS)
    return [rng.integers(3, vocab, size=PROMPT_LENGTHS[i % n]).tolist() for i in range(count)]


def _checkpoint(args: dict[str, Any]) -> Checkpoint:
    """The breadcrumbs of a worker task: in the file its parent reads if the worker dies;
    `sync` (a crashed case's rerun) pins an asynchronous fault to its kernel."""
    return Checkpoint(args.get("checkpoint"), sync=bool(args.get("sync")))


def case_task(args: dict[str, Any]) -> dict[str, Any]:
    """The runner's "probe-case" task: a case as JSON in, its result as JSON out."""
    return result_to_json(execute_case(ProbeCase.from_json(args), checkpoint=_checkpoint(args)))


def cases_task(args: dict[str, Any]) -> dict[str, Any]:
    """The runner's "probe-cases" task: the cases of one spec (one mode) over one built rig."""
    cases = [ProbeCase.from_json(c) for c in args["cases"]]
    results = execute_cases(cases, _checkpoint(args))
    return {"results": [result_to_json(r) for r in results]}


class BuiltRig:
    """A rig built and captured once, and its state right after capture: every case of one
    mode starts from that state (buffers, KV, allocator, host table), as a fresh rig would."""

    def __init__(
        self, spec: RunSpec, checkpoint: Checkpoint | None = None, live_blocks: int = 0
    ) -> None:
        """`live_blocks`: the most KV blocks the running requests of the live schedules can
        hold at once (`schedules.check_schedule`)."""
        k = spec.options.num_speculative_tokens
        config = spec.rig_config(guard=True)
        if config.num_blocks is None:
            # a KV pool for the schedule (twice what its requests can own, the rest canaries)
            # rather than for max_model_len: every poison, scan and snapshot goes over it
            tokens = max(PROMPT_LENGTHS, default=0) + STEPS * (k + 1) + k + 1
            padded = spec.options.max_num_seqs * -(-tokens // config.block_size)
            config = replace(config, num_blocks=1 + 2 * max(padded, live_blocks))
        # emulated captures record nothing: their passes only cost time (see RigConfig)
        config = replace(config, emulated_capture_passes=False)
        if config.dtype == "auto":
            # the reference differential compares tokens: float32 keeps near-tie argmax flips
            # (bf16 kernels vs a float reference) from posing as divergences; padding, metadata
            # and KV layout do not depend on the dtype
            config = replace(config, dtype="float32")
        self.config = config
        self.rig = rig = Rig(spec.open_pair(), config)
        self.checkpoint = checkpoint or Checkpoint()
        registry = rig.registry
        self.checkpoint.names = lambda ids: [b.name for i in ids if (b := registry.by_id(i))]
        # each captured graph as the step names descriptors, with its pool (for the results)
        self.graphs: list[CaseGraph] = []
        if config.options.mode is not Mode.NONE:
            self.checkpoint.update(stage="capture")
            with recording(self.checkpoint):
                events, _ = rig.capture(spec.pool)
            self.graphs = _case_graphs(rig, events)
        self.captured = _Snapshot(rig)

    def fresh(self) -> Rig:
        rig = self.rig
        self.captured.restore()
        a = rig.allocator
        rig.allocator = BlockAllocator(a.num_blocks, a.block_size, a.max_blocks_per_req)
        rig._bt_host[:] = 0
        rig._bt_dirty = True
        if rig.guard_log is not None:
            rig.guard_log.reset()
        return rig


def execute_cases(cases: list[ProbeCase], checkpoint: Checkpoint | None = None) -> list[CaseResult]:
    """Cases of one spec over one rig (built once): same results as one rig per case."""
    if not cases:
        return []
    start = time.perf_counter()
    checkpoint = checkpoint or Checkpoint()
    checkpoint.update(case=",".join(c.name for c in cases))
    try:
        built = BuiltRig(cases[0].spec, checkpoint, max(_live_blocks(c) for c in cases))
    except Exception as exc:
        return [_error(c, exc, start, checkpoint) for c in cases]
    return [execute_case(c, built) for c in cases]


def execute_case(
    case: ProbeCase, built: BuiltRig | None = None, checkpoint: Checkpoint | None = None
) -> CaseResult:
    start = time.perf_counter()
    checkpoint = built.checkpoint if built is not None else checkpoint or Checkpoint()
    checkpoint.update(case=case.name, stage="build", step=None, phase=None, broken=[])
    try:
        if built is None:
            built = BuiltRig(case.spec, checkpoint, _live_blocks(case))
        elif built.rig.config.options != case.spec.options:
            raise ValueError(f"case {case.name} does not match the rig it was given")
        with recording(checkpoint):
            if case.schedule is not None:
                return _execute_live(case, built, start)
            return _execute(case, built, start)
    except Exception as exc:
        return _error(case, exc, start, checkpoint)


def _error(case: ProbeCase, exc: Exception, start: float, checkpoint: Checkpoint) -> CaseResult:
    where = dict(checkpoint.state, case=case.name)
    if isinstance(exc, CaptureFailed):  # the capture names the graph it was recording
        f = exc.failed
        where.update(phase=f.phase, graph=f"{f.mode}(tokens={f.num_tokens}, reqs={f.num_reqs})")
    return CaseResult(
        case.name, case.mode, case.batch, case.large, "error", time.perf_counter() - start,
        error=f"{type(exc).__name__}: {exc}", stderr=traceback.format_exc()[-4000:],
        checkpoint=where,
    )  # fmt: skip


def _execute(case: ProbeCase, built: BuiltRig, start: float) -> CaseResult:
    config, rig = built.config, built.fresh()
    cp = built.checkpoint
    mode = config.options.mode
    graphs = built.graphs
    assert rig.guard_log is not None
    session = Session(rig)
    ref = reference_for(rig)
    ref_session = Session(ref)
    prompts = _prompts(case.large, rig.vocab_size)
    divergence = None
    timer = _Timer()
    broken: list[InvariantViolation] = []
    touched: list[int] = []  # tokens of each step
    for step in range(2):  # prefill, then a verify step in which one more request joins
        joining = range(len(prompts) - 1) if step == 0 else [len(prompts) - 1]
        for rid in joining:
            session.admit(rid, prompts[rid], max_new_tokens=64)
            ref_session.admit(rid, prompts[rid], max_new_tokens=64)
        if step and divergence is None:
            with timer("reference"):
                _force_acceptance(session, ref_session, ref, shift=1)
        hit = _lockstep(step, rig, session, ref, ref_session, timer, broken, touched, cp,
                        replay=divergence is None)  # fmt: skip
        divergence = divergence or hit
    for s in (session, ref_session):
        for request in list(s.running[case.batch :]):
            s.finish(request)  # the batch shrinks right after the large one
    if divergence is None:
        with timer("reference"):
            _force_acceptance(session, ref_session, ref)
    batch = session.batch()
    with timer("reference"):
        ref_out = ref.step(ref_session.batch())
    k = rig.num_speculative_tokens
    tokens = sum(len(b.query) for b in batch)
    counts = {
        "target": StepCounts(len(batch), tokens),
        "draft_prefill": StepCounts(len(batch), tokens),
        "draft_decode": StepCounts(len(batch), len(batch) if k > 1 else 0),
    }
    snapshot = _Snapshot(rig)
    # SGLang's padded draft rows write null-block slots [0, K) by design; vLLM's pad slot is -1
    null_pad = k if rig.framework == "sglang" else 0
    owned = sorted({blk for r in session.running for blk in r.blocks})
    owned_rows = per_slot_rows(
        list(rig.registry), rig.max_num_seqs, {r.slot for r in session.running}
    )
    unowned = [b for b in rig.allocator.unowned_blocks() if b != NULL_BLOCK]
    result = CaseResult(
        case.name, mode.name, case.batch, case.large, "ok", 0.0,
        counts={p: [c.num_reqs, c.num_tokens] for p, c in counts.items()},
        reproduction={"mode": mode.name, "large": case.large, "batch": case.batch,
                      "num_speculative_tokens": k, "prompt_seed": PROMPT_SEED,
                      "seed": config.seed, "steps": STEPS,
                      "prompt_lengths": [len(p) for p in prompts]},
    )  # fmt: skip
    result.invariants.extend(broken)
    result.graphs = list(graphs)
    result.compared = compared(rig)
    if divergence is not None:
        result.divergence = divergence
    outputs: dict[str, dict[str, torch.Tensor | list[Any]]] = {}
    scans: dict[str, list[int]] = {}
    # token rows any step or captured graph of this case touched (see `padding_regions`)
    reach = max([d.num_tokens for p in rig.plan.phases for d in p.descriptors] + touched)
    regions_a = padding_regions(list(rig.registry), counts, "A", owned_rows, reach)
    for run in ("A", "B"):
        snapshot.restore()
        regions = padding_regions(list(rig.registry), counts, run, owned_rows, reach)
        canaries = canary_regions(rig.kv_caches, unowned) + null_block_regions(
            rig.kv_caches, null_pad
        )
        tab = table([r.region for r in regions] + [c.region for c in canaries], config.device)
        canary_tab = table([c.region for c in canaries], config.device)
        poison(tab)
        rig.guard_log.reset()
        writes = CommittedKV(rig, batch) if run == "A" else None
        collect = _PhaseCollector(
            rig, result, run, StepView(rig, batch), canaries, canary_tab, timer, writes, cp
        )
        t0 = time.perf_counter()
        with rig.add_phase_hook(collect), rig.add_launch_hook(collect.launch):
            out = rig.step(batch)
        if run == "B":  # the second sentinel run is what the sentinel differential costs
            timer.add("sentinel differential (run B)", time.perf_counter() - t0)
        remaining = scan(tab).tolist()
        scans[run] = remaining
        result.descriptors = dict(out.descriptors)
        result.replayed = {
            g.phase: g.index for g in graphs if result.descriptors.get(g.phase) == g.descriptor
        }
        if run == "A":  # the acceptance paths the probed step took (full, zero, partial)
            result.reproduction["accepted"] = list(out.num_accepted)
        if run == "A" and result.divergence is None:
            with timer("reference"):
                found = first_divergence(2, rig, ref, batch, out, ref_out, _forced(session))
                if found is not None:  # replayed from the poisoned start to its last writer
                    again = _poisoned(snapshot, tab)
                    result.divergence = locate(rig, batch, found, again, _Snapshot(rig).restore)
        target_layers = rig.models.target.num_layers
        kv = [torch.stack([c[owned] for c in pair]).flatten() for pair in rig.kv_caches]
        outputs[run] = {
            "next tokens": out.next_tokens,
            "accepted counts": out.num_accepted,
            "draft tokens": out.draft_tokens,
            "target hidden rows": rig.bufs.target_hidden[:tokens].clone(),
            "draft hidden rows": rig.bufs.eagle_hidden[: len(batch)].clone(),
            "target KV of owned blocks": torch.cat(kv[:target_layers] or [torch.zeros(0)]),
            "draft KV of owned blocks": torch.cat(kv[target_layers:] or [torch.zeros(0)]),
        }
        if run == "A":
            for name, value in outputs[run].items():
                if (
                    isinstance(value, torch.Tensor)
                    and value.is_floating_point()
                    and bool(torch.isnan(value).any())
                ):
                    result.nan_outputs.append(name)
    for name, a in outputs["A"].items():
        b = outputs["B"][name]
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            same = bool(torch.equal(_bits(a), _bits(b)))
        else:
            same = a == b
        if not same:
            result.differential.append(name)
    for i, region in enumerate(regions_a):
        result.regions.append(
            PaddingRegion(
                buffer=region.buffer.name, phase=region.buffer.phase,
                extent=region.buffer.extent, first_row=region.first_row,
                rows=region.rows, elements=region.region.length,
                poisoned_after_a=scans["A"][i], poisoned_after_b=scans["B"][i],
            )
        )  # fmt: skip
    result.signal_s = timer.totals
    result.duration_s = time.perf_counter() - start
    return result


def _poisoned(snapshot: _Snapshot, tab: torch.Tensor) -> Callable[[], None]:
    """The probed step's start state, poisoned as its run was (to replay it: `locate`)."""

    def start() -> None:
        snapshot.restore()
        poison(tab)

    return start


def _live_blocks(case: ProbeCase) -> int:
    """The most KV blocks the case's live schedule holds at once (0: none); checking it
    refuses a schedule the run cannot hold, in one line, before the rig is built."""
    if case.schedule is None:
        return 0
    return check_schedule(case.schedule, schedule_limits(case.spec))


def schedule_limits(spec: RunSpec) -> Limits:
    """What a live schedule must fit under `spec`."""
    o = spec.options
    return Limits(o.max_num_seqs, o.num_speculative_tokens, spec.max_model_len,
                  o.max_num_batched_tokens)  # fmt: skip


def _execute_live(case: ProbeCase, built: BuiltRig, start: float) -> CaseResult:
    """A live schedule, step by step, rig and reference in lockstep: before each step its
    requests finish, are preempted, resume and arrive into the slots it names, the batch rows
    take its order and the drafts its accept counts; every step's invariants, guard reads,
    writes into committed KV and reference differential are checked."""
    schedule = case.schedule
    assert schedule is not None
    config, rig, cp = built.config, built.fresh(), built.checkpoint
    session, ref = Session(rig), reference_for(rig)
    ref_session = Session(ref)
    k = rig.num_speculative_tokens
    prompts = live_prompts(schedule, rig.vocab_size, rig.block_size, k)
    result = CaseResult(
        case.name, config.options.mode.name, case.batch, case.large, "ok", 0.0,
        graphs=list(built.graphs), schedule=schedule.name, compared=compared(rig),
        reproduction={"mode": config.options.mode.name, "schedule": schedule_to_json(schedule),
                      "num_speculative_tokens": rig.num_speculative_tokens, "seed": config.seed},
    )  # fmt: skip
    timer, touched = _Timer(), list[int]()
    kept: dict[int, tuple[list[int], int]] = {}  # preempted: (tokens, tokens still to make)

    def watch(batch: list[ScheduledRequest]) -> Callable[[str], None]:
        writes = CommittedKV(rig, batch)

        def after(phase: str) -> None:
            _read_guards(rig, result, "live", phase)
            with timer("canaries"):
                overwrites = writes.changed()
            result.canaries.extend(
                CanaryHit(first_block=w.block, elements=w.slots, written=w.slots, phase=phase,
                          kernel="write_kv", request=w.request, layer=w.layer,
                          position=w.position)
                for w in overwrites
            )  # fmt: skip

        return after

    for i, step in enumerate(schedule.steps):
        for s in (session, ref_session):
            by_rid = {r.rid: r for r in s.running}
            for rid in step.finish:
                s.finish(by_rid[rid])
            for rid in step.preempt:
                r = by_rid[rid]
                left = r.max_new_tokens - r.generated
                kept[rid] = (s.preempt(r), left)
            for rid, slot in step.resume:
                s.resume(rid, *kept[rid], slot)
            for a in step.arrive:
                cached = None
                if a.prefix is not None:  # a prefix-cache hit on a running request
                    owner = next(r for r in s.running if r.rid == a.prefix[0])
                    cached = (owner, a.prefix[1] * rig.block_size)
                s.admit(a.rid, prompts[a.rid], a.max_new_tokens, a.slot, a.chunk, cached)
            s.reorder(step.order)
        with timer("reference"):
            _force_counts(session, ref_session, ref, dict(step.accept))
        cp.update(stage="step", step=i)
        hit = _lockstep(i, rig, session, ref, ref_session, timer, result.invariants, touched, cp,
                        watch, replay=result.divergence is None)  # fmt: skip
        if session.last is not None:
            result.descriptors = dict(session.last.descriptors)
        if hit is not None and result.divergence is None:
            result.divergence = hit
    result.counts = {"steps": [len(schedule.steps), max(touched)]}
    result.signal_s = timer.totals
    result.duration_s = time.perf_counter() - start
    return result


def _read_guards(rig: Rig, result: CaseResult, run: str, phase: str) -> None:
    """The guard log of the phase just done into `result` (each read named by its buffer)."""
    log = rig.guard_log
    assert log is not None
    for v in log.read():
        buf = rig.registry.by_id(v.buffer_id)
        result.violations.append(
            GuardViolation(
                run=run, phase=phase, kernel=v.kernel,
                buffer=buf.name if buf else unmapped_buffer(v.kernel),
                row=int(v.row), value=int(v.value),
            )
        )  # fmt: skip
    log.reset()


class _PhaseCollector:
    """The rig's phase hook during one probed run: guard log, invariants, canaries per phase."""

    def __init__(
        self,
        rig: Rig,
        result: CaseResult,
        run: str,
        view: StepView,
        canaries: list[Canary],
        canary_tab: torch.Tensor,
        timer: _Timer,
        writes: CommittedKV | None,
        checkpoint: Checkpoint,
    ) -> None:
        self.rig, self.result, self.run, self.view = rig, result, run, view
        self.canaries, self.canary_tab, self.timer = canaries, canary_tab, timer
        self.written = [0] * len(canaries)
        self.writes = writes
        self.checkpoint = checkpoint

    def launch(self, phase: str, draft_step: int, what: str) -> None:
        """The rig's launch hook: the breadcrumb, and (run A) the checks due before launch."""
        self.checkpoint.update(stage="step", step=2, phase=phase, draft_step=draft_step)
        if what == "launch" and self.run == "A":
            self.view.draft_step = draft_step
            with self.timer("invariants"):
                broken = check_phase(self.view, phase, "launch")
            self.checkpoint.broken(broken)
            self.result.invariants.extend(InvariantViolation(**hit, step=2) for hit in broken)

    def __call__(self, phase: str) -> None:
        rig, result = self.rig, self.result
        _read_guards(rig, result, self.run, phase)
        if self.run != "A":
            return
        with self.timer("invariants"):
            broken = check_phase(self.view, phase)
        self.checkpoint.broken(broken)
        result.invariants.extend(InvariantViolation(**hit, step=2) for hit in broken)
        with self.timer("canaries"):
            overwrites = self.writes.changed() if self.writes is not None else []
        for w in overwrites:
            result.canaries.append(
                CanaryHit(
                    first_block=w.block, elements=w.slots, written=w.slots, phase=phase,
                    kernel="write_kv", request=w.request, layer=w.layer, position=w.position,
                )
            )  # fmt: skip
        with self.timer("canaries"):
            left = scan(self.canary_tab).tolist() if self.canaries else []
        for i, (c, n) in enumerate(zip(self.canaries, left, strict=True)):
            if c.region.length - n > self.written[i]:
                result.canaries.append(
                    CanaryHit(
                        first_block=c.first_block, elements=c.region.length,
                        written=c.region.length - n - self.written[i], phase=phase,
                        kernel="write_kv", null_block=c.null_block,
                    )
                )  # fmt: skip
                self.written[i] = c.region.length - n


class _Timer:
    """Seconds per signal, summed over a case."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = {}

    def add(self, name: str, seconds: float) -> None:
        self.totals[name] = self.totals.get(name, 0.0) + seconds

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - t0)


def _force_acceptance(
    session: Session, ref_session: Session, ref: ReferenceEngine, shift: int = 0
) -> None:
    """Give a verify step every acceptance path at once: request `shift` proposes the target's
    own continuation (full acceptance), the next a wrong first token (zero), the others agree
    for a prefix of growing length (partial). Both sessions propose the same drafts; requests
    without drafts (prefills) are left alone."""
    k = ref.num_speculative_tokens
    n = len(session.running)
    for i, (r, w) in enumerate(zip(session.running, ref_session.running, strict=True)):
        if r.done or not r.drafts:
            continue
        j = (i - shift) % n
        agree = k if j == 0 else 0 if j == 1 else min(j - 1, k)
        r.drafts = _accepted_drafts(ref, r.tokens, agree)
        w.drafts = list(r.drafts)
        r.forced = w.forced = True


def _forced(session: Session) -> set[int]:
    """The running requests whose deeper draft modules' KV only an exact (EAGLE-style)
    reference models: those whose drafts the probe replaced at some step, and chunked
    prefills (a window's deeper modules see a draft where the next chunk's prompt token will
    be)."""
    return {r.rid for r in session.running if r.forced or r.chunk is not None}


def _accepted_drafts(ref: ReferenceEngine, tokens: list[int], n: int) -> list[int]:
    """K drafts after `tokens` of which the target accepts exactly `n`: its own continuation
    up to there, a wrong token after it."""
    cont = ref.greedy_continuation(tokens, ref.num_speculative_tokens)
    return cont[:n] + [(t + 1) % ref.vocab_size for t in cont[n:]]


def _force_counts(
    session: Session, ref_session: Session, ref: ReferenceEngine, accept: dict[int, int]
) -> None:
    """Drafts the target accepts exactly `accept[rid]` of (the target's own continuation up
    to there, a wrong token after it), in both sessions; other requests draft freely."""
    for r, w in zip(session.running, ref_session.running, strict=True):
        if r.rid in accept and r.drafts:
            r.drafts = _accepted_drafts(ref, r.tokens, accept[r.rid])
            w.drafts = list(r.drafts)
            r.forced = w.forced = True


def _lockstep(
    step: int,
    rig: Rig,
    session: Session,
    ref: ReferenceEngine,
    ref_session: Session,
    timer: _Timer,
    broken: list[InvariantViolation],
    touched: list[int],
    checkpoint: Checkpoint,
    watch: Callable[[list[ScheduledRequest]], Callable[[str], None]] | None = None,
    replay: bool = True,
) -> ReferenceDivergence | None:
    """One step of the rig and of the reference over the same requests, compared; the rig's
    metadata invariants are checked around each phase of it too (prefill steps included):
    slot mappings before the phase's kernels run, the rest once it is done. `watch(batch)`:
    a further hook called after each phase (a live schedule reads guards and KV there).
    `replay`: a divergence is replayed to the kernel that last wrote it (the case's first
    only: after it, the two sessions no longer run the same requests)."""
    batch = session.batch()
    touched.append(sum(len(b.query) for b in batch))
    view = StepView(rig, batch)
    after = watch(batch) if watch is not None else None

    def check(phase: str, at: str = "after") -> None:
        with timer("invariants"):
            hits = check_phase(view, phase, at)
        checkpoint.broken(hits)
        broken.extend(InvariantViolation(**hit, step=step) for hit in hits)
        if after is not None and at == "after":
            after(phase)

    def launch(phase: str, draft_step: int, what: str) -> None:
        checkpoint.update(stage="step", step=step, phase=phase, draft_step=draft_step)
        if what == "launch":
            view.draft_step = draft_step
            check(phase, "launch")

    with timer("reference"):  # to replay the step to the kernel that diverged (`locate`)
        start = _Snapshot(rig) if replay else None
    with rig.add_phase_hook(check), rig.add_launch_hook(launch):
        out = rig.step(batch)
    session.apply(batch, out)
    with timer("reference"):
        ref_batch = ref_session.batch()
        want = ref.step(ref_batch)
        ref_session.apply(ref_batch, want)
        hit = first_divergence(step, rig, ref, batch, out, want, _forced(session))
        if hit is None or start is None:
            return None if hit is None else hit.divergence
        return locate(rig, batch, hit, start.restore, _Snapshot(rig).restore)


def result_to_json(result: CaseResult) -> dict[str, Any]:
    return asdict(result)


def result_from_json(data: dict[str, Any]) -> CaseResult:
    return decode(CaseResult, data, "probe worker result")


def _case_graphs(rig: Rig, events: list[CaptureEvent]) -> list[CaseGraph]:
    """Each captured graph keyed as the step names descriptors, with the pool it lives in."""
    pools = rig.graph_context.pools if rig.graph_context is not None else None
    out = []
    for e in events:
        key = BatchDescriptor(Mode[e.mode], e.num_tokens, e.num_reqs, e.uniform_token_count)
        label = pools.label_for(e.pool) if pools is not None and e.pool is not None else "—"
        pool = str(e.pool) if e.pool is not None else None
        out.append(CaseGraph(e.index, e.phase, key.label(), pool, label, e.bytes))
    return out
