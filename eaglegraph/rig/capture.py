"""Capturing the rig's graphs: vLLM's dummy batches, the capture loop and its failures.

Order (research vllm-mrv2.md §2): target before speculator, then draft prefill, then draft
decode; within a phase PIECEWISE-like before FULL, largest first, one eager warmup each.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

import numpy as np
import torch

from eaglegraph.results.capture import CaptureEvent
from eaglegraph.results.findings import Finding
from eaglegraph.rig.attention import Metadata
from eaglegraph.rig.descriptors import BatchDescriptor, graph_max_query_len
from eaglegraph.rig.graphs import CaptureTracer, GraphContext, MemoryReading
from eaglegraph.rig.modes import Mode
from eaglegraph.rig.parts import StepParts
from eaglegraph.rig.pools import PoolManager
from eaglegraph.rig.speculators.base import Speculator
from eaglegraph.rig.step_buffers import h2d

PHASES = ("target", "draft_prefill", "draft_decode")


class CaptureFailed(Exception):
    """A capture stopped (OOM or an error); carries the events captured before it."""

    def __init__(
        self, events: list[CaptureEvent], failed: CaptureEvent, cause: BaseException
    ) -> None:
        super().__init__(str(cause))
        self.events = events
        self.failed = failed
        self.cause = cause


class CaptureDummies:
    """vLLM `InputBatch.make_dummy` per phase: fills the inputs a capture records, returns
    the attention metadata the graph bakes in. The draft prefill's inputs are the
    speculator's (`Speculator.capture_metadata`)."""

    def __init__(self, parts: StepParts, speculator: Speculator) -> None:
        self.parts = parts
        self.speculator = speculator

    def by_phase(self) -> dict[str, Callable[[BatchDescriptor, int, int], Metadata]]:
        return {"target": self.target, "draft_prefill": self.prefill, "draft_decode": self.decode}

    def inputs(self, owner: str, num_reqs: int, num_tokens: int) -> list[int]:
        """Even query split (remainder to the last request), seq_len = query_len, zeroed
        ids/positions, all slots PAD (no KV is written)."""
        b = self.parts.bufs
        per, rem = divmod(num_tokens, num_reqs)
        lens = [per] * num_reqs
        lens[-1] += rem
        r = self.parts.config.max_num_seqs
        qsl = [0, *np.cumsum(lens).tolist()] + [num_tokens] * (r - num_reqs)
        if owner == "target":
            ids, pos, qbuf, sbuf = b.input_ids, b.positions, b.query_start_loc, b.seq_lens
        else:
            ids, pos, qbuf, sbuf = (
                b.eagle_input_ids,
                b.eagle_positions,
                b.eagle_qsl,
                b.eagle_seq_lens,
            )
        ids[:num_tokens].zero_()
        pos[:num_tokens].zero_()
        h2d(qbuf, qsl)
        h2d(sbuf, lens + [0] * (r - num_reqs))
        b.slot_mapping.fill_(-1)
        return lens

    def target(self, desc: BatchDescriptor, num_reqs: int, num_tokens: int) -> Metadata:
        lens = self.inputs("target", num_reqs, num_tokens)
        max_q = graph_max_query_len(desc, max(lens))
        return self.parts.metadata.target(lens, num_reqs, num_tokens, max_q)

    def prefill(self, desc: BatchDescriptor, num_reqs: int, num_tokens: int) -> Metadata:
        self.parts.bufs.last_token_indices.zero_()
        return self.speculator.capture_metadata(desc, num_reqs, num_tokens, self)

    def decode(self, desc: BatchDescriptor, num_reqs: int, num_tokens: int) -> Metadata:
        lens = self.inputs("eagle", num_reqs, num_tokens)
        self.parts.bufs.decode_positions[:num_tokens].zero_()
        return self.parts.metadata.draft(lens, num_reqs, num_tokens, 1)


def capture_graphs(
    parts: StepParts,
    speculator: Speculator,
    pool_policy: str | None = None,
    on_event: Callable[[CaptureEvent], None] | None = None,
    instrument: bool = True,
    tracer: CaptureTracer | None = None,
    memory_mark: MemoryReading | None = None,
) -> tuple[list[CaptureEvent], list[Finding]]:
    """Capture every planned graph of the rig, in the engine's order; `tracer` is told where
    each emulated capture begins and ends (the memory prediction records through it);
    `memory_mark` is where the first graph's memory window opens (default: at its warmup)."""
    policy = pool_policy or parts.behavior.default_pool
    backend = parts.config.graph_backend
    ctx = GraphContext(backend, parts.attention, PoolManager(policy, backend))
    ctx.tracer = tracer
    ctx.memory_mark = memory_mark
    ctx.run_passes = backend == "cuda" or parts.config.emulated_capture_passes
    parts.routines.graph_context = ctx
    for runner in parts.runners.values():
        runner.context = ctx
    dummies = CaptureDummies(parts, speculator).by_phase()
    events: list[CaptureEvent] = []
    findings: list[Finding] = []
    # A garbage-collected CUDAGraph destroyed mid-capture invalidates the capture
    # (cudaErrorStreamCaptureInvalidated): collect now, then keep the collector off while
    # capturing, as SGLang's freeze_gc and torch.cuda.graph's own gc.collect do.
    gc.collect()
    gc_was_enabled = gc.isenabled()
    gc.disable()
    t0 = time.perf_counter()
    try:
        _capture_phases(parts, speculator, ctx, dummies, events, findings, on_event, instrument, t0)
    finally:
        if gc_was_enabled:
            gc.enable()
    if parts.guard_log is not None:
        parts.guard_log.reset()
    return events, findings


def _capture_phases(
    parts: StepParts,
    speculator: Speculator,
    ctx: GraphContext,
    dummies: dict[str, Callable[[BatchDescriptor, int, int], Metadata]],
    events: list[CaptureEvent],
    findings: list[Finding],
    on_event: Callable[[CaptureEvent], None] | None,
    instrument: bool,
    t0: float,
) -> None:
    backend = ctx.backend
    runners = parts.runners
    with torch.inference_mode():
        for phase, desc in speculator.capture_sequence():
            runner = runners[phase]
            try:
                event, state = runner.capture(
                    desc, dummies[phase], parts.config.max_num_seqs, len(events), t0, instrument
                )
            except (torch.OutOfMemoryError, RuntimeError) as exc:
                failed = _failed_event(desc, phase, backend, len(events), t0, exc)
                raise CaptureFailed(events, failed, exc) from exc
            if phase == "target" and desc.mode is Mode.FULL:
                parts.captured_states[desc] = state
            events.append(event)
            if on_event is not None:
                on_event(event)
    # what the speculator checks of its captures (the target's captured states are all in)
    findings += speculator.capture_findings(runners["draft_prefill"])
    for phase in PHASES:
        source = speculator.graph_source(phase)
        if source is not None:
            runners[phase].share(runners[source])


def _failed_event(
    desc: BatchDescriptor, phase: str, backend: str, index: int, t0: float, exc: BaseException
) -> CaptureEvent:
    oom = isinstance(exc, torch.OutOfMemoryError) or "out of memory" in str(exc).lower()
    return CaptureEvent(
        index=index,
        phase=phase,
        mode=desc.mode.name,
        num_tokens=desc.num_tokens,
        num_reqs=desc.num_reqs,
        uniform_token_count=desc.uniform_token_count,
        pool=None,
        backend=backend,
        start_s=time.perf_counter() - t0,
        duration_s=0.0,
        status="oom" if oom else "error",
        error=str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__,
    )
