"""The graph plan of a DFlash speculator: one manager holding context step, query forward
and sampling; FULL_DECODE_ONLY when the draft attention supports uniform batches, else eager
(vLLM); SGLang's DFlash worker captures through the target-verify runner instead.

Uniform descriptors hold K+1 tokens per request, for capture sizes up to max_num_seqs·(K+1);
a batch between two sizes replays the larger graph with padded requests.
"""

from __future__ import annotations

from dataclasses import replace

from eaglegraph.rig.descriptors import BatchDescriptor
from eaglegraph.rig.modes import Mode
from eaglegraph.rig.plan import CapturePlan, PhasePlan

UNIFORM_BATCH_BACKENDS = ("flash_attn", "triton")


def dflash_plan(plan: CapturePlan) -> CapturePlan:
    """`plan` with the draft phases of a DFlash speculator."""
    k1 = plan.num_speculative_tokens + 1
    if plan.framework == "sglang":
        return _sglang(plan, k1)
    full = plan.resolved_mode.decode_mode() is Mode.FULL
    supported = plan.attention_backend in UNIFORM_BATCH_BACKENDS
    mode = Mode.FULL_DECODE_ONLY if full and supported else Mode.NONE
    descs: list[BatchDescriptor] = []
    if mode is Mode.FULL_DECODE_ONLY:
        limit = plan.max_num_seqs * k1
        sizes = [n for n in sorted(plan.capture_sizes) if n % k1 == 0 and k1 <= n <= limit]
        descs = [BatchDescriptor(Mode.FULL, n, n // k1, k1) for n in sizes]
    if mode is Mode.FULL_DECODE_ONLY:
        note = (
            f"one graph per size: context step, {k1}-token non-causal query blocks and sampling "
            f"(FULL_DECODE_ONLY up to {descs[-1].num_reqs if descs else 0} requests)"
        )
    elif full:
        note = (
            f"eager: {plan.attention_backend} attention lacks uniform-batch graphs for the "
            "draft's non-causal blocks"
        )
    else:
        note = f"eager: {plan.resolved_mode.name} has no FULL decode graphs"
    rule = f"FULL: uniform {k1} tokens/request, reqs → tokens/{k1}" if descs else "eager"
    prefill = PhasePlan("draft_prefill", mode, k1, descs, rule, [note])
    decode = PhasePlan("draft_decode", Mode.NONE, 1, [], "no draft decodes (one parallel block)")
    phases = [p for p in plan.phases if p.phase == "target"] + [prefill, decode]
    return replace(plan, phases=phases)


def _sglang(plan: CapturePlan, k1: int) -> CapturePlan:
    """SGLang drafts DFlash through the target-verify runner: one graph per captured batch
    size, bs·(K+1) tokens, the target's sizes (none when its graphs are off)."""
    target = plan.phase("target")
    descs = [
        BatchDescriptor(Mode.FULL, d.num_tokens, d.num_reqs, k1)
        for d in target.descriptors
        if d.mode is Mode.FULL and d.num_reqs
    ]
    mode = Mode.FULL if descs else Mode.NONE
    note = (
        f"target-verify runner path: one graph per batch size, {k1} tokens per request "
        f"(context step, non-causal block, sampling), up to {descs[-1].num_reqs} requests"
        if descs
        else "eager: no target-verify graphs to draft through"
    )
    rule = f"FULL: uniform {k1} tokens/request, bs → next captured bs" if descs else "eager"
    prefill = PhasePlan("draft_prefill", mode, k1, descs, rule, [note])
    decode = PhasePlan("draft_decode", Mode.NONE, 1, [], "no draft decodes (one parallel block)")
    # only the EAGLE worker captures breakable prompt-prefill graphs for its draft
    # (`eagle_worker_v2.py::EAGLEWorkerV2.init_cuda_graphs`, 0.5.23); the DFlash worker does not
    return replace(plan, phases=[target, prefill, decode], outside_step=[])
