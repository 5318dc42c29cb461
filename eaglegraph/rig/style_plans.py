"""Each speculator style's torch-free part: the changes it makes to the capture plan, and the
module under `rig/speculators/` whose strategy runs it.

A style's plan changes are pure (descriptors, phases, which graphs the style adds, the
findings its drafting predicts), so `inspect` plans a pair from its configs without importing
torch; the rig builds the `Speculator` the row names (`rig.speculators`), which keeps the
buffers and the draft step. One row per style as the reference runner (vLLM Model Runner V2)
drafts it, and one per engine or vLLM runner that drafts a style its own way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from eaglegraph.known.profiles import PROFILES
from eaglegraph.known.runners import ModelRunner
from eaglegraph.known.speculator_styles import SpeculatorStyle
from eaglegraph.pair.drafts.findings import hazard_finding
from eaglegraph.pair.kv_layers import draft_kv_layers
from eaglegraph.pair.model import Pair
from eaglegraph.results.findings import Finding, Severity
from eaglegraph.rig.dflash_plan import dflash_plan
from eaglegraph.rig.mtp_plan import multi_module_plan
from eaglegraph.rig.plan import CapturePlan

PlanChange = Callable[[Pair, CapturePlan], CapturePlan]


def unchanged(pair: Pair, plan: CapturePlan) -> CapturePlan:
    """EAGLE drafting: the plan's draft phases (a draft prefill, K-1 decodes) are already its."""
    return plan


@dataclass(frozen=True)
class Drafting:
    """One way of drafting, torch-free: `plan` makes its changes to the capture plan;
    `strategy` names `rig/speculators/<strategy>.py`, whose `SPECULATOR` drafts it."""

    strategy: str
    plan: PlanChange = unchanged


def window_plan(pair: Pair, plan: CapturePlan) -> CapturePlan:
    """One module per draft KV layer, all over the window in the draft-prefill graph."""
    assert pair.draft_facts is not None
    return multi_module_plan(plan, len(draft_kv_layers(pair, plan.framework)))


def block_plan(pair: Pair, plan: CapturePlan) -> CapturePlan:
    """DFlash: one draft graph per size drafts the whole block, no draft decodes."""
    return dflash_plan(plan)


def mrv1_eagle_plan(pair: Pair, plan: CapturePlan) -> CapturePlan:
    """The MRV1 plan's draft phases are the drafter dispatcher's (`rig.mrv1_plan`); this adds
    what the release's drafting predicts."""
    return replace(plan, findings=plan.findings + rejected_kv_findings(plan))


def rejected_kv_findings(plan: CapturePlan) -> list[Finding]:
    """The plan's prediction of hazard `draft-decode-rejected-kv` (0.11-0.13)."""
    profile = PROFILES.get(plan.behavior)
    if profile is None or profile.draft_decode_excludes_rejected:
        return []
    if plan.num_speculative_tokens < 2:
        return []
    f = hazard_finding(
        "draft-decode-rejected-kv",
        Severity.ERROR,
        f"the {plan.num_speculative_tokens - 1} draft decodes keep each request's rejected "
        "drafts in seq_lens: every decode attends the rejected positions' stale draft KV",
        hazard_fix=True,
    )
    return [replace(f, kind="stale-read", phase="draft_decode", buffer="eagle.seq_lens")]


# each style as the reference runner (vLLM Model Runner V2) drafts it
STYLES: dict[SpeculatorStyle, Drafting] = {
    SpeculatorStyle.EAGLE: Drafting("eagle"),
    SpeculatorStyle.WINDOW: Drafting("window", window_plan),
    SpeculatorStyle.BLOCK: Drafting("block", block_plan),
}
# where an engine's own runner drafts a style differently: (framework, style) → drafting
ENGINE_STYLES: dict[tuple[str, SpeculatorStyle], Drafting] = {
    ("sglang", SpeculatorStyle.EAGLE): Drafting("sglang_eagle"),
}
# where one of vLLM's model runners drafts a style its own way: (runner, style) → drafting
RUNNER_STYLES: dict[tuple[ModelRunner, SpeculatorStyle], Drafting] = {
    (ModelRunner.MRV1, SpeculatorStyle.EAGLE): Drafting("mrv1_eagle", mrv1_eagle_plan),
}


def drafting_for(
    style: SpeculatorStyle, framework: str, runner: ModelRunner | str | None = None
) -> Drafting:
    """How `framework`'s runner (`runner`, for vLLM) drafts `style`."""
    if runner is not None and (ModelRunner(runner), style) in RUNNER_STYLES:
        return RUNNER_STYLES[ModelRunner(runner), style]
    return ENGINE_STYLES.get((framework, style), STYLES[style])
