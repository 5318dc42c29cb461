"""The graph plan of multi-module MTP: one draft manager, decode length K+1, no decode phase.

With several MTP modules every module runs over the request's whole K+1-token window, so the
speculator captures one graph per batch size holding all K module steps (the draft-prefill
manager, uniform K+1 tokens per request) and no separate draft decodes. Compiled piecewise
graphs do not specialise the module index, so PIECEWISE modes fall back to FULL_DECODE_ONLY
(or NONE without FULL graphs); breakable graphs keep their segments.
"""

from __future__ import annotations

from dataclasses import replace

from eaglegraph.rig.descriptors import build_descriptors
from eaglegraph.rig.modes import Mode
from eaglegraph.rig.plan import CapturePlan, PhasePlan


def multi_module_mode(resolved: Mode) -> Mode:
    """The speculator manager's mode: compiled PIECEWISE dropped (FULL_DECODE_ONLY when FULL
    graphs exist, else NONE); breakable, FULL, FULL_DECODE_ONLY and NONE kept."""
    if resolved in (Mode.PIECEWISE, Mode.FULL_AND_PIECEWISE):
        return Mode.FULL_DECODE_ONLY if resolved is Mode.FULL_AND_PIECEWISE else Mode.NONE
    return resolved


def multi_module_plan(plan: CapturePlan, modules: int) -> CapturePlan:
    """`plan` with the draft phases of a multi-module MTP speculator."""
    k1 = plan.num_speculative_tokens + 1
    mode = multi_module_mode(plan.resolved_mode)
    by_size = build_descriptors(mode, plan.capture_sizes, plan.max_num_seqs, k1)
    descs = [d for n in sorted(by_size) for d in by_size[n]]
    rule = {
        Mode.FULL_DECODE_ONLY: f"FULL: uniform {k1} tokens/request only; other batches eager",
        Mode.FULL: "FULL: tokens and requests padded to the next size",
        Mode.BREAKABLE: "breakable segments: tokens padded, requests not",
    }.get(mode, "eager")
    note = (
        f"{modules} MTP modules: all {plan.num_speculative_tokens} module steps run over each "
        f"request's {k1}-token window inside one speculator graph ({mode.name}; PIECEWISE is "
        "dropped because compiled pieces do not specialise the module)"
    )
    prefill = PhasePlan("draft_prefill", mode, k1, descs, rule, [note])
    decode = PhasePlan(
        "draft_decode", Mode.NONE, 1, [], "no draft decodes (module steps are in the draft graph)"
    )
    phases = [p for p in plan.phases if p.phase == "target"] + [prefill, decode]
    return replace(plan, phases=phases)
