"""known/parallel: the engines' per-rank communication buffers and layout refusals, as read
from the vLLM 0.33.0 and SGLang 0.5.23 wheels (each row cites its file::function)."""

from __future__ import annotations

import pytest

from eaglegraph.known import parallel as known
from eaglegraph.results.parallel import ParallelLayout

pytestmark = pytest.mark.fast

MIB, KIB = 1 << 20, 1 << 10
TABLE = 131072 * 8  # CustomAllReduceV2's graph-input table: 131072 rows × uint64 per rank


@pytest.mark.parametrize(
    ("tp", "expected"),
    [
        # configs/custom_all_reduce_v2.py::_sm90_configs, slots capped at 16 MiB:
        (2, 2 * 2 * 16 * MIB + 16 * MIB + 2 * TABLE),  # push max(16, 32) MiB → 16
        (4, 2 * 4 * 896 * KIB + 16 * MIB + 4 * TABLE),  # eager push 896 KiB
        (8, 2 * 8 * 128 * KIB + 16 * MIB + 8 * TABLE),
    ],
)
def test_sglang_custom_all_reduce_v2_per_rank_on_sm90(tp: int, expected: int) -> None:
    custom, nccl = known.comm_buffers("sglang", tp, (9, 0))
    assert custom.bytes == expected and "_init_workspace" in custom.source
    assert nccl.bytes is None and "NCCL_BUFFSIZE" in nccl.note


def test_sglang_buffers_off_the_sm90_table_are_not_guessed() -> None:
    (custom, _) = known.comm_buffers("sglang", 8, (10, 0))
    assert custom.bytes is None and "SM90" in custom.note


def test_vllm_custom_all_reduce_is_32_mib_on_its_world_sizes() -> None:
    """custom_all_reduce.py::CustomAllreduce.__init__: meta 8 MiB (+ meta_size), staging
    max(8, 2, 16) MiB, rank_data 8 MiB; only world sizes 2, 4, 6, 8, 16."""
    assert known.comm_buffers("vllm", 1, (9, 0)) == []
    for tp in (2, 4, 8):
        assert known.comm_buffers("vllm", tp, (9, 0))[0].bytes == 32 * MIB
    assert known.comm_buffers("vllm", 3, (9, 0))[0].bytes is None


def test_rules_read_the_model() -> None:
    dense = known.ModelShape(heads=32, kv_heads=8, mla=False, experts=None, vocab=128256)
    assert known.model_layout_refusals("vllm", ParallelLayout(tp=8), dense) == []
    assert known.model_layout_refusals("vllm", ParallelLayout(tp=16), dense) == []  # replicas
    (ep,) = known.model_layout_refusals("vllm", ParallelLayout(tp=2, ep=2), dense)
    assert "needs a MoE model" in ep and "_verify_with_expert_parallelism" in ep
    moe = known.ModelShape(128, 128, True, experts=160, moe_intermediate=1536, vocab=102400)
    assert known.model_layout_refusals("sglang", ParallelLayout(tp=8, ep=8), moe) == []
    (experts,) = known.model_layout_refusals("sglang", ParallelLayout(tp=64, ep=64), moe)
    assert "EP 64 does not divide the 160 routed experts" in experts
    # vLLM splits 160 experts unevenly instead (determine_expert_map): no refusal
    assert known.model_layout_refusals("vllm", ParallelLayout(tp=64, ep=64), moe) == []


def test_dp_attention_reads_attention_tp() -> None:
    """Under DP attention the heads are split over TP / DP (derive_attn_tp_size)."""
    shape = known.ModelShape(heads=12, kv_heads=12, mla=True, experts=None, vocab=1024)
    layout = ParallelLayout(tp=8, dp=2, dp_attention=True)  # attention TP 4 divides 12
    assert known.model_layout_refusals("sglang", layout, shape) == []
    (heads,) = known.model_layout_refusals("sglang", ParallelLayout(tp=8), shape)
    assert "TP 8 does not divide the 12 attention heads" in heads


def test_every_shard_rule_cites_both_wheels() -> None:
    for rule in known.SHARD_RULES:
        for engine in ("vllm", "sglang"):
            assert rule.rule(engine)
            assert rule.source(engine).startswith(("vllm/", "sglang/"))


def test_plan_changes_at_a_layout() -> None:
    """vLLM: FI_ALLREDUCE_FUSION_MAX_SIZE_MB[90][8] = 0.5 MiB over 7168 × 2 bytes a token = 36
    tokens (VllmConfig._set_compile_ranges); SGLang DP attention divides chunked_prefill_size
    by DP (handle_data_parallelism) and picks decode max_bs 512 from TP 4 on an 80 GB card."""
    (fused,) = known.plan_changes(
        "vllm",
        ParallelLayout(tp=8, ep=8),
        capability=(9, 0),
        gpu_memory_gib=79.2,
        hidden=7168,
        dtype_bytes=2,
        max_tokens=8192,
    )
    assert "up to 36 tokens: a compile range ends at 36 tokens" in fused
    assert known.allreduce_fusion_tokens(1, (9, 0), 7168, 2) is None
    assert known.allreduce_fusion_tokens(8, (8, 0), 7168, 2) is None  # A100: no fusion
    chunk, decode, max_bs = known.plan_changes(
        "sglang",
        ParallelLayout(tp=8, dp=8, ep=8, dp_attention=True),
        capability=(9, 0),
        gpu_memory_gib=79.2,
        hidden=7168,
        dtype_bytes=2,
        max_tokens=8192,
    )
    assert "chunked_prefill_size 8192 → 1024 per attention-DP rank" in chunk
    assert "largest rank's batch" in decode and "defaults to 512 at TP 8" in max_bs
