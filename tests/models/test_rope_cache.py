"""cos/sin caches against transformers' own RoPE init functions, for every supported type."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from eaglegraph.errors import BadInput
from eaglegraph.models.rope import (
    build_cos_sin_cache,
    cache_length,
    inverse_frequencies,
    rope_extras_from_config,
)
from eaglegraph.pair.config import Config
from eaglegraph.pair.geometry import Rope
from tests.models.cpu_only import cpu_only
from tests.models.models_support import geometry_of

pytestmark = cpu_only

transformers = pytest.importorskip("transformers")

HEAD_DIM = 32
MAX_POS = 256

CASES = {
    "default": {"rope_type": "default", "rope_theta": 10000.0},
    "llama3": {
        "rope_type": "llama3",
        "rope_theta": 500000.0,
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 64,
    },
    "linear": {"rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0},
    "yarn": {
        "rope_type": "yarn",
        "rope_theta": 1000000.0,
        "factor": 4.0,
        "original_max_position_embeddings": 64,
        "beta_fast": 16.0,
    },
    "yarn-mscale": {
        "rope_type": "yarn",
        "rope_theta": 10000.0,
        "factor": 8.0,
        "original_max_position_embeddings": 32,
        "mscale": 0.707,
        "mscale_all_dim": 1.0,
    },
}


def _hf_config(params: dict[str, object]) -> Any:
    return transformers.LlamaConfig(
        hidden_size=128,
        num_attention_heads=4,
        head_dim=HEAD_DIM,
        max_position_embeddings=MAX_POS,
        rope_parameters=dict(params),
    )


def _hf_default(config: Any, device: str) -> tuple[torch.Tensor, float]:
    """transformers v5 keeps the default frequencies inside the rotary module."""
    theta = config.rope_parameters["rope_theta"]
    return 1.0 / (
        theta ** (torch.arange(0, HEAD_DIM, 2, dtype=torch.int64).float() / HEAD_DIM)
    ), 1.0


@pytest.mark.parametrize("case", sorted(CASES))
def test_cache_matches_transformers(case: str) -> None:
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    hf = _hf_config(CASES[case])
    kind = CASES[case]["rope_type"]
    init = _hf_default if kind == "default" else ROPE_INIT_FUNCTIONS[kind]
    inv_freq, scale = init(hf, "cpu")
    config = hf.to_dict()
    geometry = geometry_of(config)
    cache = build_cos_sin_cache(
        geometry.rope,
        HEAD_DIM,
        MAX_POS,
        device="cpu",
        extras=rope_extras_from_config(Config(config, "t")),
    )
    assert cache.shape == (cache_length(geometry.rope, MAX_POS), HEAD_DIM)
    pos = torch.arange(cache.shape[0], dtype=torch.float32)
    freqs = torch.outer(pos, inv_freq.float())
    want = torch.cat([freqs.cos() * scale, freqs.sin() * scale], dim=-1)
    torch.testing.assert_close(cache, want, atol=2e-5, rtol=1e-5)


def test_dynamic_is_static_at_the_longest_length_as_vllm() -> None:
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    params = {"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0}
    hf = _hf_config(params)
    rows = cache_length(geometry_of(hf.to_dict()).rope, MAX_POS)
    assert rows == 2 * MAX_POS
    # HF grows the base with the sequence; at vLLM's table length the two agree.
    hf_inv, _ = ROPE_INIT_FUNCTIONS["dynamic"](hf, "cpu", seq_len=rows)
    ours, divisor, scale = inverse_frequencies(geometry_of(hf.to_dict()).rope, HEAD_DIM, MAX_POS)
    torch.testing.assert_close(ours, hf_inv.float(), rtol=1e-6, atol=0)
    assert (divisor, scale) == (1.0, 1.0)


def test_table_lengths_follow_vllm() -> None:
    assert cache_length(Rope(rope_theta=1e4), 100) == 100
    assert cache_length(Rope(1e4, "linear", factor=2.0), 100) == 200
    assert (
        cache_length(Rope(1e4, "yarn", factor=4.0, original_max_position_embeddings=32), 100) == 128
    )
    llama3 = Rope(5e5, "llama3", 8.0, 1.0, 4.0, 64)
    assert cache_length(llama3, 1000) == 1000


def test_yarn_attention_scale_is_applied() -> None:
    rope = Rope(1e4, "yarn", factor=16.0, original_max_position_embeddings=64)
    cache = build_cos_sin_cache(rope, 16, 64, max_positions=8)
    half = 8
    norm = cache[:, :half] ** 2 + cache[:, half:] ** 2
    torch.testing.assert_close(norm, torch.full_like(norm, (0.1 * math.log(16) + 1) ** 2))


def test_unknown_rope_type_is_bad_input() -> None:
    with pytest.raises(BadInput, match="mrope"):
        build_cos_sin_cache(Rope(1e4, "mrope"), 16, 64)
