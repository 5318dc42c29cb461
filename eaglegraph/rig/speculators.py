"""Which speculator the pair's draft runs, and the graph plan that speculator captures.

Kinds declare their speculator (`BUILD.speculator`): "eagle" (a draft-prefill graph, then
K-1 draft-decode graphs), "window" (several MTP modules over each request's window in one
graph) or "block" (DFlash: one graph drafts the whole block). The plan's draft phases
follow it; the rig and `inspect` both take the plan from here.
"""

from __future__ import annotations

from dataclasses import replace

from eaglegraph.models.drafts import draft_build
from eaglegraph.models.drafts.mtp import declared_modules, modules_run, run_refusal
from eaglegraph.pair.kinds import DraftKind
from eaglegraph.pair.model import Pair
from eaglegraph.pair.reduced import reduced_geometry_findings
from eaglegraph.results.findings import Finding, Severity
from eaglegraph.rig.dflash_plan import dflash_plan
from eaglegraph.rig.mtp_plan import multi_module_plan
from eaglegraph.rig.plan import CapturePlan


def speculator_of(pair: Pair, num_speculative_tokens: int, framework: str) -> str:
    """The speculator of the pair's draft kind ("eagle" for kinds the rig does not build)."""
    facts = pair.draft_facts
    if facts is None or pair.draft is None or pair.target is None or not facts.kind.supported:
        return "eagle"
    return draft_build(facts.kind).speculator(pair, num_speculative_tokens, framework)


def refusal_findings(pair: Pair, plan: CapturePlan) -> list[Finding]:
    """An ERROR finding when the engine would not run this draft configuration as planned
    (the rig refuses to build it; `inspect` reports it)."""
    facts = pair.draft_facts
    if facts is None or facts.kind is not DraftKind.MTP or pair.target is None:
        return []
    why = run_refusal(pair, plan.num_speculative_tokens, plan.framework)
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


def speculator_plan(pair: Pair, plan: CapturePlan) -> tuple[str, CapturePlan]:
    """The speculator and `plan` with its draft phases; a reduced real-geometry model's
    finding rides on the plan, so every run on it (capture, memdiff, probe) says so."""
    speculator = speculator_of(pair, plan.num_speculative_tokens, plan.framework)
    extra = (
        reduced_geometry_findings(pair) + refusal_findings(pair, plan) + module_findings(pair, plan)
    )
    if extra:
        plan = replace(plan, findings=[*plan.findings, *extra])
    if speculator == "window":  # one module per draft KV layer
        assert pair.draft_facts is not None
        modules = len(draft_build(pair.draft_facts.kind).kv_layers(pair, plan.framework))
        return speculator, multi_module_plan(plan, modules)
    if speculator == "block":
        return speculator, dflash_plan(plan)
    return speculator, plan
