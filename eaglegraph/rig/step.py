"""The rig: one speculative-decoding step of vLLM MRV2, composed of its buffers
(step_buffers.py), metadata builders (step_metadata.py), phase routines (routines.py), capture
(capture.py) and its speculator (speculators/, which drafts); this module sizes and wires them
into `StepParts` and runs the target's half of the step.

Per step (research vllm-mrv2.md §3.4): the target verifies each request's last token plus its
K drafts; greedy rejection keeps the longest agreeing prefix; the draft prefill runs at
"position 0" over the target's token layout (ids shifted left, the bonus token at each
request's last valid slot, gathered at last_token_indices); then K-1 draft decodes each add
one token per request. Every tensor a graph could record is a registered persistent buffer,
and every phase body is a routine of (num_reqs, num_tokens) alone, so the same code runs
eagerly, under CUDA graphs, or under the emulated backend.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

import numpy as np
import torch

from eaglegraph.errors import BadInput
from eaglegraph.kernels.block_table import compute_slot_mappings, gather_block_tables
from eaglegraph.kernels.guard import Guard, GuardLog
from eaglegraph.kernels.sampling import argmax_rows, greedy_verify
from eaglegraph.known.attention_workspace import split_kv_scratch
from eaglegraph.known.heads import head_dtype
from eaglegraph.models.compile import CompiledForward
from eaglegraph.models.drafts import draft_build
from eaglegraph.models.parallel import shard_models
from eaglegraph.pair.model import Pair
from eaglegraph.rig.attention import AttentionRuntime
from eaglegraph.rig.buffers import BufferRegistry
from eaglegraph.rig.capture import CaptureFailed, capture_graphs
from eaglegraph.rig.config import RigConfig
from eaglegraph.rig.descriptors import graph_max_query_len, uniform_token_count
from eaglegraph.rig.driver import StepOutput
from eaglegraph.rig.graphs import GraphContext, PhaseRunner
from eaglegraph.rig.hooks import HookHandle, LaunchHook, PhaseHook
from eaglegraph.rig.kv_cache import BlockAllocator, KVLayout, allocate_kv_caches
from eaglegraph.rig.kv_specs import kv_layouts, per_rank_kv
from eaglegraph.rig.limits import check_limits
from eaglegraph.rig.model_setup import (
    LoadedPair,
    build_models,
    check_buildable,
    resolve_model_dtype,
)
from eaglegraph.rig.parts import StepParts, guard_for
from eaglegraph.rig.plan import CapturePlan, build_plan
from eaglegraph.rig.routines import PhaseRoutines
from eaglegraph.rig.speculators import Speculator, VerifiedStep, speculator_plan
from eaglegraph.rig.step_buffers import StepBuffers, h2d
from eaglegraph.rig.step_metadata import StepMetadata
from eaglegraph.rig.workload import Request, ScheduledRequest

__all__ = ["CaptureFailed", "Rig", "graph_max_query_len"]

KV_BUDGET_BYTES = {"cuda": 16 << 30, "cpu": 256 << 20}


_P = ParamSpec("_P")
_R = TypeVar("_R")


def on_rig(
    fn: Callable[Concatenate[StepParts, Speculator, _P], _R],
) -> Callable[Concatenate[Rig, _P], _R]:
    """A function of the step's parts and speculator as a `Rig` method, so its signature is
    written once (where it is implemented) and a new argument needs no second edit."""

    @functools.wraps(fn)
    def method(rig: Rig, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return fn(rig.parts, rig.speculator, *args, **kwargs)

    return method


class Rig:
    """Target + draft with paged KV, persistent buffers, metadata builders and phase runners;
    the drafting itself is the speculator's (`rig.speculators`)."""

    def __init__(self, pair: Pair, config: RigConfig, models: LoadedPair | None = None) -> None:
        self.config = config
        opts = config.options
        self.behavior = opts.behavior
        self.framework = opts.framework
        plan: CapturePlan = build_plan(opts)
        dev = config.device
        check_buildable(pair, config.random_weights, opts.framework)
        check_limits(pair, config, plan)
        assert pair.target is not None and pair.draft is not None
        tg, dg = pair.target.geometry, pair.draft.geometry
        self.max_num_seqs = r = opts.max_num_seqs
        self.num_speculative_tokens = k = opts.num_speculative_tokens
        self.max_model_len = config.max_model_len
        largest = max(plan.capture_sizes, default=0)
        self.max_tokens = t = max(opts.max_num_batched_tokens, largest)
        self.block_size = bs = config.block_size
        self.max_blocks = mb = -(-config.max_model_len // bs)
        kv_dtype = resolve_model_dtype(config.dtype, pair, dev)
        assert pair.draft_facts is not None  # check_buildable
        tp, tp_rank = config.layout.tp, config.layout.tp_rank(config.rank)
        layouts = [per_rank_kv(lay, tp) for lay in kv_layouts(pair, bs, kv_dtype, opts.framework)]
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
        self.collectives_per_forward = shard_models(
            (self.models.target, self.models.draft), tp_rank, tp,
            expert_parallel=config.layout.ep > 1,
        )  # fmt: skip
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
        self.guard_log = GuardLog(config.guard_capacity, dev) if config.guard else None
        self.allocator = BlockAllocator(num_blocks, bs, mb)
        self.kv_caches = allocate_kv_caches([_with_blocks(x, num_blocks) for x in layouts], dev)
        self.attention = AttentionRuntime(
            self.kv_caches, self.bufs.slot_mapping, [lay.head_dim for lay in layouts], reg,
            self.guard_log,
        )  # fmt: skip
        self.metadata = StepMetadata(
            opts.metadata_style, reg, self.bufs, self.guard, max_num_seqs=r, max_blocks=mb,
            block_size=bs, max_tokens=t, device=dev,
            split_kv_scratch=lambda: split_kv_scratch(
                opts.framework, opts.attention_backend, opts.gpu.capability[0],
                plan.resolved_mode.has_full(), largest,
            ),
        )  # fmt: skip
        self._bt_host = np.zeros((r, mb), dtype=np.int32)
        self._bt_dirty = True  # the host block table changed since it was last copied
        self.routines = routines = PhaseRoutines(
            self.models, self.bufs, self.attention, self.guard, k, config.max_model_len
        )
        if config.compiled:
            routines.target_forward = CompiledForward(self.models.target)
        routines.widen_draft_logits = self.head.draft_sampler_widens
        self.extra_lookahead_slots = draft_build(self.models.kind).extra_lookahead_slots
        strategy, self.plan = speculator_plan(pair, plan)
        self.parts = parts = StepParts(
            config, self.plan, self.models, reg, self.bufs, self.kv_caches, self.allocator,
            self.attention, self.metadata, routines, self.guard_log, t,
        )  # fmt: skip
        self.speculator: Speculator = strategy(parts, pair)
        self.runners = parts.runners
        for phase, routine in (
            ("target", routines.target),
            ("draft_prefill", self.speculator.prefill_routine()),
            ("draft_decode", self.speculator.decode_routine()),
        ):
            self.runners[phase] = PhaseRunner(self.plan.phase(phase), routine, self.attention)

    # ------------------------------------------------------------------ helpers

    @property
    def fused_draft_decode(self) -> bool:
        """Whether the K-1 draft decodes replay as one graph (the speculator decides)."""
        return self.speculator.fused_draft_decode

    def guard(self, **roles: str) -> Guard | None:
        """A guard naming the registered buffer behind each index role (None: guards off)."""
        return guard_for(self.guard_log, self.registry, roles)

    def add_phase_hook(self, fn: PhaseHook) -> HookHandle:
        """Call `fn(phase)` after each phase of every step (the probe reads the guard log and
        checks the phase's invariants there); see `rig.hooks` for the cost when unused."""
        return self.parts.hooks.add_phase_hook(fn)

    def add_launch_hook(self, fn: LaunchHook) -> HookHandle:
        """Call `fn(phase, draft_step, "prepare" | "launch")` where a phase's input
        preparation starts and right before its graph or kernels run."""
        return self.parts.hooks.add_launch_hook(fn)

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

    def share(self, request: Request, owner: Request) -> None:
        """A prefix-cache hit: the owner's full blocks under `request.prefilled` positions
        become the first of the request's (the same physical blocks; vLLM's KVCacheManager.
        get_computed_blocks hits full blocks only)."""
        if request.prefilled % self.block_size:
            raise BadInput(f"a cache hit is whole blocks of {self.block_size} positions")
        request.blocks = owner.blocks[: request.prefilled // self.block_size]
        self.allocator.share(request.blocks)
        self._bt_host[request.slot] = 0
        self._bt_host[request.slot, : len(request.blocks)] = request.blocks
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

    # Every planned graph, captured in the engine's order (`rig.capture.capture_graphs`, whose
    # signature and docstring this method keeps, less the parts and the speculator).
    capture = on_rig(capture_graphs)

    # ------------------------------------------------------------------ the step

    @torch.inference_mode()
    def step(self, batch: list[ScheduledRequest]) -> StepOutput:
        bufs, hooks = self.bufs, self.parts.hooks
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
        if max(seq_lens) > self.max_model_len:  # drafts past it are clamped (speculators)
            raise BadInput(
                f"a request reaches position {max(seq_lens)} > max_model_len {self.max_model_len}"
            )
        r = self.max_num_seqs

        # --- host → persistent input buffers (prepare_inputs)
        hooks.mark("target", 0, "prepare")
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
        target = runner.pad(rb, tb, uniform_token_count(rb, tb, max_q))
        gather_block_tables(
            bufs.state_block_table, bufs.idx_mapping, bufs.block_table, rb, target.num_reqs,
            self.guard(idx_mapping="target.idx_mapping"),
        )  # fmt: skip
        compute_slot_mappings(
            bufs.block_table, bufs.query_start_loc, bufs.positions, bufs.slot_mapping, rb,
            self.max_tokens, self.block_size, self.allocator.num_blocks,
            self.guard(query_start_loc="target.query_start_loc", positions="target.positions", block_table="block_table"),
        )  # fmt: skip
        # a FULL graph bakes its padded shape into the metadata; other modes build the batch's
        md_reqs, md_tokens = (target.num_reqs, target.num_tokens) if target.full else (rb, tb)
        target_md = self.metadata.target(
            seq_lens + [0] * (md_reqs - rb), md_reqs, md_tokens,
            graph_max_query_len(target.desc, max_q),
        )  # fmt: skip
        hooks.mark("target", 0, "launch")
        runner.run(target, target_md)
        hooks.phase_done("target")

        # --- rejection sampling (eager, as vLLM's sampler)
        logits = self.models.target.compute_logits(bufs.target_hidden[:tb])
        if self.head.target_sampler_widens:  # the engine's sampler, eager: exact for argmax
            logits = logits.float()
        argmax_rows(logits, bufs.target_argmax, tb)
        greedy_verify(
            bufs.target_argmax, bufs.verify_drafts, bufs.query_start_loc, rb, bufs.num_drafts,
            bufs.num_accepted, bufs.num_rejected, bufs.next_tokens, bufs.accepted_tokens,
        )  # fmt: skip
        for i, b in enumerate(batch):
            if b.backup_token is not None:  # a partial prefill: its sample is discarded
                bufs.next_tokens[i] = b.backup_token
        accepted = bufs.num_accepted[:rb].tolist()
        next_tokens = bufs.next_tokens[:rb].tolist()
        descriptors = {"target": target.desc.label()}

        # --- drafting: the speculator's
        verified = VerifiedStep(batch, seq_lens, accepted, target, target_md, max_q)
        self.speculator.draft(verified, descriptors)
        drafts_out = bufs.draft_tokens[:rb, :k].tolist()
        return StepOutput(next_tokens, accepted, drafts_out, descriptors)


def _with_blocks(layout: KVLayout, num_blocks: int) -> KVLayout:
    return KVLayout(
        num_blocks, layout.block_size, layout.num_kv_heads, layout.head_dim, layout.dtype,
        layout.latent,
    )  # fmt: skip
