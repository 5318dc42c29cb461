"""A memory estimate from geometry and plan alone (labelled an estimate everywhere).

The numbers that matter for "OOM while capturing graphs" and for the dedicated-pool cost of vLLM
0.22 (hazard `dedicated-eagle-pool`): weights, KV bytes per token, the largest logits buffers at
the largest capture size, and the draft's transient peak — which a dedicated EAGLE pool reserves
a second time instead of reusing blocks the target's graphs already freed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypedDict

from eaglegraph.known.heads import head_dtype
from eaglegraph.pair.geometry import DTYPE_BYTES, Geometry
from eaglegraph.pair.kv_layers import draft_layer_count
from eaglegraph.pair.mla import mla_dims, mla_kv_bytes_per_token
from eaglegraph.pair.model import ModelSide, Pair
from eaglegraph.pair.rank_sizing import kv_budget
from eaglegraph.pair.sizing import kv_layer_counts
from eaglegraph.results.inspect import MemoryEstimate
from eaglegraph.rig.plan import CapturePlan


def _kv_per_token(g: Geometry, layers: int, nbytes: int) -> int:
    return 2 * layers * g.num_key_value_heads * g.head_dim * nbytes


def _side_kv(side: ModelSide, layers: int, nbytes: int) -> int:
    """KV bytes per token of `layers` layers of one side: latent rows for MLA, K+V else."""
    latent = mla_kv_bytes_per_token(side.config, layers, nbytes)
    return latent if latent is not None else _kv_per_token(side.geometry, layers, nbytes)


def fmt_state(nbytes: int) -> str:
    return f"{nbytes / (1 << 20):.2f} MiB" if nbytes >= 1 << 20 else f"{nbytes / 1024:.1f} KiB"


def _draft_layers(pair: Pair, framework: str) -> int:
    """The draft's KV layers (MTP: one per module the engine runs, not its config's stack)."""
    assert pair.draft is not None
    if pair.draft_facts is not None and pair.draft_facts.kind.supported and pair.target:
        return draft_layer_count(pair, framework)
    return pair.draft.geometry.num_hidden_layers


def _draft_activation_bytes(g: Geometry, fc_in: int, tokens: int, nbytes: int) -> int:
    """Live activations of one draft forward over `tokens` rows (order-of-magnitude model)."""
    per_token = fc_in + g.hidden_size * 4 + g.q_width * 2 + g.kv_width * 2 + g.intermediate_size * 3
    return per_token * tokens * nbytes


def estimate_memory(pair: Pair, plan: CapturePlan, dtype: str | None = None) -> MemoryEstimate:
    t = pair.target.geometry if pair.target else None
    d = pair.draft.geometry if pair.draft else None
    facts = pair.draft_facts
    sizing = pair.target.sizing(plan.framework) if pair.target else None
    # dtype=auto: what the engine loads the config's dtype as (a float32 config is downcast)
    name = dtype or (sizing.load_dtype if sizing else None) or "bfloat16"
    nbytes = DTYPE_BYTES.get(name, 2)
    notes: list[str] = []
    if sizing is not None and not dtype and sizing.load_dtype != t.dtype:  # type: ignore[union-attr]
        notes.append(sizing.load_dtype_source)

    def weights(side: ModelSide | None) -> int | None:
        if side is None:
            return None
        if side.weights.weight_bytes is not None:
            return int(side.weights.weight_bytes)
        if sizing is not None and not dtype and side is pair.target:
            return sizing.weight_bytes  # quantized groups at their packed size
        if sizing is not None and not dtype and pair.target and side.config is pair.target.config:
            return sizing.checkpoint_weight_bytes - sizing.weight_bytes  # MTP in the target
        return int(side.estimated_parameter_count) * nbytes

    has_headers = any(
        s is not None and s.weights.weight_bytes is not None for s in (pair.target, pair.draft)
    )
    largest = max(plan.capture_sizes) if plan.capture_sizes else 0
    rows_draft = min(largest, plan.max_num_seqs) if largest else 0
    kv_t = None
    kv_layers = "K+V, all layers"
    if pair.target and t:
        full, sliding, state = kv_layer_counts(pair.target.config, t.num_hidden_layers)
        kv_t = _side_kv(pair.target, full + sliding, nbytes)
        row = "latent row" if mla_dims(pair.target.config) else "K+V"
        kv_layers = (
            f"{row}, all {full + sliding} layers"
            if full + sliding == t.num_hidden_layers
            else f"{row}, {full + sliding} attention layers of {t.num_hidden_layers}"
        )
        if sliding:
            notes.append(
                f"{sliding} of the target's {full + sliding} KV layers use a sliding window "
                f"({sizing.sliding_window if sizing else '?'} tokens): past it they hold no more"
            )
        if state:
            notes.append(
                f"{state} target layers are linear attention / Mamba: no KV, a fixed state "
                f"of {fmt_state(sizing.state_bytes_per_request_layer if sizing else 0)} per "
                "request and layer instead"
            )
    kv_d = _side_kv(pair.draft, _draft_layers(pair, plan.framework), nbytes) if pair.draft else None
    if any(s is not None and mla_dims(s.config) for s in (pair.target, pair.draft)):
        notes.append(
            "MLA layers cache one latent row (kv_lora_rank + qk_rope_head_dim) per token, "
            "not K and V heads; head_dim does not size them"
        )
    head = head_dtype(plan.framework)
    # the target's sampler widens to fp32 (eagerly); the draft's graphs hold the head dtype
    target_logits = (
        largest * t.vocab_size * (4 if head.target_sampler_widens else nbytes)
        if t and largest
        else None
    )
    draft_vocab = (facts.draft_vocab_size if facts and facts.draft_vocab_size else None) or (
        d.vocab_size if d else None
    )
    draft_bytes = 4 if head.draft_sampler_widens else nbytes
    draft_logits = rows_draft * draft_vocab * draft_bytes if draft_vocab and rows_draft else None
    peak = None
    if d is not None and largest:
        fc_in = facts.fc_in_features if facts and facts.fc_in_features else 2 * d.hidden_size
        peak = _draft_activation_bytes(d, fc_in, largest, nbytes) + (draft_logits or 0)
        peak += rows_draft * d.hidden_size * nbytes  # hidden gathered at last_token_indices
    if peak is not None:
        notes.append(
            "draft transient peak = draft activations at the largest capture size + draft logits "
            f"({'fp32' if head.draft_sampler_widens else name}) + gathered hidden rows; a "
            "dedicated EAGLE pool reserves it again"
        )
    if not has_headers:
        notes.append("weights estimated from config geometry (no safetensors headers)")
    budget = _kv_budget(pair, plan, peak, target_logits, kv_t, kv_d, weights, notes)
    return MemoryEstimate(
        dtype=name,
        target_weight_bytes=weights(pair.target),
        draft_weight_bytes=weights(pair.draft),
        weights_source=(
            "safetensors headers"
            if has_headers
            else sizing.weight_bytes_source
            if sizing is not None and not dtype
            else "config geometry"
        ),
        kv_bytes_per_token_target=kv_t,
        kv_bytes_per_token_draft=kv_d,
        largest_capture_tokens=largest,
        target_logits_bytes=target_logits,
        draft_logits_bytes=draft_logits,
        draft_transient_peak_bytes=peak,
        dedicated_pool_extra_bytes=peak,
        notes=notes,
        kv_target_layers=kv_layers,
        **budget,
    )


GPU_MEMORY_UTILIZATION = 0.9


class KvBudget(TypedDict, total=False):
    """What the KV cache gets on the plan's GPU (fields of `MemoryEstimate`)."""

    gpu_memory_bytes: int
    graph_memory_bytes: int
    graph_memory_in_kv_budget: bool
    kv_budget_bytes: int | None
    kv_budget_tokens: int | None
    kv_shortfall_bytes: int | None


MIN_PER_GRAPH_BYTES = 1 << 20  # the per-graph floor of vLLM's extrapolation


def graph_memory_estimate(plan: CapturePlan, peak: int | None, target_logits: int | None) -> int:
    """vLLM-style graph memory: the largest graphs' transient footprint once (they share one
    pool), plus a per-graph floor for every other graph."""
    graphs = plan.engine_graph_count()
    if not graphs:
        return 0
    first = (peak or 0) + (target_logits or 0)
    return first + (graphs - 1) * MIN_PER_GRAPH_BYTES


def _kv_budget(
    pair: Pair,
    plan: CapturePlan,
    peak: int | None,
    target_logits: int | None,
    kv_t: int | None,
    kv_d: int | None,
    weights: Callable[[ModelSide | None], int | None],
    notes: list[str],
) -> KvBudget:
    """What the KV cache gets on the plan's GPU, with or without graph memory profiling."""
    gib = plan.gpu.get("memory_gib") if plan.gpu else None
    if not isinstance(gib, (int, float)):
        return KvBudget()
    total = int(gib * (1 << 30))
    graphs = graph_memory_estimate(plan, peak, target_logits)
    profiled = bool(plan.graph_memory_profiling) and graphs > 0
    w = sum(x for x in (weights(pair.target), weights(pair.draft)) if x)
    budget = int(total * GPU_MEMORY_UTILIZATION) - w - (graphs if profiled else 0)
    per_token = (kv_t or 0) + (kv_d or 0)
    if profiled:
        notes.append(
            "graph memory is profiled in a throwaway pool before the KV cache is sized and taken "
            "out of the KV budget (gpu_memory_utilization now covers the graphs)"
        )
    elif graphs:
        notes.append(
            "graphs are captured after the KV cache is sized: their memory comes from outside "
            "gpu_memory_utilization (capture OOM when that headroom is short)"
        )
    notes.append(
        f"KV budget = {GPU_MEMORY_UTILIZATION} × GPU memory − weights"
        + (" − graph estimate" if profiled else "")
        + " (activation peak not estimated)"
    )
    left, tokens = kv_budget(budget, 0, per_token)  # nothing left is no budget, never < 0
    return KvBudget(
        gpu_memory_bytes=total,
        graph_memory_bytes=graphs,
        graph_memory_in_kv_budget=profiled,
        kv_budget_bytes=left,
        kv_budget_tokens=tokens,
        kv_shortfall_bytes=None if left is not None else -budget,
    )
