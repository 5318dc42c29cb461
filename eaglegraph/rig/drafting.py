"""How the pair's draft is drafted, from its configs alone: the style its kind drafts with,
the plan that style makes, and what the engine would refuse to run.

Torch-free, so `inspect` of a config folder and the commands' up-front checks
(`rig.limits`) never import torch; the rig takes the same plan and builds the strategy for
it (`rig.speculators.speculator_plan`).
"""

from __future__ import annotations

from dataclasses import replace

from eaglegraph.known import mtp as known_mtp
from eaglegraph.known.speculator_styles import SpeculatorStyle
from eaglegraph.pair.kinds import DraftKind, kind_spec
from eaglegraph.pair.kv_layers import declared_modules, modules_run
from eaglegraph.pair.model import Pair
from eaglegraph.pair.reduced import reduced_geometry_findings
from eaglegraph.results.findings import Finding, Severity
from eaglegraph.rig.plan import CapturePlan
from eaglegraph.rig.style_plans import Drafting, drafting_for


def speculator_style(pair: Pair, num_speculative_tokens: int, framework: str) -> SpeculatorStyle:
    """The style of the pair's draft kind (EAGLE for kinds the rig does not build): its
    spec's, or its multi-module style where the engine runs several modules and K > 1."""
    facts = pair.draft_facts
    if facts is None or pair.draft is None or pair.target is None or not facts.kind.supported:
        return SpeculatorStyle.EAGLE
    spec = kind_spec(facts.kind)
    multi = spec.multi_module_style
    if multi is not None and min(modules_run(pair, framework), num_speculative_tokens) > 1:
        return multi
    return spec.speculator_style


def mtp_refusal(pair: Pair, num_speculative_tokens: int, framework: str) -> str | None:
    """Why the engine (or the rig, for SGLang's multi-layer worker) does not run this MTP
    configuration as asked, or None."""
    archs = pair.target.config.raw("architectures") if pair.target is not None else None
    return known_mtp.refusal(
        framework, modules_run(pair, framework), num_speculative_tokens, list(archs or [])
    )


def refusal_findings(pair: Pair, plan: CapturePlan) -> list[Finding]:
    """An ERROR finding when the engine would not run this draft configuration as planned
    (the rig refuses to build it; `inspect` reports it)."""
    facts = pair.draft_facts
    if facts is None or facts.kind is not DraftKind.MTP or pair.target is None:
        return []
    why = mtp_refusal(pair, plan.num_speculative_tokens, plan.framework)
    if why is None:
        return []
    return [Finding(id="mtp-config-refused", severity=Severity.ERROR, message=why)]


def module_findings(pair: Pair, plan: CapturePlan) -> list[Finding]:
    """An INFO finding when the engine runs fewer MTP modules than the checkpoint holds."""
    facts = pair.draft_facts
    if facts is None or facts.kind is not DraftKind.MTP or pair.target is None:
        return []
    declared, run = declared_modules(pair), modules_run(pair, plan.framework)
    if run >= declared:
        return []
    return [
        Finding(
            id="mtp-modules-unused",
            severity=Severity.INFO,
            message=f"{plan.framework} runs {run} of the checkpoint's {declared} MTP modules "
            f"(its NextN path loads the first and reuses it for each of the "
            f"{plan.num_speculative_tokens} draft steps); the others take no KV cache",
        )
    ]


def pair_drafting(pair: Pair, plan: CapturePlan) -> Drafting:
    """How the pair's draft is drafted under `plan`'s engine and runner."""
    style = speculator_style(pair, plan.num_speculative_tokens, plan.framework)
    return drafting_for(style, plan.framework, plan.runner)


def draft_plan(pair: Pair, plan: CapturePlan) -> CapturePlan:
    """`plan` with the draft phases the pair's style runs; a reduced real-geometry model's
    finding and the engine's refusals ride on the plan, so every run on it (inspect, capture,
    memdiff, probe) says so."""
    extra = (
        reduced_geometry_findings(pair) + refusal_findings(pair, plan) + module_findings(pair, plan)
    )
    if extra:
        plan = replace(plan, findings=[*plan.findings, *extra])
    return pair_drafting(pair, plan).plan(pair, plan)
