"""The seams of the step: the one padding rule, hooks as handles, speculators as strategies.

These pin the interfaces other parts are written against: the probe's invariants ask the
padding rule rather than re-deriving it, probes register hooks through handles, and each
drafting style is a registered strategy whose facts the probes read.
"""

from __future__ import annotations

import pytest
import torch

from eaglegraph.models.drafts.style import SpeculatorStyle
from eaglegraph.pair.loader import load_pair
from eaglegraph.pair.presets import materialize
from eaglegraph.rig.config import RigConfig
from eaglegraph.rig.descriptors import BatchDescriptor, Dispatcher, build_descriptors
from eaglegraph.rig.hooks import StepHooks
from eaglegraph.rig.modes import Mode
from eaglegraph.rig.options import PlanChoices, resolve_plan_options
from eaglegraph.rig.speculators import (
    ENGINE_SPECULATORS,
    SPECULATORS,
    DraftFacts,
    speculator_plan,
    strategy_for,
)
from eaglegraph.rig.speculators.base import Speculator
from eaglegraph.rig.speculators.sglang_eagle import SGLangEagleSpeculator
from eaglegraph.rig.step import Rig


@pytest.mark.parametrize(
    ("desc", "batch", "padded"),
    [
        # eager runs the batch as it is
        (BatchDescriptor(Mode.NONE, 7, 3), (3, 7), (3, 7)),
        # FULL pads requests and tokens to the graph's
        (BatchDescriptor(Mode.FULL, 16, 4), (3, 12), (4, 16)),
        # uniform decode: the graph's token and request counts
        (BatchDescriptor(Mode.FULL, 8, 2, 4), (1, 4), (2, 8)),
        # segmented modes pad tokens only: attention runs eagerly on the live batch
        (BatchDescriptor(Mode.PIECEWISE, 16, None), (3, 12), (3, 16)),
        (BatchDescriptor(Mode.BREAKABLE, 16, 4), (3, 12), (3, 16)),
        # a FULL descriptor without a request count keeps the batch's
        (BatchDescriptor(Mode.FULL, 16, None), (3, 12), (3, 16)),
    ],
)
def test_the_padding_rule(
    desc: BatchDescriptor, batch: tuple[int, int], padded: tuple[int, int]
) -> None:
    got = desc.pad(*batch)
    assert (got.num_reqs, got.num_tokens) == padded
    assert (got.real_reqs, got.real_tokens) == batch
    assert got.full == (desc.mode is Mode.FULL)


def test_dispatch_pads_to_the_next_capture_size() -> None:
    by_size = build_descriptors(Mode.FULL_AND_PIECEWISE, [4, 8, 16], 4, 4)
    dispatcher = Dispatcher(by_size)
    uniform = dispatcher.pad(2, 8, 4)  # two requests of K+1 = 4 tokens: the decode graph
    assert uniform.desc == BatchDescriptor(Mode.FULL, 8, 2, 4)
    assert (uniform.num_reqs, uniform.num_tokens) == (2, 8)
    mixed = dispatcher.pad(3, 9, None)  # no uniform descriptor: mixed PIECEWISE at 16
    assert mixed.mode is Mode.PIECEWISE and (mixed.num_reqs, mixed.num_tokens) == (3, 16)
    beyond = dispatcher.pad(3, 40, None)  # past every capture size: eager
    assert beyond.mode is Mode.NONE and (beyond.num_reqs, beyond.num_tokens) == (3, 40)


def test_hooks_are_called_in_order_until_their_handle_is_removed() -> None:
    hooks, seen = StepHooks(), []
    first = hooks.add_phase_hook(lambda phase: seen.append(("first", phase)))
    with hooks.add_phase_hook(lambda phase: seen.append(("second", phase))):
        hooks.phase_done("target")
    hooks.phase_done("draft_prefill")  # the context manager removed the second
    first.remove()
    first.remove()  # twice is harmless
    hooks.phase_done("draft_decode")
    assert seen == [("first", "target"), ("second", "target"), ("first", "draft_prefill")]
    launches: list[tuple[str, int, str]] = []
    handle = hooks.add_launch_hook(lambda *a: launches.append(a))
    hooks.mark("draft_decode", 2, "launch")
    handle.remove()
    hooks.mark("draft_decode", 3, "launch")
    assert launches == [("draft_decode", 2, "launch")]


def test_every_style_has_a_strategy() -> None:
    assert set(SPECULATORS) == set(SpeculatorStyle)
    for style, strategy in SPECULATORS.items():
        assert issubclass(strategy, Speculator) and strategy.style is style
    # only EAGLE drafts by decodes, so only its draft KV and last tokens follow the reference
    assert DraftFacts.DECODES in SPECULATORS[SpeculatorStyle.EAGLE].facts
    for style in (SpeculatorStyle.WINDOW, SpeculatorStyle.BLOCK):
        assert DraftFacts.DECODES not in SPECULATORS[style].facts
        assert DraftFacts.REFERENCE_KV not in SPECULATORS[style].facts
    # an engine's own runner: SGLang drafts EAGLE with its own padded decode rows, whose slots
    # do not follow the query layout; every other fact is EAGLE's
    for (framework, style), strategy in ENGINE_SPECULATORS.items():
        assert strategy.style is style and strategy_for(style, framework) is strategy
    sglang = strategy_for(SpeculatorStyle.EAGLE, "sglang")
    assert sglang is SGLangEagleSpeculator
    assert strategy_for(SpeculatorStyle.EAGLE, "vllm") is SPECULATORS[SpeculatorStyle.EAGLE]
    assert sglang.facts == SPECULATORS[SpeculatorStyle.EAGLE].facts & ~(
        DraftFacts.DECODE_SLOTS_BY_QUERY
    )


@pytest.mark.parametrize(
    ("preset", "k", "style", "decode_graphs"),
    [
        ("tiny-llama-eagle3", 3, SpeculatorStyle.EAGLE, True),
        ("tiny-deepseek-mtp2", 2, SpeculatorStyle.WINDOW, False),
        ("tiny-qwen3-dflash", 3, SpeculatorStyle.BLOCK, False),
    ],
)
def test_the_speculator_owns_its_plan_and_buffers(
    preset: str, k: int, style: SpeculatorStyle, decode_graphs: bool
) -> None:
    opts = resolve_plan_options(
        PlanChoices(
            max_num_seqs=4,
            num_speculative_tokens=k,
            capture_sizes=(4, 8),
            mode="FULL_AND_PIECEWISE",
        )
    )
    pair = load_pair(materialize(preset))
    rig = Rig(pair, RigConfig(opts, torch.device("cpu"), dtype="float32", max_model_len=128))
    assert rig.speculator.style is style
    strategy, plan = speculator_plan(pair, rig.plan)
    assert strategy is type(rig.speculator)
    assert bool(plan.phase("draft_decode").descriptors) == decode_graphs
    own = {
        SpeculatorStyle.EAGLE: set(),
        SpeculatorStyle.WINDOW: {"mtp.cached_ids", "mtp.cached_hidden"},
        SpeculatorStyle.BLOCK: {"dflash.query_start_loc", "dflash.sample_indices"},
    }[style]
    names = {b.name for b in rig.registry}
    assert own <= names
    assert not {"mtp.cached_ids", "dflash.query_start_loc"} - own & names
    expected = k - 1 if style is SpeculatorStyle.WINDOW else 0
    assert rig.speculator.reprefilled_positions() == expected
