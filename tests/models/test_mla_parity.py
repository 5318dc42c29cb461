"""MLA target and DeepSeek MTP module against transformers' DeepSeek-V3 on small random models.

transformers writes DeepSeek-V3's real checkpoint names (per-expert tensors, interleaved rope
rows), so loading its `save_pretrained` output checks the loader and the absorbed attention
at once. Tolerance as for the Llama family (1e-5 on fp32 logits).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from eaglegraph.models.drafts.base import BuildArgs, DraftStep
from eaglegraph.models.loading import open_index
from eaglegraph.models.mtp import MTPArch
from eaglegraph.models.mtp_loading import load_mla_target, load_mtp_draft
from eaglegraph.pair.config import Config
from eaglegraph.pair.geometry import geometry_from_config
from eaglegraph.pair.mla import mla_dims, moe_dims
from tests.models.cpu_only import cpu_only
from tests.models.models_support import DenseAttention, randomize_

pytestmark = cpu_only

transformers = pytest.importorskip("transformers")

LOGITS_TOL = 1e-5
SMALL: dict[str, Any] = {
    "vocab_size": 96,
    "hidden_size": 48,
    "intermediate_size": 80,
    "moe_intermediate_size": 24,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "n_shared_experts": 1,
    "n_routed_experts": 8,
    "n_group": 4,
    "topk_group": 2,
    "num_experts_per_tok": 2,
    "first_k_dense_replace": 1,
    "kv_lora_rank": 32,
    "q_lora_rank": 40,
    "qk_rope_head_dim": 16,
    "v_head_dim": 24,
    "qk_nope_head_dim": 20,
    "max_position_embeddings": 256,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": False,
}


def _hf(folder: Path, **extra: Any) -> Any:
    config = transformers.DeepseekV3Config(**{**SMALL, **extra})
    torch.manual_seed(0)
    model = transformers.DeepseekV3ForCausalLM(config).eval()
    randomize_(model, seed=3)
    with torch.no_grad():  # routing bias is a buffer randomize_ does not touch
        for layer in model.model.layers[config.first_k_dense_replace :]:
            layer.mlp.gate.e_score_correction_bias.uniform_(-0.05, 0.05)
        model.lm_head.weight.normal_(0, 0.05)
    model.save_pretrained(folder)
    if not any("lm_head" in k for k in _keys(folder)):  # transformers may drop it as tied
        from safetensors.torch import load_file, save_file

        tensors = load_file(str(folder / "model.safetensors"))
        tensors["lm_head.weight"] = model.lm_head.weight.detach().clone()
        save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return model


def _keys(folder: Path) -> list[str]:
    from safetensors import safe_open

    with safe_open(str(folder / "model.safetensors"), "pt") as fh:
        return list(fh.keys())


def _load(folder: Path) -> Any:
    cfg = Config.read(folder / "config.json")
    geometry = geometry_from_config(cfg)
    mla, moe = mla_dims(cfg), moe_dims(cfg)
    assert mla is not None
    return load_mla_target(folder, geometry, mla, moe, "float32", "cpu"), geometry, cfg


@pytest.mark.parametrize("q_lora", [40, None])
def test_mla_target_logits_match_transformers(tmp_path: Path, q_lora: int | None) -> None:
    hf = _hf(tmp_path, q_lora_rank=q_lora)
    model, _, _ = _load(tmp_path)
    assert model.extra_tensors == ()
    t = 13
    ids = torch.randint(0, SMALL["vocab_size"], (t,), generator=torch.Generator().manual_seed(5))
    positions = torch.arange(t, dtype=torch.int64) + 9
    with torch.no_grad():
        want = hf(input_ids=ids[None], position_ids=positions[None]).logits[0]
        hidden, aux = model(ids, positions, DenseAttention())
        logits = model.compute_logits(hidden)
    assert aux is None and logits.shape == (t, SMALL["vocab_size"])
    diff = (logits - want.float()).abs().max().item()
    assert diff <= LOGITS_TOL, f"logits differ by {diff}"


def test_mtp_module_matches_transformers(tmp_path: Path) -> None:
    """One MTP module (layer L of the checkpoint) against transformers' MtpModel."""
    hf = _hf(tmp_path)
    from transformers.modeling_layers import MtpModel

    mtp_hf = MtpModel(hf, 1).eval()
    randomize_(mtp_hf.layers, seed=7)
    # write the module under DeepSeek's names: model.layers.{L}.*
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(tmp_path / "model.safetensors"))
    base = f"model.layers.{SMALL['num_hidden_layers']}."
    for name, value in mtp_hf.layers[0].state_dict().items():
        if name.endswith("mlp.experts.gate_up_proj"):  # fused in memory, per expert on disk
            gate, up = value.chunk(2, dim=1)
            for e in range(value.shape[0]):
                tensors[f"{base}mlp.experts.{e}.gate_proj.weight"] = gate[e].clone()
                tensors[f"{base}mlp.experts.{e}.up_proj.weight"] = up[e].clone()
        elif name.endswith("mlp.experts.down_proj"):
            for e in range(value.shape[0]):
                tensors[f"{base}mlp.experts.{e}.down_proj.weight"] = value[e].clone()
        elif name.startswith("mtp_block."):
            tensors[base + name[len("mtp_block.") :]] = value.clone()
        else:
            renamed = {"post_norm.weight": "shared_head.norm.weight"}.get(name, name)
            tensors[base + renamed] = value.clone()
    tensors[base + "shared_head.head.weight"] = hf.lm_head.weight.detach().clone()
    tensors[base + "embed_tokens.weight"] = hf.model.embed_tokens.weight.detach().clone()
    save_file(tensors, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})

    target, geometry, cfg = _load(tmp_path)
    mla, moe = mla_dims(cfg), moe_dims(cfg)
    assert {n.split(".")[2] for n in target.extra_tensors} == {str(SMALL["num_hidden_layers"])}
    args = BuildArgs(geometry, torch.float32, torch.device("cpu"), 0, None, None)
    arch = MTPArch("deepseek", 1, mla=mla, moe=moe)
    draft = load_mtp_draft(open_index(tmp_path), arch, target, args)
    assert draft.extra_tensors == ()
    t = 9
    gen = torch.Generator().manual_seed(11)
    ids = torch.randint(0, SMALL["vocab_size"], (t,), generator=gen)
    prev = torch.randn(t, SMALL["hidden_size"], generator=gen)
    positions = torch.arange(t, dtype=torch.int64) + 4  # position 0 is masked by vLLM only
    with torch.no_grad():
        emb = hf.model.embed_tokens(ids[None])
        cos_sin = hf.model.rotary_emb(emb, positions[None])
        want_h = mtp_hf.layers[0](emb, prev[None], cos_sin, None, positions[None], None)[0]
        want = hf.lm_head(want_h)
        logit_h, recycled = draft(DraftStep(ids, positions, prev, DenseAttention()))
        logits = draft.compute_logits(logit_h)
    assert (logits - want).abs().max().item() <= LOGITS_TOL
    assert (recycled - want_h).abs().max().item() <= LOGITS_TOL
