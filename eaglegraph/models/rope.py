"""cos/sin caches for every RoPE type the supported families use, built as vLLM builds them.

vLLM precomputes one `[max_len, rotary_dim]` table (cos in the first half, sin in the second)
and gathers rows by position; the kernel in `eaglegraph.kernels.rope` reads exactly that
layout. Frequencies follow HF's `modeling_rope_utils` (so parity tests against transformers
hold), and table lengths and the static dynamic-NTK base follow vLLM (so the positions that
are valid, and hence what the probe calls out of range, match the serving engine).

YaRN needs parameters `Rope` does not carry (beta_fast, beta_slow, attention_factor, mscale,
mscale_all_dim, truncate); `rope_extras_from_config` reads them from the config so the loaders can pass
them along. Without them the HF/vLLM defaults apply.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

from eaglegraph.errors import BadInput
from eaglegraph.pair.config import Config
from eaglegraph.pair.geometry import Rope

SUPPORTED_ROPE_TYPES = ("default", "llama3", "linear", "dynamic", "yarn")
YARN_KEYS = (
    "beta_fast",
    "beta_slow",
    "attention_factor",
    "attn_factor",
    "mscale",
    "mscale_all_dim",
    "truncate",
    "extrapolation_factor",
)


def rope_extras_from_config(cfg: Config) -> dict[str, Any]:
    """The YaRN keys of a config, wherever it keeps its RoPE spec (all three spellings)."""
    src = cfg.sub("transformer_layer_config") if cfg.has("speculators_model_type") else None
    src = src or cfg
    spec = src.raw("rope_parameters")
    if isinstance(spec, dict) and spec and all(isinstance(v, dict) for v in spec.values()):
        spec = spec.get("full_attention") or next(iter(spec.values()))
    if not isinstance(spec, dict):
        spec = src.raw("rope_scaling")
    if not isinstance(spec, dict):
        return {}
    extras: dict[str, Any] = {}
    for key in YARN_KEYS:
        value = spec.get(key)
        if value is None:
            continue
        if key == "truncate":
            if not isinstance(value, bool):
                raise BadInput(f"{src.source}: rope 'truncate' must be true or false")
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            raise BadInput(f"{src.source}: rope '{key}' must be a number, found {value!r:.40}")
        extras[key] = value
    return extras


def cache_length(rope: Rope, max_position_embeddings: int) -> int:
    """Rows vLLM's table has: scaled for linear/dynamic/yarn, the config value otherwise."""
    check_rope_type(rope)
    if rope.rope_type in ("linear", "dynamic"):
        return int(max_position_embeddings * _factor(rope))
    if rope.rope_type == "yarn":
        original = rope.original_max_position_embeddings or max_position_embeddings
        return int(original * _factor(rope))
    return max_position_embeddings


def check_rope_type(rope: Rope) -> None:
    if rope.rope_type not in SUPPORTED_ROPE_TYPES:
        raise BadInput(
            f"unsupported rope type {rope.rope_type!r} "
            f"(supported: {', '.join(SUPPORTED_ROPE_TYPES)})"
        )


def _factor(rope: Rope) -> float:
    if rope.factor is None:
        raise BadInput(f"rope type {rope.rope_type!r} needs 'factor'")
    return rope.factor


def _base_inv_freq(base: float, dim: int, device: torch.device) -> torch.Tensor:
    exponents = torch.arange(0, dim, 2, dtype=torch.int64, device=device).float() / dim
    return 1.0 / (base**exponents)


def _llama3_inv_freq(rope: Rope, dim: int, device: torch.device) -> torch.Tensor:
    inv_freq = _base_inv_freq(rope.rope_theta, dim, device)
    factor = _factor(rope)
    low, high = rope.low_freq_factor, rope.high_freq_factor
    original = rope.original_max_position_embeddings
    if low is None or high is None or original is None:
        raise BadInput(
            "llama3 rope needs low_freq_factor, high_freq_factor and "
            "original_max_position_embeddings"
        )
    wavelen = 2 * math.pi / inv_freq
    low_wavelen = original / low
    high_wavelen = original / high
    scaled = torch.where(wavelen > low_wavelen, inv_freq / factor, inv_freq)
    smooth = (original / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
    return torch.where(medium, smoothed, scaled)


def _mscale(scale: float, mscale: float = 1.0) -> float:
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def _yarn(
    rope: Rope,
    dim: int,
    max_position_embeddings: int,
    extras: Mapping[str, Any],
    device: torch.device,
) -> tuple[torch.Tensor, float]:
    base = rope.rope_theta
    factor = _factor(rope)
    original = rope.original_max_position_embeddings or max_position_embeddings
    beta_fast = float(extras.get("beta_fast") or 32)
    beta_slow = float(extras.get("beta_slow") or 1)
    truncate = bool(extras.get("truncate", True))

    def correction_dim(rotations: float) -> float:
        return (dim * math.log(original / (rotations * 2 * math.pi))) / (2 * math.log(base))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    ramp = (
        (torch.arange(dim // 2, dtype=torch.float32, device=device) - low) / (high - low)
    ).clamp(0, 1)
    extrapolation = (1 - ramp) * float(extras.get("extrapolation_factor", 1.0))
    pos_freqs = base ** (torch.arange(0, dim, 2, dtype=torch.int64, device=device).float() / dim)
    inv_freq = (1.0 / (factor * pos_freqs)) * (1 - extrapolation) + (
        1.0 / pos_freqs
    ) * extrapolation

    attention = extras.get("attention_factor")
    if attention is None:
        mscale, mscale_all_dim = extras.get("mscale"), extras.get("mscale_all_dim")
        if mscale and mscale_all_dim:
            attention = _mscale(factor, mscale) / _mscale(factor, mscale_all_dim)
        else:
            attention = _mscale(factor)
    return inv_freq, float(attention) * float(extras.get("attn_factor", 1.0))


def inverse_frequencies(
    rope: Rope,
    head_dim: int,
    max_position_embeddings: int,
    device: torch.device | str = "cpu",
    extras: Mapping[str, Any] | None = None,
) -> tuple[torch.Tensor, float, float]:
    """(inv_freq [hd/2] fp32, position divisor, cos/sin scale) for one RoPE spec."""
    check_rope_type(rope)
    dev = torch.device(device)
    kind = rope.rope_type
    if kind == "default":
        return _base_inv_freq(rope.rope_theta, head_dim, dev), 1.0, 1.0
    if kind == "linear":
        return _base_inv_freq(rope.rope_theta, head_dim, dev), _factor(rope), 1.0
    if kind == "llama3":
        return _llama3_inv_freq(rope, head_dim, dev), 1.0, 1.0
    if kind == "dynamic":
        # vLLM fixes the NTK base at the longest supported length instead of growing it with
        # the sequence; HF's dynamic base at that length is the same value.
        factor = _factor(rope)
        max_len = max_position_embeddings * factor
        ratio = factor * max_len / max_position_embeddings - (factor - 1)
        base = rope.rope_theta * ratio ** (head_dim / (head_dim - 2))
        return _base_inv_freq(base, head_dim, dev), 1.0, 1.0
    inv_freq, scale = _yarn(rope, head_dim, max_position_embeddings, extras or {}, dev)
    return inv_freq, 1.0, scale


def build_cos_sin_cache(
    rope: Rope,
    head_dim: int,
    max_position_embeddings: int,
    max_positions: int | None = None,
    device: torch.device | str = "cpu",
    extras: Mapping[str, Any] | None = None,
) -> torch.Tensor:
    """`[max_positions, head_dim]` fp32: cos of each frequency, then sin (times YaRN's mscale).

    `max_positions` defaults to vLLM's table length for this rope type; positions at or past
    it are out of range for the kernel (NaN), as they would be out of bounds in vLLM.
    """
    if head_dim % 2:
        raise BadInput(f"rotary head_dim must be even, found {head_dim}")
    rows = max_positions or cache_length(rope, max_position_embeddings)
    inv_freq, divisor, scale = inverse_frequencies(
        rope, head_dim, max_position_embeddings, device, extras
    )
    t = torch.arange(rows, dtype=torch.float32, device=inv_freq.device)
    if divisor != 1.0:
        t = t / divisor
    freqs = torch.outer(t, inv_freq)
    return torch.cat((freqs.cos() * scale, freqs.sin() * scale), dim=-1).contiguous()
