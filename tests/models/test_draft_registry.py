"""The draft-kind registry: every kind has one on-disk spec, every supported kind one build,
and each build feeds its module the target states it declares."""

from __future__ import annotations

import pytest
import torch

from eaglegraph.errors import BadInput
from eaglegraph.models import DraftArch, draft_build, random_draft, random_target
from eaglegraph.pair.config import Config
from eaglegraph.pair.kinds import (
    DraftKind,
    all_specs,
    detect_draft_kind,
    kind_for_method,
    kind_spec,
    supported_titles,
)
from tests.models.cpu_only import cpu_only
from tests.models.models_support import geometry_of

pytestmark = cpu_only

TARGET = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 50,
    "max_position_embeddings": 128,
}
DRAFT = {**TARGET, "architectures": ["LlamaForCausalLMEagle3"], "num_hidden_layers": 1}


def test_every_kind_has_its_spec_and_every_supported_kind_its_build() -> None:
    assert [s.kind for s in all_specs()] == list(DraftKind)
    for spec in all_specs():
        assert kind_spec(spec.kind) is spec and spec.title
        if spec.supported:
            build = draft_build(spec.kind)
            assert build.kind is spec.kind
            # every build states the KV slots it writes past K (the rig reserves them)
            assert build.extra_lookahead_slots == (1 if spec.kind is DraftKind.DFLASH else 0)
        else:
            with pytest.raises(BadInput, match=f"unsupported draft kind '{spec.kind.value}'"):
                draft_build(spec.kind)
    assert supported_titles() == "EAGLE-1, EAGLE-3, MTP and DFlash"


def test_engine_methods_name_kinds() -> None:
    assert kind_for_method("eagle") is DraftKind.EAGLE1
    assert kind_for_method("EAGLE3") is DraftKind.EAGLE3
    assert kind_for_method("medusa") is None


def test_recognisers_run_by_priority_and_say_why() -> None:
    # An EAGLE-3 architecture name outranks the weak small-config EAGLE-1 guess.
    verdict = detect_draft_kind(Config(DRAFT, "c.json"), None)
    assert verdict.kind is DraftKind.EAGLE3 and "names EAGLE-3" in verdict.evidence[0]
    plain = {k: v for k, v in DRAFT.items() if k != "architectures"}
    verdict = detect_draft_kind(Config(plain, "c.json"), None)
    assert verdict.kind is DraftKind.EAGLE1 and verdict.style == "safeailab"
    with_mtp = {**TARGET, "num_nextn_predict_layers": 1}
    verdict = detect_draft_kind(Config(with_mtp, "c.json"), None)
    assert verdict.kind is DraftKind.UNKNOWN and "MTP" in verdict.evidence[0]


@pytest.mark.parametrize("kind", ["eagle1", "eagle3"])
def test_prefill_feature_is_what_the_kind_consumes(kind: str) -> None:
    target = random_target(geometry_of(TARGET), torch.float32, "cpu", 0)
    arch = DraftArch(kind=kind, target_hidden_size=32, num_aux=3)  # type: ignore[arg-type]
    assert arch.kind is DraftKind(kind)
    draft = random_draft(geometry_of(DRAFT), arch, target, torch.float32, "cpu", 1)
    hidden, aux = torch.randn(5, 32), torch.randn(5, 96)
    feature = draft.prefill_feature(hidden, aux)
    expected = hidden if kind == "eagle1" else draft.combine(aux)  # type: ignore[union-attr]
    assert feature.shape == (5, 32)
    torch.testing.assert_close(feature, expected)
    if kind == "eagle3":
        assert not torch.equal(feature, hidden)
