"""A model sized from its config: parameters, weight bytes, layer kinds, each with its source."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SizingFacts:
    """A model sized from its config (`pair.sizing`): each figure with where it came from.

    `weight_bytes` is what the model's own layers take as the engine loads them (quantized
    groups at their packed size, the rest in `load_dtype`); `checkpoint_weight_bytes` adds the
    MTP modules a checkpoint stores past the stack. Only full- and sliding-attention layers
    hold KV; linear-attention and Mamba layers hold `state_bytes_per_request_layer` each.
    """

    parameters: int
    parameters_source: str
    weight_bytes: int
    checkpoint_weight_bytes: int
    mtp_parameters: int
    weight_bytes_source: str
    load_dtype: str
    load_dtype_source: str
    quantization: str | None
    layer_kinds: dict[str, int]  # full_attention / sliding_attention / linear_attention / mamba
    layer_kinds_source: str
    sliding_window: int | None
    moe: str | None
    vision_parameters: int
    state_bytes_per_request_layer: int
    groups: dict[str, int] = field(default_factory=dict)  # parameters per weight group
    # bytes per weight group as loaded, and the MTP modules' groups (per-rank sizing splits
    # each group by its own rule: `pair.rank_sizing`)
    group_bytes: dict[str, int] = field(default_factory=dict)
    mtp_groups: dict[str, int] = field(default_factory=dict)
    mtp_group_bytes: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
