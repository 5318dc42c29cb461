"""The architecture names each draft kind declares (`ArchName` rows read by one `ArchNames`
rule): every name decides the kind, style and evidence the per-kind loops decided before."""

from __future__ import annotations

import pytest

from eaglegraph.pair.config import Config
from eaglegraph.pair.drafts.base import DraftKind
from eaglegraph.pair.drafts.detection import ArchName, ArchNames, Evidence, recognisers
from eaglegraph.pair.kinds import detect_draft_kind

E1, E3, DF, OT = DraftKind.EAGLE1, DraftKind.EAGLE3, DraftKind.DFLASH, DraftKind.OTHER


@pytest.mark.parametrize(
    ("archs", "kind", "style", "evidence"),
    [
        (["LlamaForCausalLMEagle"], E1, "sglang", "'LlamaForCausalLMEagle' names EAGLE-1/2"),
        (["EagleLlamaForCausalLM"], E1, "vllm", "'EagleLlamaForCausalLM' names EAGLE-1/2"),
        (["Eagle3Speculator"], E3, "speculators", "'Eagle3Speculator' names EAGLE-3"),
        (["Eagle3DraftModel"], E3, "speculators", "'Eagle3DraftModel' names EAGLE-3"),
        # EAGLE-3 is asked before EAGLE-1, whose prefix "Eagle" these also carry
        (["LlamaForCausalLMEagle3"], E3, "specforge", "'LlamaForCausalLMEagle3' names EAGLE-3"),
        (["Eagle3LlamaForCausalLM"], E3, "vllm", "'Eagle3LlamaForCausalLM' names EAGLE-3"),
        (["llamaforcausallmeagle3"], E3, "vllm", "'llamaforcausallmeagle3' names EAGLE-3"),
        (["DFlashDraftModel"], DF, None, "'DFlashDraftModel' is a block drafter, not EAGLE"),
        (["Qwen3DSparkModel"], OT, None, "'Qwen3DSparkModel' is a block drafter, not EAGLE"),
        (["MedusaModel"], OT, None, "'MedusaModel' (not EAGLE)"),
        (["mlpspeculatorPreTrainedModel"], OT, None, "'mlpspeculatorPreTrainedModel' (not EAGLE)"),
        # the first architecture a kind's names match decides, whatever its place in the list
        (
            ["LlamaForCausalLM", "Eagle3Speculator"],
            E3,
            "speculators",
            "'Eagle3Speculator' names EAGLE-3",
        ),
    ],
)
def test_architecture_names_decide_kind_style_and_say_which(
    archs: list[str], kind: DraftKind, style: str | None, evidence: str
) -> None:
    verdict = detect_draft_kind(Config({"architectures": archs}, "config.json"), None)
    assert (verdict.kind, verdict.style) == (kind, style)
    assert verdict.evidence == [f"architecture {evidence}"]


def test_a_name_is_compared_as_declared() -> None:
    assert ArchName(prefix="Eagle").matches("EagleLlama")
    assert not ArchName(prefix="Eagle").matches("eagleLlama")  # case counts unless any_case
    assert ArchName(suffix="Eagle3", any_case=True).matches("llamaeagle3")
    assert not ArchName(exact="Medusa").matches("MedusaModel")
    assert ArchName(prefix="Eagle3", suffix="Model").matches("Eagle3DraftModel")
    assert not ArchName(prefix="Eagle3", suffix="Model").matches("Eagle3Speculator")
    with pytest.raises(ValueError, match="needs exact, prefix, suffix or contains"):
        ArchName(style="vllm")


def test_the_rule_says_which_name_decided_and_the_row_may_name_another_kind() -> None:
    rule = ArchNames(
        DraftKind.DFLASH,
        20,
        "is a block drafter",
        (ArchName(contains="dspark", kind=OT), ArchName(contains="Flash")),
    )
    ev = Evidence(
        Config({"architectures": ["X", "DFlashX", "dsparkX"]}, "c.json"), None, frozenset()
    )
    verdict = rule.verdict(ev)
    assert verdict is not None and verdict.kind is DF
    assert verdict.evidence == ["architecture 'DFlashX' is a block drafter"]
    assert rule.verdict(Evidence(Config({}, "c.json"), None, frozenset())) is None


def test_every_kind_declares_its_rules_and_they_are_asked_in_priority_order() -> None:
    rules = recognisers()
    assert [r.priority for r in rules] == sorted(r.priority for r in rules)
    by_name = [r for r in rules if isinstance(r, ArchNames)]
    assert {r.kind for r in by_name} == {E1, E3, DF, OT}
    assert all(r.names for r in by_name)
