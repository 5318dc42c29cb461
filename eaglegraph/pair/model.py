"""The pair's domain objects: one side (target or draft) and the pair as inspected.

Config and header index ride along for later layers (loading weights, sizing buffers) but
stay out of the JSON: the document carries the facts, not the raw inputs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from eaglegraph.findings import Finding
from eaglegraph.pair.config import Config
from eaglegraph.pair.facts import DraftFacts
from eaglegraph.pair.geometry import Geometry
from eaglegraph.pair.tensors import CheckpointIndex


@dataclass
class WeightSummary:
    format: str
    files: list[str]
    tensor_count: int
    parameter_count: int | None
    weight_bytes: int | None
    dtypes: dict[str, int]


@dataclass
class ModelSide:
    role: str
    path: Path
    architecture: str
    geometry: Geometry
    weights: WeightSummary
    estimated_parameter_count: int
    config: Config = field(repr=False, metadata={"json": False})
    checkpoint: CheckpointIndex = field(repr=False, metadata={"json": False})


@dataclass
class Pair:
    root: Path
    layout: str
    target: ModelSide | None
    draft: ModelSide | None
    draft_facts: DraftFacts | None
    missing: str | None
    findings: list[Finding] = field(default_factory=list)

    @property
    def kind(self) -> str | None:
        return self.draft_facts.kind.value if self.draft_facts else None


def summarize_weights(index: CheckpointIndex) -> WeightSummary:
    has = index.has_weights
    return WeightSummary(
        format=index.format,
        files=list(index.files),
        tensor_count=len(index.tensors),
        parameter_count=index.parameter_count if has else None,
        weight_bytes=index.weight_bytes if has else None,
        dtypes=dict(Counter(t.dtype for t in index.tensors.values())),
    )


def _layer_params(g: Geometry, qkv_in: int, input_norm: bool) -> int:
    attn = qkv_in * (g.q_width + 2 * g.kv_width) + g.q_width * g.hidden_size
    if g.attention_bias:
        attn += g.q_width + 2 * g.kv_width
    if g.model_type == "qwen3":
        attn += 2 * g.head_dim
    mlp = 3 * g.hidden_size * g.intermediate_size
    norms = g.hidden_size * (2 if input_norm else 1)
    return attn + mlp + norms


def estimate_target_parameters(g: Geometry) -> int:
    embed = g.vocab_size * g.hidden_size
    layers = g.num_hidden_layers * _layer_params(g, g.hidden_size, True)
    head = 0 if g.tie_word_embeddings else embed
    return embed + layers + g.hidden_size + head


def estimate_draft_parameters(g: Geometry, facts: DraftFacts | None) -> int:
    """The draft's own weights, excluding an embedding/lm_head borrowed from the target."""
    if facts is None or facts.kind.value not in ("eagle1", "eagle3"):
        return estimate_target_parameters(g)
    fc_in = facts.fc_in_features or 0
    total = fc_in * g.hidden_size
    if facts.kind.value == "eagle1":
        total += _layer_params(g, g.hidden_size, False)
        total += (g.num_hidden_layers - 1) * _layer_params(g, g.hidden_size, True)
    else:
        total += _layer_params(g, 2 * g.hidden_size, True) + g.hidden_size  # + hidden_norm
        total += (g.num_hidden_layers - 1) * _layer_params(g, g.hidden_size, True)
        total += g.hidden_size  # final norm
        total += (facts.draft_vocab_size or g.vocab_size) * g.hidden_size  # own lm_head
    if facts.embed_tokens == "own":
        total += g.vocab_size * g.hidden_size
    return total
