"""How each engine shards a model over its ranks, what layouts it refuses, and what its
communicators hold per rank — as data, each row citing the engine wheel's file::function.

Read from vLLM 0.33.0 and SGLang 0.5.23 (the PyPI wheels; `../shared/research/tp-dp.md` §1.3,
§2.1). `pair.rank_sizing` applies these rules to a pair; the CLI applies the refusals before
any work, so a layout the engine would refuse at startup is refused here in one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

MIB = 1 << 20
KIB = 1 << 10

VLLM = "vllm"
SGLANG = "sglang"


@dataclass(frozen=True)
class ShardRule:
    """One part of a model and how an engine splits it over the ranks of a layout."""

    part: str
    vllm: str
    sglang: str
    vllm_source: str
    sglang_source: str

    def rule(self, engine: str) -> str:
        return self.sglang if engine == SGLANG else self.vllm

    def source(self, engine: str) -> str:
        return self.sglang_source if engine == SGLANG else self.vllm_source


ATTENTION_HEADS = ShardRule(
    "attention heads",
    "heads / TP per rank (Q and O projections column/row parallel)",
    "heads / attention TP per rank (TP, or TP / DP under DP attention)",
    "vllm/model_executor/layers/linear.py::QKVParallelLinear.__init__",
    "sglang/srt/layers/linear.py::QKVParallelLinear.__init__",
)
KV_HEADS = ShardRule(
    "KV heads",
    "KV heads / TP per rank; one head per rank, replicated TP / KV-heads times, when TP ≥ KV heads",
    "KV heads / attention TP per rank; one head, replicated, when attention TP ≥ KV heads",
    "vllm/config/model.py::ModelConfig.get_num_kv_heads; "
    "vllm/model_executor/layers/linear.py::QKVParallelLinear.__init__",
    "sglang/srt/configs/model_config.py::ModelConfig.get_num_kv_heads",
)
MLA_CACHE = ShardRule(
    "MLA latent cache",
    "not sharded: every rank caches the whole latent row (MLA decodes as MQA: one KV head)",
    "not sharded: every rank caches the whole latent row",
    "vllm/config/model.py::ModelConfig.get_num_kv_heads (use_mla → 1)",
    "sglang/srt/mem_cache/memory_pool.py::MLATokenToKVPool (kv_lora_rank + qk_rope_head_dim "
    "per layer)",
)
MLA_PROJECTIONS = ShardRule(
    "MLA down-projections",
    "q_a_proj, kv_a_proj_with_mqa and the V3.2 indexer replicated; q_b_proj, kv_b_proj, "
    "o_proj split by heads",
    "q_a_proj, kv_a_proj_with_mqa replicated; q_b_proj, kv_b_proj, o_proj split by heads",
    "vllm/model_executor/models/deepseek_v2.py::DeepseekV2MLAAttention.__init__ "
    "(ReplicatedLinear, DeepSeekV2FusedQkvAProjLinear disable_tp=True; Indexer wq_b "
    "ReplicatedLinear)",
    "sglang/srt/models/deepseek_v2.py::DeepseekV2AttentionMLA.__init__",
)
DENSE_MLP = ShardRule(
    "dense MLP, shared experts",
    "gate/up column parallel, down row parallel: / TP (shared experts replicated under "
    "sequence-parallel MoE: EP on, TP > 1, DP > 1)",
    "gate/up column parallel, down row parallel: / TP",
    "vllm/model_executor/models/deepseek_v2.py::DeepseekV2MLP.__init__; "
    "vllm/config/parallel.py::ParallelConfig.use_sequence_parallel_moe",
    "sglang/srt/models/deepseek_v2.py::DeepseekV2MLP.__init__",
)
VOCAB = ShardRule(
    "embedding, lm_head",
    "vocab padded to a multiple of 64, then / TP rows per rank",
    "vocab padded to a multiple of 64, then / TP rows per rank (embedding / attention TP "
    "under DP attention)",
    "vllm/model_executor/layers/vocab_parallel_embedding.py::VocabParallelEmbedding.__init__",
    "sglang/srt/layers/vocab_parallel_embedding.py::get_embedding_tp_kwargs, "
    "VocabParallelEmbedding.__init__",
)
EXPERTS = ShardRule(
    "routed experts",
    "EP on: experts / (TP × DP) per rank, the remainder to the first ranks; EP off: each "
    "expert's width / (TP × DP)",
    "experts / EP per rank (must divide), each expert's width / (TP / EP)",
    "vllm/model_executor/layers/fused_moe/config.py::FusedMoEParallelConfig.make; "
    "vllm/model_executor/layers/fused_moe/expert_map_manager.py::determine_expert_map",
    "sglang/srt/layers/moe/fused_moe_triton/layer.py::FusedMoE.__init__; "
    "sglang/srt/runtime_context.py::derive_parallel_widths",
)
MTP_DRAFT = ShardRule(
    "draft layers",
    "sharded like the target at draft TP (= TP unless draft_tensor_parallel_size is 1); "
    "MTP eh_proj replicated (nn.Linear)",
    "sharded like the target (the draft worker joins the target's TP group); MTP eh_proj "
    "replicated (nn.Linear)",
    "vllm/config/speculative.py::SpeculativeConfig._verify_and_get_draft_tp; "
    "vllm/model_executor/models/deepseek_mtp.py::DeepSeekMultiTokenPredictorLayer.__init__",
    "sglang/srt/models/deepseek_nextn.py::DeepseekModelNextN.__init__",
)
REPLICATED = ShardRule(
    "norms, routers, biases",
    "replicated on every rank",
    "replicated on every rank",
    "vllm/model_executor/layers/fused_moe/router/gate_linear.py::GateLinear (a ReplicatedLinear)",
    "sglang/srt/models/deepseek_v2.py::MoEGate.__init__",
)

SHARD_RULES: tuple[ShardRule, ...] = (
    ATTENTION_HEADS,
    KV_HEADS,
    MLA_CACHE,
    MLA_PROJECTIONS,
    DENSE_MLP,
    VOCAB,
    EXPERTS,
    MTP_DRAFT,
    REPLICATED,
)

# Both engines pad the vocabulary to a multiple of 64 before splitting it over the ranks.
VOCAB_PADDING = 64

# vLLM `--speculative-config` keys about parallelism; `tensor_parallel_size` is refused there
# (vllm/config/speculative.py::SpeculativeConfig._verify_args).
DRAFT_PARALLEL_KEYS = ("draft_tensor_parallel_size",)


@dataclass(frozen=True)
class CommBuffer:
    """A communication buffer one rank allocates outside the KV cache and the graph pools."""

    name: str
    bytes: int | None
    source: str
    note: str = ""


# vLLM's CustomAllreduce: meta (meta_size() + max_size, 8 MiB default), the staging buffer
# (max(max_size, 2 MiB all-gather, 16 MiB reduce-scatter)) and rank_data (8 MiB). Without NVLink
# multicast the torch symmetric-memory communicator disables itself and max_size stays 8 MiB.
VLLM_CUSTOM_AR_WORLD_SIZES = (2, 4, 6, 8, 16)
VLLM_CUSTOM_AR_BYTES = 8 * MIB + 16 * MIB + 8 * MIB
VLLM_CUSTOM_AR_SOURCE = (
    "vllm/distributed/device_communicators/custom_all_reduce.py::CustomAllreduce.__init__"
)

# SGLang's CustomAllReduceV2 on SM90: per world size the (graph, eager) one-shot push
# thresholds and the largest pull threshold of configs/custom_all_reduce_v2.py::_sm90_configs.
# One symmetric allocation of 2·ws push slots + the pull buffer, each capped at
# SGLANG_CUSTOM_ALL_REDUCE_V2_MAX_SIZE_KB (16 MiB), plus a device table of 131072 × ws uint64
# for graph-captured inputs (custom_all_reduce_v2.py::CustomAllReduceV2._init_workspace).
SGLANG_CAR_V2_SM90: dict[int, tuple[int, int, int]] = {
    2: (16 * MIB, 32 * MIB, 128 * MIB),
    3: (1280 * KIB, 3 * MIB, 128 * MIB),
    4: (384 * KIB, 896 * KIB, 128 * MIB),
    5: (192 * KIB, 384 * KIB, 32 * MIB),
    6: (128 * KIB, 192 * KIB, 32 * MIB),
    7: (128 * KIB, 128 * KIB, 32 * MIB),
    8: (128 * KIB, 128 * KIB, 128 * MIB),
}
SGLANG_CAR_V2_MAX = 16 * MIB
SGLANG_CAR_V2_GRAPH_INPUTS = 131072
SGLANG_CAR_V2_SOURCE = (
    "sglang/srt/distributed/device_communicators/custom_all_reduce_v2.py::"
    "CustomAllReduceV2._init_workspace; configs/custom_all_reduce_v2.py::_sm90_configs"
)

NCCL_NOTE = (
    "not sized: NCCL's own buffers (channels × peers × NCCL_BUFFSIZE, 4 MiB), outside "
    "PyTorch's allocator"
)
NCCL_SOURCE = "NCCL environment docs (NCCL_BUFFSIZE); tp-dp.md §1.3"


def _sglang_car_v2(world: int) -> int | None:
    row = SGLANG_CAR_V2_SM90.get(world)
    if row is None:
        return None
    graph_push, eager_push, pull = row
    push = min(max(graph_push, eager_push), SGLANG_CAR_V2_MAX)
    table = SGLANG_CAR_V2_GRAPH_INPUTS * world * 8
    return 2 * world * push + min(pull, SGLANG_CAR_V2_MAX) + table


def comm_buffers(engine: str, tp: int, capability: tuple[int, int] | None) -> list[CommBuffer]:
    """What one rank of a TP group of `tp` allocates for its collectives (nothing at TP 1)."""
    if tp <= 1:
        return []
    if engine == SGLANG:
        size = _sglang_car_v2(tp) if capability == (9, 0) else None
        note = (
            f"{2 * tp} push slots + 16 MiB pull + graph-input table (SM90)"
            if size is not None
            else "the SM90 table is the one read; other GPUs or TP > 8 are not sized"
        )
        custom = CommBuffer("custom all-reduce v2", size, SGLANG_CAR_V2_SOURCE, note)
    else:
        supported = tp in VLLM_CUSTOM_AR_WORLD_SIZES
        custom = CommBuffer(
            "custom all-reduce",
            VLLM_CUSTOM_AR_BYTES if supported else None,
            VLLM_CUSTOM_AR_SOURCE,
            "8 MiB meta + 16 MiB staging + 8 MiB rank_data (no NVLink multicast)"
            if supported
            else f"TP {tp} is not among {VLLM_CUSTOM_AR_WORLD_SIZES}: custom all-reduce off",
        )
    return [custom, CommBuffer("NCCL", None, NCCL_SOURCE, NCCL_NOTE)]


class Layout(Protocol):
    """What the rules read of a layout (`results.parallel.ParallelLayout` is one; `known` sits
    below `results`, so it names the shape, not the class)."""

    @property
    def tp(self) -> int: ...
    @property
    def dp(self) -> int: ...
    @property
    def ep(self) -> int: ...
    @property
    def dp_attention(self) -> bool: ...
    @property
    def draft_tp(self) -> int | None: ...
    @property
    def attention_tp(self) -> int: ...
    @property
    def world_size(self) -> int: ...
    def describe(self) -> str: ...


@dataclass(frozen=True)
class ModelShape:
    """What the refusal rules read of a model: its head, KV-head and expert counts."""

    heads: int
    kv_heads: int
    mla: bool
    experts: int | None  # routed experts; None for a dense model
    moe_intermediate: int | None = None
    vocab: int | None = None


def engine_layout_refusals(engine: str, layout: Layout) -> list[str]:
    """Refusals that need no model: combinations the engine rejects at startup."""
    out: list[str] = []
    if engine == SGLANG:
        if layout.dp_attention:
            if layout.dp < 2:
                out.append(
                    "--enable-dp-attention needs --dp-size > 1: SGLang makes attn_dp_size = "
                    "dp_size, so DP 1 runs no attention DP "
                    "(sglang/srt/arg_groups/parallel_hook.py::handle_deprecated_dp_attention)"
                )
            elif layout.tp % layout.dp:
                out.append(
                    f"DP attention needs TP divisible by DP: TP {layout.tp}, DP {layout.dp} "
                    "(sglang/srt/arg_groups/parallel_hook.py::handle_data_parallelism)"
                )
        if layout.ep > layout.tp or layout.tp % layout.ep:
            out.append(
                f"--ep-size {layout.ep} must divide --tp-size {layout.tp}: SGLang splits the "
                "TP group into EP × MoE-TP (sglang/srt/runtime_context.py::"
                "derive_parallel_widths)"
            )
    elif layout.draft_tp is not None and layout.draft_tp not in (1, layout.tp):
        out.append(
            f"draft_tensor_parallel_size {layout.draft_tp} must be 1 or the target's TP "
            f"{layout.tp} (vllm/config/speculative.py::SpeculativeConfig."
            "_verify_and_get_draft_tp)"
        )
    return out


def model_layout_refusals(
    engine: str, layout: Layout, model: ModelShape, gpus: int | None = None
) -> list[str]:
    """Refusals that read the model (and the visible GPU count, when one is known)."""
    out = engine_layout_refusals(engine, layout)
    attn_tp = layout.attention_tp if engine == SGLANG else layout.tp
    if model.heads % attn_tp:
        source = (
            "sglang/srt/layers/linear.py::QKVParallelLinear.__init__ (divide)"
            if engine == SGLANG
            else "vllm/config/model.py::ModelConfig.verify_with_parallel_config"
        )
        what = "attention TP" if engine == SGLANG and layout.dp_attention else "TP"
        out.append(f"{what} {attn_tp} does not divide the {model.heads} attention heads ({source})")
    elif not model.mla:
        kv = model.kv_heads
        if (attn_tp >= kv and attn_tp % kv) or (attn_tp < kv and kv % attn_tp):
            out.append(
                f"TP {attn_tp} and the {kv} KV heads: one must divide the other "
                "(vllm/model_executor/layers/linear.py::QKVParallelLinear.__init__, divide)"
            )
    if model.vocab is not None:
        padded = -(-model.vocab // VOCAB_PADDING) * VOCAB_PADDING
        if padded % layout.tp:
            out.append(
                f"TP {layout.tp} does not divide the vocabulary padded to {padded} rows "
                "(vocab_parallel_embedding.py::VocabParallelEmbedding.__init__, divide)"
            )
    if engine == SGLANG and model.experts is not None and model.experts % layout.ep:
        out.append(
            f"EP {layout.ep} does not divide the {model.experts} routed experts "
            "(sglang/srt/layers/moe/fused_moe_triton/layer.py::FusedMoE.__init__)"
        )
    if engine == SGLANG and model.moe_intermediate is not None:
        moe_tp = layout.tp // layout.ep
        if moe_tp and model.moe_intermediate % moe_tp:
            out.append(
                f"MoE TP {moe_tp} does not divide the experts' width {model.moe_intermediate} "
                "(sglang/srt/layers/moe/fused_moe_triton/layer.py::FusedMoE.__init__)"
            )
    if engine == VLLM and layout.ep > 1 and model.experts is None:
        out.append(
            "--enable-expert-parallel needs a MoE model: this one has no experts "
            "(vllm/config/model.py::ModelConfig._verify_with_expert_parallelism)"
        )
    if gpus is not None and layout.world_size > gpus:
        out.append(
            f"{layout.describe()} runs {layout.world_size} ranks but {gpus} GPUs are visible "
            "(vllm/config/parallel.py::ParallelConfig.__post_init__)"
        )
    return out


# vLLM fuses all-reduce + RMSNorm through FlashInfer at TP > 1 on SM90 and SM10x (the -O2/-O3
# pass config: config/vllm.py::enable_allreduce_rms_fusion) up to a message size per TP size
# (compilation/passes/fusion/allreduce_rms_fusion.py::FI_ALLREDUCE_FUSION_MAX_SIZE_MB; the
# docstring in config/compilation.py says 1 MB at SM90 TP 8, the table 0.5), and ends a compile
# range at the token count that size holds (config/vllm.py::VllmConfig._set_compile_ranges).
FI_ALLREDUCE_FUSION_MAX_SIZE_MB: dict[int, dict[int, float]] = {
    90: {2: 64, 4: 2, 8: 0.5},
    100: {2: 64, 4: 32, 8: 1, 16: 64},
}
SGLANG_DP_CHUNK_SOURCE = "sglang/srt/arg_groups/parallel_hook.py::handle_data_parallelism"
SGLANG_DECODE_MAX_BS_SOURCE = "sglang/srt/arg_groups/memory_hook.py::handle_gpu_memory_settings"


def allreduce_fusion_tokens(
    tp: int, capability: tuple[int, int] | None, hidden: int, dtype_bytes: int
) -> int | None:
    """vLLM: the largest token count whose all-reduce is fused with RMSNorm (None: no fusion)."""
    if tp <= 1 or capability is None:
        return None
    family = 100 if capability[0] == 10 else capability[0] * 10 + capability[1]
    size = FI_ALLREDUCE_FUSION_MAX_SIZE_MB.get(family, {}).get(tp)
    return int(size * MIB) // (hidden * dtype_bytes) if size is not None else None


def plan_changes(
    engine: str,
    layout: Layout,
    *,
    capability: tuple[int, int] | None,
    gpu_memory_gib: float | None,
    hidden: int,
    dtype_bytes: int,
    max_tokens: int,
) -> list[str]:
    """What the engine changes in one rank's plan at this layout, with the numbers."""
    out: list[str] = []
    if engine == VLLM:
        fused = allreduce_fusion_tokens(layout.tp, capability, hidden, dtype_bytes)
        if fused is not None:
            split = (
                f"a compile range ends at {fused} tokens"
                if fused < max_tokens
                else f"every size up to max_num_batched_tokens {max_tokens}"
            )
            out.append(
                f"all-reduce + RMSNorm fused (FlashInfer) up to {fused} tokens: {split} "
                "(config/vllm.py::VllmConfig._set_compile_ranges)"
            )
        if layout.dp > 1:
            out.append(
                f"DP {layout.dp}: before each step the ranks agree on one token count (the "
                "largest) and on graph or eager (v1/worker/dp_utils.py::"
                "coordinate_batch_across_dp; MRV2 gpu/dp_utils.py::"
                "sync_cudagraph_and_dp_padding)"
            )
        return out
    if layout.dp_attention:
        out.append(
            f"DP attention: chunked_prefill_size {max_tokens} → {max_tokens // layout.dp} per "
            f"attention-DP rank, the prefill graphs' max_bs clamped to it ({SGLANG_DP_CHUNK_SOURCE})"
        )
        out.append(
            "DP attention: every rank replays the decode graph of the largest rank's batch "
            "(model_executor/runner/decode_cuda_graph_runner.py, require_mlp_tp_gather)"
        )
    if gpu_memory_gib is not None and 60 <= gpu_memory_gib < 160:
        max_bs = 256 if layout.tp < 4 else 512
        out.append(
            f"decode cuda_graph_max_bs defaults to {max_bs} at TP {layout.tp} on this GPU "
            f"(256 below TP 4, 512 from TP 4; {SGLANG_DECODE_MAX_BS_SOURCE})"
        )
    return out


# vLLM refuses to start when the KV cache cannot hold one request of max_model_len tokens
# (default: the config's max_position_embeddings).
VLLM_ONE_REQUEST_SOURCE = "vllm/v1/core/kv_cache_planning.py::_check_enough_kv_cache_memory"
