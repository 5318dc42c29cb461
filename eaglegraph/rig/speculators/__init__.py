"""Speculators: one strategy per drafting style, built for the style the pair's draft runs.

What is pure about a style — the plan changes it makes — is torch-free in `rig.style_plans`,
and the style a kind drafts with is its spec's (`rig.drafting`), so `inspect` plans without
importing torch. Each row there names the module here whose `SPECULATOR` keeps the style's
persistent buffers, capture inputs and draft step: EAGLE (a draft-prefill graph, then K-1
draft-decode graphs), WINDOW (several MTP modules over each request's window in one graph),
BLOCK (DFlash: one graph drafts the whole block), and the engine runners that draft a style
their own way (SGLang's EAGLE worker: `sglang_eagle.py`; MRV1's EAGLE proposer:
`mrv1_eagle.py`).

A new style is one module here with its `Speculator` subclass (as `SPECULATOR`), its row in
`rig.style_plans.STYLES`, and its member of `SpeculatorStyle`.
"""

from __future__ import annotations

import importlib

from eaglegraph.known.runners import ModelRunner
from eaglegraph.known.speculator_styles import SpeculatorStyle
from eaglegraph.pair.model import Pair
from eaglegraph.rig.drafting import draft_plan, pair_drafting
from eaglegraph.rig.plan import CapturePlan
from eaglegraph.rig.speculators.base import DraftFacts, Speculator, VerifiedStep
from eaglegraph.rig.style_plans import ENGINE_STYLES, RUNNER_STYLES, STYLES, Drafting, drafting_for

__all__ = [
    "ENGINE_SPECULATORS",
    "RUNNER_SPECULATORS",
    "SPECULATORS",
    "DraftFacts",
    "Speculator",
    "SpeculatorStyle",
    "VerifiedStep",
    "speculator_plan",
    "strategy",
    "strategy_for",
]


def strategy(drafting: Drafting) -> type[Speculator]:
    """The `Speculator` a drafting row names (`rig/speculators/<strategy>.py`'s
    `SPECULATOR`), looked up by name as the kind registries are."""
    module = importlib.import_module(f"eaglegraph.rig.speculators.{drafting.strategy}")
    found = getattr(module, "SPECULATOR", None)
    if not (isinstance(found, type) and issubclass(found, Speculator)):
        raise RuntimeError(f"rig/speculators/{drafting.strategy}.py declares no SPECULATOR")
    return found


SPECULATORS: dict[SpeculatorStyle, type[Speculator]] = {
    style: strategy(drafting) for style, drafting in STYLES.items()
}
ENGINE_SPECULATORS: dict[tuple[str, SpeculatorStyle], type[Speculator]] = {
    key: strategy(drafting) for key, drafting in ENGINE_STYLES.items()
}
RUNNER_SPECULATORS: dict[tuple[ModelRunner, SpeculatorStyle], type[Speculator]] = {
    key: strategy(drafting) for key, drafting in RUNNER_STYLES.items()
}


def strategy_for(
    style: SpeculatorStyle, framework: str, runner: ModelRunner | str | None = None
) -> type[Speculator]:
    """The strategy that drafts `style` as `framework`'s runner (`runner`, for vLLM) does."""
    return strategy(drafting_for(style, framework, runner))


def speculator_plan(pair: Pair, plan: CapturePlan) -> tuple[type[Speculator], CapturePlan]:
    """The pair's speculator and `plan` with its draft phases (`rig.drafting.draft_plan`)."""
    return strategy(pair_drafting(pair, plan)), draft_plan(pair, plan)
