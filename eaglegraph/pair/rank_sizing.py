"""One rank of a parallel layout: weights, heads, KV, communication buffers and KV budget.

The single-GPU estimate (`rig.estimate`) sizes the whole pair; a TP/DP/EP deployment holds a
share of each weight group on every rank, and the share follows the engine's own rule for that
group (`known.parallel`: heads split, latent cache and down-projections replicated, experts by
EP, the padded vocabulary by TP). Weight groups come from `pair.sizing` (config), scaled to the
estimate's totals (headers when present), so one rank is always a share of the same figures.
Torch-free: `inspect` sizes a 671B pair at TP 8 from config.json alone.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from eaglegraph.errors import BadInput
from eaglegraph.known import parallel as known
from eaglegraph.known.gpus import GpuSpec
from eaglegraph.pair.config import Config
from eaglegraph.pair.geometry import DTYPE_BYTES, Geometry
from eaglegraph.pair.layer_kinds import expert_count, text_config
from eaglegraph.pair.mla import mla_dims
from eaglegraph.pair.model import ModelSide, Pair
from eaglegraph.pair.quantization import ATTENTION, EMBED, EXPERTS, MLP
from eaglegraph.pair.sizing import kv_layer_counts
from eaglegraph.results.findings import Finding, Severity
from eaglegraph.results.inspect import MemoryEstimate
from eaglegraph.results.parallel import ParallelLayout
from eaglegraph.results.ranks import CommBufferSizing, RankSide, RankSizing, ShardFact
from eaglegraph.results.sizing import SizingFacts

FINDING_ID = "layout-does-not-fit"
MAX_SEARCH_TP = 256  # "needs TP ≥ M" looks no further


def kv_budget(usable: int, used: int, per_token: int) -> tuple[int | None, int | None]:
    """(budget bytes, tokens) the KV cache gets; (None, None) when nothing is left."""
    budget = usable - used
    if budget <= 0:
        return None, None
    return budget, budget // per_token if per_token else None


def model_shape(side: ModelSide) -> known.ModelShape:
    """What the engines' refusal rules read of one side."""
    src = text_config(side.config)
    found = expert_count(src)
    g = side.geometry
    inter = src.int("moe_intermediate_size", default=None, minimum=1) if found else None
    return known.ModelShape(
        heads=g.num_attention_heads,
        kv_heads=g.num_key_value_heads,
        mla=mla_dims(side.config) is not None,
        experts=found[0] if found else None,
        moe_intermediate=inter,
        vocab=g.vocab_size,
    )


def layout_refusals(
    pair: Pair, layout: ParallelLayout, engine: str, gpus: int | None = None
) -> list[str]:
    """Why the engine would refuse to start this pair at this layout (empty: it starts)."""
    sides = [s for s in (pair.target, pair.draft) if s is not None]
    seen: list[str] = []
    for side in sides:
        shape, shaped = model_shape(side), layout
        if side is pair.draft and layout.draft_tensor_parallel != layout.tp:
            shaped = ParallelLayout(layout.draft_tensor_parallel, 1, 1, False)
        elif side is pair.draft and shape.experts is None:
            # a dense draft does not inherit EP (vllm/config/speculative.py::
            # SpeculativeConfig.create_draft_parallel_config)
            shaped = replace(layout, ep=1)
        for reason in known.model_layout_refusals(engine, shaped, shape, gpus):
            line = reason if side is not pair.draft else f"draft: {reason}"
            if reason not in seen and line not in seen:
                seen.append(line)
    return seen


def check_layout(pair: Pair, layout: ParallelLayout, engine: str, gpus: int | None = None) -> None:
    """Refuse, in one line and before any work, a layout the engine would not start."""
    refused = layout_refusals(pair, layout, engine, gpus)
    if refused:
        where = layout.describe()
        raise BadInput(refused[0] if where == f"TP {layout.tp}" else f"{where}: {refused[0]}")


@dataclass(frozen=True)
class _Side:
    """One side's inputs: its geometry and config, its weight groups (params and bytes), the
    attention layers it holds and the replicated projections beside them, its total bytes."""

    role: str
    g: Geometry
    cfg: Config
    groups: dict[str, int]
    group_bytes: dict[str, int]
    attention_layers: int
    extra_replicated: int  # params of replicated projections outside the layers (eh_proj)
    total_bytes: int | None
    kv_per_token: int | None


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _vocab_rows(vocab: int, tp: int) -> int:
    return _ceil(_ceil(vocab, known.VOCAB_PADDING) * known.VOCAB_PADDING, tp)


def _replicated_attention(side: _Side) -> int:
    """Attention-group parameters every rank holds whole: MLA's down-projections (q_a_proj,
    kv_a_proj_with_mqa) and V3.2's indexer, MTP's eh_proj."""
    mla = mla_dims(side.cfg)
    if mla is None:
        return side.extra_replicated
    h = side.g.hidden_size
    # q_a_proj (+ its norm), kv_a_proj_with_mqa (+ kv_a_layernorm)
    q_a = h * mla.q_lora_rank + mla.q_lora_rank if mla.q_lora_rank else 0
    per_layer = q_a + h * mla.cache_width + mla.kv_lora_rank
    src = text_config(side.cfg)
    heads = src.int("index_n_heads", default=None, minimum=1)
    if heads is not None:
        dim = src.int("index_head_dim", minimum=1)
        per_layer += (mla.q_lora_rank or h) * heads * dim + h * dim
    return side.attention_layers * per_layer + side.extra_replicated


def _attention_tp(layout: ParallelLayout, engine: str, tp: int) -> int:
    """Ranks the heads are split over: SGLang's TP / DP under DP attention, else the side's TP."""
    return layout.attention_tp if engine == known.SGLANG and tp == layout.tp else tp


def _shares(side: _Side, layout: ParallelLayout, engine: str, tp: int) -> dict[str, float]:
    """The fraction of each weight group one rank holds (the fullest rank)."""
    g = side.g
    attn_tp = _attention_tp(layout, engine, tp)
    shares: dict[str, float] = {}
    att = side.groups.get(ATTENTION, 0)
    if att:
        replicated = min(_replicated_attention(side), att)
        kv = 0
        kv_rank_share = 1.0
        if mla_dims(side.cfg) is None:
            kv = min(side.attention_layers * 2 * g.hidden_size * g.kv_width, att - replicated)
            kv_rank_share = max(1, g.num_key_value_heads // attn_tp) / g.num_key_value_heads
        sharded = att - replicated - kv
        shares[ATTENTION] = (sharded / attn_tp + replicated + kv * kv_rank_share) / att
    if side.groups.get(MLP):
        shares[MLP] = 1 / tp
    if side.groups.get(EMBED):
        # embedding (attention TP under SGLang's DP attention) and lm_head (TP), untied
        embed_tp = attn_tp if engine == known.SGLANG else tp
        rows = _vocab_rows(g.vocab_size, embed_tp)
        if not g.tie_word_embeddings:
            rows += _vocab_rows(g.vocab_size, tp)
            shares[EMBED] = rows / (2 * g.vocab_size)
        else:
            shares[EMBED] = rows / g.vocab_size
    if side.groups.get(EXPERTS):
        shares[EXPERTS] = _expert_share(side, layout, engine, tp)
    return shares


def _experts(side: _Side) -> int | None:
    found = expert_count(text_config(side.cfg))
    return found[0] if found else None


def _expert_split(
    side: _Side, layout: ParallelLayout, engine: str, tp: int
) -> tuple[int | None, str]:
    """Routed experts on the fullest rank and how the experts are split."""
    experts = _experts(side)
    if experts is None:
        return None, ""
    if tp != layout.tp:  # a draft at its own TP (vLLM draft_tensor_parallel_size 1)
        return experts, "whole (draft TP 1)"
    if engine == known.SGLANG:
        if layout.ep > 1:
            return experts // layout.ep, f"EP {layout.ep}, width / MoE TP {tp // layout.ep}"
        return experts, f"width / TP {tp}"
    group = layout.tp * layout.dp
    if layout.ep > 1:
        return _ceil(experts, layout.ep), f"EP {layout.ep}"
    return experts, f"width / TP×DP {group}" if layout.dp > 1 else f"width / TP {group}"


def _expert_share(side: _Side, layout: ParallelLayout, engine: str, tp: int) -> float:
    experts = _experts(side)
    if experts is None or tp != layout.tp:
        return 1.0 if tp == 1 else 1 / tp
    if engine == known.SGLANG:
        return 1 / tp  # experts / EP, each expert's width / (TP / EP)
    if layout.ep > 1:
        return _ceil(experts, layout.ep) / experts
    return 1 / (layout.tp * layout.dp)  # FusedMoEParallelConfig.make flattens TP across DP


def _side_on_rank(
    side: _Side, layout: ParallelLayout, engine: str, tp: int
) -> tuple[int | None, RankSide]:
    g = side.g
    attn_tp = _attention_tp(layout, engine, tp)
    shares = _shares(side, layout, engine, tp)
    weight = None
    config_bytes = sum(side.group_bytes.values())
    if side.total_bytes is not None and config_bytes:
        on_rank = sum(b * shares.get(grp, 1.0) for grp, b in side.group_bytes.items())
        weight = int(side.total_bytes * on_rank / config_bytes)
    mla = mla_dims(side.cfg) is not None
    kv_total = g.num_key_value_heads
    kv_rank = None if mla else max(1, kv_total // attn_tp)
    replicas = 1 if mla or attn_tp <= kv_total else attn_tp // kv_total
    kv_bytes = side.kv_per_token
    if kv_bytes is not None and kv_rank is not None:
        kv_bytes = kv_bytes * kv_rank // kv_total
    experts, split = _expert_split(side, layout, engine, tp)
    return weight, RankSide(
        role=side.role,
        tensor_parallel=tp,
        attention_tensor_parallel=attn_tp,
        weight_bytes=weight,
        attention_heads=g.num_attention_heads // attn_tp,
        total_attention_heads=g.num_attention_heads,
        kv_heads=kv_rank,
        total_kv_heads=kv_total,
        kv_head_replicas=replicas,
        kv_bytes_per_token=kv_bytes,
        experts=experts,
        total_experts=_experts(side),
        experts_split=split,
        vocab_rows=_vocab_rows(g.vocab_size, tp),
        total_vocab=g.vocab_size,
    )


def _sides(pair: Pair, engine: str, memory: MemoryEstimate) -> list[_Side]:
    out: list[_Side] = []
    sizing: SizingFacts | None = None
    if pair.target is not None:
        t = pair.target
        sizing = t.sizing(engine)
        full, sliding, _ = kv_layer_counts(t.config, t.geometry.num_hidden_layers)
        out.append(
            _Side(
                "target",
                t.geometry,
                t.config,
                sizing.groups,
                sizing.group_bytes,
                full + sliding,
                0,
                memory.target_weight_bytes,
                memory.kv_bytes_per_token_target,
            )
        )
    if pair.draft is not None:
        d = pair.draft
        if pair.target is not None and d.config is pair.target.config and sizing is not None:
            modules = _mtp_modules(d.config)
            h = d.geometry.hidden_size
            groups, group_bytes = sizing.mtp_groups, sizing.mtp_group_bytes
            layers, extra = modules, modules * 2 * h * h  # eh_proj per module
        else:
            own = d.sizing(engine)
            full, sliding, _ = kv_layer_counts(d.config, d.geometry.num_hidden_layers)
            groups, group_bytes, layers, extra = own.groups, own.group_bytes, full + sliding, 0
        out.append(
            _Side(
                "draft",
                d.geometry,
                d.config,
                groups,
                group_bytes,
                layers,
                extra,
                memory.draft_weight_bytes,
                memory.kv_bytes_per_token_draft,
            )
        )
    return out


def _mtp_modules(cfg: Config) -> int:
    src = text_config(cfg)
    return (
        src.int("num_nextn_predict_layers", default=None, minimum=0)
        or src.int("mtp_num_hidden_layers", default=None, minimum=0)
        or 0
    )


@dataclass(frozen=True)
class _Gpu:
    name: str
    memory_bytes: int | None  # the estimate's (the --gpu-memory override included)
    capability: tuple[int, int]


def _one_rank(
    sides: list[_Side], layout: ParallelLayout, engine: str, gpu: _Gpu
) -> tuple[int | None, list[RankSide], list[CommBufferSizing]]:
    """Both sides' weights on one rank, their records, and the rank's comm buffers."""
    records: list[RankSide] = []
    total: int | None = 0 if sides else None  # nothing sized is no fit either way
    for side in sides:
        tp = layout.draft_tensor_parallel if side.role == "draft" else layout.tp
        weight, record = _side_on_rank(side, layout, engine, tp)
        records.append(record)
        total = None if weight is None or total is None else total + weight
    comm = [
        CommBufferSizing(c.name, c.bytes, c.source, c.note)
        for c in known.comm_buffers(engine, layout.tp, gpu.capability)
    ]
    return total, records, comm


def _used(
    weights: int | None, graphs: int, comm: list[CommBufferSizing], memory: MemoryEstimate
) -> int | None:
    if weights is None:
        return None
    in_budget = graphs if memory.graph_memory_in_kv_budget else 0
    return weights + in_budget + sum(c.bytes or 0 for c in comm)


def size_ranks(
    pair: Pair,
    layout: ParallelLayout,
    engine: str,
    memory: MemoryEstimate,
    gpu_spec: GpuSpec,
    max_tokens: int,
    utilization: float,
) -> RankSizing:
    """One rank of `layout` on the plan's GPU (`max_tokens`: its max_num_batched_tokens), and
    the smallest TP of its shape that fits."""
    sides = _sides(pair, engine, memory)
    gpu = _Gpu(gpu_spec.name, memory.gpu_memory_bytes, gpu_spec.capability)
    weights, records, comm = _one_rank(sides, layout, engine, gpu)
    graphs = memory.graph_memory_bytes or 0
    per_token = sum(r.kv_bytes_per_token or 0 for r in records)
    result = RankSizing(
        layout=layout,
        layout_description=layout.describe(),
        engine=engine,
        world_size=layout.world_size,
        gpu=gpu.name,
        gpu_memory_bytes=gpu.memory_bytes,
        utilization=utilization,
        target=next((r for r in records if r.role == "target"), None),
        draft=next((r for r in records if r.role == "draft"), None),
        weight_bytes=weights,
        graph_memory_bytes=memory.graph_memory_bytes,
        graph_memory_in_kv_budget=memory.graph_memory_in_kv_budget,
        comm=comm,
        comm_bytes=sum(c.bytes or 0 for c in comm),
        rules=_rules(pair, engine),
        notes=_notes(layout, engine),
        plan_changes=_plan_changes(sides, layout, engine, gpu, memory, max_tokens),
    )
    used = _used(weights, graphs, comm, memory)
    if gpu.memory_bytes is None or used is None:
        return result
    usable = int(gpu.memory_bytes * utilization)
    result.usable_bytes, result.used_bytes = usable, used
    result.kv_budget_bytes, result.kv_budget_tokens = kv_budget(usable, used, per_token)
    result.fits = result.kv_budget_bytes is not None
    context = _full_attention_context(pair)
    tokens = result.kv_budget_tokens
    if engine == known.VLLM and context is not None and tokens is not None and tokens < context:
        result.max_model_len_short = context
    if not result.fits:
        result.shortfall_bytes = used - usable
        result.needs_tp = _needs_tp(pair, sides, layout, engine, gpu, memory, usable)
        if result.needs_tp is None:
            result.needs_searched_to = MAX_SEARCH_TP
    return result


def _full_attention_context(pair: Pair) -> int | None:
    """The target's max_position_embeddings when every KV layer is full attention (a
    request's KV is then context × bytes per token); None otherwise."""
    t = pair.target
    if t is None:
        return None
    full, sliding, state = kv_layer_counts(t.config, t.geometry.num_hidden_layers)
    if sliding or state or not full:
        return None
    return t.geometry.max_position_embeddings


def _needs_tp(
    pair: Pair,
    sides: list[_Side],
    layout: ParallelLayout,
    engine: str,
    gpu: _Gpu,
    memory: MemoryEstimate,
    usable: int,
) -> int | None:
    """The smallest TP above `layout.tp`, same shape, the engine starts and that fits."""
    graphs = memory.graph_memory_bytes or 0
    for tp in range(layout.tp + 1, MAX_SEARCH_TP + 1):
        try:
            candidate = layout.scaled(tp)
        except ValueError:
            continue
        if layout_refusals(pair, candidate, engine):
            continue
        weights, _, comm = _one_rank(sides, candidate, engine, gpu)
        used = _used(weights, graphs, comm, memory)
        if used is not None and used < usable:
            return tp
    return None


def _plan_changes(
    sides: list[_Side],
    layout: ParallelLayout,
    engine: str,
    gpu: _Gpu,
    memory: MemoryEstimate,
    max_tokens: int,
) -> list[str]:
    if not sides:
        return []
    gib = gpu.memory_bytes / (1 << 30) if gpu.memory_bytes is not None else None
    return known.plan_changes(
        engine,
        layout,
        capability=gpu.capability,
        gpu_memory_gib=gib,
        hidden=sides[0].g.hidden_size,
        dtype_bytes=DTYPE_BYTES.get(memory.dtype, 2),
        max_tokens=max_tokens,
    )


def _rules(pair: Pair, engine: str) -> list[ShardFact]:
    """The sharding rules that apply to this pair (MLA rows only for MLA, experts for MoE)."""
    sides = [s for s in (pair.target, pair.draft) if s is not None]
    mla = any(mla_dims(s.config) is not None for s in sides)
    moe = any(expert_count(text_config(s.config)) is not None for s in sides)
    skip = set()
    if mla:
        skip.add(known.KV_HEADS.part)
    else:
        skip |= {known.MLA_CACHE.part, known.MLA_PROJECTIONS.part}
    if not moe:
        skip.add(known.EXPERTS.part)
    if pair.draft is None:
        skip.add(known.MTP_DRAFT.part)
    return [
        ShardFact(r.part, r.rule(engine), r.source(engine))
        for r in known.SHARD_RULES
        if r.part not in skip
    ]


def _notes(layout: ParallelLayout, engine: str) -> list[str]:
    notes = [
        "every rank captures the same plan: graph memory is the single-rank estimate on each",
        "norms, routers, biases and vision towers are counted whole on every rank",
    ]
    if engine == known.VLLM and layout.ep > 1 and layout.tp > 1 and layout.dp > 1:
        notes.append(
            "sequence-parallel MoE (EP, TP > 1, DP > 1): vLLM replicates the shared experts; "
            "they are counted split by TP here"
        )
    if layout.dp > 1 and not layout.dp_attention:
        notes.append(f"DP {layout.dp}: {layout.dp} replicas, each rank as sized here")
    return notes


def context_finding(sizing: RankSizing) -> Finding | None:
    """`kv-below-max-model-len`: the KV budget holds fewer tokens than one request of the
    config's context, which vLLM refuses at startup unless --max-model-len is lowered."""
    context, tokens = sizing.max_model_len_short, sizing.kv_budget_tokens
    if context is None or tokens is None:
        return None
    return Finding(
        id="kv-below-max-model-len",
        severity=Severity.WARNING,
        message=(
            f"the KV cache at {sizing.layout_description} on {sizing.gpu or 'this GPU'} holds "
            f"{tokens:,} tokens, fewer than one request of max_model_len {context:,} (the "
            "config's max_position_embeddings): vLLM refuses to start at that length"
        ),
        ref=known.VLLM_ONE_REQUEST_SOURCE,
        fix=f"serve with --max-model-len ≤ {tokens:,}, or a larger TP or GPU",
    )


def fit_finding(sizing: RankSizing) -> Finding | None:
    """`layout-does-not-fit`: the numbers, and the smallest TP of the same shape that fits."""
    if sizing.fits is not False:
        return None
    assert sizing.used_bytes is not None and sizing.usable_bytes is not None
    gpu = sizing.gpu or "this GPU"
    gib = 1 << 30
    need = (
        f"needs TP ≥ {sizing.needs_tp}"
        if sizing.needs_tp is not None
        else f"no TP up to {sizing.needs_searched_to} fits"
    )
    parts = [f"weights {sizing.weight_bytes / gib:.2f} GiB"] if sizing.weight_bytes else []
    if sizing.graph_memory_in_kv_budget and sizing.graph_memory_bytes:
        parts.append(f"graphs {sizing.graph_memory_bytes / gib:.2f} GiB")
    if sizing.comm_bytes:
        parts.append(f"comm buffers {sizing.comm_bytes / gib:.2f} GiB")
    gpu_gib = (sizing.gpu_memory_bytes or 0) / gib
    return Finding(
        id=FINDING_ID,
        severity=Severity.ERROR,
        message=(
            f"does not fit at TP={sizing.layout.tp} on {gpu}: {need} — per rank "
            f"{' + '.join(parts)} = {sizing.used_bytes / gib:.2f} GiB > "
            f"{sizing.usable_bytes / gib:.2f} GiB usable ({sizing.utilization:g} × "
            f"{gpu_gib:.1f} GiB); no room for the KV cache"
        ),
        evidence=f"layout {sizing.layout_description}, {sizing.engine}",
        fix=(
            f"run at TP {sizing.needs_tp} (or a larger GPU, or a quantized checkpoint)"
            if sizing.needs_tp is not None
            else "a larger GPU or a quantized checkpoint"
        ),
    )
