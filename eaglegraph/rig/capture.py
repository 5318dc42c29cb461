"""Capturing the rig's graphs: vLLM's dummy batches, the capture loop and its failures.

Order (research vllm-mrv2.md §2): target before speculator, then draft prefill, then draft
decode; within a phase PIECEWISE-like before FULL, largest first, one eager warmup each.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import torch

from eaglegraph.known.profiles import FLAGS
from eaglegraph.results.capture import CaptureEvent
from eaglegraph.results.findings import Finding, Severity
from eaglegraph.rig.attention import CommonMetadata, Metadata
from eaglegraph.rig.descriptors import BatchDescriptor
from eaglegraph.rig.graphs import CaptureTracer, GraphContext, PhaseRunner
from eaglegraph.rig.modes import Mode
from eaglegraph.rig.pools import PoolManager
from eaglegraph.rig.step_buffers import h2d

if TYPE_CHECKING:
    from eaglegraph.rig.step import Rig

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


def graph_max_query_len(desc: BatchDescriptor, max_query_len: int) -> int:
    """A FULL graph bakes max_query_len into its launch grid: uniform descriptors know it
    exactly, mixed ones must cover any batch they may be padded to (num_tokens)."""
    if desc.mode is not Mode.FULL:
        return max_query_len
    return desc.uniform_token_count or desc.num_tokens


class CaptureDummies:
    """vLLM `InputBatch.make_dummy` per phase: fills the inputs a capture records, returns
    the attention metadata the graph bakes in."""

    def __init__(self, rig: Rig) -> None:
        self.rig = rig

    def by_phase(self) -> dict[str, Callable[[BatchDescriptor, int, int], Metadata]]:
        return {"target": self.target, "draft_prefill": self.prefill, "draft_decode": self.decode}

    def inputs(self, owner: str, num_reqs: int, num_tokens: int) -> list[int]:
        """Even query split (remainder to the last request), seq_len = query_len, zeroed
        ids/positions, all slots PAD (no KV is written)."""
        b = self.rig.bufs
        per, rem = divmod(num_tokens, num_reqs)
        lens = [per] * num_reqs
        lens[-1] += rem
        r = self.rig.max_num_seqs
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
        rig = self.rig
        lens = self.inputs("target", num_reqs, num_tokens)
        max_q = graph_max_query_len(desc, max(lens))
        return rig.build_metadata(
            rig.target_builder, rig.common_metadata("target", lens, num_reqs, num_tokens, max_q)
        )

    def prefill(self, desc: BatchDescriptor, num_reqs: int, num_tokens: int) -> Metadata:
        rig = self.rig
        rig.bufs.last_token_indices.zero_()
        if rig.dflash is not None:
            return self.dflash(num_reqs)
        # multi-module MTP builds its own window metadata, never the target's state
        window = rig.mtp_window is not None
        if desc.mode is not Mode.FULL or (
            rig.behavior.fresh_prefill_capture_metadata and not window
        ):
            # fresh dummy metadata through the target's builders, for every warmup and capture
            md = self.target(desc, num_reqs, num_tokens)
            self.inputs("eagle", num_reqs, num_tokens)
            return md
        if rig.behavior.reuse_target_attn_state and not window:
            state = rig.captured_states.get(desc)
            if state is not None:
                self.inputs("eagle", num_reqs, num_tokens)
                return state
        lens = self.inputs("eagle", num_reqs, num_tokens)
        max_q = graph_max_query_len(desc, max(lens))
        return rig.build_metadata(
            rig.draft_builder, rig.common_metadata("eagle", lens, num_reqs, num_tokens, max_q)
        )

    def dflash(self, num_reqs: int) -> Metadata:
        """Uniform K+1-token blocks, KV length K+1, no context or block KV written."""
        rig = self.rig
        assert rig.dflash is not None
        d, k1 = rig.dflash, rig.num_speculative_tokens + 1
        rows = num_reqs * k1
        d.input_ids[:rows].zero_()
        d.positions[:rows].zero_()
        d.sample_indices.zero_()
        d.context_slots.fill_(-1)
        h2d(d.qsl[: num_reqs + 1], [i * k1 for i in range(num_reqs + 1)])
        h2d(d.seq_lens[:num_reqs], [k1] * num_reqs)
        rig.bufs.slot_mapping.fill_(-1)
        common = CommonMetadata(
            d.qsl, d.seq_lens, rig.bufs.block_table, [k1] * num_reqs, num_reqs, rows, k1, "dflash"
        )
        return rig.build_metadata(rig.draft_builder, common)

    def decode(self, desc: BatchDescriptor, num_reqs: int, num_tokens: int) -> Metadata:
        rig = self.rig
        lens = self.inputs("eagle", num_reqs, num_tokens)
        rig.bufs.decode_positions[:num_tokens].zero_()
        return rig.build_metadata(
            rig.draft_builder, rig.common_metadata("eagle", lens, num_reqs, num_tokens, 1)
        )


def capture_graphs(
    rig: Rig,
    pool_policy: str | None = None,
    on_event: Callable[[CaptureEvent], None] | None = None,
    instrument: bool = True,
    tracer: CaptureTracer | None = None,
    memory_mark: tuple[int | None, int | None, int | None] | None = None,
) -> tuple[list[CaptureEvent], list[Finding]]:
    """Capture every planned graph of the rig, in the engine's order; `tracer` is told where
    each emulated capture begins and ends (the memory prediction records through it);
    `memory_mark` is where the first graph's memory window opens (default: at its warmup)."""
    policy = pool_policy or rig.behavior.default_pool
    backend = rig.config.graph_backend
    ctx = GraphContext(backend, rig.attention, PoolManager(policy, backend))
    ctx.tracer = tracer
    ctx.memory_mark = memory_mark
    ctx.run_passes = backend == "cuda" or rig.config.emulated_capture_passes
    rig.graph_context = ctx
    for runner in rig.runners.values():
        runner.context = ctx
    dummies = CaptureDummies(rig).by_phase()
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
        _capture_phases(rig, ctx, dummies, events, findings, on_event, instrument, t0)
    finally:
        if gc_was_enabled:
            gc.enable()
    if rig.guard_log is not None:
        rig.guard_log.reset()
    return events, findings


def _capture_phases(
    rig: Rig,
    ctx: GraphContext,
    dummies: dict[str, Callable[[BatchDescriptor, int, int], Metadata]],
    events: list[CaptureEvent],
    findings: list[Finding],
    on_event: Callable[[CaptureEvent], None] | None,
    instrument: bool,
    t0: float,
) -> None:
    backend = ctx.backend
    with torch.inference_mode():
        for phase in PHASES:
            runner = rig.runners[phase]
            if phase == "draft_prefill" and rig.dflash is None and rig.mtp_window is None:
                findings += _handoff_findings(rig, runner)  # own metadata otherwise
            for desc in runner.dispatcher.capture_order():
                try:
                    event, state = runner.capture(
                        desc, dummies[phase], rig.max_num_seqs, len(events), t0, instrument
                    )
                except (torch.OutOfMemoryError, RuntimeError) as exc:
                    failed = _failed_event(desc, phase, backend, len(events), t0, exc)
                    raise CaptureFailed(events, failed, exc) from exc
                if phase == "target" and desc.mode is Mode.FULL:
                    rig.captured_states[desc] = state
                events.append(event)
                if on_event is not None:
                    on_event(event)


def _handoff_findings(rig: Rig, runner: PhaseRunner) -> list[Finding]:
    """`reuse_target_attn_state` hands the target's captured attention state to the draft
    prefill by descriptor key: both managers must have identical FULL descriptor sets."""
    beh = rig.behavior
    if not beh.reuse_target_attn_state or beh.fresh_prefill_capture_metadata:
        return []  # no hand-off by key: the draft prefill builds its own capture metadata
    want = {d for d in runner.dispatcher.descriptors if d.mode is Mode.FULL}
    have = {d for d in rig.captured_states}
    missing = sorted(want - have, key=lambda d: d.num_tokens)
    if not missing:
        return []
    return [
        Finding(
            id="attn-state-handoff-mismatch",
            severity=Severity.ERROR,
            phase="draft_prefill",
            message=f"{len(missing)} FULL draft-prefill descriptor(s) have no target-captured "
            f"attention state, e.g. {missing[0].label()}; they are captured with freshly built "
            "metadata instead",
            ref=FLAGS["reuse_target_attn_state"].ref,
        )
    ]


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
