"""Each pair check on real public draft/target configs (tests/fixtures/configs, cited in its
SOURCES.md; the pairs and the one-field edits are listed in pairs/SOURCES.md): it fires on the
mismatch it names, stays quiet on the consistent real pair, says what the engine does and what
to change, and shows only under the plan of the engine it concerns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.errors import BadInput
from eaglegraph.known.hazards import HAZARDS
from eaglegraph.known.pair_checks import PAIR_CHECKS
from eaglegraph.pair import Pair, load_pair
from eaglegraph.pair.checks import for_engine
from eaglegraph.results.findings import Finding, Severity
from tests.helpers import write_tensors

CONFIGS = Path(__file__).parents[1] / "fixtures" / "configs"
QWEN3_8B = CONFIGS / "qwen3-8b-target.json"
QWEN3_8B_EAGLE3 = CONFIGS / "specforge-qwen3-8b-eagle3-draft.json"
QWEN3_8B_DFLASH = CONFIGS / "specforge-qwen3-8b-dflash-draft-not-eagle.json"
QWEN3_30B_EAGLE3 = CONFIGS / "specforge-qwen3-30b-a3b-eagle3.1-draft.json"
LLAMA3_EAGLE1 = CONFIGS / "eagle1-llama3-instruct-8b-draft.json"
VICUNA_EAGLE1 = CONFIGS / "eagle1-vicuna-7b-v1.3-draft.json"
DEEPSEEK_R1 = CONFIGS / "mtp" / "deepseek-r1-target.json"
DEEPSEEK_EAGLE3 = CONFIGS / "specforge-deepseek-v3-671b-eagle3-draft.json"

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO


def _config(path: Path, **edits: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    data.update(edits)
    return data


def _folder(folder: Path, config: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def _pair(
    tmp: Path, target: dict[str, Any], draft: dict[str, Any], tensors: dict | None = None
) -> Pair:
    _folder(tmp / "target", target)
    d = _folder(tmp / "draft", draft)
    if tensors is not None:
        write_tensors(d / "model.safetensors", tensors)
    return load_pair(tmp)


def _found(pair: Pair, check_id: str) -> Finding:
    matches = [f for f in pair.findings if f.id == check_id]
    assert len(matches) == 1, [f.id for f in pair.findings]
    return matches[0]


NEW_CHECKS = {
    "rope-theta-differs",
    "rope-scaling-differs",
    "rms-eps-differs",
    "draft-max-positions",
    "tied-head-reduced-vocab",
    "draft-layers-implausible",
    "d2t-length-mismatch",
    "t2d-length-mismatch",
    "draft-vocab-larger",
    "verifier-mismatch",
    "implausible-value",
    "vocab-mismatch",
}


def test_the_real_qwen3_pair_passes_every_check(tmp_path: Path) -> None:
    """The negative of every check: SpecForge's Qwen3-8B EAGLE-3 head next to Qwen3-8B, with
    vocab maps of the right lengths."""
    pair = _pair(
        tmp_path,
        _config(QWEN3_8B),
        _config(QWEN3_8B_EAGLE3),
        {"d2t": (32000,), "t2d": (151936,)},
    )
    assert not NEW_CHECKS & {f.id for f in pair.findings}, pair.findings
    assert not [f for f in pair.findings if f.severity is E]


def test_rope_theta_stated_by_the_draft_differs(tmp_path: Path) -> None:
    pair = _pair(tmp_path, _config(QWEN3_8B), _config(LLAMA3_EAGLE1))
    f = _found(pair, "rope-theta-differs")
    assert f.severity is W and "500000" in f.message and "1e+06" in f.message
    assert "rotary table from the draft config" in f.message and f.fix and f.ref


def test_rope_theta_defaulted_by_the_draft_is_information(tmp_path: Path) -> None:
    pair = _pair(tmp_path, _config(QWEN3_8B), _config(VICUNA_EAGLE1))
    f = _found(pair, "rope-theta-differs")
    assert f.severity is INFO and "no rope_theta: the default" in f.message


def test_rope_scaling_without_theta_leaves_theta_to_the_default(tmp_path: Path) -> None:
    yarn = {"type": "yarn", "factor": 4, "original_max_position_embeddings": 4096}
    pair = _pair(tmp_path, _config(QWEN3_8B), _config(VICUNA_EAGLE1, rope_scaling=yarn))
    assert _found(pair, "rope-theta-differs").severity is INFO


def test_rope_scaling_only_the_target_has(tmp_path: Path) -> None:
    """The real DeepSeek pair: SpecForge's V3 EAGLE-3 head has no rope scaling, R1 has yarn
    ×40; θ agrees (10000 both)."""
    pair = _pair(tmp_path, _config(DEEPSEEK_R1), _config(DEEPSEEK_EAGLE3))
    f = _found(pair, "rope-scaling-differs")
    assert f.severity is INFO and "none ≠ target yarn ×40" in f.message
    assert "rope-theta-differs" not in {x.id for x in pair.findings}


def test_rope_scaling_both_sides_state_differently(tmp_path: Path) -> None:
    yarn = {"type": "yarn", "factor": 4, "original_max_position_embeddings": 4096}
    pair = _pair(tmp_path, _config(DEEPSEEK_R1), _config(DEEPSEEK_EAGLE3, rope_scaling=yarn))
    f = _found(pair, "rope-scaling-differs")
    assert f.severity is W and "yarn ×4 ≠ target yarn ×40" in f.message


def test_max_positions_smaller_in_the_draft(tmp_path: Path) -> None:
    draft = _config(QWEN3_8B_EAGLE3, max_position_embeddings=2048)
    pair = _pair(tmp_path, _config(QWEN3_8B), draft)
    f = _found(pair, "draft-max-positions")
    assert "2048" in f.message and "40960" in f.message
    assert f.fix and "llama3 rope" in f.fix  # what vLLM does per rope type


def test_rms_eps_differs_on_the_real_deepseek_pair(tmp_path: Path) -> None:
    pair = _pair(tmp_path, _config(DEEPSEEK_R1), _config(DEEPSEEK_EAGLE3))
    f = _found(pair, "rms-eps-differs")
    assert f.severity is INFO and "1e-05 ≠ target 1e-06" in f.message


def test_tied_head_with_a_reduced_vocabulary(tmp_path: Path) -> None:
    draft = _config(QWEN3_8B_EAGLE3, tie_word_embeddings=True)
    pair = _pair(tmp_path, _config(QWEN3_8B), draft)
    f = _found(pair, "tied-head-reduced-vocab")
    assert f.severity is E and "32000 of 151936" in f.message
    assert "tie_word_embeddings" in (f.fix or "") and "llama_eagle3.py" in (f.ref or "")
    # SGLang's behaviour: on an SGLang plan only (vLLM ignores the tie for EAGLE-3)
    assert f in for_engine(pair.findings, "sglang")
    assert f not in for_engine(pair.findings, "vllm")


def test_tied_head_over_the_full_vocabulary_is_fine(tmp_path: Path) -> None:
    draft = _config(QWEN3_8B_EAGLE3, tie_word_embeddings=True, draft_vocab_size=151936)
    pair = _pair(tmp_path, _config(QWEN3_8B), draft)
    assert "tied-head-reduced-vocab" not in {f.id for f in pair.findings}


def test_a_28_layer_eagle3_draft(tmp_path: Path) -> None:
    pair = _pair(tmp_path, _config(QWEN3_8B), _config(QWEN3_8B_EAGLE3, num_hidden_layers=28))
    f = _found(pair, "draft-layers-implausible")
    assert f.severity is W and "28-layer EAGLE-3" in f.message and "at most 4" in f.message


def test_the_real_5_layer_dflash_draft_is_plausible(tmp_path: Path) -> None:
    pair = _pair(tmp_path, _config(QWEN3_8B), _config(QWEN3_8B_DFLASH))
    assert pair.kind == "dflash"
    assert "draft-layers-implausible" not in {f.id for f in pair.findings}


def test_vocab_maps_sized_against_both_vocabularies(tmp_path: Path) -> None:
    pair = _pair(
        tmp_path,
        _config(QWEN3_8B),
        _config(QWEN3_8B_EAGLE3),
        {"d2t": (16000,), "t2d": (128256,)},  # maps of a Llama-3 head with a 16k draft vocab
    )
    d2t = _found(pair, "d2t-length-mismatch")
    assert d2t.severity is E and "16000 entries but draft_vocab_size is 32000" in d2t.message
    assert "draft_id_to_target_id" in d2t.message
    t2d = _found(pair, "t2d-length-mismatch")
    assert t2d.severity is W and "128256" in t2d.message and "151936" in t2d.message


def test_draft_vocab_larger_than_the_vocabulary(tmp_path: Path) -> None:
    draft = _config(QWEN3_8B_EAGLE3, draft_vocab_size=200000)
    pair = _pair(tmp_path, _config(QWEN3_8B), draft)
    f = _found(pair, "draft-vocab-larger")
    assert f.severity is E and "200000 > vocab_size 151936" in f.message


def test_vocab_mismatch_between_the_real_vicuna_head_and_qwen3(tmp_path: Path) -> None:
    pair = _pair(tmp_path, _config(QWEN3_8B), _config(VICUNA_EAGLE1))
    f = _found(pair, "vocab-mismatch")
    assert "32000" in f.message and "151936" in f.message and (f.ref or "").startswith("https")


def test_verifier_named_is_not_the_target_given(tmp_path: Path) -> None:
    target = _folder(tmp_path / "hub" / "models--Qwen--Qwen3-8B", _config(QWEN3_8B))
    draft = _folder(
        tmp_path / "head",
        _config(QWEN3_8B_EAGLE3, base_model_name_or_path="meta-llama/Llama-3.1-8B-Instruct"),
    )
    pair = load_pair(None, target=target, draft=draft)
    f = _found(pair, "verifier-mismatch")
    assert f.severity is W and "Llama-3.1-8B-Instruct" in f.message and "qwen3-8b" in f.message


def test_target_model_type_the_draft_was_trained_for(tmp_path: Path) -> None:
    pair = _pair(tmp_path, _config(QWEN3_8B), _config(QWEN3_8B_EAGLE3, target_model_type="llama"))
    f = _found(pair, "verifier-mismatch")
    assert "target_model_type 'llama'; the target is qwen3" in f.message
    same = _pair(
        tmp_path / "b", _config(QWEN3_8B), _config(QWEN3_8B_EAGLE3, target_model_type="qwen3")
    )
    assert "verifier-mismatch" not in {x.id for x in same.findings}


def test_verifier_named_is_a_variant_of_the_target_given(tmp_path: Path) -> None:
    target = _folder(tmp_path / "hub" / "models--Qwen--Qwen3-8B-FP8", _config(QWEN3_8B))
    draft_cfg = _config(QWEN3_8B_EAGLE3, base_model_name_or_path="Qwen/Qwen3-8B")
    pair = load_pair(None, target=target, draft=_folder(tmp_path / "head", draft_cfg))
    assert "verifier-mismatch" not in {f.id for f in pair.findings}


def test_verifier_named_is_the_target_given(tmp_path: Path) -> None:
    target = _folder(tmp_path / "t", _config(QWEN3_8B, _name_or_path="Qwen/Qwen3-8B"))
    draft = _folder(
        tmp_path / "head", _config(QWEN3_8B_EAGLE3, base_model_name_or_path="Qwen/Qwen3-8B")
    )
    pair = load_pair(None, target=target, draft=draft)
    assert "verifier-mismatch" not in {f.id for f in pair.findings}


@pytest.mark.parametrize(
    "side, field, value",
    [("target", "hidden_size", 1e20), ("target", "max_position_embeddings", 10**12),
     ("draft", "draft_vocab_size", 10**9), ("target", "rope_theta", 1e30)],
)  # fmt: skip
def test_implausible_values_are_warned_with_the_field(
    tmp_path: Path, side: str, field: str, value: float
) -> None:
    target, draft = _config(QWEN3_8B), _config(QWEN3_8B_EAGLE3)
    (target if side == "target" else draft)[field] = value
    pair = _pair(tmp_path, target, draft)
    hits = [f for f in pair.findings if f.id == "implausible-value" and field in f.message]
    assert hits and hits[0].severity is W and hits[0].message.startswith(f"{side} {field} = ")


@pytest.mark.parametrize(
    "field, value, says",
    [("hidden_size", -4096, "'hidden_size' must be >= 1"),
     ("hidden_size", "4096", "'hidden_size' must be an integer"),
     ("rms_norm_eps", float("nan"), "'rms_norm_eps' must be a finite number"),
     ("num_hidden_layers", float("nan"), "'num_hidden_layers' must be an integer")],
)  # fmt: skip
def test_negative_nan_and_wrong_types_are_refused_naming_the_field(
    tmp_path: Path, field: str, value: Any, says: str
) -> None:
    with pytest.raises(BadInput, match=says):
        _pair(tmp_path, _config(QWEN3_8B, **{field: value}), _config(QWEN3_8B_EAGLE3))


def test_bin_checkpoint_is_information_about_eaglegraph(tmp_path: Path) -> None:
    """A real EAGLE-1 head shipped as .bin (as SafeAILab's releases are), next to its target's
    vocabulary: no error, an information about what eaglegraph itself cannot read."""
    _folder(tmp_path / "target", _config(QWEN3_8B))
    d = _folder(tmp_path / "draft", _config(VICUNA_EAGLE1, vocab_size=151936))
    (d / "pytorch_model.bin").write_bytes(b"PK\x03\x04")  # never opened
    pair = load_pair(tmp_path)
    f = _found(pair, "eaglegraph-needs-safetensors")
    assert f.severity is INFO and "fine for vLLM and SGLang" in f.message
    assert not [x for x in pair.findings if x.severity is E]


def test_finding_references_are_public() -> None:
    for check in PAIR_CHECKS.values():
        assert check.refs and all(r.startswith("https://") for r in check.refs), check.id
    texts = [c.ref_text + c.engine_does + c.change for c in PAIR_CHECKS.values()]
    texts += [(h.ref_text or "") + (h.fix_text or "") for h in HAZARDS.values()]
    for text in texts:
        for internal in ("research", ".md", "DESIGN", "eagle-formats"):
            assert internal not in text, text


def test_every_finding_of_the_real_pairs_cites_something_public(tmp_path: Path) -> None:
    pairs = [
        _pair(tmp_path / "a", _config(DEEPSEEK_R1), _config(DEEPSEEK_EAGLE3)),
        _pair(tmp_path / "b", _config(QWEN3_8B), _config(LLAMA3_EAGLE1)),
    ]
    for f in (f for p in pairs for f in p.findings):
        assert f.ref is None or not any(s in f.ref for s in ("research", ".md", "§")), f


def _inspect(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(cli, ["inspect", *args, "--json"])
    return result.exit_code, json.loads(result.stdout)


def test_sglang_only_findings_stay_off_vllm_plans() -> None:
    code, doc = _inspect("tiny-llama-eagle3", "--fail-on", "warning")
    assert code == 0, doc["findings"]
    assert "sglang-bcg-draft-width" not in {f["id"] for f in doc["findings"]}
    code, doc = _inspect("tiny-llama-eagle3", "--engine", "sglang==0.5.23", "--fail-on", "warning")
    assert "sglang-bcg-draft-width" in {f["id"] for f in doc["findings"]} and code == 1
