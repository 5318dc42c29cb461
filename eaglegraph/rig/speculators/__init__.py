"""Speculators: one strategy per drafting style, and which one the pair's draft runs.

Kinds declare their style (`DraftBuild.speculator` → `SpeculatorStyle`); `SPECULATORS` maps
each style to its strategy (`base.Speculator`): EAGLE (a draft-prefill graph, then K-1
draft-decode graphs), WINDOW (several MTP modules over each request's window in one graph),
BLOCK (DFlash: one graph drafts the whole block). The plan's draft phases follow the strategy;
the rig and `inspect` both take the plan from here.

A new style is one module here with its `Speculator` subclass, a line in `SPECULATORS`, and
its member of `SpeculatorStyle`; an engine runner that drafts a style its own way is one
module and a line in `ENGINE_SPECULATORS` (SGLang's EAGLE worker: `sglang_eagle.py`); one
of vLLM's model runners that does is a line in `RUNNER_SPECULATORS`, looked up by the plan's
runner (MRV1's EAGLE proposer: `mrv1_eagle.py`).
"""

from __future__ import annotations

from dataclasses import replace

from eaglegraph.known.runners import ModelRunner
from eaglegraph.models.drafts import draft_build
from eaglegraph.models.drafts.mtp import run_refusal
from eaglegraph.models.drafts.style import SpeculatorStyle
from eaglegraph.pair.kinds import DraftKind
from eaglegraph.pair.kv_layers import declared_modules, modules_run
from eaglegraph.pair.model import Pair
from eaglegraph.pair.reduced import reduced_geometry_findings
from eaglegraph.results.findings import Finding, Severity
from eaglegraph.rig.plan import CapturePlan
from eaglegraph.rig.speculators.base import DraftFacts, Speculator, VerifiedStep
from eaglegraph.rig.speculators.block import BlockSpeculator
from eaglegraph.rig.speculators.eagle import EagleSpeculator
from eaglegraph.rig.speculators.mrv1_eagle import Mrv1EagleSpeculator
from eaglegraph.rig.speculators.sglang_eagle import SGLangEagleSpeculator
from eaglegraph.rig.speculators.window import WindowSpeculator

__all__ = [
    "ENGINE_SPECULATORS",
    "RUNNER_SPECULATORS",
    "SPECULATORS",
    "DraftFacts",
    "Speculator",
    "SpeculatorStyle",
    "VerifiedStep",
    "speculator_of",
    "speculator_plan",
    "strategy_for",
]

# each style's strategy as the reference runner (vLLM Model Runner V2) drafts it
SPECULATORS: dict[SpeculatorStyle, type[Speculator]] = {
    SpeculatorStyle.EAGLE: EagleSpeculator,
    SpeculatorStyle.WINDOW: WindowSpeculator,
    SpeculatorStyle.BLOCK: BlockSpeculator,
}
# where an engine's own runner drafts a style differently: (framework, style) → strategy
ENGINE_SPECULATORS: dict[tuple[str, SpeculatorStyle], type[Speculator]] = {
    ("sglang", SpeculatorStyle.EAGLE): SGLangEagleSpeculator,
}
# where one of vLLM's model runners drafts a style its own way: (runner, style) → strategy
RUNNER_SPECULATORS: dict[tuple[ModelRunner, SpeculatorStyle], type[Speculator]] = {
    (ModelRunner.MRV1, SpeculatorStyle.EAGLE): Mrv1EagleSpeculator,
}


def strategy_for(
    style: SpeculatorStyle, framework: str, runner: ModelRunner | str | None = None
) -> type[Speculator]:
    """The strategy that drafts `style` as `framework`'s runner (`runner`, for vLLM) does."""
    if runner is not None and (ModelRunner(runner), style) in RUNNER_SPECULATORS:
        return RUNNER_SPECULATORS[ModelRunner(runner), style]
    return ENGINE_SPECULATORS.get((framework, style), SPECULATORS[style])


def speculator_of(pair: Pair, num_speculative_tokens: int, framework: str) -> SpeculatorStyle:
    """The style of the pair's draft kind (EAGLE for kinds the rig does not build)."""
    facts = pair.draft_facts
    if facts is None or pair.draft is None or pair.target is None or not facts.kind.supported:
        return SpeculatorStyle.EAGLE
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


def speculator_plan(pair: Pair, plan: CapturePlan) -> tuple[type[Speculator], CapturePlan]:
    """The pair's speculator and `plan` with its draft phases; a reduced real-geometry
    model's finding rides on the plan, so every run on it (capture, memdiff, probe) says so."""
    style = speculator_of(pair, plan.num_speculative_tokens, plan.framework)
    speculator = strategy_for(style, plan.framework, plan.runner)
    extra = (
        reduced_geometry_findings(pair) + refusal_findings(pair, plan) + module_findings(pair, plan)
    )
    if extra:
        plan = replace(plan, findings=[*plan.findings, *extra])
    return speculator, speculator.plan(pair, plan)
