"""What each decoder layer holds, from config.json alone: its token mixer and its MLP.

Hybrid and MoE models spell their layer plan in many ways; every spelling the public configs
use resolves here to one list per layer, with the key it came from:

- mixers: `layer_types` (Qwen3-Next, Gemma-3, gpt-oss), `layers_block_type`,
  `hybrid_override_pattern` (Nemotron-H: M mamba, * attention, - MLP, E MoE),
  `attn_layer_indices` (Bamba), `attn_layer_period`/`attn_layer_offset` (Jamba),
  `full_attention_interval` (Qwen3-Next, Qwen3.5), `sliding_window_pattern` (Gemma-3),
  `use_sliding_window` + `max_window_layers` (Qwen2), a bare `sliding_window` (Mistral);
- MLPs: `n_routed_experts` / `num_experts` / `num_local_experts`, with dense layers from
  `first_k_dense_replace` + `moe_layer_freq` (DeepSeek, GLM), `decoder_sparse_step` +
  `mlp_only_layers` (Qwen-MoE), `interleave_moe_layer_step` / `moe_layers` (Llama-4),
  `expert_layer_period`/`expert_layer_offset` (Jamba), E in a Nemotron-H pattern.

Only attention layers (full or sliding) hold KV; linear-attention and Mamba layers hold a
fixed-size state per request.
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.errors import BadInput
from eaglegraph.pair.config import Config

FULL = "full_attention"
SLIDING = "sliding_attention"
LINEAR = "linear_attention"
MAMBA = "mamba"
NONE = "none"  # a Nemotron-H layer that is only an MLP

ATTENTION_KINDS = (FULL, SLIDING)
STATE_KINDS = (LINEAR, MAMBA)

_MIXER_SPELLINGS = {
    "full_attention": FULL,
    "attention": FULL,
    "global": FULL,
    "hybrid": FULL,
    "sliding_attention": SLIDING,
    "sliding_window": SLIDING,
    "sliding": SLIDING,
    "local": SLIDING,
    "chunked_attention": SLIDING,
    "linear_attention": LINEAR,
    "mamba": MAMBA,
    "mamba2": MAMBA,
    "conv": MAMBA,
}
_PATTERN_MIXERS = {"M": MAMBA, "*": FULL, "-": NONE, "E": NONE}

DENSE = "dense"
MOE = "moe"


def text_config(cfg: Config) -> Config:
    """The language model's config: `text_config` of a multimodal wrapper, else the config."""
    if cfg.has("hidden_size"):
        return cfg
    return cfg.sub("text_config") or cfg


@dataclass(frozen=True)
class LayerPlan:
    mixers: list[str]
    mixers_source: str
    mlps: list[str]  # DENSE, MOE or NONE per layer
    mlps_source: str
    sliding_window: int | None

    def count(self, kind: str) -> int:
        return self.mixers.count(kind)


def _pattern(src: Config, layers: int) -> str | None:
    pattern = src.raw("hybrid_override_pattern")
    if pattern is None:
        return None
    if not isinstance(pattern, str) or set(pattern) - set(_PATTERN_MIXERS):
        raise BadInput(f"{src.source}: 'hybrid_override_pattern' must be a string of M * - E")
    if len(pattern) != layers:
        raise BadInput(
            f"{src.source}: 'hybrid_override_pattern' has {len(pattern)} layers, "
            f"num_hidden_layers says {layers}"
        )
    return pattern


def _from_list(src: Config, key: str, layers: int) -> list[str] | None:
    names = src.raw(key)
    if names is None:
        return None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise BadInput(f"{src.source}: '{key}' must be a list of strings")
    if len(names) < layers:
        raise BadInput(f"{src.source}: '{key}' lists {len(names)} layers, expected {layers}")
    # a kind not listed here is taken as attention: it may hold KV, and KV is what runs out
    return [_MIXER_SPELLINGS.get(n.lower(), FULL) for n in names[:layers]]


def _mixers(src: Config, layers: int) -> tuple[list[str], str]:
    for key in ("layer_types", "layers_block_type"):
        listed = _from_list(src, key, layers)
        if listed is not None:
            return listed, key
    pattern = _pattern(src, layers)
    if pattern is not None:
        return [_PATTERN_MIXERS[c] for c in pattern], "hybrid_override_pattern"
    indices = src.int_list("attn_layer_indices")
    if indices is not None:
        return [FULL if i in indices else MAMBA for i in range(layers)], "attn_layer_indices"
    if src.has("attn_layer_period"):
        period = src.int("attn_layer_period", minimum=1)
        offset = src.int("attn_layer_offset", default=0)
        mixers = [FULL if i % period == offset else MAMBA for i in range(layers)]
        return mixers, "attn_layer_period/attn_layer_offset"
    if src.has("full_attention_interval"):
        every = src.int("full_attention_interval", minimum=1)
        mixers = [FULL if (i + 1) % every == 0 else LINEAR for i in range(layers)]
        return mixers, "full_attention_interval"
    window = src.int("sliding_window", default=None, minimum=1)
    if window is not None:
        if src.has("sliding_window_pattern"):
            every = src.int("sliding_window_pattern", minimum=1)
            mixers = [FULL if (i + 1) % every == 0 else SLIDING for i in range(layers)]
            return mixers, "sliding_window_pattern"
        if src.has("use_sliding_window"):
            if not src.bool("use_sliding_window"):
                return [FULL] * layers, "use_sliding_window false"
            first = src.int("max_window_layers", default=0)
            return [SLIDING if i >= first else FULL for i in range(layers)], "max_window_layers"
        return [SLIDING] * layers, "sliding_window"
    return [FULL] * layers, "default (every layer attention)"


def expert_count(src: Config) -> tuple[int, str] | None:
    """Routed experts per MoE layer and the key that says so, or None for a dense model."""
    for key in ("n_routed_experts", "num_experts", "num_local_experts"):
        n = src.int(key, default=None, minimum=0)
        if n:
            return n, key
    return None


def _mlps(src: Config, layers: int) -> tuple[list[str], str]:
    pattern = _pattern(src, layers)
    if pattern is not None:
        return [MOE if c == "E" else DENSE if c == "-" else NONE for c in pattern], (
            "hybrid_override_pattern"
        )
    if expert_count(src) is None:
        return [DENSE] * layers, "dense (no experts)"
    explicit = src.int_list("moe_layers")
    if explicit is not None:
        return [MOE if i in explicit else DENSE for i in range(layers)], "moe_layers"
    if src.has("interleave_moe_layer_step"):
        step = src.int("interleave_moe_layer_step", minimum=1)
        mlps = [MOE if (i + 1) % step == 0 else DENSE for i in range(layers)]
        return mlps, "interleave_moe_layer_step"
    if src.has("expert_layer_period"):
        period = src.int("expert_layer_period", minimum=1)
        offset = src.int("expert_layer_offset", default=0)
        mlps = [MOE if i % period == offset else DENSE for i in range(layers)]
        return mlps, "expert_layer_period/expert_layer_offset"
    if src.has("first_k_dense_replace") or src.has("moe_layer_freq"):
        first = src.int("first_k_dense_replace", default=0) or 0
        freq = src.int("moe_layer_freq", default=1, minimum=1) or 1
        mlps = [MOE if i >= first and i % freq == 0 else DENSE for i in range(layers)]
        return mlps, "first_k_dense_replace/moe_layer_freq"
    if src.has("decoder_sparse_step") or src.has("mlp_only_layers"):
        step = src.int("decoder_sparse_step", default=1, minimum=1) or 1
        dense = set(src.int_list("mlp_only_layers") or [])
        mlps = [MOE if i not in dense and (i + 1) % step == 0 else DENSE for i in range(layers)]
        return mlps, "decoder_sparse_step/mlp_only_layers"
    return [MOE] * layers, "every layer routed"


def layer_plan(cfg: Config, layers: int) -> LayerPlan:
    """Each of the first `layers` decoder layers' mixer and MLP."""
    src = text_config(cfg)
    mixers, mixers_source = _mixers(src, layers)
    mlps, mlps_source = _mlps(src, layers)
    window = src.int("sliding_window", default=None, minimum=1) if SLIDING in mixers else None
    return LayerPlan(mixers, mixers_source, mlps, mlps_source, window)
