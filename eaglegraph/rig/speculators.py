"""Which speculator the pair's draft runs, and the graph plan that speculator captures.

Kinds declare their speculator (`BUILD.speculator`): "eagle" (a draft-prefill graph, then
K-1 draft-decode graphs), "window" (several MTP modules over each request's window in one
graph) or "block" (DFlash: one graph drafts the whole block). The plan's draft phases
follow it; the rig and `inspect` both take the plan from here.
"""

from __future__ import annotations

from dataclasses import replace

from eaglegraph.models.drafts import draft_build
from eaglegraph.pair.model import Pair
from eaglegraph.pair.reduced import reduced_geometry_findings
from eaglegraph.rig.dflash_plan import dflash_plan
from eaglegraph.rig.mtp_plan import multi_module_plan
from eaglegraph.rig.plan import CapturePlan


def speculator_of(pair: Pair, num_speculative_tokens: int) -> str:
    """The speculator of the pair's draft kind ("eagle" for kinds the rig does not build)."""
    facts = pair.draft_facts
    if facts is None or pair.draft is None or pair.target is None or not facts.kind.supported:
        return "eagle"
    return draft_build(facts.kind).speculator(pair, num_speculative_tokens)


def speculator_plan(pair: Pair, plan: CapturePlan) -> tuple[str, CapturePlan]:
    """The speculator and `plan` with its draft phases; a reduced real-geometry model's
    finding rides on the plan, so every run on it (capture, memdiff, probe) says so."""
    speculator = speculator_of(pair, plan.num_speculative_tokens)
    reduced = reduced_geometry_findings(pair)
    if reduced:
        plan = replace(plan, findings=[*plan.findings, *reduced])
    if speculator == "window":  # one module per draft KV layer
        assert pair.draft_facts is not None
        modules = len(draft_build(pair.draft_facts.kind).kv_layers(pair))
        return speculator, multi_module_plan(plan, modules)
    if speculator == "block":
        return speculator, dflash_plan(plan)
    return speculator, plan
