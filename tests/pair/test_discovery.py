"""Every layout a ticket arrives with resolves to the right target and draft."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from eaglegraph.errors import BadInput
from eaglegraph.pair import load_pair
from eaglegraph.pair.kinds import DraftKind
from tests.helpers import (
    eagle3_shapes,
    target_shapes,
    tiny_eagle1_config,
    tiny_eagle3_config,
    tiny_target_config,
    write_config,
    write_tensors,
)

CONFIGS = Path(__file__).parents[1] / "fixtures" / "configs"


def test_target_and_draft_subfolders(tmp_path: Path) -> None:
    write_config(tmp_path / "target", tiny_target_config())
    write_config(tmp_path / "draft", tiny_eagle3_config())
    pair = load_pair(tmp_path)
    assert pair.layout == "target/ + draft/"
    assert pair.target and pair.draft and pair.kind == "eagle3"
    assert pair.missing is None


def test_two_model_folders_with_any_names(tmp_path: Path) -> None:
    write_config(tmp_path / "Llama-3.1-8B-Instruct", tiny_target_config())
    write_config(tmp_path / "my-head", tiny_eagle1_config())
    pair = load_pair(tmp_path)
    assert pair.layout == "model subfolders"
    assert pair.target is not None and pair.target.path.name == "Llama-3.1-8B-Instruct"
    assert pair.kind == "eagle1"


def test_explicit_target_and_draft(tmp_path: Path) -> None:
    t = write_config(tmp_path / "a", tiny_target_config())
    d = write_config(tmp_path / "b", tiny_eagle1_config())
    pair = load_pair(None, target=t, draft=d)
    assert pair.layout == "--target/--draft" and pair.kind == "eagle1"


def test_draft_naming_its_verifier_finds_the_target(tmp_path: Path) -> None:
    write_config(tmp_path / "Llama-3.1-8B-Instruct", tiny_target_config())
    layer = {k: v for k, v in tiny_target_config().items() if k != "architectures"}
    layer["num_hidden_layers"] = 1
    cfg = {
        "architectures": ["Eagle3Speculator"],
        "speculators_model_type": "eagle3",
        "transformer_layer_config": layer,
        "draft_vocab_size": 128,
        "speculators_config": {
            "algorithm": "eagle3",
            "default_proposal_method": "greedy",
            "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 5}],
            "verifier": {
                "name_or_path": "meta-llama/Llama-3.1-8B-Instruct",
                "architectures": ["LlamaForCausalLM"],
            },
        },
    }
    draft = write_config(tmp_path / "speculator", cfg)
    pair = load_pair(draft)
    assert pair.layout == "draft naming its verifier"
    assert pair.target is not None and pair.target.path.name == "Llama-3.1-8B-Instruct"
    assert pair.draft_facts is not None
    assert pair.draft_facts.style == "speculators"
    assert pair.draft_facts.speculative_tokens == 5
    assert pair.draft.geometry.hidden_size == 64  # from transformer_layer_config


def test_verifier_not_found_is_said_plainly(tmp_path: Path) -> None:
    cfg = {
        "speculators_model_type": "eagle3",
        "transformer_layer_config": {**tiny_target_config(), "num_hidden_layers": 1},
        "speculators_config": {"verifier": {"name_or_path": "org/absent-model"}},
    }
    pair = load_pair(write_config(tmp_path / "spec", cfg))
    assert pair.target is None
    assert pair.missing and "org/absent-model" in pair.missing and "no target" in pair.missing


def test_target_with_mtp_layers(tmp_path: Path) -> None:
    cfg = tiny_target_config(num_hidden_layers=2, num_nextn_predict_layers=1)
    folder = write_config(tmp_path / "m", cfg)
    shapes = target_shapes(cfg, layers=3)  # layer 2 is the MTP layer
    write_tensors(folder / "model.safetensors", shapes)
    pair = load_pair(folder)
    assert pair.kind == "mtp"
    assert pair.draft_facts is not None and pair.draft_facts.mtp_layers == 1
    assert any("model.layers.2." in e for e in pair.draft_facts.evidence)
    # the extra layer is not reported as a shape problem of the declared stack
    assert "tensor-shape-mismatch" not in {f.id for f in pair.findings}


def test_single_draft_and_single_target(tmp_path: Path) -> None:
    d = write_config(tmp_path / "d", tiny_eagle3_config())
    pair = load_pair(d)
    assert pair.target is None and pair.missing and "no target found" in pair.missing
    t = write_config(tmp_path / "t", tiny_target_config())
    pair = load_pair(t)
    assert pair.draft is None and pair.missing and "no draft found" in pair.missing


def test_config_json_path_is_accepted(tmp_path: Path) -> None:
    d = write_config(tmp_path / "d", tiny_eagle3_config())
    assert load_pair(d / "config.json").kind == "eagle3"


@pytest.mark.parametrize(
    "setup, message",
    [
        (lambda p: p / "nope", "does not exist"),
        (lambda p: p, "is empty"),
        (lambda p: (p / "x.txt").write_text("hi") and p, "no config.json"),
    ],
)
def test_bad_paths(tmp_path: Path, setup, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(BadInput, match=message):
        load_pair(setup(tmp_path))


def test_several_drafts_need_explicit_flags(tmp_path: Path) -> None:
    write_config(tmp_path / "a", tiny_eagle3_config())
    write_config(tmp_path / "b", tiny_eagle1_config())
    with pytest.raises(BadInput, match="--target DIR --draft DIR"):
        load_pair(tmp_path)


def test_draft_given_as_target_is_refused(tmp_path: Path) -> None:
    t = write_config(tmp_path / "a", tiny_eagle3_config())
    with pytest.raises(BadInput, match="holds an eagle3 draft"):
        load_pair(None, target=t, draft=t)


def test_config_is_a_directory(tmp_path: Path) -> None:
    (tmp_path / "config.json").mkdir()
    with pytest.raises(BadInput, match="is a directory"):
        load_pair(tmp_path)


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{\n  "hidden_size": 64,\n  oops\n}')
    with pytest.raises(BadInput, match=r"line 3, column 3"):
        load_pair(tmp_path)


@pytest.mark.parametrize(
    "key", ["hidden_size", "num_attention_heads", "vocab_size", "intermediate_size"]
)
def test_missing_keys(tmp_path: Path, key: str) -> None:
    cfg = tiny_target_config()
    del cfg[key]
    with pytest.raises(BadInput, match=f"missing key '{key}'"):
        load_pair(write_config(tmp_path / "t", cfg))


def test_eagle3_weights_identify_kind_without_config_markers(tmp_path: Path) -> None:
    cfg = tiny_eagle3_config(architectures=["LlamaForCausalLM"])
    del cfg["draft_vocab_size"]
    folder = write_config(tmp_path / "d", cfg)
    write_tensors(folder / "model.safetensors", eagle3_shapes({**cfg, "draft_vocab_size": 128}))
    pair = load_pair(folder)
    assert pair.draft_facts is not None and pair.draft_facts.kind is DraftKind.EAGLE3
    assert "midlayer" in " ".join(pair.draft_facts.evidence)


def test_fixture_dflash_next_to_target(tmp_path: Path) -> None:
    shutil.copy(
        CONFIGS / "qwen3-8b-target.json", write_config(tmp_path / "target", {}) / "config.json"
    )
    shutil.copy(
        CONFIGS / "specforge-qwen3-8b-dflash-draft-not-eagle.json",
        write_config(tmp_path / "draft", {}) / "config.json",
    )
    pair = load_pair(tmp_path)
    assert pair.kind == "dflash"
