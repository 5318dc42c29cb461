"""Target model for the Llama family as found in real checkpoints: Llama, Qwen2, Qwen3, Mistral.

The four differ only in small switches (q/k/v and o_proj biases, Qwen3's per-head q/k norm,
explicit head_dim, RoPE scaling), so one module covers them. Attention itself is a callback:
the rig's paged-attention kernels write the KV cache and read it, which is the part the tool
probes; the model only does the position-wise work around it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch
from torch import nn

from eaglegraph.errors import BadInput
from eaglegraph.models.layers import (
    AttentionFn,
    DecoderLayer,
    ForwardContext,
    LayerSpec,
    RMSNorm,
    VocabEmbedding,
    new_param,
)
from eaglegraph.models.rope import build_cos_sin_cache, cache_length
from eaglegraph.models.vocab import head_logits
from eaglegraph.pair.geometry import Geometry

FAMILIES = ("llama", "qwen2", "qwen3", "mistral")
_ARCHITECTURES = {
    "LlamaForCausalLM": "llama",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "MistralForCausalLM": "mistral",
}


def target_family(geometry: Geometry) -> str:
    """The supported family of a target config, by model_type and then by architecture."""
    if geometry.model_type in FAMILIES:
        return geometry.model_type
    family = _ARCHITECTURES.get(geometry.architecture)
    if family is None:
        raise BadInput(
            f"unsupported target architecture {geometry.architecture or '?'} "
            f"(model_type {geometry.model_type or '?'}); supported: Llama, Qwen2, Qwen3, Mistral"
        )
    return family


def geometry_spec(geometry: Geometry, **switches: bool) -> LayerSpec:
    """A layer of the config's sizes; `switches` are LayerSpec's bias and norm flags."""
    return LayerSpec(
        hidden_size=geometry.hidden_size,
        intermediate_size=geometry.intermediate_size,
        num_heads=geometry.num_attention_heads,
        num_kv_heads=geometry.num_key_value_heads,
        head_dim=geometry.head_dim,
        rms_norm_eps=geometry.rms_norm_eps,
        **switches,
    )


def layer_spec(geometry: Geometry, family: str) -> LayerSpec:
    """Config defaults per family; the loader overrides the bias/norm switches by what the
    checkpoint holds, since configs name those biases inconsistently (research §1.1, §4.3)."""
    bias = geometry.attention_bias
    qkv_bias = family == "qwen2" or (family != "mistral" and bias)
    o_bias = family in ("llama", "qwen3") and bias
    return geometry_spec(geometry, qkv_bias=qkv_bias, o_bias=o_bias, qk_norm=family == "qwen3")


class DecoderStack(nn.Module):
    """What every target shares: embedding, decoder layers, final norm, an lm_head (tied to
    the embedding when asked), the rope cache, and the forward over them with aux taps.

    Subclasses build their decoder layers and hand them to `build_stack`; parameters are
    registered in checkpoint order (embedding, layers, norm, head), so seeded random weights
    do not depend on the subclass.
    """

    cos_sin_cache: torch.Tensor  # a registered buffer (nn.Module's __getattr__ types it loosely)

    def build_stack(
        self,
        geometry: Geometry,
        layers: Iterable[nn.Module],
        rope_dim: int,
        dtype: torch.dtype,
        device: torch.device,
        max_positions: int | None,
        rope_extras: Mapping[str, Any] | None,
    ) -> None:
        self.geometry = geometry
        self.hidden_size = geometry.hidden_size
        self.vocab_size = geometry.vocab_size
        self.num_layers = geometry.num_hidden_layers
        self.max_positions = max_positions or cache_length(
            geometry.rope, geometry.max_position_embeddings
        )
        self.extra_tensors: tuple[str, ...] = ()
        self.embed_tokens = VocabEmbedding(geometry.vocab_size, geometry.hidden_size, dtype, device)
        self.layers = nn.ModuleList(layers)
        self.norm = RMSNorm(geometry.hidden_size, geometry.rms_norm_eps, dtype, device)
        self.lm_head = (
            None
            if geometry.tie_word_embeddings
            else new_param((geometry.vocab_size, geometry.hidden_size), dtype, device)
        )
        cache = build_cos_sin_cache(
            geometry.rope, rope_dim, geometry.max_position_embeddings, self.max_positions,
            device, rope_extras,
        )  # fmt: skip
        self.register_buffer("cos_sin_cache", cache, persistent=False)

    @property
    def lm_head_weight(self) -> torch.Tensor:
        return self.embed_tokens.weight if self.lm_head is None else self.lm_head

    def check_aux_layer_ids(self, aux_layer_ids: Sequence[int]) -> tuple[int, ...]:
        ids = tuple(int(i) for i in aux_layer_ids)
        bad = [i for i in ids if not 0 <= i < self.num_layers]
        if bad:
            raise BadInput(
                f"aux hidden-state layer id(s) {bad} out of range for a {self.num_layers}-layer "
                f"target (valid: 0..{self.num_layers - 1}, i = stream entering layer i)"
            )
        return ids

    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        attention: AttentionFn,
        aux_layer_ids: Sequence[int] = (),
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(final-normed hidden [T, H], aux [T, len(ids)·H] or None).

        Aux id i is the residual stream entering layer i (HF `output_hidden_states[i]`; 0 is
        the embedding output), concatenated in the order given.
        """
        ids = self.check_aux_layer_ids(aux_layer_ids)
        h = self.embed_tokens(input_ids)
        taps: dict[int, torch.Tensor] = {}
        ctx = ForwardContext(positions, self.cos_sin_cache, attention)
        for index, layer in enumerate(self.layers):
            if index in ids:
                taps[index] = h
            h = layer(h, ctx, index)
        aux = torch.cat([taps[i] for i in ids], dim=-1) if ids else None
        return self.norm(h), aux


class TargetModel(DecoderStack):
    """The Llama family: `DecoderLayer`s with the family's switches.

    Parameters are allocated uninitialised on `device`; `load_target` or `random_target`
    fills them. `extra_tensors` lists checkpoint tensors the loader did not use.
    """

    def __init__(
        self,
        geometry: Geometry,
        dtype: torch.dtype,
        device: torch.device | str,
        *,
        spec: LayerSpec | None = None,
        max_positions: int | None = None,
        rope_extras: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        dev = torch.device(device)
        self.family = target_family(geometry)
        self.spec = spec or layer_spec(geometry, self.family)
        layers = (DecoderLayer(self.spec, dtype, dev) for _ in range(geometry.num_hidden_layers))
        self.build_stack(
            geometry, layers, geometry.head_dim, dtype, dev, max_positions, rope_extras
        )

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """`[T, V]` logits in the head dtype, the model's (vLLM's `head_dtype` default): a
        sampler that widens to fp32 does so itself (`known.heads`)."""
        return head_logits(hidden, self.lm_head_weight)
