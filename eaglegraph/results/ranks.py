"""One rank of a parallel layout, as `inspect` sizes it (part of eaglegraph.inspect/1).

Every rank of a TP/DP/EP layout holds the same shares (the fullest rank where experts do not
split evenly), so one record describes them all: each side's weights, heads, KV heads, experts
and vocabulary rows per rank, the communication buffers, the graph pools, and what is left for
the KV cache on the plan's GPU. A layout that leaves nothing has `fits` False and no budget: a
negative budget is never a budget.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from eaglegraph.results.parallel import ParallelLayout


@dataclass
class RankSide:
    """One side (target or draft) as one rank holds it."""

    role: str
    tensor_parallel: int  # ranks this side's MLP, experts and lm_head are split over
    weight_bytes: int | None
    attention_heads: int
    total_attention_heads: int
    kv_heads: int | None  # per rank; None under MLA (one latent row, not sharded)
    total_kv_heads: int
    kv_head_replicas: int = 1  # ranks holding each KV head (TP > KV heads)
    kv_bytes_per_token: int | None = None
    experts: int | None = None  # routed experts on the fullest rank
    total_experts: int | None = None
    experts_split: str = ""  # how the experts are split ("EP 8", "width / TP 8")
    vocab_rows: int | None = None  # embedding / lm_head rows per rank (padded vocabulary)
    total_vocab: int | None = None
    attention_tensor_parallel: int | None = None  # heads split over (TP / DP: DP attention)


@dataclass
class CommBufferSizing:
    """A communication buffer each rank allocates outside the KV cache and graph pools."""

    name: str
    bytes: int | None  # None: not sized (the note says why)
    source: str
    note: str = ""


@dataclass
class ShardFact:
    """A sharding rule the sizing applied, with the engine file::function it comes from."""

    part: str
    rule: str
    source: str


@dataclass
class RankSizing:
    """Per-rank memory of a layout on the plan's GPU."""

    layout: ParallelLayout
    layout_description: str
    engine: str
    world_size: int
    gpu: str | None = None
    gpu_memory_bytes: int | None = None
    utilization: float = 0.9
    usable_bytes: int | None = None  # utilization × GPU memory
    target: RankSide | None = None
    draft: RankSide | None = None
    weight_bytes: int | None = None  # both sides' weights on one rank
    graph_memory_bytes: int | None = None  # the same plan on every rank
    graph_memory_in_kv_budget: bool = False
    comm: list[CommBufferSizing] = field(default_factory=list)
    comm_bytes: int = 0  # the sized buffers' total
    used_bytes: int | None = None  # what comes out of usable_bytes before the KV cache
    kv_budget_bytes: int | None = None  # None when it does not fit
    kv_budget_tokens: int | None = None
    fits: bool | None = None  # None: no GPU memory known
    shortfall_bytes: int | None = None  # used − usable, when it does not fit
    needs_tp: int | None = None  # the smallest TP of the same shape that fits
    # vLLM: the config's max_position_embeddings when the KV budget holds fewer tokens (full
    # attention only: sliding and state layers are not sized per request here)
    max_model_len_short: int | None = None
    needs_searched_to: int | None = None  # the largest TP tried when none fits
    rules: list[ShardFact] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # what the engine changes in one rank's plan at this layout (compile ranges, DP padding)
    plan_changes: list[str] = field(default_factory=list)
