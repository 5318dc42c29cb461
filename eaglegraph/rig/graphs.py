"""Graph managers and backends: capture a phase's routine per descriptor, then replay it.

Backends:
  cuda     — torch.cuda.CUDAGraph captured on one side stream into the pool the policy picks;
  emulated — CPU: "replay" re-runs the routine at the captured, padded shape over the same
             persistent buffers, with the attention metadata baked at capture (FULL) or the
             live one (segmented), which is exactly what a CUDA graph does.
Modes:
  FULL       — the whole routine is one graph;
  BREAKABLE  — the whole routine is captured once, broken at every attention call into graph
               segments; attention runs eagerly between them (SGLang BCG, vLLM breakable graphs);
  PIECEWISE  — only the model forward is captured (per num_tokens, like vLLM's compiled
               CUDAGraphWrapper pieces), split at attention; everything around it stays eager.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import torch

from eaglegraph.models.parallel import collective_scope, collectives_issued, replay_watch
from eaglegraph.results.capture import CaptureEvent
from eaglegraph.results.pools import PoolId
from eaglegraph.rig.attention import AttentionRuntime, Metadata
from eaglegraph.rig.descriptors import BatchDescriptor, Dispatcher, PaddedBatch
from eaglegraph.rig.modes import Mode
from eaglegraph.rig.plan import PhasePlan
from eaglegraph.rig.pools import PoolAssignment, PoolManager

Routine = Callable[[int, int], None]
DummyFn = Callable[[BatchDescriptor, int, int], Metadata | None]


class CaptureTracer(Protocol):
    """Told where each emulated capture begins and ends (the allocation recorder is one)."""

    def scope(
        self, phase: str, mode: str, num_tokens: int, num_reqs: int | None, piece: str | None
    ) -> AbstractContextManager[Any]: ...

    def paused(self) -> AbstractContextManager[Any]:
        """Work inside a scope that no graph records (eager attention between segments)."""
        ...


def weak_alias(t: torch.Tensor) -> torch.Tensor:
    """A tensor over the same memory that does not keep it alive (vLLM's weak_ref_tensor).

    Graph outputs and tensors handed to eager breaks are held this way, so their blocks
    return to the pool after capture and later captures can reuse them — the pool sharing
    whose memory effect memdiff measures.
    """
    if t.device.type != "cuda":
        return t
    storage = torch._C._construct_storage_from_data_pointer(
        t.untyped_storage().data_ptr(), t.device, t.untyped_storage().nbytes()
    )
    out = torch.empty(0, dtype=t.dtype, device=t.device)
    out.set_(storage, t.storage_offset(), t.size(), t.stride())
    return out


@dataclass
class Segmented:
    """Graph segments and the eager attention calls between them."""

    graphs: list[Any] = field(default_factory=list)
    breaks: list[tuple[int, tuple[torch.Tensor, ...]]] = field(default_factory=list)

    def replay(self, attention: AttentionRuntime) -> None:
        for i, graph in enumerate(self.graphs):
            graph.replay()
            if i < len(self.breaks):
                layer, (q, k, v, out) = self.breaks[i]
                attention.run(layer, q, k, v, out)


class SegmentRecorder:
    """Captures one callable as segments split at attention (the break hook)."""

    def __init__(self, attention: AttentionRuntime, pool: Any) -> None:
        self.attention = attention
        self.pool = pool
        self.result = Segmented()
        self._graph: Any = None

    def _begin(self) -> None:
        self._graph = torch.cuda.CUDAGraph()
        self._graph.capture_begin(pool=self.pool)

    def _end(self) -> None:
        self._graph.capture_end()
        self.result.graphs.append(self._graph)
        if self.pool is None:  # a private pool: every later segment joins the first's
            self.pool = self._graph.pool()

    def hook(
        self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor
    ) -> None:
        self._end()
        self.attention.run(layer, q, k, v, out)
        self.result.breaks.append((layer, tuple(weak_alias(t) for t in (q, k, v, out))))
        self._begin()

    def record(self, fn: Callable[[], Any]) -> tuple[Segmented, Any]:
        self.attention.break_hook = self.hook
        try:
            self._begin()
            try:
                value = fn()
            finally:
                self._end()
        finally:
            self.attention.break_hook = None
        return self.result, value


@dataclass
class CapturedGraph:
    desc: BatchDescriptor
    num_reqs: int
    num_tokens: int
    metadata: Metadata | None
    pool_id: tuple[int, int] | None
    full: Any = None
    segments: Segmented | None = None
    collectives: int = 0  # collectives one run issues (tensor parallelism): what a replay runs


class GraphContext:
    """What all phase managers share: backend, stream, pools, the piecewise model cache."""

    def __init__(self, backend: str, attention: AttentionRuntime, pools: PoolManager) -> None:
        self.backend = backend
        self.attention = attention
        self.pools = pools
        self.stream = torch.cuda.Stream() if backend == "cuda" else None
        self.piecewise: dict[tuple[str, int], tuple[Segmented | None, Any]] = {}
        self.piecewise_mode: str | None = None  # None | "capture" | "replay"
        self.piecewise_pool: PoolAssignment | None = None
        self.piecewise_pool_ids: dict[tuple[str, int], tuple[int, int] | None] = {}
        self.tracer: CaptureTracer | None = None
        self.capturing_phase = ""
        # run each capture's warmup and recording passes (always on CUDA; see RigConfig)
        self.run_passes = True
        # (allocated, reserved, driver free) where the last capture's window ended: each
        # window starts there, so the per-graph figures add up to the whole capture's
        self.memory_mark: MemoryReading | None = None

    def trace(
        self, mode: str, num_tokens: int, num_reqs: int | None, piece: str | None = None
    ) -> AbstractContextManager[Any]:
        """The tracer's scope for one emulated capture (nothing without a tracer)."""
        if self.tracer is None:
            return nullcontext()
        return self.tracer.scope(self.capturing_phase, mode, num_tokens, num_reqs, piece)

    @contextmanager
    def eager_attention(self) -> Iterator[None]:
        """Emulated segmented capture: each attention call runs unrecorded, as on CUDA it runs
        eagerly between the segments, its temporaries (an MLA call's up-projections, FA3's
        split-KV scratch) in the default pool, not the graph's."""
        tracer = self.tracer
        if tracer is None:
            yield
            return

        def outside(
            layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor
        ) -> None:
            with tracer.paused():
                self.attention.run(layer, q, k, v, out)

        self.attention.break_hook = outside
        try:
            yield
        finally:
            self.attention.break_hook = None

    # -------------------------------------------------------------- model-level pieces

    def call_model(self, name: str, fn: Callable[..., Any], num_tokens: int, *args: Any) -> Any:
        """Run a model forward, through its PIECEWISE graph when one applies."""
        mode, key = self.piecewise_mode, (name, num_tokens)
        if mode is None:
            return fn(*args)
        if key in self.piecewise:
            segments, outputs = self.piecewise[key]
            if segments is None:  # emulated
                return fn(*args)
            segments.replay(self.attention)
            return outputs
        if mode == "replay":
            return fn(*args)
        # capture: the first call with this num_tokens records the pieces
        if self.backend != "cuda":
            self.piecewise[key] = (None, None)
            self.piecewise_pool_ids[key] = None
            with self.trace("PIECEWISE", num_tokens, None, name):
                return fn(*args)
        assert self.piecewise_pool is not None
        recorder = SegmentRecorder(self.attention, self.piecewise_pool.handle)
        segments, outputs = recorder.record(lambda: fn(*args))
        aliases = tuple(weak_alias(t) if isinstance(t, torch.Tensor) else t for t in outputs)
        self.piecewise[key] = (segments, aliases)
        self.piecewise_pool_ids[key] = tuple(segments.graphs[0].pool()) if segments.graphs else None
        return outputs

    def on_stream(self, fn: Callable[[], Any]) -> Any:
        if self.stream is None:
            return fn()
        torch.cuda.synchronize()
        self.stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.stream):
            value = fn()
        torch.cuda.current_stream().wait_stream(self.stream)
        torch.cuda.synchronize()
        return value


class PhaseRunner:
    """One phase's graph manager: descriptors, dispatch, capture and replay."""

    def __init__(
        self,
        plan: PhasePlan,
        routine: Routine,
        attention: AttentionRuntime,
        context: GraphContext | None = None,
    ) -> None:
        self.plan = plan
        self.phase = plan.phase
        self.routine = routine
        self.attention = attention
        self.context = context
        self.dispatcher: Dispatcher = plan.dispatcher()
        self.graphs: dict[BatchDescriptor, CapturedGraph] = {}
        self.model_name = "target" if plan.phase == "target" else "draft"

    @property
    def captured(self) -> set[BatchDescriptor]:
        return set(self.graphs)

    def dispatch(self, num_reqs: int, num_tokens: int, uniform: int | None) -> BatchDescriptor:
        """vLLM's dispatch, restricted to descriptors actually captured (eager otherwise)."""
        desc = self.dispatcher.dispatch(num_reqs, num_tokens, uniform)
        if desc.mode is not Mode.NONE and desc not in self.graphs:
            return BatchDescriptor(Mode.NONE, num_tokens, num_reqs)
        return desc

    def pad(self, num_reqs: int, num_tokens: int, uniform: int | None) -> PaddedBatch:
        """`dispatch`, and the padded shape the batch runs at (`BatchDescriptor.pad`)."""
        return self.dispatch(num_reqs, num_tokens, uniform).pad(num_reqs, num_tokens)

    def share(self, other: PhaseRunner) -> None:
        """Dispatch into `other`'s captured graphs wherever the two share a descriptor (one
        engine dispatcher serving several phases): nothing is captured again."""
        mine = set(self.dispatcher.descriptors)
        self.graphs.update({d: g for d, g in other.graphs.items() if d in mine})

    def run(self, batch: PaddedBatch, live: Metadata | None) -> None:
        """Replay the graph of `batch`'s descriptor over `live` metadata, or run the routine
        eagerly at the padded shape where none was captured."""
        with collective_scope(lambda: f"{self.phase} {batch.desc.label()}"):
            self._run(batch, live)

    def _run(self, batch: PaddedBatch, live: Metadata | None) -> None:
        desc, num_reqs, num_tokens = batch.desc, batch.num_reqs, batch.num_tokens
        graph = self.graphs.get(desc)
        ctx = self.context
        if graph is None or ctx is None:
            self.attention.metadata = live
            self.routine(num_reqs, num_tokens)
            return
        label = f"{self.phase} {desc.label()}" if graph.collectives else ""
        if desc.mode is Mode.FULL:
            if graph.full is not None:
                with replay_watch(label, graph.collectives) as run:
                    if run:
                        graph.full.replay()
            else:
                self.attention.metadata = graph.metadata
                self.routine(graph.num_reqs, graph.num_tokens)
            return
        self.attention.metadata = live
        if desc.mode is Mode.BREAKABLE and graph.segments is not None:
            with replay_watch(label, graph.collectives) as run:
                if run:
                    graph.segments.replay(self.attention)
            return
        if desc.mode is Mode.PIECEWISE:
            ctx.piecewise_mode = "replay"
            try:
                self.routine(num_reqs, num_tokens)
            finally:
                ctx.piecewise_mode = None
            return
        self.routine(graph.num_reqs, graph.num_tokens)

    def capture(
        self,
        desc: BatchDescriptor,
        dummy: DummyFn,
        max_num_reqs: int,
        index: int,
        t0: float,
        instrument: bool = True,
    ) -> tuple[CaptureEvent, Metadata | None]:
        """One eager warmup, then the capture (vLLM MRV2 `CudaGraphManager.capture`).

        `instrument` adds the per-graph memory reads (`_MemoryProbe`: two statistics calls, one
        peak reset and one driver free-memory read per graph, no sync); turning it off gives
        the bare capture the overhead benchmark compares against."""
        ctx = self.context
        assert ctx is not None
        num_reqs = desc.num_reqs or min(desc.num_tokens, max_num_reqs)
        num_tokens = desc.num_tokens
        assignment = ctx.pools.assign(self.phase, desc.mode)
        mem = _MemoryProbe(ctx.backend == "cuda" and instrument)
        ctx.capturing_phase = self.phase
        with collective_scope(lambda: f"{self.phase} {desc.label()} capture"):
            return self._capture(desc, dummy, num_reqs, num_tokens, index, t0, mem, assignment)

    def _capture(
        self,
        desc: BatchDescriptor,
        dummy: DummyFn,
        num_reqs: int,
        num_tokens: int,
        index: int,
        t0: float,
        mem: _MemoryProbe,
        assignment: PoolAssignment,
    ) -> tuple[CaptureEvent, Metadata | None]:
        ctx = self.context
        assert ctx is not None
        cuda = ctx.backend == "cuda"
        # from the previous capture's end: the warmup's module loads and workspaces, and
        # anything between two captures, count towards this one
        first = ctx.memory_mark or mem.read()
        start = time.perf_counter()
        self.attention.metadata = dummy(desc, num_reqs, num_tokens)
        self.attention.skip = desc.mode is Mode.PIECEWISE
        issued = collectives_issued()
        try:
            if ctx.run_passes:
                with collective_scope(lambda: f"{self.phase} {desc.label()} warm-up"):
                    ctx.on_stream(lambda: self.routine(num_reqs, num_tokens))
        finally:
            self.attention.skip = False
        warm = time.perf_counter()
        collectives = collectives_issued() - issued
        before = mem.read(driver=False)  # only the first read's and the last's free are used
        mem.reset_peak()
        graph = CapturedGraph(desc, num_reqs, num_tokens, None, None, collectives=collectives)
        if desc.mode is Mode.FULL:
            graph.metadata = dummy(desc, num_reqs, num_tokens)  # a fresh state for the capture
            self.attention.metadata = graph.metadata
            if cuda:
                graph.full = ctx.on_stream(
                    lambda: _capture_full(self.routine, num_reqs, num_tokens, assignment.handle)
                )
                graph.pool_id = tuple(graph.full.pool())
            else:  # the emulated "capture" is one pass of the routine, as recording is
                if ctx.run_passes:
                    with ctx.trace(desc.mode.name, num_tokens, desc.num_reqs):
                        self.routine(num_reqs, num_tokens)
                graph.pool_id = assignment.handle
        elif desc.mode is Mode.BREAKABLE:
            if cuda:
                recorder = SegmentRecorder(self.attention, assignment.handle)
                graph.segments, _ = ctx.on_stream(
                    lambda: recorder.record(lambda: self.routine(num_reqs, num_tokens))
                )
                graph.pool_id = tuple(graph.segments.graphs[0].pool())
            else:  # attention runs eagerly between segments: outside the pool on CUDA
                if ctx.run_passes:
                    with (
                        ctx.trace(desc.mode.name, num_tokens, desc.num_reqs),
                        ctx.eager_attention(),
                    ):
                        self.routine(num_reqs, num_tokens)
                graph.pool_id = assignment.handle
        else:  # PIECEWISE: the routine runs eagerly, its model calls capture their pieces
            ctx.piecewise_mode, ctx.piecewise_pool = "capture", assignment
            self.attention.skip = True  # vLLM: prepare_inputs_to_capture(skip_attn=True)
            try:
                if ctx.run_passes:
                    ctx.on_stream(lambda: self.routine(num_reqs, num_tokens))
            finally:
                ctx.piecewise_mode = None
                self.attention.skip = False
            pool_id = ctx.piecewise_pool_ids.get((self.model_name, num_tokens))
            graph.pool_id = pool_id if cuda else assignment.handle
            graph.segments = ctx.piecewise.get((self.model_name, num_tokens), (None, None))[0]
        end = time.perf_counter()
        after = mem.read()
        if mem.cuda:
            ctx.memory_mark = after
        self.graphs[desc] = graph
        event = CaptureEvent(
            index=index,
            phase=self.phase,
            mode=desc.mode.name,
            num_tokens=num_tokens,
            num_reqs=desc.num_reqs,
            uniform_token_count=desc.uniform_token_count,
            pool=PoolId.of(graph.pool_id) if graph.pool_id is not None else None,
            backend=ctx.backend,
            start_s=start - t0,
            duration_s=end - warm,
            warmup_s=warm - start,
            segments=len(graph.segments.graphs)
            if graph.segments
            else (1 if desc.mode is Mode.FULL else 0),
            allocated_before=before.allocated,
            allocated_after=after.allocated,
            reserved_before=before.reserved,
            reserved_after=after.reserved,
            bytes=_delta(before.reserved, after.reserved),
            need_bytes=_delta(before.allocated, after.peak),
            warmup_reserved_bytes=_delta(first.reserved, before.reserved),
            device_bytes=_delta(after.free, first.free),  # free memory: first minus after
        )
        return event, graph.metadata


def _capture_full(routine: Routine, num_reqs: int, num_tokens: int, pool: Any) -> Any:
    graph = torch.cuda.CUDAGraph()
    graph.capture_begin(pool=pool)
    try:
        routine(num_reqs, num_tokens)
    finally:
        graph.capture_end()
    return graph


def _delta(before: int | None, after: int | None) -> int | None:
    return None if before is None or after is None else after - before


class _MemoryProbe:
    """Allocator counters and the driver's free memory around one capture.

    The driver's free-memory drop (cudaMemGetInfo) covers what the caching allocator cannot
    see — graph instantiation, kernel modules loaded by the warmup, library workspaces — so
    beside the allocator's reserved growth it accounts for all of vLLM's "took X GiB".

    Cost: one read is one `memory_stats_as_nested_dict` call and, where asked, one
    `cudaMemGetInfo`; no device synchronisation. The counters are kept on the host as the
    allocator hands out blocks, and the driver's free memory moves when `cudaMalloc` or graph
    instantiation returns, so neither needs a drained stream. (`torch.cuda.memory_allocated`
    and its siblings each flatten and sort the whole statistics dictionary; five of them per
    graph plus a sync were most of the instrumentation's cost.)"""

    def __init__(self, cuda: bool) -> None:
        self.cuda = cuda

    def reset_peak(self) -> None:
        if self.cuda:
            torch.cuda.reset_peak_memory_stats()

    def read(self, driver: bool = True) -> MemoryReading:
        """Allocated, reserved and peak-allocated bytes, and the driver's free bytes when
        `driver` (None elsewhere, and every field None off CUDA)."""
        if not self.cuda:
            return MemoryReading(None, None, None, None)
        stats = torch.cuda.memory_stats_as_nested_dict()
        allocated = stats.get("allocated_bytes", {}).get("all", {})
        reserved = stats.get("reserved_bytes", {}).get("all", {})
        free = int(torch.cuda.mem_get_info()[0]) if driver else None
        return MemoryReading(
            int(allocated.get("current", 0)),
            int(reserved.get("current", 0)),
            free,
            int(allocated.get("peak", 0)),
        )


class MemoryReading(NamedTuple):
    """One read of `_MemoryProbe`: what the capture's memory fields are differences of."""

    allocated: int | None
    reserved: int | None
    free: int | None
    peak: int | None
