"""The pair's domain objects: one side (target or draft) and the pair as inspected.

Config and header index ride along for later layers (loading weights, sizing buffers) but
stay out of the JSON: the document carries the facts, not the raw inputs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from eaglegraph.pair.config import Config
from eaglegraph.pair.facts import DraftFacts
from eaglegraph.pair.geometry import Geometry, layer_params
from eaglegraph.pair.sizing import size_model
from eaglegraph.pair.tensors import CheckpointIndex
from eaglegraph.results.findings import Finding
from eaglegraph.results.inspect import WeightSummary
from eaglegraph.results.sizing import SizingFacts


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

    def sizing(self, engine: str = "vllm") -> SizingFacts:
        """Parameters, bytes and layer kinds from the config, as `engine` loads the model."""
        return size_model(self.geometry, self.config, self.path, engine)


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


def summarize_weights(
    index: CheckpointIndex, names: Collection[str] | None = None, *, exclude: bool = False
) -> WeightSummary:
    """The headers' totals, over every tensor or over `names` (all but `names` if `exclude`):
    a target checkpoint that stores MTP layers splits into the target's and the draft's."""
    tensors = list(index.tensors.values())
    if names is not None:
        wanted = set(names)
        tensors = [t for t in tensors if (t.name in wanted) != exclude]
    has = index.has_weights
    return WeightSummary(
        format=index.format,
        files=sorted({t.file for t in tensors}) if names is not None else list(index.files),
        tensor_count=len(tensors),
        parameter_count=sum(t.numel for t in tensors) if has else None,
        weight_bytes=sum(t.nbytes for t in tensors) if has else None,
        dtypes=dict(Counter(t.dtype for t in tensors)),
    )


def estimate_target_parameters(g: Geometry, cfg: Config | None = None) -> int:
    if cfg is not None:  # every layer kind, MoE spelling and vision tower the config names
        return size_model(g, cfg).parameters
    embed = g.vocab_size * g.hidden_size
    layers = g.num_hidden_layers * layer_params(g, g.hidden_size, True)
    head = 0 if g.tie_word_embeddings else embed
    return embed + layers + g.hidden_size + head


def estimate_draft_parameters(g: Geometry, facts: DraftFacts | None, cfg: Config) -> int:
    """The draft's own weights, excluding an embedding/lm_head borrowed from the target."""
    own = facts.kind.spec.estimate_parameters(g, facts, cfg) if facts is not None else None
    if facts is None or own is None:
        return estimate_target_parameters(g, cfg)
    if facts.embed_tokens == "own":
        own += g.vocab_size * g.hidden_size
    return own
