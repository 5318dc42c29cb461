"""Model geometry from config.json: the numbers every later layer sizes buffers with.

Keys follow HF config names so JSON output reads like the config it came from. head_dim is
kept explicit-or-derived (gpt-oss and Qwen3 drafts set it to something other than
hidden/heads), and RoPE accepts all three spellings found in the wild: `rope_theta` alone,
`rope_scaling`, and transformers v5's `rope_parameters`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eaglegraph.errors import BadInput
from eaglegraph.pair.config import Config
from eaglegraph.results.inspect import GeometryFields, RopeFacts

DTYPE_ALIASES = {
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
    "float32": "float32",
    "fp32": "float32",
    "float": "float32",
    "float64": "float64",
}

DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "float64": 8}


Rope = RopeFacts  # one record: what inspect reports is what the geometry read


@dataclass(frozen=True)
class Geometry(GeometryFields):
    """One model's sizes from its config (`GeometryFields`), and the config's other keys."""

    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def q_width(self) -> int:
        return self.num_attention_heads * self.head_dim

    @property
    def kv_width(self) -> int:
        return self.num_key_value_heads * self.head_dim


def layer_params(g: Geometry, qkv_in: int, input_norm: bool) -> int:
    """One dense decoder layer's weights: every kind counts its layers with this (the kind
    modules sit below `pair.model`, so it lives with the geometry it reads)."""
    attn = qkv_in * (g.q_width + 2 * g.kv_width) + g.q_width * g.hidden_size
    if g.attention_bias:
        attn += g.q_width + 2 * g.kv_width
    if g.model_type == "qwen3":
        attn += 2 * g.head_dim
    mlp = 3 * g.hidden_size * g.intermediate_size
    norms = g.hidden_size * (2 if input_norm else 1)
    return attn + mlp + norms


def normalize_dtype(value: str | None, source: str) -> str | None:
    if value is None:
        return None
    name = value.removeprefix("torch.").lower()
    if name not in DTYPE_ALIASES:
        raise BadInput(f"{source}: unsupported dtype {value!r}")
    return DTYPE_ALIASES[name]


def _rope(cfg: Config) -> Rope:
    params = cfg.dict("rope_parameters")
    source = "rope_theta"
    spec: Config | None
    if params is not None:
        # transformers v5 may nest per attention type; full attention is what EAGLE uses.
        if params and all(isinstance(v, dict) for v in params.values()):
            params = params.get("full_attention") or next(iter(params.values()))
        spec = Config(params, f"{cfg.source}:rope_parameters")
        source = "rope_parameters"
    else:
        scaling = cfg.dict("rope_scaling")
        spec = Config(scaling, f"{cfg.source}:rope_scaling") if scaling is not None else None
        if spec is not None:
            source = "rope_scaling"
    theta = cfg.float("rope_theta", default=None)
    if spec is not None and spec.has("rope_theta"):
        theta = spec.float("rope_theta")
    if theta is None:
        theta = 10000.0
        if spec is None:
            source = "default"
    if theta <= 0:
        raise BadInput(f"{cfg.source}: rope_theta must be positive, found {theta}")
    if spec is None:
        return Rope(rope_theta=theta, source=source)
    rope_type = spec.str("rope_type", default=None) or spec.str("type", default="default")
    factor = spec.float("factor", default=None)
    if rope_type in ("llama3", "linear", "dynamic", "yarn") and factor is None:
        raise BadInput(f"{spec.source}: rope type {rope_type!r} needs 'factor'")
    if factor is not None and factor <= 0:
        raise BadInput(f"{spec.source}: rope 'factor' must be positive, found {factor}")
    low = spec.float("low_freq_factor", default=None)
    high = spec.float("high_freq_factor", default=None)
    original = spec.int("original_max_position_embeddings", default=None, minimum=1)
    if rope_type == "llama3":
        if low is None or high is None or original is None:
            raise BadInput(
                f"{spec.source}: llama3 rope needs low_freq_factor, high_freq_factor and "
                "original_max_position_embeddings"
            )
        if high < low:  # equal is legal (Llama-4: 1.0 and 1.0, no smoothed band)
            raise BadInput(f"{spec.source}: high_freq_factor must not be below low_freq_factor")
    return Rope(
        rope_theta=theta,
        rope_type=rope_type,
        factor=factor,
        low_freq_factor=low,
        high_freq_factor=high,
        original_max_position_embeddings=original,
        source=source,
    )


def geometry_from_config(cfg: Config) -> Geometry:
    """Read the geometry; speculators configs keep theirs in `transformer_layer_config`,
    multimodal wrappers in `text_config`."""
    layer_cfg = cfg.sub("transformer_layer_config") if cfg.has("speculators_model_type") else None
    if layer_cfg is None and not cfg.has("hidden_size"):
        # multimodal wrappers (Qwen3.5/3.6 `...ForConditionalGeneration`): the language model's
        layer_cfg = cfg.sub("text_config")
    src = layer_cfg or cfg
    architectures = cfg.str_list("architectures")
    hidden = src.int("hidden_size", minimum=1)
    heads = src.int("num_attention_heads", minimum=1)
    kv_heads = src.int("num_key_value_heads", default=heads, minimum=1)
    if heads % kv_heads:
        raise BadInput(
            f"{src.source}: num_attention_heads ({heads}) is not a multiple of "
            f"num_key_value_heads ({kv_heads})"
        )
    explicit = src.int("head_dim", default=None, minimum=1)
    if explicit is None and hidden % heads:
        raise BadInput(
            f"{src.source}: hidden_size {hidden} is not divisible by num_attention_heads "
            f"{heads} and no head_dim is given"
        )
    dtype_raw = cfg.str("torch_dtype", default=None) or cfg.str("dtype", default=None)
    if dtype_raw is None and layer_cfg is not None:
        dtype_raw = layer_cfg.str("torch_dtype", default=None) or layer_cfg.str(
            "dtype", default=None
        )
    return Geometry(
        architecture=architectures[0] if architectures else "",
        model_type=src.str("model_type", default=""),
        hidden_size=hidden,
        intermediate_size=src.int("intermediate_size", minimum=1),
        num_hidden_layers=src.int("num_hidden_layers", minimum=1),
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=explicit if explicit is not None else hidden // heads,
        head_dim_explicit=explicit is not None,
        vocab_size=src.int("vocab_size", minimum=1),
        max_position_embeddings=src.int("max_position_embeddings", default=2048, minimum=1),
        tie_word_embeddings=src.bool("tie_word_embeddings", default=False),
        dtype=normalize_dtype(dtype_raw, cfg.source),
        rope=_rope(src),
        rms_norm_eps=src.float("rms_norm_eps", default=1e-6),
        # Qwen2 always carries q/k/v biases and has no flag for them.
        attention_bias=src.bool(
            "attention_bias", default=src.str("model_type", default="") == "qwen2"
        ),
    )
