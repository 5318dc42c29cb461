"""The capture plan: sizes, and per phase the resolved mode, descriptors and padding rule.

This is the single source of truth for both `inspect` (which only reports it) and the graph
managers (which capture exactly these descriptors), so what inspect predicts is what capture
does. vLLM semantics follow research vllm-mrv2.md §1–§4; SGLang's in sglang.md §1–§2.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from eaglegraph.known.hazards import hazard
from eaglegraph.known.profiles import FLAGS
from eaglegraph.known.upstream import cite
from eaglegraph.results.findings import Finding, Severity
from eaglegraph.rig.capture_sizes import (
    round_for_spec_decode,
    sglang_batch_sizes,
    user_sizes,
    vllm_default_sizes,
)
from eaglegraph.rig.descriptors import BatchDescriptor, Dispatcher, build_descriptors
from eaglegraph.rig.modes import Mode
from eaglegraph.rig.options import PlanOptions

PHASES = ("target", "draft_prefill", "draft_decode")

# vLLM AttentionCGSupport levels, as resolved on Hopper (research vllm-mrv2.md §2).
ALWAYS, UNIFORM_BATCH, UNIFORM_SINGLE_TOKEN_DECODE, NEVER = 3, 2, 1, 0
BACKEND_SUPPORT = {
    "flash_attn": (ALWAYS, "FlashAttentionBackend", "ALWAYS (FA3 on Hopper)"),
    "triton": (ALWAYS, "TritonAttentionBackend", "ALWAYS"),
    "flashinfer": (
        UNIFORM_SINGLE_TOKEN_DECODE,
        "FlashInferBackend",
        "UNIFORM_SINGLE_TOKEN_DECODE (no TRTLLM attention on Hopper)",
    ),
}


@dataclass
class PhasePlan:
    phase: str
    mode: Mode
    decode_query_len: int
    descriptors: list[BatchDescriptor]
    padding_rule: str
    notes: list[str] = field(default_factory=list)

    @property
    def descriptor_count(self) -> int:
        return len(self.descriptors)

    def dispatcher(self) -> Dispatcher:
        by_size: dict[int, list[BatchDescriptor]] = {}
        for d in self.descriptors:
            by_size.setdefault(d.num_tokens, []).append(d)
        return Dispatcher(by_size)


@dataclass
class CapturePlan:
    framework: str
    behavior: str
    attention_backend: str
    num_speculative_tokens: int
    max_num_seqs: int
    max_num_batched_tokens: int
    requested_mode: Mode
    resolved_mode: Mode
    downgrades: list[str]
    capture_sizes: list[int]
    capture_sizes_before_rounding: list[int]
    phases: list[PhasePlan]
    findings: list[Finding] = field(default_factory=list)

    def phase(self, name: str) -> PhasePlan:
        return next(p for p in self.phases if p.phase == name)


def resolve_mode(mode: Mode, backend: str, num_spec_tokens: int) -> tuple[Mode, list[str]]:
    """`resolve_cudagraph_mode_and_sizes` downgrades for the backend's graph support."""
    support, backend_name, support_name = BACKEND_SUPPORT[backend]
    reasons: list[str] = []
    resolved = mode
    if resolved.mixed_mode() is Mode.FULL and support < ALWAYS:
        new = Mode.FULL_AND_PIECEWISE
        reasons.append(
            f"CUDAGraphMode.{resolved.name} needs mixed-batch FULL support; {backend_name} "
            f"supports {support_name}; setting cudagraph_mode={new.name}"
        )
        resolved = new
    if resolved.decode_mode() is Mode.FULL and num_spec_tokens >= 1 and support < UNIFORM_BATCH:
        reasons.append(
            f"CUDAGraphMode.{resolved.name} is not supported with spec-decode for attention "
            f"backend {backend_name} (support: AttentionCGSupport.{support_name.split()[0]}); "
            "setting cudagraph_mode=PIECEWISE"
        )
        resolved = Mode.PIECEWISE
    return resolved, reasons


def _padding_rule(descs: list[BatchDescriptor], framework: str) -> str:
    if not descs:
        return "eager: no graphs, no padding"
    kinds = []
    uniform = [
        d.uniform_token_count for d in descs if d.mode is Mode.FULL and d.uniform_token_count
    ]
    if uniform:
        u = uniform[0]
        if framework == "sglang":
            kinds.append("FULL: bs → next captured bs; padded rows seq_len 1, req_pool_index 0")
        else:
            kinds.append(f"FULL: tokens → next size, reqs → tokens/{u} (uniform {u}/request only)")
    if any(d.mode is Mode.FULL and not d.uniform_token_count for d in descs):
        kinds.append("FULL: tokens → next size, reqs → min(size, max_num_seqs)")
    seg = sorted({d.mode.name for d in descs if d.mode.is_segmented()})
    if seg:
        kinds.append(f"{'/'.join(seg)}: tokens → next size, reqs NOT padded")
    return "; ".join(kinds)


def _vllm_plan(opts: PlanOptions) -> CapturePlan:
    k, k1, r = opts.num_speculative_tokens, opts.num_speculative_tokens + 1, opts.max_num_seqs
    beh = opts.behavior
    resolved, downgrades = resolve_mode(opts.mode, opts.attention_backend, k)
    if opts.capture_sizes is not None:
        base = user_sizes(list(opts.capture_sizes), opts.max_num_batched_tokens)
    else:
        base = vllm_default_sizes(r, k, opts.max_num_batched_tokens, opts.max_capture_size)
    sizes = round_for_spec_decode(base, k1) if resolved else []

    def phase(name: str, mode: Mode, dql: int, notes: list[str]) -> PhasePlan:
        by_size = build_descriptors(mode, sizes, r, dql)
        descs = [d for n in sorted(by_size) for d in by_size[n]]
        return PhasePlan(name, mode, dql, descs, _padding_rule(descs, "vllm"), notes)

    target = phase("target", resolved, k1, [])
    prefill_notes = [
        "same descriptors as the target (the attention-state hand-off needs identical keys)"
    ]
    prefill = phase("draft_prefill", resolved, k1, prefill_notes)
    reuse_ref = FLAGS["reuse_target_attn_state"].ref
    clamp_ref = FLAGS["draft_decode_mode_clamp"].ref
    if any(d.mode is Mode.FULL for d in prefill.descriptors):
        prefill.notes.append(
            "FULL graphs captured with the target's captured attention state; replays without "
            f"a metadata rebuild ({reuse_ref})"
            if beh.reuse_target_attn_state
            else "FULL graphs captured with the speculator's own builders; metadata rebuilt "
            f"before each FULL replay (pre-{reuse_ref})"
        )
    if k == 1:
        decode = PhasePlan("draft_decode", Mode.NONE, 1, [], "no draft decodes (K = 1)", [])
    elif beh.draft_decode_mode_clamp:
        mode = Mode.FULL_DECODE_ONLY if resolved.decode_mode() is Mode.FULL else Mode.NONE
        note = (
            f"clamped to {mode.name}: decode_mode() of {resolved.name} is "
            f"{resolved.decode_mode().name} ({clamp_ref})"
        )
        decode = phase("draft_decode", mode, 1, [note])
    else:
        decode = phase(
            "draft_decode",
            resolved,
            1,
            [f"unclamped: the decode manager gets the runner's {resolved.name} (pre-{clamp_ref})"],
        )
    plan = CapturePlan(
        framework="vllm",
        behavior=beh.name,
        attention_backend=opts.attention_backend,
        num_speculative_tokens=k,
        max_num_seqs=r,
        max_num_batched_tokens=opts.max_num_batched_tokens,
        requested_mode=opts.mode,
        resolved_mode=resolved,
        downgrades=downgrades,
        capture_sizes=sizes,
        capture_sizes_before_rounding=base,
        phases=[target, prefill, decode],
    )
    plan.findings = _vllm_hazards(plan, opts)
    return plan


def _vllm_hazards(plan: CapturePlan, opts: PlanOptions) -> list[Finding]:
    beh = opts.behavior
    out: list[Finding] = []
    if plan.downgrades:
        h = hazard("mode-downgraded")
        out.append(
            Finding(
                id=h.id,
                severity=Severity.WARNING,
                message=f"requested {plan.requested_mode.name} runs as "
                f"{plan.resolved_mode.name} with {opts.attention_backend}: the backend lacks "
                "uniform-batch FULL graph support for spec decode",
                ref=h.ref_text,
                fix=h.fix_text,
                hazard=h.id,
            )
        )
    decode = plan.phase("draft_decode")
    segmented_decode = [d for d in decode.descriptors if d.mode.is_segmented()]
    if segmented_decode:
        h = hazard("piecewise-draft-decode")
        if opts.metadata_style == "flashinfer":
            out.append(
                Finding(
                    id=h.id,
                    severity=Severity.ERROR,
                    kind="stale-read",
                    phase="draft_decode",
                    buffer="kv_indptr",
                    message=f"draft decodes dispatch to {segmented_decode[0].mode.name} "
                    f"descriptors that pad num_tokens but not num_reqs; FlashInfer-style decode "
                    "plans num_tokens rows and reads kv_indptr[num_reqs+1:num_tokens+1] and "
                    "last_page_len[num_reqs:num_tokens] left by earlier builds",
                    ref=h.ref_text,
                    fix=h.fix_text,
                    hazard=h.id,
                )
            )
        else:
            out.append(
                Finding(
                    id=h.id,
                    severity=Severity.INFO,
                    phase="draft_decode",
                    message=f"draft decodes may run {segmented_decode[0].mode.name}; harmless with "
                    "flash-attn-style metadata (kernels stop at query_start_loc[num_reqs]) but "
                    "not with FlashInfer",
                    ref=h.ref_text,
                    hazard=h.id,
                )
            )
    prefill_full = [d for d in plan.phase("draft_prefill").descriptors if d.mode is Mode.FULL]
    if not beh.pad_last_token_indices and prefill_full:
        h = hazard("unpadded-last-token-indices")
        out.append(
            Finding(
                id=h.id,
                severity=Severity.ERROR,
                kind="oob-read",
                phase="draft_prefill",
                buffer="last_token_indices",
                message=f"{len(prefill_full)} FULL draft-prefill graphs gather hidden states at "
                "last_token_indices[:num_reqs_padded]; rows past num_reqs keep stale indices "
                "from larger batches (out-of-bounds gather)",
                ref=h.ref_text,
                fix=h.fix_text,
                hazard=h.id,
            )
        )
    if beh.dedicated_eagle_pool and plan.resolved_mode:
        h = hazard("dedicated-eagle-pool")
        out.append(
            Finding(
                id=h.id,
                severity=Severity.INFO,
                message=h.mechanism,
                ref=h.ref_text,
                fix="eaglegraph memdiff MODEL --pool shared --against dedicated",
                hazard=h.id,
            )
        )
    if not beh.reuse_target_attn_state and prefill_full:
        h = hazard("draft-prefill-metadata-rebuild")
        out.append(
            Finding(
                id=h.id,
                severity=Severity.INFO,
                phase="draft_prefill",
                message=h.mechanism,
                ref=h.ref_text,
                hazard=h.id,
            )
        )
    return out


def _sglang_plan(opts: PlanOptions) -> CapturePlan:
    k = opts.num_speculative_tokens
    ntok = k + 1  # topk = 1: num_draft_tokens = num_steps + 1
    graphs = opts.mode is not Mode.NONE
    if opts.capture_sizes is not None:
        bs_list = sorted({s for s in opts.capture_sizes if s <= opts.max_num_seqs})
    else:
        bs_list = sglang_batch_sizes(k, max_running_requests=opts.max_num_seqs)
    mode = Mode.FULL if graphs else Mode.NONE

    def full(tokens_per_bs: int) -> list[BatchDescriptor]:
        if not graphs:
            return []
        return [BatchDescriptor(Mode.FULL, bs * tokens_per_bs, bs, tokens_per_bs) for bs in bs_list]

    target = PhasePlan(
        "target", mode, ntok, full(ntok), _padding_rule(full(ntok), "sglang"),
        ["TARGET_VERIFY graphs, one per batch size, largest first, global graph pool"],
    )  # fmt: skip
    if k > 1:
        dd = full(1)
        decode = PhasePlan(
            "draft_decode", mode, 1, dd, _padding_rule(dd, "sglang"),
            ["EAGLEDraftCudaGraphRunner: one graph runs all draft steps; shares the target's pool"],
        )  # fmt: skip
    else:
        decode = PhasePlan("draft_decode", Mode.NONE, 1, [], "no draft decode graph (steps = 1)")
    if opts.mode is Mode.BREAKABLE:
        bcg_ref = cite("sglang-bcg").ref
        pre_descs = [BatchDescriptor(Mode.BREAKABLE, n, None) for n in bs_list]
        prefill = PhasePlan(
            "draft_prefill", Mode.BREAKABLE, ntok, pre_descs, _padding_rule(pre_descs, "sglang"),
            [f"--enable-breakable-cuda-graph: BCG for the draft extend ({bcg_ref})"],
        )  # fmt: skip
    elif graphs and opts.attention_backend == "triton":
        pd = full(ntok)
        prefill = PhasePlan(
            "draft_prefill", mode, ntok, pd, _padding_rule(pd, "sglang"),
            ["EAGLEDraftExtendCudaGraphRunner (triton backend only)"],
        )  # fmt: skip
    else:
        prefill = PhasePlan(
            "draft_prefill", Mode.NONE, ntok, [], "eager: no graphs, no padding",
            [f"draft extend runs eagerly with {opts.attention_backend} (graph runner exists for "
             "triton/trtllm backends only)"],
        )  # fmt: skip
    plan = CapturePlan(
        framework="sglang",
        behavior=opts.behavior.name,
        attention_backend=opts.attention_backend,
        num_speculative_tokens=k,
        max_num_seqs=opts.max_num_seqs,
        max_num_batched_tokens=opts.max_num_batched_tokens,
        requested_mode=opts.mode,
        resolved_mode=mode if opts.mode is not Mode.BREAKABLE else Mode.BREAKABLE,
        downgrades=[],
        capture_sizes=bs_list if graphs else [],
        capture_sizes_before_rounding=bs_list,
        phases=[target, prefill, decode],
    )
    if not opts.behavior.reset_positions_on_padded_replay and decode.descriptors:
        h = hazard("stale-padded-positions")
        plan.findings.append(
            Finding(
                id=h.id,
                severity=Severity.ERROR,
                kind="stale-read",
                phase="draft_decode",
                buffer="positions",
                message=h.mechanism,
                ref=h.ref_text,
                fix=h.fix_text,
                hazard=h.id,
            )
        )
    return plan


def build_plan(opts: PlanOptions) -> CapturePlan:
    return _sglang_plan(opts) if opts.framework == "sglang" else _vllm_plan(opts)
