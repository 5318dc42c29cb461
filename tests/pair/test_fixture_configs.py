"""Every real public config in tests/fixtures/configs is identified with the facts SOURCES.md lists."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from eaglegraph.pair import load_pair
from eaglegraph.pair.kinds import DraftKind

CONFIGS = Path(__file__).parents[1] / "fixtures" / "configs"

# file -> (role, kind, style, facts to check)
EXPECTED = {
    "eagle1-vicuna-7b-v1.3-draft.json": ("draft", "eagle1", "safeailab", {"fc_in": 8192, "bias_key": None}),
    "eagle1-llama3-instruct-8b-draft.json": ("draft", "eagle1", "safeailab", {"fc_in": 8192, "bias_key": False}),
    "eagle3-llama3.1-instruct-8b-draft-safeailab.json": (
        "draft", "eagle3", "safeailab", {"fc_in": 12288, "draft_vocab": 32000},
    ),
    "specforge-llama3.1-8b-eagle3-draft.json": (
        "draft", "eagle3", "specforge", {"fc_in": 12288, "draft_vocab": 32000},
    ),
    "specforge-qwen3-8b-eagle3-draft.json": (
        "draft", "eagle3", "specforge", {"fc_in": 12288, "draft_vocab": 32000, "head_dim": 128},
    ),
    "specforge-deepseek-v3-671b-eagle3-draft.json": (
        "draft", "eagle3", "specforge",
        {"fc_in": 3 * 7168, "draft_vocab": 32000, "aux": [1, 29, 57], "use_aux": True},
    ),
    "specforge-gpt-oss-20b-eagle3-draft.json": (
        "draft", "eagle3", "specforge",
        {"fc_in": 3 * 2880, "draft_vocab": 32000, "aux": [1, 11, 21], "head_dim": 64, "q_width": 4096},
    ),
    "specforge-qwen3-30b-a3b-eagle3.1-draft.json": (
        "draft", "eagle3", "specforge", {"fc_in": 3 * 2048, "draft_vocab": 32000, "head_dim": 128},
    ),
    "specforge-qwen3-8b-dflash-draft-not-eagle.json": ("draft", "dflash", None, {}),
    "qwen3-8b-target.json": ("target", None, None, {"head_dim": 128, "layers": 36, "dtype": "float32"}),
}  # fmt: skip


def test_every_fixture_is_covered() -> None:
    assert sorted(p.name for p in CONFIGS.glob("*.json")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_identified(name: str, tmp_path: Path) -> None:
    role, kind, style, facts = EXPECTED[name]
    shutil.copy(CONFIGS / name, tmp_path / "config.json")
    pair = load_pair(tmp_path)
    ids = {f.id for f in pair.findings}
    assert "missing-weights" in ids  # config only: the missing weights are a finding
    if role == "target":
        assert pair.target is not None and pair.draft is None
        assert pair.draft_facts is None
        g = pair.target.geometry
        assert pair.missing and "no draft" in pair.missing
    else:
        assert pair.target is None and pair.draft is not None
        assert pair.draft_facts is not None
        assert pair.draft_facts.kind is DraftKind(kind)
        assert pair.draft_facts.style == style
        assert pair.draft_facts.evidence
        g = pair.draft.geometry
        f = pair.draft_facts
        if "fc_in" in facts:
            assert f.fc_in_features == facts["fc_in"]
            assert f.fc_in_source == "config"
        if "draft_vocab" in facts:
            assert f.draft_vocab_size == facts["draft_vocab"]
        if "aux" in facts:
            assert f.aux is not None and f.aux.layer_ids == facts["aux"]
            # vLLM uses ids as given (entering layer), SGLang shifts by one
            assert f.aux.sglang_taps == facts["aux"]
            assert f.aux.vllm_taps == [i - 1 for i in facts["aux"]]
        if "use_aux" in facts:
            assert f.use_aux_hidden_state is facts["use_aux"]
        if "bias_key" in facts:
            assert f.config_bias is facts["bias_key"]
    if "head_dim" in facts:
        assert g.head_dim == facts["head_dim"] and g.head_dim_explicit
    if "q_width" in facts:
        assert g.q_width == facts["q_width"] != g.hidden_size
        assert "explicit-head-dim" in ids
    if "layers" in facts:
        assert g.num_hidden_layers == facts["layers"]
    if "dtype" in facts:
        assert g.dtype == facts["dtype"]


def test_dflash_is_recognised_and_built_never_called_eagle(tmp_path: Path) -> None:
    shutil.copy(
        CONFIGS / "specforge-qwen3-8b-dflash-draft-not-eagle.json", tmp_path / "config.json"
    )
    pair = load_pair(tmp_path)
    facts = pair.draft_facts
    assert facts is not None and facts.kind.value == "dflash" and facts.kind.supported
    assert "unsupported-draft-kind" not in {f.id for f in pair.findings}
    rows = dict(facts.kind_facts)
    assert "outputs of layers [1, 9, 17, 25, 33]" in rows["target taps"]
    assert "non-causal" in rows["drafting"]


def test_vicuna_eagle1_without_bias_key_warns_about_fc_bias(tmp_path: Path) -> None:
    shutil.copy(CONFIGS / "eagle1-vicuna-7b-v1.3-draft.json", tmp_path / "config.json")
    pair = load_pair(tmp_path)
    bias = [f for f in pair.findings if f.id == "eagle1-fc-bias"]
    assert bias and "sglang#5773" in (bias[0].ref or "")


def test_specforge_without_eagle_config_hits_sglang_bcg_width_rule(tmp_path: Path) -> None:
    shutil.copy(CONFIGS / "specforge-llama3.1-8b-eagle3-draft.json", tmp_path / "config.json")
    pair = load_pair(tmp_path)
    bcg = [f for f in pair.findings if f.id == "sglang-bcg-draft-width"]
    assert bcg and "4096" in bcg[0].message and "12288" in bcg[0].message
    # DeepSeek's config has eagle_config with use_aux_hidden_state: the rule stays quiet
    shutil.copy(CONFIGS / "specforge-deepseek-v3-671b-eagle3-draft.json", tmp_path / "config.json")
    assert "sglang-bcg-draft-width" not in {f.id for f in load_pair(tmp_path).findings}
