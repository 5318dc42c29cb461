"""Inspect results: a pair's facts, its capture plan and a memory estimate (eaglegraph.inspect/1).

Plain records of what `inspect` found, separate from the live objects it found them with (the
pair's configs and header index, the plan's enums and dispatchers): a saved inspect run is
re-rendered from these alone. The draft's record is flat, its side (path, geometry, weights)
and its facts (kind, evidence, fc width, vocab maps, aux taps) in one object, as the JSON
has always been.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from eaglegraph.results.findings import Finding
from eaglegraph.results.prediction import MemoryPrediction
from eaglegraph.results.ranks import RankSizing
from eaglegraph.results.sizing import SizingFacts

INSPECT_SCHEMA = "eaglegraph.inspect/1"


@dataclass(frozen=True)
class RopeFacts:
    """RoPE as the config gives it; also the pair's own record (`pair.geometry.Rope`)."""

    rope_theta: float
    rope_type: str = "default"
    factor: float | None = None
    low_freq_factor: float | None = None
    high_freq_factor: float | None = None
    original_max_position_embeddings: int | None = None
    source: str = "default"


@dataclass
class MLAFacts:
    """Latent-attention widths; they, not `head_dim`, size an MLA layer and its KV row."""

    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True)
class GeometryFields:
    """The sizes a config gives one model: `pair.geometry.Geometry` reads them from the
    config and adds what it needs to build layers; `GeometryFacts` reports them."""

    architecture: str
    model_type: str
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    head_dim_explicit: bool
    vocab_size: int
    max_position_embeddings: int
    tie_word_embeddings: bool
    dtype: str | None
    rope: RopeFacts
    rms_norm_eps: float
    attention_bias: bool


@dataclass(frozen=True)
class GeometryFacts(GeometryFields):
    mla: MLAFacts | None = None


@dataclass
class WeightSummary:
    """What the safetensors headers say about one side's weights (no tensor data read)."""

    format: str
    files: list[str]
    tensor_count: int
    parameter_count: int | None
    weight_bytes: int | None
    dtypes: dict[str, int]


@dataclass
class SideFacts:
    """One side of the pair (target or draft) as its config and headers describe it."""

    role: str
    path: str | None
    architecture: str | None
    geometry: GeometryFacts | None
    weights: WeightSummary | None = None
    parameter_count: int | None = None
    estimated_parameter_count: int | None = None
    sizing: SizingFacts | None = None


@dataclass(frozen=True)
class AuxTapsFacts:
    """EAGLE-3's auxiliary hidden-state layers: as configured, and as each engine taps them.

    Reported as "output of layer k" (0-based; -1 is the embedding output), the one convention
    in which vLLM's entering-layer ids and SGLang's +1-shifted ids compare directly. Also the
    pair's own record (`pair.facts.AuxTaps`).
    """

    layer_ids: list[int] | None
    source: str
    vllm_entering_layers: list[int]
    vllm_taps: list[int]
    sglang_taps: list[int]


@dataclass
class DraftFacts(SideFacts):
    """The draft side plus what was recognised about it; `kind` is None when nothing was."""

    kind: str | None = None
    supported: bool | None = None
    style: str | None = None
    evidence: list[str] = field(default_factory=list)
    fc_in_features: int | None = None
    fc_in_source: str | None = None
    expected_fc_in: int | None = None
    fc_bias_tensor: bool | None = None
    config_bias: bool | None = None
    target_hidden_size: int | None = None
    draft_vocab_size: int | None = None
    d2t_shape: list[int] | None = None
    t2d_shape: list[int] | None = None
    lm_head_rows: int | None = None
    aux: AuxTapsFacts | None = None
    use_aux_hidden_state: bool | None = None
    embed_tokens: str | None = None
    lm_head: str | None = None
    verifier: str | None = None
    speculative_tokens: int | None = None
    mtp_layers: int | None = None
    notes: list[str] = field(default_factory=list)
    aux_layer_ids: list[int] | None = None
    aux_layer_ids_effective: list[int] | None = None
    kind_facts: list[list[str]] = field(default_factory=list)  # [label, value] per kind fact

    @property
    def present(self) -> bool:
        """Whether the draft's own folder was found (facts can come from a target's config)."""
        return self.path is not None


@dataclass
class PhasePlanFacts:
    """One phase: its mode, and its graphs as `[num_tokens, num_reqs]` pairs (num_reqs None:
    the graph never pads requests), with each descriptor's runtime mode beside them."""

    phase: str
    mode: str
    decode_query_len: int
    descriptor_count: int
    descriptors: list[list[int | None]]
    padding_rule: str
    notes: list[str] = field(default_factory=list)
    descriptor_modes: list[str] = field(default_factory=list)
    uniform_token_counts: list[int | None] = field(default_factory=list)
    graph_count: int = 0
    fused_steps: int = 1  # draft decodes one graph replay runs


@dataclass
class PlanSettings:
    """What a capture plan was built for: engine, profile, backend, K and the batch limits.
    The rig's live plan (`rig.plan.CapturePlan`) and this record of it both extend it."""

    framework: str
    behavior: str
    attention_backend: str
    num_speculative_tokens: int
    max_num_seqs: int
    max_num_batched_tokens: int


@dataclass
class PlanFacts(PlanSettings):
    """The capture plan: sizes, the mode resolved per phase, and why it was downgraded."""

    requested_mode: str
    resolved_mode: str
    downgrades: list[str]
    capture_sizes: list[int]
    capture_sizes_before_rounding: list[int]
    phases: list[PhasePlanFacts]
    findings: list[Finding] = field(default_factory=list)
    gpu: dict[str, object] = field(default_factory=dict)  # name, capability, memory_gib
    attention_support: dict[str, str] = field(default_factory=dict)  # level, builder, reason
    breakable: bool = False
    trtllm_artifacts: bool = True
    defaults: list[str] = field(default_factory=list)  # settings taken from engine defaults
    graph_memory_profiling: bool = False
    # The profile the plan was built under: name, engine, releases it stands for, summary.
    profile: dict[str, str] = field(default_factory=dict)
    # The vLLM model runner the plan rebuilds (mrv1, mrv2; None for SGLang) and why.
    runner: str | None = None
    runner_why: str = ""

    @property
    def sizes_were_rounded(self) -> bool:
        """vLLM rounds capture sizes to multiples of K+1; whether that changed the list."""
        return self.framework == "vllm" and self.capture_sizes != self.capture_sizes_before_rounding


@dataclass
class MemoryEstimate:
    """Memory from geometry and plan alone; labelled an estimate everywhere it is shown."""

    dtype: str
    target_weight_bytes: int | None
    draft_weight_bytes: int | None
    weights_source: str
    kv_bytes_per_token_target: int | None
    kv_bytes_per_token_draft: int | None
    largest_capture_tokens: int
    target_logits_bytes: int | None
    draft_logits_bytes: int | None
    draft_transient_peak_bytes: int | None
    dedicated_pool_extra_bytes: int | None
    notes: list[str] = field(default_factory=list)
    label: str = "estimate"
    gpu_memory_bytes: int | None = None
    graph_memory_bytes: int | None = None  # the engine-style estimate of all graphs' pool
    graph_memory_in_kv_budget: bool = False  # profiled and taken out of the KV budget
    kv_budget_bytes: int | None = None  # gpu_memory_utilization share left for the KV cache
    # None when there is a budget; what the KV cache lacks when nothing is left (one GPU)
    kv_shortfall_bytes: int | None = None
    kv_budget_tokens: int | None = None
    kv_target_layers: str = "K+V, all layers"  # which target layers hold KV, and how
    # where graph_memory_bytes comes from: the engine-style estimate, or the --predict-memory
    # simulation that replaced it (one answer per report)
    graph_memory_source: str = "estimate"


@dataclass
class InspectReport:
    root: str
    layout: str
    missing: str | None
    target: SideFacts | None
    draft: DraftFacts | None
    plan: PlanFacts
    memory: MemoryEstimate
    findings: list[Finding] = field(default_factory=list)
    memory_prediction: MemoryPrediction | None = None  # inspect --predict-memory
    ranks: RankSizing | None = None  # one rank of the layout (TP 1 too: whether it fits)
