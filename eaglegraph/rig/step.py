"""The rig: one speculative-decoding step of vLLM MRV2, composed of its buffers
(step_buffers.py), phase routines (routines.py), capture (capture.py) and SGLang's padding
(sglang_padding.py); this module sizes and wires them and runs the step.

Per step (research vllm-mrv2.md §3.4): the target verifies each request's last token plus its
K drafts; greedy rejection keeps the longest agreeing prefix; the draft prefill runs at
"position 0" over the target's token layout (ids shifted left, the bonus token at each
request's last valid slot, gathered at last_token_indices); then K-1 draft decodes each add
one token per request. Every tensor a graph could record is a registered persistent buffer,
and every phase body is a routine of (num_reqs, num_tokens) alone, so the same code runs
eagerly, under CUDA graphs, or under the emulated backend.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from eaglegraph.errors import BadInput
from eaglegraph.kernels.block_table import compute_slot_mappings, gather_block_tables
from eaglegraph.kernels.eagle import prepare_eagle_decode, prepare_eagle_inputs
from eaglegraph.kernels.guard import Guard, GuardLog
from eaglegraph.kernels.sampling import argmax_rows, greedy_verify
from eaglegraph.known.attention_workspace import SplitKvScratch, split_kv_scratch
from eaglegraph.known.heads import head_dtype
from eaglegraph.models.compile import CompiledForward
from eaglegraph.models.drafts import draft_build
from eaglegraph.pair.model import Pair
from eaglegraph.results.capture import CaptureEvent
from eaglegraph.results.findings import Finding
from eaglegraph.rig.attention import (
    AttentionRuntime,
    CommonMetadata,
    FlashAttnBuilder,
    FlashInferBuilder,
    Metadata,
)
from eaglegraph.rig.buffers import BufferRegistry
from eaglegraph.rig.capture import CaptureFailed, capture_graphs, graph_max_query_len
from eaglegraph.rig.config import RigConfig
from eaglegraph.rig.descriptors import BatchDescriptor, uniform_token_count
from eaglegraph.rig.dflash_window import DFlashWindow
from eaglegraph.rig.driver import StepOutput
from eaglegraph.rig.graphs import CaptureTracer, GraphContext, PhaseRunner
from eaglegraph.rig.kv_cache import BlockAllocator, KVLayout, allocate_kv_caches
from eaglegraph.rig.kv_specs import kv_layouts
from eaglegraph.rig.limits import check_limits
from eaglegraph.rig.model_setup import (
    LoadedPair,
    build_models,
    check_buildable,
    resolve_model_dtype,
)
from eaglegraph.rig.modes import Mode
from eaglegraph.rig.mtp_window import MTPWindow
from eaglegraph.rig.plan import CapturePlan, build_plan
from eaglegraph.rig.routines import PhaseRoutines
from eaglegraph.rig.sglang_padding import PADDED_SEQ_LEN, pad_draft_rows, padded_slot_mapping
from eaglegraph.rig.speculators import speculator_plan
from eaglegraph.rig.step_buffers import StepBuffers, h2d
from eaglegraph.rig.workload import Request, ScheduledRequest

__all__ = ["CaptureFailed", "Rig", "graph_max_query_len"]

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
        check_buildable(pair, config.random_weights, opts.framework)
        check_limits(pair, config, self.plan)
        assert pair.target is not None and pair.draft is not None
        tg, dg = pair.target.geometry, pair.draft.geometry
        self.max_num_seqs = r = opts.max_num_seqs
        self.num_speculative_tokens = k = opts.num_speculative_tokens
        self.max_model_len = config.max_model_len
        largest = max(self.plan.capture_sizes, default=0)
        self.max_tokens = t = max(opts.max_num_batched_tokens, largest)
        self.block_size = bs = config.block_size
        self.max_blocks = mb = -(-config.max_model_len // bs)
        kv_dtype = resolve_model_dtype(config.dtype, pair, dev)
        assert pair.draft_facts is not None  # check_buildable
        layouts = kv_layouts(pair, bs, kv_dtype, opts.framework)
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
        self.head = head_dtype(opts.framework)
        self.registry = reg = BufferRegistry()
        self.bufs = StepBuffers(
            reg,
            dev,
            max_num_seqs=r,
            max_tokens=t,
            num_speculative_tokens=k,
            max_blocks=mb,
            target_hidden_size=tg.hidden_size,
            draft_hidden_size=dg.hidden_size,
            aux_width=len(self.models.aux_layer_ids) * tg.hidden_size,
            dtype=kv_dtype,
            framework=opts.framework,
        )
        # routine scratch (what a FULL graph allocates from its pool lives inside routines)

        self.guard_log = GuardLog(config.guard_capacity, dev) if config.guard else None
        self.allocator = BlockAllocator(num_blocks, bs, mb)
        self.kv_caches = allocate_kv_caches([_with_blocks(x, num_blocks) for x in layouts], dev)
        head_dims = [lay.head_dim for lay in layouts]
        self.attention = AttentionRuntime(
            self.kv_caches, self.bufs.slot_mapping, head_dims, reg, self.guard_log
        )
        style = opts.metadata_style
        self.attention_scratch: SplitKvScratch | None = None
        if style == "flashinfer":
            max_pages = r * mb
            self.target_builder: FlashAttnBuilder | FlashInferBuilder = FlashInferBuilder(
                reg, "target", r, max_pages, bs, dev, t
            )
            self.draft_builder: FlashAttnBuilder | FlashInferBuilder = FlashInferBuilder(
                reg, "draft", r, max_pages, bs, dev, t
            )
        else:
            # FA3's split-KV scratch, as the engine's builder caps it for this plan's GPU
            self.attention_scratch = split_kv_scratch(
                opts.framework,
                opts.attention_backend,
                opts.gpu.capability[0],
                self.plan.resolved_mode.has_full(),
                largest,
            )
            self.target_builder = FlashAttnBuilder(reg, "target", self.attention_scratch)
            self.draft_builder = FlashAttnBuilder(reg, "eagle", self.attention_scratch)
        self._bt_host = np.zeros((r, mb), dtype=np.int32)
        self._bt_dirty = True  # the host block table changed since it was last copied
        self.routines = routines = PhaseRoutines(
            self.models, self.bufs, self.attention, self.guard, k, config.max_model_len
        )
        if config.compiled:
            routines.target_forward = CompiledForward(self.models.target)
        routines.widen_draft_logits = self.head.draft_sampler_widens
        prefill_routine = routines.prefill
        # multi-module MTP and DFlash: all drafting in one speculator graph, no decodes
        self.mtp_window: MTPWindow | None = None
        self.dflash: DFlashWindow | None = None
        self.extra_lookahead_slots = draft_build(self.models.kind).extra_lookahead_slots
        self.speculator, self.plan = speculator_plan(pair, self.plan)
        if self.speculator == "window":
            self.mtp_window = MTPWindow(
                reg, self.bufs, self.models.draft, self.attention, self.guard, max_num_seqs=r,
                num_speculative_tokens=k, hidden_size=dg.hidden_size, dtype=kv_dtype, device=dev,
            )  # fmt: skip
            window = self.mtp_window
            prefill_routine = lambda nr, nt: window.routine(routines._model, nr, nt)  # noqa: E731
        elif self.speculator == "block":
            capacity = max(
                (d.num_reqs or 0 for d in self.plan.phase("draft_prefill").descriptors), default=r
            )
            self.dflash = DFlashWindow(
                reg, self.bufs, self.models.draft, self.attention, self.kv_caches, self.guard,
                max_num_seqs=r, capacity_reqs=capacity, max_tokens=t, num_speculative_tokens=k,
                unpadded_query_buffers=not self.behavior.dflash_padded_query_buffers, device=dev,
            )  # fmt: skip
            self.attention.non_causal = frozenset(range(tg.num_hidden_layers, len(layouts)))
            block = self.dflash
            prefill_routine = lambda nr, nt: block.routine(routines._model, nr, nt)  # noqa: E731
        # K-1 draft decodes in one graph where the plan fuses them and the metadata style lets
        # the step update it in place (flash-attn style: views of the step buffers)
        self.fused_draft_decode = (
            self.plan.phase("draft_decode").fused_steps > 1
            and opts.framework == "vllm"
            and style == "flash_attn"
        )
        routines.draft_slots = self._draft_slots
        decode = routines.decode_fused if self.fused_draft_decode else routines.decode
        self.runners = {
            "target": PhaseRunner(self.plan.phase("target"), routines.target, self.attention),
            "draft_prefill": PhaseRunner(
                self.plan.phase("draft_prefill"), prefill_routine, self.attention
            ),
            "draft_decode": PhaseRunner(self.plan.phase("draft_decode"), decode, self.attention),
        }
        # called after each phase of a step (the probe reads the guard log per phase)
        self.phase_hook: Callable[[str], None] | None = None
        # called as (phase, draft step, "prepare" | "launch") where a phase's input preparation
        # starts and right before its graph or kernels run: the probe's breadcrumbs and the
        # checks it must finish before a bad slot or index can reach a kernel
        self.launch_hook: Callable[[str, int, str], None] | None = None
        self.captured_states: dict[BatchDescriptor, Metadata | None] = {}

    # ------------------------------------------------------------------ helpers

    def guard(self, **roles: str) -> Guard | None:
        if self.guard_log is None:
            return None
        return Guard(self.guard_log, self.registry.ids(**roles))

    def allocate(self, request: Request, num_tokens: int) -> None:
        """Blocks for `num_tokens` (the query plus K lookahead slots), plus the slots the
        draft kind writes beyond them (DFlash: one, for its bonus-token row)."""
        before = len(request.blocks)
        num_tokens += self.extra_lookahead_slots
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

    @property
    def graph_context(self) -> GraphContext | None:
        return self.routines.graph_context

    @graph_context.setter
    def graph_context(self, ctx: GraphContext | None) -> None:
        self.routines.graph_context = ctx

    def capture(
        self,
        pool_policy: str | None = None,
        on_event: Callable[[CaptureEvent], None] | None = None,
        instrument: bool = True,
        tracer: CaptureTracer | None = None,
        memory_mark: tuple[int | None, int | None, int | None] | None = None,
    ) -> tuple[list[CaptureEvent], list[Finding]]:
        """Capture every planned graph (rig/capture.py): target, draft prefill, draft decode.
        `memory_mark` (allocated, reserved, driver free) opens the first graph's window."""
        return capture_graphs(self, pool_policy, on_event, instrument, tracer, memory_mark)

    # ------------------------------------------------------------------ the step

    def common_metadata(
        self, owner: str, seq_lens_cpu: list[int], num_reqs: int, num_tokens: int, max_q: int
    ) -> CommonMetadata:
        qsl, sl = (
            (self.bufs.query_start_loc, self.bufs.seq_lens)
            if owner == "target"
            else (self.bufs.eagle_qsl, self.bufs.eagle_seq_lens)
        )
        return CommonMetadata(
            qsl, sl, self.bufs.block_table, seq_lens_cpu, num_reqs, num_tokens, max_q, owner
        )

    def build_metadata(
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
        bufs = self.bufs
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
        self._mark("target", 0, "prepare")
        h2d(bufs.input_ids[:tb], tokens)
        h2d(bufs.positions[:tb], positions)
        h2d(bufs.query_start_loc, np.concatenate([qsl, np.full(r - rb, tb)]))
        h2d(bufs.seq_lens, seq_lens + [0] * (r - rb))
        h2d(bufs.idx_mapping[:rb], [b.slot for b in batch])
        if self._bt_dirty:
            h2d(bufs.state_block_table, self._bt_host)
            self._bt_dirty = False
        drafts = np.full((rb, max(k, 1)), -1, dtype=np.int64)
        for i, b in enumerate(batch):
            drafts[i, : b.num_drafts] = b.query[1 : 1 + b.num_drafts]
        h2d(bufs.verify_drafts[:rb], drafts)
        h2d(bufs.num_drafts[:rb], [b.num_drafts for b in batch])

        # --- target: dispatch, block tables, slot mapping, metadata, forward
        runner = self.runners["target"]
        desc = runner.dispatch(rb, tb, uniform_token_count(rb, tb, max_q))
        full = desc.mode is Mode.FULL
        reqs_pad = desc.num_reqs if full and desc.num_reqs else rb
        tok_pad = desc.num_tokens if desc.mode is not Mode.NONE else tb
        gather_block_tables(
            bufs.state_block_table, bufs.idx_mapping, bufs.block_table, rb, reqs_pad,
            self.guard(idx_mapping="target.idx_mapping"),
        )  # fmt: skip
        compute_slot_mappings(
            bufs.block_table, bufs.query_start_loc, bufs.positions, bufs.slot_mapping, rb,
            self.max_tokens, self.block_size, self.allocator.num_blocks,
            self.guard(query_start_loc="target.query_start_loc", positions="target.positions", block_table="block_table"),
        )  # fmt: skip
        md_count = (reqs_pad, tok_pad) if full else (rb, tb)
        md_max_q = graph_max_query_len(desc, max_q)
        common = self.common_metadata(
            "target", seq_lens + [0] * (md_count[0] - rb), md_count[0], md_count[1], md_max_q
        )
        target_md = self.build_metadata(self.target_builder, common)
        self._mark("target", 0, "launch")
        runner.run(desc, reqs_pad, tok_pad, target_md)
        self._phase_done("target")

        # --- rejection sampling (eager, as vLLM's sampler)
        logits = self.models.target.compute_logits(bufs.target_hidden[:tb])
        if self.head.target_sampler_widens:  # the engine's sampler, eager: exact for argmax
            logits = logits.float()
        argmax_rows(logits, bufs.target_argmax, tb)
        greedy_verify(
            bufs.target_argmax, bufs.verify_drafts, bufs.query_start_loc, rb, bufs.num_drafts,
            bufs.num_accepted, bufs.num_rejected, bufs.next_tokens, bufs.accepted_tokens,
        )  # fmt: skip
        accepted = bufs.num_accepted[:rb].tolist()
        next_tokens = bufs.next_tokens[:rb].tolist()
        descriptors = {"target": desc.label()}

        if self.dflash is not None or self.mtp_window is not None:
            drafts = self._dflash_drafts if self.dflash is not None else self._window_drafts
            drafts(batch, seq_lens, accepted, tb, max_q, descriptors)
            return StepOutput(
                next_tokens, accepted, bufs.draft_tokens[:rb, :k].tolist(), descriptors
            )

        # --- draft prefill (position 0 over the target's token layout)
        self._mark("draft_prefill", 0, "prepare")
        aux = bufs.target_aux[:tok_pad] if bufs.target_aux is not None else None
        feature = self.models.draft.prefill_feature(bufs.target_hidden[:tok_pad], aux)
        bufs.eagle_hidden[:tok_pad].copy_(feature)
        prepare_eagle_inputs(
            bufs.query_start_loc, bufs.seq_lens, bufs.input_ids, bufs.positions, bufs.num_rejected,
            bufs.next_tokens, bufs.eagle_input_ids, bufs.eagle_positions, bufs.eagle_qsl,
            bufs.eagle_seq_lens, bufs.last_token_indices, bufs.current_draft_step, rb, r,
            pad_last_token_indices=self.behavior.pad_last_token_indices,
            guard=self.guard(target_query_start_loc="target.query_start_loc"),
        )  # fmt: skip
        prunner = self.runners["draft_prefill"]
        pdesc = prunner.dispatch(rb, tok_pad, uniform_token_count(rb, tb, max_q))
        pfull = pdesc.mode is Mode.FULL
        p_reqs = pdesc.num_reqs if pfull and pdesc.num_reqs else rb
        p_toks = pdesc.num_tokens if pdesc.mode is not Mode.NONE else tok_pad
        prefill_md = self._prefill_metadata(pdesc, target_md, seq_lens, rb, p_reqs, p_toks)
        self._mark("draft_prefill", 0, "launch")
        prunner.run(pdesc, p_reqs, p_toks, prefill_md)
        descriptors["draft_prefill"] = pdesc.label()
        self._phase_done("draft_prefill")

        if k > 1:
            self._draft_decodes(batch, seq_lens, accepted, descriptors)
        drafts_out = bufs.draft_tokens[:rb, :k].tolist()
        return StepOutput(next_tokens, accepted, drafts_out, descriptors)

    def _window_drafts(
        self,
        batch: list[ScheduledRequest],
        seq_lens: list[int],
        accepted: list[int],
        tb: int,
        max_q: int,
        descriptors: dict[str, str],
    ) -> None:
        """Multi-module MTP: every module over the request's window, in one draft graph."""
        assert self.mtp_window is not None
        bufs, rb = self.bufs, len(batch)
        self._mark("draft_prefill", 0, "prepare")
        self.mtp_window.prepare(rb, max_q)
        runner = self.runners["draft_prefill"]
        desc = runner.dispatch(rb, tb, uniform_token_count(rb, tb, max_q))
        full = desc.mode is Mode.FULL
        p_reqs = desc.num_reqs if full and desc.num_reqs else rb
        p_toks = desc.num_tokens if desc.mode is not Mode.NONE else tb
        compute_slot_mappings(
            bufs.block_table, bufs.eagle_qsl, bufs.eagle_positions, bufs.slot_mapping, rb,
            p_toks, self.block_size, self.allocator.num_blocks,
            self.guard(query_start_loc="eagle.query_start_loc", positions="eagle.positions", block_table="block_table"),
        )  # fmt: skip
        self.mtp_window.pad_slots(rb)
        reprefill = [max(0, b.num_drafts - a - 1) for b, a in zip(batch, accepted, strict=True)]
        lens = [s - p for s, p in zip(seq_lens, reprefill, strict=True)] + [0] * (p_reqs - rb)
        common = self.common_metadata(
            "eagle", lens, p_reqs, p_toks, graph_max_query_len(desc, max_q)
        )
        md = self.build_metadata(self.draft_builder, common)
        self._mark("draft_prefill", 0, "launch")
        runner.run(desc, p_reqs, p_toks, md)
        descriptors["draft_prefill"] = desc.label()
        self._phase_done("draft_prefill")

    def _dflash_drafts(
        self,
        batch: list[ScheduledRequest],
        seq_lens: list[int],
        accepted: list[int],
        tb: int,
        max_q: int,
        descriptors: dict[str, str],
    ) -> None:
        """DFlash: context step, parallel query blocks and sampling in one draft graph."""
        assert self.dflash is not None
        bufs, rb, k = self.bufs, len(batch), self.num_speculative_tokens
        self._mark("draft_prefill", 0, "prepare")
        runner = self.runners["draft_prefill"]
        desc = runner.dispatch(rb, tb, uniform_token_count(rb, tb, max_q))
        full = desc.mode is Mode.FULL
        p_reqs = desc.num_reqs if full and desc.num_reqs else rb
        context_rows = desc.num_tokens if full else tb
        self.dflash.prepare(rb, p_reqs, tb, context_rows)
        q_rows = p_reqs * (k + 1)
        compute_slot_mappings(
            bufs.block_table, self.dflash.qsl, self.dflash.positions, bufs.slot_mapping, rb,
            q_rows, self.block_size, self.allocator.num_blocks,
            self.guard(query_start_loc="dflash.query_start_loc", positions="dflash.positions", block_table="block_table"),
        )  # fmt: skip
        anchors = [
            s - (b.num_drafts - a) for s, b, a in zip(seq_lens, batch, accepted, strict=True)
        ]
        lens = [p + k + 1 for p in anchors] + [0] * (p_reqs - rb)
        common = CommonMetadata(
            self.dflash.qsl, self.dflash.seq_lens, bufs.block_table, lens, p_reqs, q_rows, k + 1,
            "dflash",
        )  # fmt: skip
        md = self.build_metadata(self.draft_builder, common)
        self._mark("draft_prefill", 0, "launch")
        runner.run(desc, p_reqs, context_rows, md)
        descriptors["draft_prefill"] = desc.label()
        self._phase_done("draft_prefill")

    def _phase_done(self, phase: str) -> None:
        if self.phase_hook is not None:
            self.phase_hook(phase)

    def _mark(self, phase: str, draft_step: int, what: str) -> None:
        if self.launch_hook is not None:
            self.launch_hook(phase, draft_step, what)

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
        common = self.common_metadata(
            "eagle", seq_lens + [0] * (p_reqs - rb), p_reqs, p_toks, max_q
        )
        return self.build_metadata(self.draft_builder, common)

    def _draft_slots(self, num_reqs: int, num_tokens: int) -> None:
        """One draft-decode step's slot mapping (inside the fused graph)."""
        bufs = self.bufs
        compute_slot_mappings(
            bufs.block_table, bufs.eagle_qsl, bufs.decode_positions, bufs.slot_mapping, num_reqs,
            num_tokens, self.block_size, self.allocator.num_blocks,
            self.guard(query_start_loc="eagle.query_start_loc", positions="eagle.positions", block_table="block_table"),
        )  # fmt: skip

    def _draft_decodes(
        self,
        batch: list[ScheduledRequest],
        seq_lens: list[int],
        accepted: list[int],
        descriptors: dict[str, str],
    ) -> None:
        bufs = self.bufs
        rb, k, r = len(batch), self.num_speculative_tokens, self.max_num_seqs
        self._mark("draft_decode", 1, "prepare")
        prepare_eagle_decode(
            bufs.draft_tokens, bufs.seq_lens, bufs.num_rejected, bufs.eagle_input_ids,
            bufs.eagle_positions, bufs.eagle_qsl, bufs.eagle_seq_lens, rb, r, self.max_model_len,
        )  # fmt: skip
        runner = self.runners["draft_decode"]
        desc = runner.dispatch(rb, rb, 1)
        r_pad = desc.num_reqs if desc.mode is Mode.FULL and desc.num_reqs else rb
        t_pad = desc.num_tokens if desc.mode is not Mode.NONE else rb
        if bufs.decode_positions is not bufs.eagle_positions:
            bufs.decode_positions[:rb].copy_(bufs.eagle_positions[:rb])
        sglang = self.framework == "sglang" and desc.mode is Mode.FULL
        if sglang:
            pad_draft_rows(bufs, rb, r_pad, self.behavior.reset_positions_on_padded_replay)
        rejected = [b.num_drafts - a for b, a in zip(batch, accepted, strict=True)]
        base = [min(s - rej, self.max_model_len) for s, rej in zip(seq_lens, rejected, strict=True)]
        pad_len = PADDED_SEQ_LEN if sglang else 0
        if self.fused_draft_decode:
            lens = [min(b + 1, self.max_model_len) for b in base] + [pad_len] * (r_pad - rb)
            md = self.build_metadata(
                self.draft_builder, self.common_metadata("eagle", lens, r_pad, t_pad, 1)
            )
            self._mark("draft_decode", 1, "launch")  # slots are computed inside the graph
            runner.run(desc, r_pad, t_pad, md)  # all K-1 steps, one replay
            descriptors["draft_decode"] = f"{desc.label()} ×{k - 1} steps fused"
            self._phase_done("draft_decode")
            return
        for step in range(1, k):
            self._mark("draft_decode", step, "prepare")
            if sglang:
                padded_slot_mapping(
                    bufs, r_pad, self.block_size, self.allocator.num_blocks,
                    self.guard(positions="sglang.draft_positions", block_table="block_table"),
                )  # fmt: skip
            else:
                compute_slot_mappings(
                    bufs.block_table, bufs.eagle_qsl, bufs.decode_positions, bufs.slot_mapping, rb,
                    t_pad, self.block_size, self.allocator.num_blocks,
                    self.guard(query_start_loc="eagle.query_start_loc", positions="eagle.positions", block_table="block_table"),
                )  # fmt: skip
            lens = [min(b + step, self.max_model_len) for b in base] + [pad_len] * (r_pad - rb)
            md = self.build_metadata(
                self.draft_builder, self.common_metadata("eagle", lens, r_pad, t_pad, 1)
            )
            bufs.current_draft_step.fill_(step)
            self._mark("draft_decode", step, "launch")
            runner.run(desc, r_pad, t_pad, md)
        descriptors["draft_decode"] = desc.label()
        self._phase_done("draft_decode")


def _with_blocks(layout: KVLayout, num_blocks: int) -> KVLayout:
    return KVLayout(
        num_blocks, layout.block_size, layout.num_kv_heads, layout.head_dim, layout.dtype,
        layout.latent,
    )  # fmt: skip
