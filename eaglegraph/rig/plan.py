"""The capture plan: sizes, and per phase the resolved mode, descriptors and padding rule.

This is the single source of truth for both `inspect` (which only reports it) and the graph
managers (which capture exactly these descriptors), so what inspect predicts is what capture
does. vLLM semantics follow research vllm-mrv2.md §1–§4; SGLang's in sglang.md §1–§2.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from eaglegraph.known.hazards import Hazard, hazard
from eaglegraph.known.profiles import FLAGS
from eaglegraph.known.runners import ModelRunner
from eaglegraph.known.upstream import cite
from eaglegraph.results.findings import Finding, Severity
from eaglegraph.results.inspect import PlanSettings
from eaglegraph.rig.descriptors import BatchDescriptor, Dispatcher, describe_padding
from eaglegraph.rig.modes import Mode
from eaglegraph.rig.mrv1_plan import drafter_keys, drafter_mode, mrv1_profile, target_keys
from eaglegraph.rig.options import PlanOptions
from eaglegraph.rig.sglang_plan import (
    GraphLayout,
    captured_batch_sizes,
    draft_decode_graph,
    draft_extend_graph,
    draft_extend_tokens,
    draft_prefill_bcg,
    eagle_worker_name,
    prefill_graph_tokens,
    prefill_token_ladder,
    sglang_decode_batch_sizes,
)
from eaglegraph.rig.vllm_plan import draft_decode_mode, fused_draft_decode, phase_descriptors
from eaglegraph.rig.vllm_sizing import VllmSizing, vllm_sizing

PHASES = ("target", "draft_prefill", "draft_decode")


@dataclass
class PhasePlan:
    phase: str
    mode: Mode
    decode_query_len: int
    descriptors: list[BatchDescriptor]
    padding_rule: str
    notes: list[str] = field(default_factory=list)
    per_mode_dispatch: bool = False  # FULL and segmented descriptors pad to their own sizes
    fused_steps: int = 1  # draft decode steps one graph replay runs (K-1 when fused)

    @property
    def descriptor_count(self) -> int:
        return len(self.descriptors)

    @property
    def graph_count(self) -> int:
        """Graphs captured: one per descriptor (a segmented one is one broken capture)."""
        return len(self.descriptors)

    def dispatcher(self) -> Dispatcher:
        by_size: dict[int, list[BatchDescriptor]] = {}
        for d in self.descriptors:
            by_size.setdefault(d.num_tokens, []).append(d)
        return Dispatcher(by_size, per_mode_ranges=self.per_mode_dispatch)


@dataclass
class CapturePlan(PlanSettings):
    requested_mode: Mode
    resolved_mode: Mode
    downgrades: list[str]
    capture_sizes: list[int]
    capture_sizes_before_rounding: list[int]
    phases: list[PhasePlan]
    findings: list[Finding] = field(default_factory=list)
    gpu: dict[str, object] = field(default_factory=dict)
    attention_support: dict[str, str] = field(default_factory=dict)
    breakable: bool = False
    trtllm_artifacts: bool = True
    defaults: list[str] = field(default_factory=list)  # settings the engine chose, in words
    graph_memory_profiling: bool = False  # graph memory reserved out of the KV budget
    runner: str | None = None  # the vLLM model runner rebuilt (mrv1, mrv2); None for SGLang
    runner_why: str = ""
    # graphs the engine captures for passes outside the rebuilt step (SGLang's draft prompt
    # prefill): reported with the plan, never captured or replayed by the rig
    outside_step: list[PhasePlan] = field(default_factory=list)

    def phase(self, name: str) -> PhasePlan:
        return next(p for p in self.phases if p.phase == name)

    def reported_phases(self) -> list[PhasePlan]:
        """Every phase the engine captures graphs for: the step's, then those outside it."""
        return [*self.phases, *self.outside_step]

    def engine_graph_count(self) -> int:
        """Graphs the engine captures: the step's, and those outside it that no step phase
        already holds (a pass borrowing another's graphs captures none of its own)."""
        held = {d for p in self.phases for d in p.descriptors}
        outside = {d for p in self.outside_step for d in p.descriptors} - held
        return sum(p.graph_count for p in self.phases) + len(outside)


def _vllm_capture_plan(
    opts: PlanOptions, sizing: VllmSizing, phases: list[PhasePlan]
) -> CapturePlan:
    """A vLLM plan (either runner) from its options, sizing and phases; findings come after."""
    return CapturePlan(
        framework="vllm",
        behavior=opts.behavior.name,
        attention_backend=opts.attention_backend,
        num_speculative_tokens=opts.num_speculative_tokens,
        max_num_seqs=opts.max_num_seqs,
        max_num_batched_tokens=opts.max_num_batched_tokens,
        requested_mode=opts.mode,
        resolved_mode=sizing.resolution.mode,
        downgrades=list(sizing.resolution.reasons),
        capture_sizes=sizing.sizes,
        capture_sizes_before_rounding=sizing.sizes_before_rounding,
        phases=phases,
        gpu=opts.gpu.to_json(),
        attention_support=sizing.support.to_json(),
        breakable=opts.breakable,
        trtllm_artifacts=opts.trtllm_artifacts,
        defaults=list(opts.defaults),
        graph_memory_profiling=bool(opts.behavior.graph_memory_profiling),
        runner=opts.runner,
        runner_why=opts.runner_why,
    )


def _vllm_plan(opts: PlanOptions) -> CapturePlan:
    k, k1, r = opts.num_speculative_tokens, opts.num_speculative_tokens + 1, opts.max_num_seqs
    beh = opts.behavior
    sizing = vllm_sizing(opts, beh)
    resolved, sizes = sizing.resolution.mode, sizing.sizes
    per_mode = bool(beh.per_mode_dispatch)

    def phase(name: str, mode: Mode, dql: int, notes: list[str]) -> PhasePlan:
        descs = phase_descriptors(mode, sizes, r, dql, profile=beh, breakable=opts.breakable)
        return PhasePlan(
            name,
            mode,
            dql,
            descs,
            describe_padding(descs, "vllm"),
            notes,
            per_mode_dispatch=per_mode,
        )

    target = phase("target", resolved, k1, [])
    if opts.breakable and resolved.has_piecewise():
        target.notes.append(
            "breakable graphs: PIECEWISE batches run one capture broken at attention; FULL "
            "decode graphs are kept"
        )
    prefill_notes = (
        ["capture metadata built fresh through the target's builders for every warmup and capture"]
        if beh.fresh_prefill_capture_metadata
        else ["same descriptors as the target (the attention-state hand-off needs identical keys)"]
    )
    prefill = phase("draft_prefill", resolved, k1, prefill_notes)
    reuse_ref = FLAGS["reuse_target_attn_state"].ref
    clamp_ref = FLAGS["draft_decode_mode_clamp"].ref
    if any(d.mode is Mode.FULL for d in prefill.descriptors):
        prefill.notes.append(
            f"FULL graphs replay the target's metadata without a rebuild ({reuse_ref})"
            if beh.reuse_target_attn_state and beh.fresh_prefill_capture_metadata
            else "FULL graphs captured with the target's captured attention state; replays "
            f"without a metadata rebuild ({reuse_ref})"
            if beh.reuse_target_attn_state
            else "FULL graphs captured with the speculator's own builders; metadata rebuilt "
            f"before each FULL replay (pre-{reuse_ref})"
        )
    if k == 1:
        decode = PhasePlan("draft_decode", Mode.NONE, 1, [], "no draft decodes (K = 1)", [])
    else:
        dmode = draft_decode_mode(resolved, beh)
        if beh.draft_decode_mode_clamp:
            note = (
                f"clamped to {dmode.name}: decode_mode() of {resolved.name} is "
                f"{resolved.decode_mode().name} ({clamp_ref})"
            )
        else:
            note = (
                f"unclamped: the decode manager gets the runner's {resolved.name} (pre-{clamp_ref})"
            )
        decode = phase("draft_decode", dmode, 1, [note])
        fused = fused_draft_decode(opts.attention_backend, opts.gpu, beh, opts.trtllm_artifacts)
        if decode.descriptors and fused and k > 2:
            decode.fused_steps = k - 1
            decode.notes.append(
                f"one graph per size runs all {k - 1} draft decodes, metadata updated in place"
            )
        elif decode.descriptors and k > 2:
            decode.notes.append(
                f"one graph per size runs one draft decode; replayed {k - 1} times, metadata "
                "rebuilt before each replay"
            )
    plan = _vllm_capture_plan(opts, sizing, [target, prefill, decode])
    plan.findings = _vllm_hazards(plan, opts)
    return plan


def _mrv1_plan(opts: PlanOptions) -> CapturePlan:
    """The V1 GPU model runner's plan (`rig.mrv1_plan`): the target's dispatcher keys and one
    drafter dispatcher for every draft pass."""
    k, r = opts.num_speculative_tokens, opts.max_num_seqs
    sizing = vllm_sizing(opts, mrv1_profile(opts.behavior))
    resolved, sizes = sizing.resolution.mode, sizing.sizes

    def phase(name: str, mode: Mode, dql: int, descs: list[BatchDescriptor]) -> PhasePlan:
        return PhasePlan(name, mode, dql, descs, describe_padding(descs, "vllm"))

    target = phase("target", resolved, k + 1, target_keys(resolved, sizes, r, k + 1))
    dmode = drafter_mode(resolved)
    drafts = drafter_keys(resolved, sizes)
    prefill = phase("draft_prefill", dmode, k + 1, drafts)
    shared = "one CudagraphDispatcher for every draft pass (PIECEWISE or NONE)"
    if drafts and not resolved.has_piecewise():
        prefill.notes.append(
            f"{shared}; {resolved.name} has no PIECEWISE target pass, so these graphs are not "
            "captured at start-up"
        )
    elif drafts:
        prefill.notes.append(f"{shared}, captured during the target's PIECEWISE pass")
    else:
        prefill.notes.append(f"{shared}: {resolved.name} leaves the drafter eager")
    if opts.breakable:
        target.notes.append("breakable graphs are modelled for MRV2 only; MRV1 keys shown")
    if k == 1:
        decode = PhasePlan("draft_decode", Mode.NONE, 1, [], "no draft decodes (K = 1)", [])
    else:
        decode = phase("draft_decode", dmode, 1, list(drafts))
        decode.notes.append(
            f"the drafter's dispatcher again: {k - 1} passes, each padded to its own size"
        )
    plan = _vllm_capture_plan(opts, sizing, [target, prefill, decode])
    if plan.downgrades:
        plan.findings.append(_downgrade_finding(plan, opts))
    return plan


def _finding(
    h: Hazard,
    severity: Severity,
    *,
    message: str | None = None,
    fix: str | None = "",
    **where: str,
) -> Finding:
    """A plan finding about hazard `h`: its mechanism unless `message` says more, its PR, and
    its fix text unless `fix` gives another (None: no fix)."""
    return Finding(
        id=h.id,
        severity=severity,
        message=message or h.mechanism,
        ref=h.ref_text,
        fix=h.fix_text if fix == "" else fix,
        hazard=h.id,
        **where,  # type: ignore[arg-type]  # phase, mode, descriptor: str fields
    )


def _downgrade_finding(plan: CapturePlan, opts: PlanOptions) -> Finding:
    return _finding(
        hazard("mode-downgraded"),
        Severity.WARNING,
        message=f"requested {plan.requested_mode.name} runs as {plan.resolved_mode.name} "
        f"with {opts.attention_backend}: the backend lacks uniform-batch FULL graph support "
        "for spec decode",
    )


def _vllm_hazards(plan: CapturePlan, opts: PlanOptions) -> list[Finding]:
    beh = opts.behavior
    out: list[Finding] = []
    if plan.downgrades:
        out.append(_downgrade_finding(plan, opts))
    decode = plan.phase("draft_decode")
    segmented_decode = [d for d in decode.descriptors if d.mode.is_segmented()]
    if segmented_decode:
        h = hazard("piecewise-draft-decode")
        if opts.metadata_style == "flashinfer":
            out.append(
                _finding(
                    h,
                    Severity.ERROR,
                    message=f"draft decodes dispatch to {segmented_decode[0].mode.name} "
                    f"descriptors that pad num_tokens but not num_reqs; FlashInfer-style decode "
                    "plans num_tokens rows and reads kv_indptr[num_reqs+1:num_tokens+1] and "
                    "last_page_len[num_reqs:num_tokens] left by earlier builds",
                    kind="stale-read",
                    phase="draft_decode",
                    buffer="kv_indptr",
                )
            )
        else:
            out.append(
                _finding(
                    h,
                    Severity.INFO,
                    message=f"draft decodes may run {segmented_decode[0].mode.name}; harmless with "
                    "flash-attn-style metadata (kernels stop at query_start_loc[num_reqs]) but "
                    "not with FlashInfer",
                    phase="draft_decode",
                    fix=None,
                )
            )
    prefill_full = [d for d in plan.phase("draft_prefill").descriptors if d.mode is Mode.FULL]
    if not beh.pad_last_token_indices and prefill_full:
        h = hazard("unpadded-last-token-indices")
        out.append(
            _finding(
                h,
                Severity.ERROR,
                message=f"{len(prefill_full)} FULL draft-prefill graphs gather hidden states at "
                "last_token_indices[:num_reqs_padded]; rows past num_reqs keep stale indices "
                "from larger batches (out-of-bounds gather)",
                kind="oob-read",
                phase="draft_prefill",
                buffer="last_token_indices",
            )
        )
    if beh.dedicated_eagle_pool and plan.resolved_mode:
        h = hazard("dedicated-eagle-pool")
        out.append(
            _finding(
                h,
                Severity.INFO,
                fix="eaglegraph memdiff MODEL --pool shared --against dedicated",
            )
        )
    if not beh.reuse_target_attn_state and prefill_full:
        h = hazard("draft-prefill-metadata-rebuild")
        out.append(
            _finding(
                h,
                Severity.INFO,
                phase="draft_prefill",
                fix=None,
            )
        )
    return out


def _sglang_draft_prefills(
    opts: PlanOptions, ntok: int, per_bs: list[BatchDescriptor], bcg: bool, extend: bool
) -> tuple[PhasePlan, PhasePlan]:
    """SGLang's two draft passes over more than one token per request, kept apart (0.5.23):

    - the draft's PROMPT prefill: breakable graphs over a token ladder, captured by
      `EAGLEWorkerV2.init_cuda_graphs` (`init_prefill_cuda_graph(force_for_draft_worker=True)`)
      where the profile has them; no pass of the rebuilt step is a prompt prefill;
    - the draft EXTEND after verify (the step's `draft_prefill`): FULL graphs, one per batch
      size of the verify list at num_draft_tokens per request
      (`EAGLEDraftExtendCudaGraphRunner.__init__`: capture_bs, captured_req_width), where the
      backend has that runner; else `ModelRunner.forward` runs it on the prompt prefill's
      breakable graphs (`is_extend(include_draft_extend_v2=True)`), or eagerly without them.
    """
    top = prefill_graph_tokens(opts.behavior, opts.max_num_batched_tokens, opts.mla)
    ladder = prefill_token_ladder(top) if bcg else []
    breakable = [BatchDescriptor(Mode.BREAKABLE, n, None) for n in ladder]
    prompt = PhasePlan(
        "draft_prompt_prefill", Mode.BREAKABLE if bcg else Mode.NONE, ntok, breakable,
        describe_padding(breakable, "sglang"),
        [f"breakable prefill graphs for the draft's prompt ({cite('sglang-bcg').ref}): "
         f"{len(ladder)} token counts up to {ladder[-1] if ladder else 0}; outside the step"],
    )  # fmt: skip
    if extend:
        descs, mode = per_bs, Mode.FULL
        note = "EAGLEDraftExtendCudaGraphRunner after verify: one FULL graph per batch size"
    else:
        descs, mode = breakable, Mode.BREAKABLE if bcg else Mode.NONE
        how = "on the prompt prefill's breakable graphs" if bcg else "eagerly"
        note = (
            f"no draft-extend graph runner for {opts.attention_backend} in this release: the "
            f"draft extend after verify runs {how}"
        )
    extend_phase = PhasePlan(
        "draft_prefill", mode, ntok, descs, describe_padding(descs, "sglang"), [note]
    )
    return prompt, extend_phase


def _sglang_batch_sizes(opts: PlanOptions, width: int) -> list[int]:
    """The batch sizes a runner of `width` tokens per request captures on this layout: the
    given sizes or the release's list, through `get_batch_sizes_to_capture`."""
    layout = GraphLayout(opts.tp_size, opts.attn_dp_size, opts.two_batch_overlap)
    if opts.capture_sizes is not None:  # given sizes: the pool joins a list that passes it
        listed = list(opts.capture_sizes)
        return captured_batch_sizes(opts.behavior, listed, opts.max_num_seqs, width, layout)
    return sglang_decode_batch_sizes(
        opts.behavior, opts.gpu, opts.max_num_seqs, max_bs=opts.cuda_graph_max_bs,
        width=width, layout=layout,
    )  # fmt: skip


def _sglang_plan(opts: PlanOptions) -> CapturePlan:
    k, beh = opts.num_speculative_tokens, opts.behavior
    # tokens per request of verify and draft extend: num_steps + 1 for a chain (topk = 1),
    # the tree's --speculative-num-draft-tokens otherwise; draft decodes hold topk per request
    # (`spec_utils.resolve_num_tokens_per_req`, sglang 0.5.23)
    ntok, topk = opts.num_draft_tokens or k + 1, opts.eagle_topk
    graphs = opts.mode is not Mode.NONE
    # each runner's own list: under DP attention the target aligns bs x draft tokens, the
    # draft runners bs (`get_batch_sizes_to_capture`, captured_req_width)
    bs_list = _sglang_batch_sizes(opts, ntok)
    mode = Mode.FULL if graphs else Mode.NONE

    def full(tokens_per_bs: int, width: int = 1) -> list[BatchDescriptor]:
        if not graphs:
            return []
        sizes = bs_list if width == ntok else _sglang_batch_sizes(opts, width)
        return [BatchDescriptor(Mode.FULL, bs * tokens_per_bs, bs, tokens_per_bs) for bs in sizes]

    target = PhasePlan(
        "target", mode, ntok, full(ntok, ntok), describe_padding(full(ntok, ntok), "sglang"),
        ["TARGET_VERIFY graphs, one per batch size, largest first, global graph pool"],
    )  # fmt: skip
    if draft_decode_graph(beh, k):
        dd = full(topk)
        decode = PhasePlan(
            "draft_decode", mode, topk, dd, describe_padding(dd, "sglang"),
            ["EAGLEDraftCudaGraphRunner: one graph runs all draft steps; shares the target's pool"],
            fused_steps=max(k - 1, 1) if dd else 1,
        )  # fmt: skip
    else:
        decode = PhasePlan("draft_decode", Mode.NONE, 1, [], "no draft decode graph (steps = 1)")
    explicit_bcg = True if opts.breakable else (False if opts.explicit_mode else None)
    bcg = graphs and draft_prefill_bcg(explicit_bcg, beh, opts.engine_attention_backend, opts.mla)
    extend = graphs and draft_extend_graph(
        opts.attention_backend, beh, topk, opts.engine_attention_backend
    )
    extend_tokens = draft_extend_tokens(beh, k, ntok)
    prompt, extend_phase = _sglang_draft_prefills(
        opts, extend_tokens, full(extend_tokens), bcg, extend
    )
    extend_phase.notes.append(f"draft worker: {eagle_worker_name(beh, topk)}")
    plan = CapturePlan(
        framework="sglang",
        behavior=beh.name,
        attention_backend=opts.attention_backend,
        num_speculative_tokens=k,
        max_num_seqs=opts.max_num_seqs,
        max_num_batched_tokens=opts.max_num_batched_tokens,
        requested_mode=opts.mode,
        resolved_mode=mode,
        downgrades=[],
        capture_sizes=bs_list if graphs else [],
        capture_sizes_before_rounding=bs_list,
        phases=[target, extend_phase, decode],
        outside_step=[prompt] if prompt.descriptors else [],
        gpu=opts.gpu.to_json(),
        breakable=bcg,
        defaults=list(opts.defaults),
        runner_why=opts.runner_why,
    )
    if topk > 1:
        target.notes.append(f"tree drafting: topk {topk}, {ntok} draft tokens verified per request")
    if not opts.behavior.reset_positions_on_padded_replay and decode.descriptors:
        h = hazard("stale-padded-positions")
        plan.findings.append(
            _finding(h, Severity.ERROR, kind="stale-read", phase="draft_decode", buffer="positions")
        )
    return plan


def build_plan(opts: PlanOptions) -> CapturePlan:
    if opts.framework == "sglang":
        return _sglang_plan(opts)
    return _mrv1_plan(opts) if opts.runner == ModelRunner.MRV1 else _vllm_plan(opts)
