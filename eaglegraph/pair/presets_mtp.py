"""Built-in MTP and DFlash pairs: tiny seeded ones for CPU, real-geometry config-only ones.

Tiny weights follow the scheme of `presets.py`: the target continues token t with a fixed
permutation π(t) (its residual stream stays close to the token embedding and its head is
embed[π⁻¹]); an MTP module sees the next token's embedding through `eh_proj ≈ [I | 0]` and
the shared head, so it guesses π of the token it is given, which is the target's next token
as often as the noise allows. Acceptance is then neither 0 nor 1.

Real DeepSeek-V3 does not fit one GPU (671B). `deepseek-v3-mtp-4l` keeps every width (hidden
7168, 128 heads, MLA ranks 1536/512/64, expert width 2048, vocab 129280) and cuts depth to 4
target layers (3 dense + 1 routed) and the routed experts from 256 to 16 (8 groups of 2, top-8
from 4 groups, as the real router): per-token work and every activation, KV-cache row and
graph buffer keeps its real size; total weights drop to ~11 GB; routing is 16-way.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

# numpy is imported where weights are built: triage reads presets' configs only, and the
# import cost each triage 0.1 s (issue 29).
if TYPE_CHECKING:
    import numpy as np


# Real DeepSeek-V3/R1 geometry (tests/fixtures/configs/mtp/deepseek-r1-target.json) without
# its fp8 quantization_config: eaglegraph builds bf16 weights.
DEEPSEEK_V3: dict[str, Any] = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "deepseek_v3",
    "attention_bias": False,
    "bos_token_id": 0,
    "eos_token_id": 1,
    "first_k_dense_replace": 3,
    "hidden_act": "silu",
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "kv_lora_rank": 512,
    "max_position_embeddings": 163840,
    "moe_intermediate_size": 2048,
    "moe_layer_freq": 1,
    "n_group": 8,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "norm_topk_prob": True,
    "num_attention_heads": 128,
    "num_experts_per_tok": 8,
    "num_hidden_layers": 61,
    "num_key_value_heads": 128,
    "num_nextn_predict_layers": 1,
    "q_lora_rank": 1536,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "rms_norm_eps": 1e-06,
    "rope_scaling": {
        "beta_fast": 32,
        "beta_slow": 1,
        "factor": 40,
        "mscale": 1.0,
        "mscale_all_dim": 1.0,
        "original_max_position_embeddings": 4096,
        "type": "yarn",
    },
    "rope_theta": 10000,
    "routed_scaling_factor": 2.5,
    "scoring_func": "sigmoid",
    "tie_word_embeddings": False,
    "topk_group": 4,
    "topk_method": "noaux_tc",
    "torch_dtype": "bfloat16",
    "v_head_dim": 128,
    "vocab_size": 129280,
}

# real widths, 4 of 61 layers and 16 of 256 routed experts (`pair.reduced` says what changes)
DEEPSEEK_V3_4L = dict(
    DEEPSEEK_V3,
    num_hidden_layers=4,
    n_routed_experts=16,
    eaglegraph_reduced_from={"num_hidden_layers": 61, "n_routed_experts": 256},
)

TINY_DEEPSEEK: dict[str, Any] = dict(
    DEEPSEEK_V3,
    hidden_size=64,
    intermediate_size=128,
    moe_intermediate_size=32,
    num_hidden_layers=4,
    first_k_dense_replace=2,
    n_routed_experts=8,
    n_group=4,
    topk_group=2,
    num_experts_per_tok=2,
    num_attention_heads=4,
    num_key_value_heads=4,
    q_lora_rank=48,
    kv_lora_rank=32,
    qk_nope_head_dim=16,
    qk_rope_head_dim=16,
    v_head_dim=16,
    vocab_size=256,
    max_position_embeddings=2048,
    rope_scaling={
        "beta_fast": 32,
        "beta_slow": 1,
        "factor": 4,
        "mscale": 1.0,
        "mscale_all_dim": 1.0,
        "original_max_position_embeddings": 512,
        "type": "yarn",
    },
)


# the target keys a tiny draft config repeats, in the order the drafts write them
_INHERITED = (
    "hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads",
    "head_dim", "vocab_size", "max_position_embeddings", "rms_norm_eps", "rope_theta",
    "rope_scaling", "torch_dtype", "dtype", "hidden_act", "bos_token_id", "eos_token_id",
)  # fmt: skip


def inherited(target: dict[str, Any], without: tuple[str, ...] = ()) -> dict[str, Any]:
    """Deep copies of the `_INHERITED` keys the target has, less `without`."""
    return {k: copy.deepcopy(target[k]) for k in _INHERITED if k in target and k not in without}


def qwen_mtp_draft(target: dict[str, Any], **over: Any) -> dict[str, Any]:
    """A SpecForge `Qwen3_5MTPDraftModel` config for a Qwen3 target (one layer, shared head)."""
    cfg = inherited(target)
    cfg.update(
        architectures=["Qwen3_5MTPDraftModel"],
        model_type="qwen3",
        num_hidden_layers=1,
        mtp_config={"share_lm_head": True},
        tie_word_embeddings=False,
        attention_bias=False,
    )
    cfg.update(over)
    return cfg


def _normal(rng: np.random.Generator, *shape: int, std: float) -> np.ndarray:
    import numpy as np

    return (rng.standard_normal(shape) * std).astype(np.float32)


def _mla_layer(
    rng: np.random.Generator, cfg: dict[str, Any], prefix: str, moe: bool, std: float
) -> dict[str, np.ndarray]:
    import numpy as np

    h, nh = cfg["hidden_size"], cfg["num_attention_heads"]
    q_lora, kv_lora = cfg["q_lora_rank"], cfg["kv_lora_rank"]
    nope, rope, v = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    a = f"{prefix}self_attn."
    out = {
        f"{a}q_a_proj.weight": _normal(rng, q_lora, h, std=std),
        f"{a}q_a_layernorm.weight": np.ones(q_lora, np.float32),
        f"{a}q_b_proj.weight": _normal(rng, nh * (nope + rope), q_lora, std=std),
        f"{a}kv_a_proj_with_mqa.weight": _normal(rng, kv_lora + rope, h, std=std),
        f"{a}kv_a_layernorm.weight": np.ones(kv_lora, np.float32),
        f"{a}kv_b_proj.weight": _normal(rng, nh * (nope + v), kv_lora, std=std),
        f"{a}o_proj.weight": _normal(rng, h, nh * v, std=std),
        f"{prefix}input_layernorm.weight": np.ones(h, np.float32),
        f"{prefix}post_attention_layernorm.weight": np.ones(h, np.float32),
    }
    if not moe:
        i_ = cfg["intermediate_size"]
        out[f"{prefix}mlp.gate_proj.weight"] = _normal(rng, i_, h, std=std)
        out[f"{prefix}mlp.up_proj.weight"] = _normal(rng, i_, h, std=std)
        out[f"{prefix}mlp.down_proj.weight"] = _normal(rng, h, i_, std=std)
        return out
    e, i_ = cfg["n_routed_experts"], cfg["moe_intermediate_size"]
    out[f"{prefix}mlp.gate.weight"] = _normal(rng, e, h, std=0.5)
    out[f"{prefix}mlp.gate.e_score_correction_bias"] = _normal(rng, e, std=0.05)
    for j in range(e):
        p = f"{prefix}mlp.experts.{j}."
        out[p + "gate_proj.weight"] = _normal(rng, i_, h, std=std)
        out[p + "up_proj.weight"] = _normal(rng, i_, h, std=std)
        out[p + "down_proj.weight"] = _normal(rng, h, i_, std=std)
    shared = i_ * cfg["n_shared_experts"]
    p = f"{prefix}mlp.shared_experts."
    out[p + "gate_proj.weight"] = _normal(rng, shared, h, std=std)
    out[p + "up_proj.weight"] = _normal(rng, shared, h, std=std)
    out[p + "down_proj.weight"] = _normal(rng, h, shared, std=std)
    return out


def _is_moe(cfg: dict[str, Any], index: int) -> bool:
    return index >= cfg["first_k_dense_replace"] and index % cfg.get("moe_layer_freq", 1) == 0


def _fusion(rng: np.random.Generator, h: int, std: float) -> np.ndarray:
    """`[I | 0] + noise`: the module mostly forwards the (normed) next-token embedding."""
    import numpy as np

    eye = np.concatenate([np.eye(h, dtype=np.float32), np.zeros((h, h), np.float32)], 1)
    return eye + _normal(rng, h, 2 * h, std=std)


def deepseek_mtp_weights(cfg: dict[str, Any], seed: int) -> dict[str, np.ndarray]:
    """One checkpoint: the MLA target and its `num_nextn_predict_layers` MTP modules."""
    import numpy as np

    rng = np.random.default_rng(seed)
    h, v, layers = cfg["hidden_size"], cfg["vocab_size"], cfg["num_hidden_layers"]
    embed = _normal(rng, v, h, std=1.0)
    perm = rng.permutation(v)
    inv = np.argsort(perm)
    out = {"model.embed_tokens.weight": embed, "model.norm.weight": np.ones(h, np.float32)}
    for i in range(layers):
        out.update(_mla_layer(rng, cfg, f"model.layers.{i}.", _is_moe(cfg, i), std=0.03))
    head = embed[inv] * 0.5 + _normal(rng, v, h, std=0.05)
    out["lm_head.weight"] = head
    for j in range(cfg["num_nextn_predict_layers"]):
        index = layers + j
        p = f"model.layers.{index}."
        out.update(_mla_layer(rng, cfg, p, _is_moe(cfg, index), std=0.03))
        out[p + "enorm.weight"] = np.ones(h, np.float32)
        out[p + "hnorm.weight"] = np.ones(h, np.float32)
        out[p + "eh_proj.weight"] = _fusion(rng, h, std=0.2 + 0.04 * j)
        out[p + "shared_head.norm.weight"] = np.ones(h, np.float32)
        out[p + "shared_head.head.weight"] = head.copy()
        out[p + "embed_tokens.weight"] = embed.copy()
    return out


def qwen_mtp_draft_weights(
    draft: dict[str, Any], target_head: np.ndarray, seed: int
) -> dict[str, np.ndarray]:
    """A SpecForge Qwen3.5-style MTP draft: Gemma-style norms (0 = identity), shared head."""
    import numpy as np

    rng = np.random.default_rng(seed)
    h, i_ = draft["hidden_size"], draft["intermediate_size"]
    nh, nkv = draft["num_attention_heads"], draft["num_key_value_heads"]
    hd = draft.get("head_dim", h // nh)
    gate = 2 if draft.get("attn_output_gate") else 1
    zeros = np.zeros(h, np.float32)
    out = {
        "mtp.pre_fc_norm_embedding.weight": zeros.copy(),
        "mtp.pre_fc_norm_hidden.weight": zeros.copy(),
        "mtp.fc.weight": _fusion(rng, h, std=0.2),
        "mtp.norm.weight": zeros.copy(),
    }
    for j in range(draft["num_hidden_layers"]):
        p = f"mtp.layers.{j}."
        out.update({
            f"{p}self_attn.q_proj.weight": _normal(rng, gate * nh * hd, h, std=0.03),
            f"{p}self_attn.k_proj.weight": _normal(rng, nkv * hd, h, std=0.03),
            f"{p}self_attn.v_proj.weight": _normal(rng, nkv * hd, h, std=0.03),
            f"{p}self_attn.o_proj.weight": _normal(rng, h, nh * hd, std=0.03),
            f"{p}self_attn.q_norm.weight": np.zeros(hd, np.float32),
            f"{p}self_attn.k_norm.weight": np.zeros(hd, np.float32),
            f"{p}mlp.gate_proj.weight": _normal(rng, i_, h, std=0.03),
            f"{p}mlp.up_proj.weight": _normal(rng, i_, h, std=0.03),
            f"{p}mlp.down_proj.weight": _normal(rng, h, i_, std=0.03),
            f"{p}input_layernorm.weight": zeros.copy(),
            f"{p}post_attention_layernorm.weight": zeros.copy(),
        })  # fmt: skip
    if not draft.get("mtp_config", {}).get("share_lm_head", True):
        out["mtp.lm_head.weight"] = target_head.copy()
    return out


def dflash_draft(target: dict[str, Any], **over: Any) -> dict[str, Any]:
    """A SpecForge `DFlashDraftModel` config (two Qwen3 layers, three target taps)."""
    # its own eps (below), set where the config writes it
    cfg = inherited(target, without=("rms_norm_eps",))
    layers = target["num_hidden_layers"]
    cfg.update(
        architectures=["DFlashDraftModel"],
        model_type="qwen3",
        num_hidden_layers=2,
        num_target_layers=layers,
        block_size=4,
        # a large eps keeps the (near-zero) mask embedding near zero after every norm
        rms_norm_eps=1.0,
        dflash_config={"mask_token_id": target["vocab_size"] - 1,
                       "target_layer_ids": [1, layers // 2, layers - 2]},
        tie_word_embeddings=False,
        attention_bias=False,
    )  # fmt: skip
    cfg.update(over)
    return cfg


def dflash_draft_weights(draft: dict[str, Any], seed: int) -> dict[str, np.ndarray]:
    """Near-uniform attention whose values carry the normed inputs: the block's rows see an
    average of the context tokens and (weighted up) the next token, so row 1 guesses the
    next token's successor part of the time; the mask token itself carries ~nothing."""
    import numpy as np

    rng = np.random.default_rng(seed)
    h, i_ = draft["hidden_size"], draft["intermediate_size"]
    nh, nkv = draft["num_attention_heads"], draft["num_key_value_heads"]
    hd = draft.get("head_dim", h // nh)
    group = nh // nkv
    n_taps = len(draft["dflash_config"]["target_layer_ids"])
    fc = np.concatenate([np.eye(h, dtype=np.float32) * 0.3]
                        + [np.zeros((h, h), np.float32)] * (n_taps - 1), 1)  # fmt: skip
    out = {
        "fc.weight": fc + _normal(rng, h, n_taps * h, std=0.01),
        "hidden_norm.weight": np.ones(h, np.float32),
        "norm.weight": np.ones(h, np.float32),
    }
    v = np.zeros((nkv * hd, h), np.float32)
    v[: min(nkv * hd, h), : min(nkv * hd, h)] = np.eye(min(nkv * hd, h), dtype=np.float32)
    o = np.zeros((h, nh * hd), np.float32)
    for head in range(0, nh, group):  # the first head of each group writes its kv slice back
        kv = head // group
        o[kv * hd : (kv + 1) * hd, head * hd : (head + 1) * hd] = 8.0 * np.eye(hd, dtype=np.float32)
    for j in range(draft["num_hidden_layers"]):
        p = f"layers.{j}."
        out.update({
            f"{p}self_attn.q_proj.weight": _normal(rng, nh * hd, h, std=0.001),
            f"{p}self_attn.k_proj.weight": _normal(rng, nkv * hd, h, std=0.001),
            f"{p}self_attn.v_proj.weight": v + _normal(rng, nkv * hd, h, std=0.01),
            f"{p}self_attn.o_proj.weight": o + _normal(rng, h, nh * hd, std=0.01),
            f"{p}self_attn.q_norm.weight": np.ones(hd, np.float32),
            f"{p}self_attn.k_norm.weight": np.ones(hd, np.float32),
            f"{p}mlp.gate_proj.weight": _normal(rng, i_, h, std=0.01),
            f"{p}mlp.up_proj.weight": _normal(rng, i_, h, std=0.01),
            f"{p}mlp.down_proj.weight": _normal(rng, h, i_, std=0.01),
            f"{p}input_layernorm.weight": np.ones(h, np.float32),
            f"{p}post_attention_layernorm.weight": np.ones(h, np.float32),
        })  # fmt: skip
    return out
