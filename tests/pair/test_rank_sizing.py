"""One rank of a TP/DP/EP layout, checked against numbers derived by hand from the engines'
own sharding rules (each test cites the wheel's file::function it follows)."""

from __future__ import annotations

from pathlib import Path

import pytest

from eaglegraph.errors import BadInput
from eaglegraph.pair.rank_sizing import (
    check_layout,
    fit_finding,
    layout_refusals,
    model_shape,
    size_ranks,
)
from eaglegraph.probes.inspection import InspectRequest
from eaglegraph.results.parallel import ParallelLayout
from eaglegraph.results.ranks import RankSizing
from eaglegraph.rig.estimate import GPU_MEMORY_UTILIZATION
from eaglegraph.rig.options import PlanChoices

pytestmark = pytest.mark.fast

PUBLIC = Path(__file__).parents[1] / "fixtures" / "configs" / "public"
MIB = 1 << 20

# DeepSeek-V3 (the deepseek-v3-mtp preset: its config, bfloat16, one MTP module)
H, LAYERS, DENSE = 7168, 61, 3
HEADS, Q_LORA, KV_LORA, NOPE, ROPE, V_DIM = 128, 1536, 512, 128, 64, 128
EXPERTS, MOE_WIDTH, WIDTH, VOCAB = 256, 2048, 18432, 129280


def _sized(
    model: str | Path, layout: ParallelLayout, engine: str = "vllm", gpu: str = "H100"
) -> RankSizing:
    inspection = InspectRequest(str(model), plan=PlanChoices(framework=engine, gpu=gpu)).resolve()
    report = inspection.run()
    options = inspection.options
    return size_ranks(
        inspection.pair,
        layout,
        engine,
        report.memory,
        options.gpu,
        options.max_num_batched_tokens,
        GPU_MEMORY_UTILIZATION,
    )


def _mla_attention_on_rank(tp: int) -> int:
    """vllm/model_executor/models/deepseek_v2.py::DeepseekV2MLAAttention.__init__: q_a_proj and
    kv_a_proj_with_mqa are ReplicatedLinear (with their norms); q_b_proj, kv_b_proj
    (ColumnParallelLinear) and o_proj (RowParallelLinear) hold heads / TP."""
    replicated = H * Q_LORA + Q_LORA + H * (KV_LORA + ROPE) + KV_LORA
    split = Q_LORA * HEADS * (NOPE + ROPE) + KV_LORA * HEADS * (NOPE + V_DIM) + HEADS * V_DIM * H
    return replicated + split // tp


def _moe_on_rank(tp: int, ep: int) -> int:
    """fused_moe/expert_map_manager.py::determine_expert_map: 256 / EP experts per rank (gate,
    up, down each); the shared expert is a DeepseekV2MLP (column/row parallel, / TP); the router
    (GateLinear, a ReplicatedLinear) and e_score_correction_bias whole."""
    experts = EXPERTS // ep * 3 * H * MOE_WIDTH
    shared = 3 * H * MOE_WIDTH // tp
    return experts + shared + EXPERTS * H + EXPERTS


def _vocab_on_rank(tp: int) -> int:
    """vocab_parallel_embedding.py::VocabParallelEmbedding.__init__: the vocabulary padded to a
    multiple of 64 (129280 already is), / TP rows, for the embedding and for the lm_head."""
    return 2 * (VOCAB // tp) * H


def test_deepseek_v3_mtp_at_tp8_ep8_matches_vllms_sharding_rules() -> None:
    r = _sized("deepseek-v3-mtp", ParallelLayout(tp=8, ep=8), gpu="H200")
    tp, ep = 8, 8
    dense = DENSE * (3 * H * WIDTH // tp)
    moe = (LAYERS - DENSE) * _moe_on_rank(tp, ep)
    norms = LAYERS * 2 * H + H
    target = LAYERS * _mla_attention_on_rank(tp) + dense + moe + norms + _vocab_on_rank(tp)
    assert r.target is not None and r.target.weight_bytes is not None
    assert abs(r.target.weight_bytes - 2 * target) <= 16  # bfloat16
    # deepseek_mtp.py::DeepSeekMultiTokenPredictorLayer: one MoE decoder layer, eh_proj an
    # nn.Linear (whole), enorm/hnorm/shared_head.norm, its own embedding and head (/ TP)
    mtp = _mla_attention_on_rank(tp) + _moe_on_rank(tp, ep) + 2 * H
    mtp += 2 * H * H + 3 * H + _vocab_on_rank(tp)
    assert r.draft is not None and r.draft.weight_bytes is not None
    assert abs(r.draft.weight_bytes - 2 * mtp) <= 16
    # config/model.py::ModelConfig.get_num_kv_heads: MLA → one latent row on every rank
    assert (r.target.attention_heads, r.target.kv_heads) == (16, None)
    assert r.target.kv_bytes_per_token == LAYERS * (KV_LORA + ROPE) * 2
    assert r.draft.kv_bytes_per_token == 1 * (KV_LORA + ROPE) * 2
    assert (r.target.experts, r.target.experts_split) == (32, "EP 8")
    assert r.target.vocab_rows == 16160
    # custom_all_reduce.py::CustomAllreduce.__init__: 8 MiB meta + 16 MiB staging + 8 MiB
    assert [(c.name, c.bytes) for c in r.comm] == [("custom all-reduce", 32 * MIB), ("NCCL", None)]
    assert r.world_size == 8 and r.layout_description == "TP 8 · EP 8"
    # SGLang at --tp-size 8 --ep-size 8: the same shares (FusedMoE.__init__: 256 / EP 8 experts,
    # each whole since MoE TP = 8 / 8 = 1; derive_parallel_widths), its own comm buffers
    sglang = _sized("deepseek-v3-mtp", ParallelLayout(tp=8, ep=8), engine="sglang", gpu="H200")
    assert sglang.target is not None and sglang.draft is not None
    assert sglang.target.weight_bytes == r.target.weight_bytes
    assert sglang.draft.weight_bytes == r.draft.weight_bytes
    assert sglang.target.experts_split == "EP 8, width / MoE TP 1"


def test_fp8_deepseek_v3_does_not_fit_at_tp4_on_h200_and_needs_tp8() -> None:
    """671B in FP8 is ~630 GiB: a quarter is over an H200's 0.9 × 139.8 GiB, an eighth is not."""
    r = _sized(PUBLIC / "deepseek-v3", ParallelLayout(tp=4, ep=4), gpu="H200")
    assert r.fits is False and r.kv_budget_bytes is None and r.needs_tp == 8
    assert r.shortfall_bytes is not None and r.shortfall_bytes > 0
    finding = fit_finding(r)
    assert finding is not None and finding.id == "layout-does-not-fit"
    assert finding.severity == "error"
    assert finding.message.startswith("does not fit at TP=4 on H200: needs TP ≥ 8")
    assert "GiB usable (0.9 × 139.8 GiB)" in finding.message
    fits = _sized(PUBLIC / "deepseek-v3", ParallelLayout(tp=8, ep=8), gpu="H200")
    assert fits.fits is True and fits.kv_budget_bytes is not None and fits.kv_budget_bytes > 0
    assert fit_finding(fits) is None


def test_fp8_deepseek_v3_on_h100_needs_tp16_not_tp8() -> None:
    """What is true on 80 GB cards: an eighth of ~630 GiB (~79 GiB) is over 0.9 × 79.2 GiB, and
    TP 9–15 do not divide the 128 heads (ModelConfig.verify_with_parallel_config)."""
    r = _sized(PUBLIC / "deepseek-v3", ParallelLayout(tp=8, ep=8), gpu="H100")
    assert r.fits is False and r.needs_tp == 16
    finding = fit_finding(r)
    assert finding is not None and "needs TP ≥ 16" in finding.message


def test_llama_eagle3_at_tp2_halves_the_kv_heads() -> None:
    """linear.py::QKVParallelLinear.__init__: 8 KV heads / TP 2 = 4 per rank, 32 heads → 16."""
    r = _sized("llama3.1-8b-eagle3", ParallelLayout(tp=2))
    assert r.target is not None and r.draft is not None
    assert (r.target.attention_heads, r.target.kv_heads, r.target.kv_head_replicas) == (16, 4, 1)
    assert r.target.kv_bytes_per_token == 2 * 32 * 4 * 128 * 2
    assert r.draft.kv_bytes_per_token == 2 * 1 * 4 * 128 * 2
    single = _sized("llama3.1-8b-eagle3", ParallelLayout())
    assert single.target is not None and single.target.kv_bytes_per_token == 2 * 32 * 8 * 128 * 2
    assert r.fits is True and r.kv_budget_bytes is not None
    assert single.kv_budget_bytes is not None and r.kv_budget_bytes > single.kv_budget_bytes


def test_kv_heads_are_replicated_when_tp_exceeds_them() -> None:
    """ModelConfig.get_num_kv_heads: max(1, 8 // 16) = 1 per rank; QKVParallelLinear:
    num_kv_head_replicas = 16 / 8 = 2."""
    r = _sized("llama3.1-8b-eagle3", ParallelLayout(tp=16))
    assert r.target is not None
    assert (r.target.kv_heads, r.target.kv_head_replicas) == (1, 2)
    assert r.target.kv_bytes_per_token == 2 * 32 * 1 * 128 * 2


def test_sglang_dp_attention_keeps_heads_whole_and_experts_split_by_ep() -> None:
    """runtime_context.py::derive_parallel_widths: attention TP = 8 / 8 = 1 (all 128 heads on a
    rank); FusedMoE.__init__: 256 / EP 8 = 32 experts; CustomAllReduceV2 at TP 8 on SM90:
    16 push slots × 128 KiB + a 16 MiB pull buffer + a 131072 × 8 × 8-byte table = 26 MiB."""
    r = _sized(
        PUBLIC / "deepseek-v3",
        ParallelLayout(tp=8, dp=8, ep=8, dp_attention=True),
        engine="sglang",
        gpu="H200",
    )
    assert r.target is not None
    assert r.target.attention_heads == 128 and r.target.experts == 32
    assert r.world_size == 8
    assert r.comm[0].bytes == 16 * 128 * 1024 + 16 * MIB + 131072 * 8 * 8


def test_refusals_name_the_engine_rule() -> None:
    pair = InspectRequest("deepseek-v3-mtp").resolve().pair
    assert layout_refusals(pair, ParallelLayout(tp=8, ep=8), "vllm") == []
    assert layout_refusals(pair, ParallelLayout(tp=8, ep=8), "sglang") == []
    heads, vocab = layout_refusals(pair, ParallelLayout(tp=6), "vllm")
    assert "TP 6 does not divide the 128 attention heads" in heads
    assert "ModelConfig.verify_with_parallel_config" in heads
    assert "vocabulary padded to 129280 rows" in vocab
    assert "6 ranks but 4 GPUs" in layout_refusals(pair, ParallelLayout(tp=6), "vllm", gpus=4)[-1]
    # SGLang: EP must divide the routed experts (FusedMoE.__init__); 256 % 16 == 0, TP 16 fine
    assert layout_refusals(pair, ParallelLayout(tp=16, ep=16), "sglang") == []
    # GLM-4.5-Air: 96 heads, 8 KV heads; TP 12 divides the heads, not the KV heads
    glm = InspectRequest(str(PUBLIC / "glm-4.5-air")).resolve().pair
    refused = layout_refusals(glm, ParallelLayout(tp=12), "vllm")
    assert any("TP 12 and the 8 KV heads: one must divide the other" in r for r in refused)
    with pytest.raises(BadInput, match="one must divide the other"):
        check_layout(glm, ParallelLayout(tp=12), "vllm")


def test_a_layout_that_does_not_fit_never_prints_a_negative_budget() -> None:
    from click.testing import CliRunner

    from eaglegraph.cli import cli

    result = CliRunner().invoke(cli, ["inspect", "deepseek-v3-mtp", "--no-color"])
    assert result.exit_code == 1  # the finding is an error (--fail-on error)
    assert "KV budget" in result.output and "does not fit" in result.output
    assert "-1." not in result.output.split("Memory")[1].split("Findings")[0]
    assert "does not fit at TP=1 on H100: needs TP ≥ 32" in " ".join(result.output.split())


def test_old_saved_inspect_runs_still_load_and_never_show_a_negative_budget() -> None:
    """A run saved before per-rank sizing has no `ranks` and may hold a negative single-GPU
    budget: it loads, and the view says "does not fit" instead of printing the figure."""
    from eaglegraph.reports.console import plain_console
    from eaglegraph.reports.runfile import render_run
    from eaglegraph.results import document, run_from_document

    report = InspectRequest("deepseek-v3-mtp").resolve().run()
    doc = document(report)
    doc.pop("ranks")
    doc["memory"].pop("kv_shortfall_bytes")
    doc["memory"]["kv_budget_bytes"] = -(5 << 40)
    old = run_from_document(doc)
    assert old.ranks is None and old.memory.kv_budget_bytes == -(5 << 40)
    console = plain_console(80)
    render_run(old, console)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "does not fit" in text and "-5.00 TiB" not in text
    again = run_from_document(document(report))
    assert again.ranks == report.ranks  # the layout, sides and buffers round-trip


def test_a_kv_cache_shorter_than_one_request_is_a_warning_vllm_would_refuse() -> None:
    """kv_cache_planning.py::_check_enough_kv_cache_memory: Llama-3.1-8B + EAGLE-3 on an L4
    (22 GiB) leaves room for fewer than 131072 tokens at TP 1, enough at TP 2."""
    from eaglegraph.pair.rank_sizing import context_finding

    one = _sized("llama3.1-8b-eagle3", ParallelLayout(), gpu="L4")
    assert one.fits is True and one.kv_budget_tokens is not None
    assert one.kv_budget_tokens < 131072 and one.max_model_len_short == 131072
    finding = context_finding(one)
    assert finding is not None and finding.severity == "warning"
    assert f"--max-model-len ≤ {one.kv_budget_tokens:,}" in (finding.fix or "")
    two = _sized("llama3.1-8b-eagle3", ParallelLayout(tp=2), gpu="L4")
    assert two.max_model_len_short is None and context_finding(two) is None
    sglang = _sized("llama3.1-8b-eagle3", ParallelLayout(), engine="sglang", gpu="L4")
    assert sglang.max_model_len_short is None  # the check modelled is vLLM's


def test_a_dense_draft_does_not_inherit_expert_parallelism(tmp_path: Path) -> None:
    """speculative.py::SpeculativeConfig.create_draft_parallel_config: EP only for MoE drafts,
    so a dense EAGLE-3 draft beside a MoE target is no reason to refuse --enable-expert-parallel
    (ModelConfig._verify_with_expert_parallelism refuses a dense *target*)."""
    draft_config = PUBLIC.parent / "specforge-qwen3-30b-a3b-eagle3.1-draft.json"
    for side, config in (
        ("target", PUBLIC / "qwen3-30b-a3b" / "config.json"),
        ("draft", draft_config),
    ):
        (tmp_path / side).mkdir()
        (tmp_path / side / "config.json").write_text(config.read_text())
    pair = InspectRequest(str(tmp_path)).resolve().pair
    assert pair.draft is not None and model_shape(pair.draft).experts is None
    assert layout_refusals(pair, ParallelLayout(tp=4, ep=4), "vllm") == []
    dense = InspectRequest("llama3.1-8b-eagle3").resolve().pair
    (refused,) = layout_refusals(dense, ParallelLayout(tp=4, ep=4), "vllm")
    assert "needs a MoE model" in refused and not refused.startswith("draft")
