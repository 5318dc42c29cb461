"""Multi-head Latent Attention and MoE dimensions of DeepSeek-style configs.

MLA models carry a `head_dim` (or none) that is not the attention's: DeepSeek-V3 has no key
(hidden/heads = 56 would be wrong), transformers writes `head_dim = qk_rope_head_dim`, GLM-5
says 64 while its queries are 256 wide. The numbers that size caches and projections are the
MLA keys read here; `Geometry.head_dim` is never used for an MLA layer.
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.errors import BadInput
from eaglegraph.pair.config import Config
from eaglegraph.pair.geometry import Geometry

MLA_MODEL_TYPES = ("deepseek_v2", "deepseek_v3", "deepseek_v32", "glm_moe_dsa", "kimi_k2")


@dataclass(frozen=True)
class MLADims:
    """Latent attention widths; the KV cache row is `kv_lora_rank + qk_rope_head_dim`."""

    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim

    @property
    def cache_width(self) -> int:
        return self.kv_lora_rank + self.qk_rope_head_dim


@dataclass(frozen=True)
class MoEDims:
    """DeepSeek-V3 routing: sigmoid scores, grouped top-k with a correction bias."""

    n_routed_experts: int
    num_experts_per_tok: int
    moe_intermediate_size: int
    n_shared_experts: int
    first_k_dense_replace: int
    moe_layer_freq: int
    n_group: int
    topk_group: int
    routed_scaling_factor: float
    norm_topk_prob: bool
    scoring_func: str

    def is_moe_layer(self, index: int) -> bool:
        """vLLM/HF rule: MoE from `first_k_dense_replace` on, every `moe_layer_freq`-th."""
        return index >= self.first_k_dense_replace and index % self.moe_layer_freq == 0


def _text(cfg: Config) -> Config:
    return cfg.sub("text_config") or cfg


def mla_dims(cfg: Config) -> MLADims | None:
    """The MLA dims, or None when the config has no latent attention (`kv_lora_rank`)."""
    src = _text(cfg)
    if src.raw("kv_lora_rank") is None:
        return None
    dims = MLADims(
        q_lora_rank=src.int("q_lora_rank", default=None, minimum=1),
        kv_lora_rank=src.int("kv_lora_rank", minimum=1),
        qk_nope_head_dim=src.int("qk_nope_head_dim", minimum=0),
        qk_rope_head_dim=src.int("qk_rope_head_dim", minimum=2),
        v_head_dim=src.int("v_head_dim", minimum=1),
    )
    if dims.qk_rope_head_dim % 2:
        raise BadInput(f"{src.source}: qk_rope_head_dim {dims.qk_rope_head_dim} must be even")
    return dims


def moe_dims(cfg: Config) -> MoEDims | None:
    """The routed-expert dims, or None for a dense model (no `n_routed_experts`)."""
    src = _text(cfg)
    experts = src.int("n_routed_experts", default=None, minimum=1)
    if experts is None:
        return None
    scoring = src.str("scoring_func", default="sigmoid")
    if scoring not in ("sigmoid", "softmax"):
        raise BadInput(f"{src.source}: unsupported scoring_func {scoring!r}")
    dims = MoEDims(
        n_routed_experts=experts,
        num_experts_per_tok=src.int("num_experts_per_tok", minimum=1),
        moe_intermediate_size=src.int("moe_intermediate_size", minimum=1),
        n_shared_experts=src.int("n_shared_experts", default=0) or 0,
        first_k_dense_replace=src.int("first_k_dense_replace", default=0) or 0,
        moe_layer_freq=src.int("moe_layer_freq", default=1, minimum=1) or 1,
        n_group=src.int("n_group", default=1, minimum=1) or 1,
        topk_group=src.int("topk_group", default=1, minimum=1) or 1,
        routed_scaling_factor=src.float("routed_scaling_factor", default=1.0),
        norm_topk_prob=bool(src.bool("norm_topk_prob", default=True)),
        scoring_func=scoring,
    )
    if experts % dims.n_group or dims.topk_group > dims.n_group:
        raise BadInput(
            f"{src.source}: {experts} experts do not split into n_group {dims.n_group} "
            f"with topk_group {dims.topk_group}"
        )
    if dims.num_experts_per_tok > experts:
        raise BadInput(f"{src.source}: num_experts_per_tok exceeds n_routed_experts")
    return dims


def mla_attention_params(hidden: int, heads: int, mla: MLADims) -> int:
    """q (low-rank or full), kv_a, kv_b, o and the two latent norms."""
    q_rows = heads * mla.qk_head_dim
    q = (
        mla.q_lora_rank * (hidden + q_rows) + mla.q_lora_rank
        if mla.q_lora_rank
        else hidden * q_rows
    )
    kv = hidden * mla.cache_width + mla.kv_lora_rank
    kv += mla.kv_lora_rank * heads * (mla.qk_nope_head_dim + mla.v_head_dim)
    return q + kv + heads * mla.v_head_dim * hidden


def moe_params(hidden: int, moe: MoEDims) -> int:
    """Router, routed experts and shared experts of one layer."""
    expert = 3 * hidden * moe.moe_intermediate_size
    router = moe.n_routed_experts * (hidden + 1)
    return router + expert * (moe.n_routed_experts + moe.n_shared_experts)


def mla_layer_params(
    hidden: int, intermediate: int, heads: int, mla: MLADims, moe: MoEDims | None, index: int
) -> int:
    """One decoder layer: MLA, the dense or routed MLP of layer `index`, two norms."""
    routed = moe is not None and moe.is_moe_layer(index)
    mlp = moe_params(hidden, moe) if routed and moe is not None else 3 * hidden * intermediate
    return mla_attention_params(hidden, heads, mla) + mlp + 2 * hidden


def mtp_module_params(hidden: int, layer: int) -> int:
    """One MTP module besides its block: enorm, hnorm, eh_proj, shared-head norm."""
    return 3 * hidden + 2 * hidden * hidden + layer


def mla_model_parameters(g: Geometry, cfg: Config) -> int | None:
    """An MLA target's own weights (embedding, its `num_hidden_layers` layers, final norm,
    head; MTP layers stored past the stack are the draft's), or None for standard attention."""
    mla = mla_dims(cfg)
    if mla is None:
        return None
    moe = moe_dims(cfg)
    h = g.hidden_size
    layers = sum(
        mla_layer_params(h, g.intermediate_size, g.num_attention_heads, mla, moe, i)
        for i in range(g.num_hidden_layers)
    )
    embed = g.vocab_size * h
    return embed + layers + h + (0 if g.tie_word_embeddings else embed)


def mla_mtp_parameters(g: Geometry, cfg: Config, modules: int) -> int | None:
    """DeepSeek-style MTP modules at layers L..L+n-1 (their blocks routed as layer L+i would
    be), without the embedding and head copies each stores (serving shares the target's)."""
    mla = mla_dims(cfg)
    if mla is None:
        return None
    moe = moe_dims(cfg)
    h, base = g.hidden_size, g.num_hidden_layers
    return sum(
        mtp_module_params(
            h, mla_layer_params(h, g.intermediate_size, g.num_attention_heads, mla, moe, base + i)
        )
        for i in range(modules)
    )


def mla_kv_bytes_per_token(cfg: Config, layers: int, nbytes: int) -> int | None:
    """Latent KV cache: one `kv_lora_rank + qk_rope_head_dim` row per layer and token (no
    separate K and V, no heads), or None for standard attention."""
    mla = mla_dims(cfg)
    return layers * mla.cache_width * nbytes if mla is not None else None
