"""The rig: one speculative-decoding step of vLLM MRV2, with its buffers, kernels and metadata.

Per step (research vllm-mrv2.md §3.4): the target verifies each request's last token plus its
K drafts; greedy rejection keeps the longest agreeing prefix; the draft prefill runs at
"position 0" over the target's token layout (ids shifted left, the bonus token at each
request's last valid slot, gathered at last_token_indices); then K-1 draft decodes each add
one token per request. Every tensor a graph could record is a registered persistent buffer,
and every phase body is a routine of (num_reqs, num_tokens) alone, so the same code runs
eagerly, under CUDA graphs, or under the emulated backend.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from eaglegraph.errors import BadInput
from eaglegraph.findings import Finding, Severity
from eaglegraph.kernels.block_table import (
    compute_slot_mappings,
    compute_slot_mappings_padded_rows,
    gather_block_tables,
)
from eaglegraph.kernels.eagle import (
    prepare_eagle_decode,
    prepare_eagle_inputs,
    update_eagle_draft_inputs,
)
from eaglegraph.kernels.gather import gather_rows
from eaglegraph.kernels.guard import Guard, GuardLog
from eaglegraph.kernels.sampling import argmax_map_draft, argmax_rows, greedy_verify
from eaglegraph.known.profiles import FLAGS
from eaglegraph.pair.model import Pair
from eaglegraph.rig.attention import (
    AttentionRuntime,
    CommonMetadata,
    FlashAttnBuilder,
    FlashInferBuilder,
    Metadata,
)
from eaglegraph.rig.buffers import BufferRegistry
from eaglegraph.rig.config import RigConfig
from eaglegraph.rig.descriptors import BatchDescriptor, uniform_token_count
from eaglegraph.rig.driver import StepOutput
from eaglegraph.rig.graphs import GraphContext, PhaseRunner
from eaglegraph.rig.kv_cache import BlockAllocator, KVLayout, allocate_kv_caches
from eaglegraph.rig.model_setup import (
    LoadedPair,
    build_models,
    check_buildable,
    resolve_model_dtype,
)
from eaglegraph.rig.modes import Mode
from eaglegraph.rig.plan import CapturePlan, build_plan
from eaglegraph.rig.pools import PoolManager
from eaglegraph.rig.timeline import CaptureEvent
from eaglegraph.rig.workload import Request, ScheduledRequest

KV_BUDGET_BYTES = {"cuda": 16 << 30, "cpu": 256 << 20}


class Rig:
    """Target + draft with paged KV, persistent buffers, metadata builders and phase runners."""

    def __init__(self, pair: Pair, config: RigConfig, models: LoadedPair | None = None) -> None:
        self.config = config
        opts = config.options
        self.behavior = opts.behavior
        self.framework = opts.framework
        self.plan: CapturePlan = build_plan(opts)
        dev = config.device
        check_buildable(pair, config.random_weights)
        assert pair.target is not None and pair.draft is not None
        tg, dg = pair.target.geometry, pair.draft.geometry
        self.max_num_seqs = r = opts.max_num_seqs
        self.num_speculative_tokens = k = opts.num_speculative_tokens
        self.max_model_len = config.max_model_len
        largest = max(self.plan.capture_sizes, default=0)
        self.max_tokens = t = max(opts.max_num_batched_tokens, largest)
        if config.max_model_len > tg.max_position_embeddings:
            raise BadInput(
                f"max_model_len {config.max_model_len} exceeds the target's "
                f"max_position_embeddings {tg.max_position_embeddings}"
            )
        if t > 1 << 20:
            raise BadInput(f"max_num_batched_tokens {t} is too large for the rig")
        self.block_size = bs = config.block_size
        self.max_blocks = mb = -(-config.max_model_len // bs)
        kv_dtype = resolve_model_dtype(config.dtype, pair, dev)
        layouts = [
            KVLayout(0, bs, tg.num_key_value_heads, tg.head_dim, kv_dtype)
        ] * tg.num_hidden_layers
        layouts += [
            KVLayout(0, bs, dg.num_key_value_heads, dg.head_dim, kv_dtype)
        ] * dg.num_hidden_layers
        per_block = sum(lay.bytes_per_layer() for lay in [_with_blocks(x, 1) for x in layouts])
        wanted = config.num_blocks or 1 + r * mb
        budget = KV_BUDGET_BYTES["cuda" if dev.type == "cuda" else "cpu"]
        num_blocks = wanted if config.num_blocks else max(2, min(wanted, budget // per_block))

        # Everything above is validation from configs: now allocate.
        self.models = models or build_models(
            pair,
            kv_dtype,
            dev,
            random_weights=config.random_weights,
            seed=config.seed,
            framework=opts.framework,
            max_positions=None,
        )
        self.vocab_size = self.models.vocab_size
        m = self.models
        self.registry = reg = BufferRegistry()
        i32, i64 = torch.int32, torch.int64

        def buf(
            name: str, phase: str, shape: tuple[int, ...], dtype: torch.dtype, extent: str
        ) -> torch.Tensor:
            return reg.register(name, phase, torch.zeros(shape, dtype=dtype, device=dev), extent)

        # target InputBuffers and the shared BlockTables
        self.input_ids = buf("target.input_ids", "target", (t,), i32, "num_tokens")
        self.positions = buf("target.positions", "target", (t,), i64, "num_tokens")
        self.query_start_loc = buf("target.query_start_loc", "target", (r + 1,), i32, "num_reqs+1")
        self.seq_lens = buf("target.seq_lens", "target", (r,), i32, "num_reqs")
        self.idx_mapping = buf("target.idx_mapping", "target", (r,), i32, "num_reqs")
        self.state_block_table = buf("state.block_table", "target", (r, mb), i32, "all")
        self.block_table = buf("block_table", "target", (r, mb), i32, "num_reqs")
        self.slot_mapping = buf("slot_mapping", "target", (t,), i64, "num_tokens")
        self.target_hidden = buf(
            "target.hidden", "target", (t, tg.hidden_size), kv_dtype, "num_tokens"
        )
        aux_width = len(m.aux_layer_ids) * tg.hidden_size
        self.target_aux = (
            buf("target.aux", "target", (t, aux_width), kv_dtype, "num_tokens")
            if aux_width
            else None
        )
        # rejection sampling (eager, between target and draft)
        self.target_argmax = buf("verify.target_argmax", "target", (t,), i64, "num_tokens")
        self.verify_drafts = buf("verify.drafts", "target", (r, max(k, 1)), i64, "num_reqs")
        self.num_drafts = buf("verify.num_drafts", "target", (r,), i32, "num_reqs")
        self.num_accepted = buf("verify.num_accepted", "target", (r,), i32, "num_reqs")
        self.num_rejected = buf("verify.num_rejected", "target", (r,), i32, "num_reqs")
        self.next_tokens = buf("verify.next_tokens", "target", (r,), i64, "num_reqs")
        self.accepted_tokens = buf("verify.accepted_tokens", "target", (r, k + 1), i64, "num_reqs")
        # the speculator's private InputBuffers and EAGLE state (research §3.1)
        self.eagle_input_ids = buf("eagle.input_ids", "draft_prefill", (t,), i32, "num_tokens")
        self.eagle_positions = buf("eagle.positions", "draft_prefill", (t,), i64, "num_tokens")
        self.eagle_qsl = buf("eagle.query_start_loc", "draft_prefill", (r + 1,), i32, "num_reqs+1")
        self.eagle_seq_lens = buf("eagle.seq_lens", "draft_prefill", (r,), i32, "num_reqs")
        self.eagle_hidden = buf(
            "eagle.hidden", "draft_prefill", (t, dg.hidden_size), kv_dtype, "num_tokens"
        )
        self.last_token_indices = buf(
            "eagle.last_token_indices", "draft_prefill", (r,), i64, "num_reqs"
        )
        self.draft_tokens = buf(
            "eagle.draft_tokens", "draft_prefill", (r, max(k, 1)), i64, "num_reqs"
        )
        self.current_draft_step = buf("eagle.current_draft_step", "draft_decode", (1,), i64, "all")
        # SGLang's draft-decode graph runner has its own positions buffer; the padded rows
        # [raw_bs:bs] keep the last larger batch's values unless reset
        # (`reset_positions_on_padded_replay`)
        self.decode_positions = (
            buf("sglang.draft_positions", "draft_decode", (r,), i64, "num_reqs")
            if opts.framework == "sglang"
            else self.eagle_positions
        )
        # routine scratch (what a FULL graph allocates from its pool lives inside routines)

        self.guard_log = GuardLog(config.guard_capacity, dev) if config.guard else None
        self.allocator = BlockAllocator(num_blocks, bs, mb)
        self.kv_caches = allocate_kv_caches([_with_blocks(x, num_blocks) for x in layouts], dev)
        head_dims = [lay.head_dim for lay in layouts]
        self.attention = AttentionRuntime(
            self.kv_caches, self.slot_mapping, head_dims, reg, self.guard_log
        )
        style = opts.metadata_style
        if style == "flashinfer":
            max_pages = r * mb
            self.target_builder: FlashAttnBuilder | FlashInferBuilder = FlashInferBuilder(
                reg, "target", r, max_pages, bs, dev, t
            )
            self.draft_builder: FlashAttnBuilder | FlashInferBuilder = FlashInferBuilder(
                reg, "draft", r, max_pages, bs, dev, t
            )
        else:
            self.target_builder = FlashAttnBuilder(reg, "target")
            self.draft_builder = FlashAttnBuilder(reg, "eagle")
        self._bt_host = np.zeros((r, mb), dtype=np.int32)
        self._bt_dirty = True  # the host block table changed since it was last copied
        self.runners = {
            "target": PhaseRunner(self.plan.phase("target"), self._target_routine, self.attention),
            "draft_prefill": PhaseRunner(
                self.plan.phase("draft_prefill"), self._prefill_routine, self.attention
            ),
            "draft_decode": PhaseRunner(
                self.plan.phase("draft_decode"), self._decode_routine, self.attention
            ),
        }
        self.graph_context: GraphContext | None = None
        # called after each phase of a step (the probe reads the guard log per phase)
        self.phase_hook: Callable[[str], None] | None = None
        self.captured_states: dict[BatchDescriptor, Metadata | None] = {}

    # ------------------------------------------------------------------ helpers

    def guard(self, **roles: str) -> Guard | None:
        if self.guard_log is None:
            return None
        return Guard(self.guard_log, self.registry.ids(**roles))

    def allocate(self, request: Request, num_tokens: int) -> None:
        before = len(request.blocks)
        self.allocator.ensure(request.rid, request.blocks, min(num_tokens, self.max_model_len))
        if len(request.blocks) != before or not request.blocks:
            row = self._bt_host[request.slot]
            row[:] = 0
            row[: len(request.blocks)] = request.blocks
            self._bt_dirty = True

    def release(self, request: Request) -> None:
        self.allocator.release(request.blocks)
        self._bt_host[request.slot] = 0
        self._bt_dirty = True

    def _h2d(self, dst: torch.Tensor, values: list[int] | np.ndarray) -> None:
        src = torch.as_tensor(np.asarray(values), dtype=dst.dtype)
        dst.copy_(src, non_blocking=dst.device.type == "cuda")

    # ------------------------------------------------------------------ routines

    def _model(self, name: str, fn: Any, num_tokens: int, *args: Any) -> Any:
        ctx = self.graph_context
        return fn(*args) if ctx is None else ctx.call_model(name, fn, num_tokens, *args)

    def _target_routine(self, num_reqs: int, num_tokens: int) -> None:
        n, m = num_tokens, self.models
        hidden, aux = self._model(
            "target",
            m.target,
            n,
            self.input_ids[:n],
            self.positions[:n],
            self.attention,
            m.aux_layer_ids,
        )
        self.target_hidden[:n].copy_(hidden)
        if self.target_aux is not None and aux is not None:
            self.target_aux[:n].copy_(aux)

    def _prefill_routine(self, num_reqs: int, num_tokens: int) -> None:
        """vLLM `EagleSpeculator.prefill`: what a FULL draft-prefill graph records."""
        n, r, m = num_tokens, num_reqs, self.models
        dev, width = self.eagle_hidden.device, self.eagle_hidden.shape[1]
        guard = self.guard(last_token_indices="eagle.last_token_indices")
        pos = torch.empty(r, dtype=torch.int64, device=dev)
        gather_rows(self.eagle_positions, self.last_token_indices, pos, r, n, guard)
        logit_h, hidden = self._model(
            "draft",
            m.draft,
            n,
            self.eagle_input_ids[:n],
            self.eagle_positions[:n],
            self.eagle_hidden[:n],
            self.attention,
        )
        last = torch.empty((r, logit_h.shape[1]), dtype=logit_h.dtype, device=dev)
        gather_rows(logit_h, self.last_token_indices, last, r, n, guard)
        logits = m.draft.compute_logits(last)
        sampled = torch.empty(r, dtype=torch.int64, device=dev)
        argmax_map_draft(logits, getattr(m.draft, "d2t", None), sampled, r)
        self.draft_tokens[:r, 0].copy_(sampled)
        nxt = torch.empty((r, width), dtype=hidden.dtype, device=dev)
        gather_rows(hidden, self.last_token_indices, nxt, r, n, guard)
        self.eagle_hidden[:r].copy_(nxt)
        self.eagle_positions[:r].copy_(pos)

    def _decode_routine(self, num_reqs: int, num_tokens: int) -> None:
        """vLLM `generate_draft`: one draft step; a FULL decode graph serves every step."""
        n, r, m = num_tokens, num_reqs, self.models
        logit_h, hidden = self._model(
            "draft",
            m.draft,
            n,
            self.eagle_input_ids[:n],
            self.decode_positions[:n],
            self.eagle_hidden[:n],
            self.attention,
        )
        logits = m.draft.compute_logits(logit_h[:r])
        sampled = torch.empty(r, dtype=torch.int64, device=logit_h.device)
        argmax_map_draft(logits, getattr(m.draft, "d2t", None), sampled, r)
        update_eagle_draft_inputs(
            sampled, hidden, self.draft_tokens, self.eagle_input_ids, self.eagle_hidden,
            self.decode_positions, self.eagle_seq_lens, self.current_draft_step, r,
            self.num_speculative_tokens, self.max_model_len,
        )  # fmt: skip

    # ------------------------------------------------------------------ capture

    def _dummy_inputs(self, owner: str, num_reqs: int, num_tokens: int) -> list[int]:
        """vLLM `InputBatch.make_dummy`: even query split (remainder to the last request),
        seq_len = query_len, zeroed ids/positions, all slots PAD (no KV is written)."""
        per, rem = divmod(num_tokens, num_reqs)
        lens = [per] * num_reqs
        lens[-1] += rem
        r = self.max_num_seqs
        qsl = [0, *np.cumsum(lens).tolist()] + [num_tokens] * (r - num_reqs)
        if owner == "target":
            ids, pos, qbuf, sbuf = (
                self.input_ids,
                self.positions,
                self.query_start_loc,
                self.seq_lens,
            )
        else:
            ids, pos, qbuf, sbuf = (
                self.eagle_input_ids,
                self.eagle_positions,
                self.eagle_qsl,
                self.eagle_seq_lens,
            )
        ids[:num_tokens].zero_()
        pos[:num_tokens].zero_()
        self._h2d(qbuf, qsl)
        self._h2d(sbuf, lens + [0] * (r - num_reqs))
        self.slot_mapping.fill_(-1)
        return lens

    def _dummy_target(self, desc: BatchDescriptor, num_reqs: int, num_tokens: int) -> Metadata:
        lens = self._dummy_inputs("target", num_reqs, num_tokens)
        max_q = graph_max_query_len(desc, max(lens))
        return self._build(
            self.target_builder, self._common("target", lens, num_reqs, num_tokens, max_q)
        )

    def _dummy_prefill(self, desc: BatchDescriptor, num_reqs: int, num_tokens: int) -> Metadata:
        self.last_token_indices.zero_()
        if desc.mode is Mode.FULL and self.behavior.reuse_target_attn_state:
            state = self.captured_states.get(desc)
            if state is not None:
                self._dummy_inputs("eagle", num_reqs, num_tokens)
                return state
        if desc.mode is not Mode.FULL:
            md = self._dummy_target(desc, num_reqs, num_tokens)
            self._dummy_inputs("eagle", num_reqs, num_tokens)
            return md
        lens = self._dummy_inputs("eagle", num_reqs, num_tokens)
        max_q = graph_max_query_len(desc, max(lens))
        return self._build(
            self.draft_builder, self._common("eagle", lens, num_reqs, num_tokens, max_q)
        )

    def _dummy_decode(self, desc: BatchDescriptor, num_reqs: int, num_tokens: int) -> Metadata:
        lens = self._dummy_inputs("eagle", num_reqs, num_tokens)
        self.decode_positions[:num_tokens].zero_()
        return self._build(self.draft_builder, self._common("eagle", lens, num_reqs, num_tokens, 1))

    def capture(
        self,
        pool_policy: str | None = None,
        on_event: Callable[[CaptureEvent], None] | None = None,
        instrument: bool = True,
    ) -> tuple[list[CaptureEvent], list[Finding]]:
        """Capture every planned graph: target first, then draft prefill, then draft decode;
        within a phase PIECEWISE-like before FULL, largest first, one eager warmup each."""
        policy = pool_policy or self.behavior.default_pool
        backend = self.config.graph_backend
        self.graph_context = ctx = GraphContext(
            backend, self.attention, PoolManager(policy, backend)
        )
        for runner in self.runners.values():
            runner.context = ctx
        dummies = {
            "target": self._dummy_target,
            "draft_prefill": self._dummy_prefill,
            "draft_decode": self._dummy_decode,
        }
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
            self._capture_phases(ctx, dummies, events, findings, on_event, instrument, t0)
        finally:
            if gc_was_enabled:
                gc.enable()
        if self.guard_log is not None:
            self.guard_log.reset()
        return events, findings

    def _capture_phases(
        self,
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
            for phase in ("target", "draft_prefill", "draft_decode"):
                runner = self.runners[phase]
                if phase == "draft_prefill":
                    findings += self._handoff_findings(runner)
                for desc in runner.dispatcher.capture_order():
                    try:
                        event, state = runner.capture(
                            desc, dummies[phase], self.max_num_seqs, len(events), t0, instrument
                        )
                    except (torch.OutOfMemoryError, RuntimeError) as exc:
                        failed = _failed_event(desc, phase, backend, len(events), t0, exc)
                        raise CaptureFailed(events, failed, exc) from exc
                    if phase == "target" and desc.mode is Mode.FULL:
                        self.captured_states[desc] = state
                    events.append(event)
                    if on_event is not None:
                        on_event(event)

    def _handoff_findings(self, runner: PhaseRunner) -> list[Finding]:
        """`reuse_target_attn_state` hands the target's captured attention state to the draft
        prefill by descriptor key: both managers must have identical FULL descriptor sets."""
        if not self.behavior.reuse_target_attn_state:
            return []
        want = {d for d in runner.dispatcher.descriptors if d.mode is Mode.FULL}
        have = {d for d in self.captured_states}
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

    # ------------------------------------------------------------------ the step

    def _common(
        self, owner: str, seq_lens_cpu: list[int], num_reqs: int, num_tokens: int, max_q: int
    ) -> CommonMetadata:
        qsl, sl = (
            (self.query_start_loc, self.seq_lens)
            if owner == "target"
            else (self.eagle_qsl, self.eagle_seq_lens)
        )
        return CommonMetadata(
            qsl, sl, self.block_table, seq_lens_cpu, num_reqs, num_tokens, max_q, owner
        )

    def _build(
        self, builder: FlashAttnBuilder | FlashInferBuilder, common: CommonMetadata
    ) -> Metadata:
        if isinstance(builder, FlashInferBuilder):
            return builder.build(
                common,
                self.guard(block_table="block_table", kv_indptr=f"{builder.owner}.kv_indptr"),
            )
        return builder.build(common)

    @torch.inference_mode()
    def step(self, batch: list[ScheduledRequest]) -> StepOutput:
        rb, k = len(batch), self.num_speculative_tokens
        if not 0 < rb <= self.max_num_seqs:
            raise BadInput(f"a step needs 1..{self.max_num_seqs} requests, got {rb}")
        lens = [len(b.query) for b in batch]
        tb = sum(lens)
        if tb > self.max_tokens:
            raise BadInput(f"step of {tb} tokens exceeds max_num_batched_tokens {self.max_tokens}")
        qsl = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        seq_lens = [b.start_pos + len(b.query) for b in batch]
        positions = np.concatenate(
            [np.arange(b.start_pos, b.start_pos + len(b.query)) for b in batch]
        )
        tokens = np.concatenate([np.asarray(b.query, dtype=np.int64) for b in batch])
        max_q = max(lens)
        if max(seq_lens) + k > self.max_model_len:
            raise BadInput(
                f"a request reaches position {max(seq_lens) + k} ≥ max_model_len {self.max_model_len}"
            )
        r = self.max_num_seqs

        # --- host → persistent input buffers (prepare_inputs)
        self._h2d(self.input_ids[:tb], tokens)
        self._h2d(self.positions[:tb], positions)
        self._h2d(self.query_start_loc, np.concatenate([qsl, np.full(r - rb, tb)]))
        self._h2d(self.seq_lens, seq_lens + [0] * (r - rb))
        self._h2d(self.idx_mapping[:rb], [b.slot for b in batch])
        if self._bt_dirty:
            self._h2d(self.state_block_table, self._bt_host)
            self._bt_dirty = False
        drafts = np.full((rb, max(k, 1)), -1, dtype=np.int64)
        for i, b in enumerate(batch):
            drafts[i, : b.num_drafts] = b.query[1 : 1 + b.num_drafts]
        self._h2d(self.verify_drafts[:rb], drafts)
        self._h2d(self.num_drafts[:rb], [b.num_drafts for b in batch])

        # --- target: dispatch, block tables, slot mapping, metadata, forward
        runner = self.runners["target"]
        desc = runner.dispatch(rb, tb, uniform_token_count(rb, tb, max_q))
        full = desc.mode is Mode.FULL
        reqs_pad = desc.num_reqs if full and desc.num_reqs else rb
        tok_pad = desc.num_tokens if desc.mode is not Mode.NONE else tb
        gather_block_tables(
            self.state_block_table, self.idx_mapping, self.block_table, rb, reqs_pad,
            self.guard(idx_mapping="target.idx_mapping"),
        )  # fmt: skip
        compute_slot_mappings(
            self.block_table, self.query_start_loc, self.positions, self.slot_mapping, rb,
            self.max_tokens, self.block_size, self.allocator.num_blocks,
            self.guard(query_start_loc="target.query_start_loc", positions="target.positions", block_table="block_table"),
        )  # fmt: skip
        md_count = (reqs_pad, tok_pad) if full else (rb, tb)
        md_max_q = graph_max_query_len(desc, max_q)
        common = self._common(
            "target", seq_lens + [0] * (md_count[0] - rb), md_count[0], md_count[1], md_max_q
        )
        target_md = self._build(self.target_builder, common)
        runner.run(desc, reqs_pad, tok_pad, target_md)
        self._phase_done("target")

        # --- rejection sampling (eager, as vLLM's sampler)
        logits = self.models.target.compute_logits(self.target_hidden[:tb])
        argmax_rows(logits, self.target_argmax, tb)
        greedy_verify(
            self.target_argmax, self.verify_drafts, self.query_start_loc, rb, self.num_drafts,
            self.num_accepted, self.num_rejected, self.next_tokens, self.accepted_tokens,
        )  # fmt: skip
        accepted = self.num_accepted[:rb].tolist()
        next_tokens = self.next_tokens[:rb].tolist()
        descriptors = {"target": desc.label()}

        # --- draft prefill (position 0 over the target's token layout)
        aux = self.target_aux[:tok_pad] if self.target_aux is not None else None
        feature = self.models.draft.prefill_feature(self.target_hidden[:tok_pad], aux)
        self.eagle_hidden[:tok_pad].copy_(feature)
        prepare_eagle_inputs(
            self.query_start_loc, self.seq_lens, self.input_ids, self.positions, self.num_rejected,
            self.next_tokens, self.eagle_input_ids, self.eagle_positions, self.eagle_qsl,
            self.eagle_seq_lens, self.last_token_indices, self.current_draft_step, rb, r,
            pad_last_token_indices=self.behavior.pad_last_token_indices,
            guard=self.guard(target_query_start_loc="target.query_start_loc"),
        )  # fmt: skip
        prunner = self.runners["draft_prefill"]
        pdesc = prunner.dispatch(rb, tok_pad, uniform_token_count(rb, tb, max_q))
        pfull = pdesc.mode is Mode.FULL
        p_reqs = pdesc.num_reqs if pfull and pdesc.num_reqs else rb
        p_toks = pdesc.num_tokens if pdesc.mode is not Mode.NONE else tok_pad
        prefill_md = self._prefill_metadata(pdesc, target_md, seq_lens, rb, p_reqs, p_toks)
        prunner.run(pdesc, p_reqs, p_toks, prefill_md)
        descriptors["draft_prefill"] = pdesc.label()
        self._phase_done("draft_prefill")

        if k > 1:
            self._draft_decodes(batch, seq_lens, accepted, descriptors)
        drafts_out = self.draft_tokens[:rb, :k].tolist()
        return StepOutput(next_tokens, accepted, drafts_out, descriptors)

    def _phase_done(self, phase: str) -> None:
        if self.phase_hook is not None:
            self.phase_hook(phase)

    def _prefill_metadata(
        self,
        pdesc: BatchDescriptor,
        target_md: Metadata,
        seq_lens: list[int],
        rb: int,
        p_reqs: int,
        p_toks: int,
    ) -> Metadata:
        """With `reuse_target_attn_state` the draft prefill reads the target's metadata;
        without it, FULL replays are preceded by a rebuild on the speculator's own builders."""
        if self.behavior.reuse_target_attn_state or pdesc.mode is not Mode.FULL:
            return target_md
        max_q = graph_max_query_len(pdesc, self.num_speculative_tokens + 1)
        common = self._common("eagle", seq_lens + [0] * (p_reqs - rb), p_reqs, p_toks, max_q)
        return self._build(self.draft_builder, common)

    def _draft_decodes(
        self,
        batch: list[ScheduledRequest],
        seq_lens: list[int],
        accepted: list[int],
        descriptors: dict[str, str],
    ) -> None:
        rb, k, r = len(batch), self.num_speculative_tokens, self.max_num_seqs
        prepare_eagle_decode(
            self.draft_tokens, self.seq_lens, self.num_rejected, self.eagle_input_ids,
            self.eagle_positions, self.eagle_qsl, self.eagle_seq_lens, rb, r, self.max_model_len,
        )  # fmt: skip
        runner = self.runners["draft_decode"]
        desc = runner.dispatch(rb, rb, 1)
        r_pad = desc.num_reqs if desc.mode is Mode.FULL and desc.num_reqs else rb
        t_pad = desc.num_tokens if desc.mode is not Mode.NONE else rb
        if self.decode_positions is not self.eagle_positions:
            self.decode_positions[:rb].copy_(self.eagle_positions[:rb])
        sglang = self.framework == "sglang" and desc.mode is Mode.FULL
        if sglang:
            self._sglang_padded_rows(rb, r_pad)
        rejected = [b.num_drafts - a for b, a in zip(batch, accepted, strict=True)]
        base = [min(s - rej, self.max_model_len) for s, rej in zip(seq_lens, rejected, strict=True)]
        pad_len = 1 if sglang else 0
        for step in range(1, k):
            if sglang:
                compute_slot_mappings_padded_rows(
                    self.block_table, self.decode_positions, self.slot_mapping, r_pad,
                    self.block_size, self.allocator.num_blocks,
                    self.guard(positions="sglang.draft_positions", block_table="block_table"),
                )  # fmt: skip
            else:
                compute_slot_mappings(
                    self.block_table, self.eagle_qsl, self.decode_positions, self.slot_mapping, rb,
                    t_pad, self.block_size, self.allocator.num_blocks,
                    self.guard(query_start_loc="eagle.query_start_loc", positions="eagle.positions", block_table="block_table"),
                )  # fmt: skip
            lens = [min(b + step, self.max_model_len) for b in base] + [pad_len] * (r_pad - rb)
            md = self._build(self.draft_builder, self._common("eagle", lens, r_pad, t_pad, 1))
            self.current_draft_step.fill_(step)
            runner.run(desc, r_pad, t_pad, md)
        descriptors["draft_decode"] = desc.label()
        self._phase_done("draft_decode")

    def _sglang_padded_rows(self, rb: int, r_pad: int) -> None:
        """SGLang's padded draft replay: padded rows get seq_len 1 and one token each; their
        positions are zeroed only with `reset_positions_on_padded_replay`."""
        if r_pad == rb:
            return
        self.eagle_seq_lens[rb:r_pad].fill_(1)
        self.block_table[rb:r_pad].zero_()  # req_pool_indices ZERO: padded rows → reserved row
        self._h2d(self.eagle_qsl[: r_pad + 1], list(range(r_pad + 1)))
        if self.behavior.reset_positions_on_padded_replay:
            self.decode_positions[rb:r_pad].zero_()


class CaptureFailed(Exception):
    """A capture stopped (OOM or an error); carries the events captured before it."""

    def __init__(
        self, events: list[CaptureEvent], failed: CaptureEvent, cause: BaseException
    ) -> None:
        super().__init__(str(cause))
        self.events = events
        self.failed = failed
        self.cause = cause


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


def graph_max_query_len(desc: BatchDescriptor, max_query_len: int) -> int:
    """A FULL graph bakes max_query_len into its launch grid: uniform descriptors know it
    exactly, mixed ones must cover any batch they may be padded to (num_tokens)."""
    if desc.mode is not Mode.FULL:
        return max_query_len
    return desc.uniform_token_count or desc.num_tokens


def _with_blocks(layout: KVLayout, num_blocks: int) -> KVLayout:
    return KVLayout(
        num_blocks, layout.block_size, layout.num_kv_heads, layout.head_dim, layout.dtype
    )
