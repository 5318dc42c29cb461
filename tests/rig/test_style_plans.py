"""The speculator styles' torch-free rows (`rig.style_plans`) and the kind's style
(`rig.drafting`): every row names the strategy that drafts its style, and the style a pair
drafts with is the one the rig builds.
"""

from __future__ import annotations

import pytest

from eaglegraph.known.runners import ModelRunner
from eaglegraph.known.speculator_styles import SpeculatorStyle
from eaglegraph.pair import load_pair
from eaglegraph.pair.kinds import all_specs
from eaglegraph.pair.presets import materialize
from eaglegraph.rig.drafting import draft_plan, pair_drafting, speculator_style
from eaglegraph.rig.options import PlanChoices, resolve_plan_options
from eaglegraph.rig.plan import build_plan
from eaglegraph.rig.speculators import speculator_plan, strategy
from eaglegraph.rig.style_plans import ENGINE_STYLES, RUNNER_STYLES, STYLES, drafting_for


@pytest.mark.fast
def test_every_row_names_the_strategy_of_its_style() -> None:
    assert set(STYLES) == set(SpeculatorStyle)
    rows = [
        *((style, d) for style, d in STYLES.items()),
        *((style, d) for (_, style), d in ENGINE_STYLES.items()),
        *((style, d) for (_, style), d in RUNNER_STYLES.items()),
    ]
    for style, drafting in rows:
        assert strategy(drafting).style is style, drafting.strategy
    # an engine's or runner's own row wins over the reference row, for its style only
    assert (
        drafting_for(SpeculatorStyle.EAGLE, "sglang")
        is ENGINE_STYLES["sglang", SpeculatorStyle.EAGLE]
    )
    mrv1 = RUNNER_STYLES[ModelRunner.MRV1, SpeculatorStyle.EAGLE]
    assert drafting_for(SpeculatorStyle.EAGLE, "vllm", "mrv1") is mrv1
    assert drafting_for(SpeculatorStyle.BLOCK, "vllm", "mrv1") is STYLES[SpeculatorStyle.BLOCK]


@pytest.mark.fast
def test_every_kind_declares_a_style() -> None:
    for spec in all_specs():
        assert isinstance(spec.speculator_style, SpeculatorStyle), spec.kind
        multi = spec.multi_module_style
        assert multi is None or isinstance(multi, SpeculatorStyle), spec.kind


@pytest.mark.fast
@pytest.mark.parametrize(
    ("preset", "k", "framework", "style"),
    [
        ("tiny-llama-eagle3", 3, "vllm", SpeculatorStyle.EAGLE),
        ("tiny-qwen3-dflash", 3, "vllm", SpeculatorStyle.BLOCK),
        ("tiny-deepseek-mtp2", 2, "vllm", SpeculatorStyle.WINDOW),  # two modules run, K 2
        ("tiny-deepseek-mtp2", 1, "vllm", SpeculatorStyle.EAGLE),  # K 1: one module reused
        ("tiny-deepseek-mtp2", 2, "sglang", SpeculatorStyle.EAGLE),  # NextN runs the first
        ("tiny-deepseek-mtp", 3, "vllm", SpeculatorStyle.EAGLE),  # one module
    ],
)
def test_the_pairs_style_is_the_strategy_the_rig_builds(
    preset: str, k: int, framework: str, style: SpeculatorStyle
) -> None:
    pair = load_pair(materialize(preset))
    assert speculator_style(pair, k, framework) is style
    options = resolve_plan_options(
        PlanChoices(max_num_seqs=4, num_speculative_tokens=k, framework=framework)
    )
    plan = build_plan(options)
    built, planned = speculator_plan(pair, plan)  # what the rig takes
    assert built.style is style
    assert built is strategy(pair_drafting(pair, plan))
    assert planned == draft_plan(pair, plan)  # inspect's plan is the rig's
