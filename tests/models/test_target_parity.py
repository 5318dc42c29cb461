"""Target forward against transformers' own implementations on small random models.

Each model is saved with `save_pretrained` (safetensors), loaded with `load_target`, and both
run in fp32 on CPU over the same tokens and positions, eaglegraph with a dense causal SDPA
callback. Tolerance: logits max abs diff <= 1e-5 and aux hidden states (HF
`output_hidden_states[i]`) max abs diff <= 1e-5; the diffs seen are <= 7e-7 (fp32 rounding
order of fused vs separate GEMMs and of the RoPE kernel).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from eaglegraph.errors import BadInput
from eaglegraph.models import load_target
from eaglegraph.pair.config import Config
from eaglegraph.pair.geometry import geometry_from_config
from tests.models.cpu_only import cpu_only
from tests.models.models_support import DenseAttention, randomize_, write_checkpoint

pytestmark = cpu_only

transformers = pytest.importorskip("transformers")

LOGITS_TOL = 1e-5
AUX_TOL = 1e-5
SMALL = {
    "vocab_size": 160,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 512,
    "rms_norm_eps": 1e-5,
}

MODELS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", {"tie_word_embeddings": False}),
    "llama3-rope-bias": (
        "LlamaConfig",
        "LlamaForCausalLM",
        {
            "attention_bias": True,
            "mlp_bias": True,
            "rope_parameters": {
                "rope_type": "llama3",
                "rope_theta": 500000.0,
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 64,
            },
        },
    ),
    "qwen3": (
        "Qwen3Config",
        "Qwen3ForCausalLM",
        {
            "head_dim": 24,
            "tie_word_embeddings": False,
            "rope_parameters": {"rope_type": "default", "rope_theta": 1e6},
        },
    ),
    "qwen2-tied": ("Qwen2Config", "Qwen2ForCausalLM", {"tie_word_embeddings": True}),
    "mistral": ("MistralConfig", "MistralForCausalLM", {"sliding_window": None}),
}


def _save_hf(name: str, folder: Path, shards: bool = False) -> Any:
    config_cls, model_cls, extra = MODELS[name]
    config = getattr(transformers, config_cls)(**SMALL, **extra)
    torch.manual_seed(0)
    model = getattr(transformers, model_cls)(config).eval()
    randomize_(model, seed=1)
    model.save_pretrained(folder, max_shard_size="100KB" if shards else "5GB")
    return model


def _compare(hf: Any, folder: Path) -> tuple[float, float]:
    geometry = geometry_from_config(Config.read(folder / "config.json"))
    model = load_target(folder, geometry, "float32", "cpu")
    assert model.extra_tensors == ()
    t = 11
    ids = torch.randint(0, SMALL["vocab_size"], (t,), generator=torch.Generator().manual_seed(2))
    positions = torch.arange(t, dtype=torch.int64) + 70  # beyond llama3's original max (64)
    aux_ids = (2, 0, 1)
    with torch.no_grad():
        out = hf(input_ids=ids[None], position_ids=positions[None], output_hidden_states=True)
        hidden, aux = model(ids, positions, DenseAttention(), aux_layer_ids=aux_ids)
        logits = model.compute_logits(hidden)
    assert logits.dtype == torch.float32 and logits.shape == (t, SMALL["vocab_size"])
    want_aux = torch.cat([out.hidden_states[i][0] for i in aux_ids], dim=-1)
    assert aux is not None and aux.shape == (t, 3 * SMALL["hidden_size"])
    logit_diff = (logits - out.logits[0].float()).abs().max().item()
    aux_diff = (aux - want_aux).abs().max().item()
    return logit_diff, aux_diff


@pytest.mark.parametrize("name", sorted(MODELS))
def test_logits_and_aux_match_transformers(name: str, tmp_path: Path) -> None:
    hf = _save_hf(name, tmp_path)
    logit_diff, aux_diff = _compare(hf, tmp_path)
    assert logit_diff <= LOGITS_TOL, f"{name}: logits differ by {logit_diff}"
    assert aux_diff <= AUX_TOL, f"{name}: aux states differ by {aux_diff}"


def test_sharded_checkpoint_loads_the_same(tmp_path: Path) -> None:
    hf = _save_hf("qwen3", tmp_path, shards=True)
    assert (tmp_path / "model.safetensors.index.json").exists()
    logit_diff, aux_diff = _compare(hf, tmp_path)
    assert logit_diff <= LOGITS_TOL and aux_diff <= AUX_TOL


def test_no_aux_requested_gives_none(tmp_path: Path) -> None:
    _save_hf("llama", tmp_path)
    model = load_target(
        tmp_path, geometry_from_config(Config.read(tmp_path / "config.json")), "float32", "cpu"
    )
    ids = torch.tensor([1, 2, 3])
    hidden, aux = model(ids, torch.arange(3), DenseAttention())
    assert aux is None and hidden.shape == (3, SMALL["hidden_size"])
    with pytest.raises(BadInput, match="out of range"):
        model(ids, torch.arange(3), DenseAttention(), aux_layer_ids=(3,))


def _tiny_llama_tensors(config: dict[str, Any]) -> dict[str, torch.Tensor]:
    h, i, v = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    tensors = {"model.embed_tokens.weight": torch.randn(v, h), "model.norm.weight": torch.ones(h)}
    tensors["lm_head.weight"] = torch.randn(v, h)
    for layer in range(config["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        for proj in ("q", "k", "v", "o"):
            tensors[f"{p}self_attn.{proj}_proj.weight"] = torch.randn(h, h)
        tensors[f"{p}mlp.gate_proj.weight"] = torch.randn(i, h)
        tensors[f"{p}mlp.up_proj.weight"] = torch.randn(i, h)
        tensors[f"{p}mlp.down_proj.weight"] = torch.randn(h, i)
        tensors[f"{p}input_layernorm.weight"] = torch.ones(h)
        tensors[f"{p}post_attention_layernorm.weight"] = torch.ones(h)
    return tensors


TINY = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 16,
    "intermediate_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "vocab_size": 40,
}


def test_shape_mismatch_names_tensor_expected_and_found(tmp_path: Path) -> None:
    tensors = _tiny_llama_tensors(TINY)
    tensors["model.layers.1.mlp.up_proj.weight"] = torch.randn(33, 16)
    write_checkpoint(tmp_path, TINY, tensors)
    geometry = geometry_from_config(Config.read(tmp_path / "config.json"))
    with pytest.raises(
        BadInput, match=r"model\.layers\.1\.mlp\.up_proj\.weight.*\[33, 16\].*\[32, 16\]"
    ):
        load_target(tmp_path, geometry, "float32", "cpu")


def test_missing_tensors_are_listed_and_extras_reported(tmp_path: Path) -> None:
    tensors = _tiny_llama_tensors(TINY)
    del tensors["model.norm.weight"], tensors["lm_head.weight"]
    write_checkpoint(tmp_path / "missing", TINY, tensors)
    geometry = geometry_from_config(Config.read(tmp_path / "missing" / "config.json"))
    with pytest.raises(
        BadInput, match=r"missing 2 required tensor\(s\): model\.norm\.weight, lm_head\.weight"
    ):
        load_target(tmp_path / "missing", geometry, "float32", "cpu")

    tensors = _tiny_llama_tensors(TINY)
    tensors["model.layers.0.self_attn.rotary_emb.inv_freq"] = torch.randn(4)
    write_checkpoint(tmp_path / "extra", TINY, tensors)
    model = load_target(tmp_path / "extra", geometry, "bfloat16", "cpu")
    assert model.extra_tensors == ("model.layers.0.self_attn.rotary_emb.inv_freq",)
    assert model.embed_tokens.weight.dtype == torch.bfloat16
    torch.testing.assert_close(
        model.lm_head_weight, tensors["lm_head.weight"].to(torch.bfloat16), atol=0, rtol=0
    )


def test_unsupported_architecture_is_bad_input(tmp_path: Path) -> None:
    config = dict(TINY, architectures=["GPT2LMHeadModel"], model_type="gpt2")
    write_checkpoint(tmp_path, config, _tiny_llama_tensors(TINY))
    geometry = geometry_from_config(Config.read(tmp_path / "config.json"))
    with pytest.raises(BadInput, match="unsupported target architecture GPT2LMHeadModel"):
        load_target(tmp_path, geometry, "float32", "cpu")
