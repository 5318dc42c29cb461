"""SGLang's default cuda_graph_max_bs per release, GPU and TP, and the draft-extend graph of
the backends the rig plans as another family (trtllm_mha), release by release (issue 28)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.known.profiles import PROFILES
from eaglegraph.rig.gpus import get_gpu
from eaglegraph.rig.sglang_plan import draft_extend_graph, sglang_gpu_max_bs

pytestmark = pytest.mark.fast


# (profile, GPU, TP) -> default cuda_graph_max_bs; None: the release sets none (0.5.1-0.5.2
# above 35 GB, where the fixed list decides). Tiers from `_handle_gpu_memory_settings`
# (0.5.19+ `memory_hook.handle_gpu_memory_settings`); 0.5.2 from `ServerArgs.__post_init__`.
@pytest.mark.parametrize(
    ("profile", "gpu", "tp", "max_bs"),
    [
        ("sglang-pre-10892", "RTX-4090", 1, 8),
        ("sglang-pre-10892", "RTX-4090", 4, 80),
        ("sglang-pre-10892", "H100", 1, None),
        ("sglang-0.5.3", "RTX-4090", 1, 16),
        ("sglang-0.5.4", "RTX-4090", 1, 24),
        ("sglang-0.5.15", "RTX-4090", 4, 80),
        ("sglang-0.5.20", "RTX-4090", 1, 48),
        ("sglang-0.5.20", "RTX-4090", 4, 160),
        ("sglang-0.5.4", "L40S", 1, 32),
        ("sglang-0.5.4", "L40S", 8, 160),
        ("sglang-0.5.11", "H100", 2, 256),
        ("sglang-0.5.11", "H100", 4, 512),
        ("sglang-current", "H200", 1, 256),
        ("sglang-current", "B200", 1, 512),
        ("sglang-current", "L4", 1, 48),
    ],
)
def test_default_max_bs(profile: str, gpu: str, tp: int, max_bs: int | None) -> None:
    assert sglang_gpu_max_bs(get_gpu(gpu), tp, PROFILES[profile]) == max_bs


@pytest.mark.parametrize(
    ("profile", "topk", "graph"),
    [
        ("sglang-0.5.4", 1, True),  # EAGLEWorker: every backend with a draft-extend backend
        ("sglang-0.5.11", 1, False),  # EAGLEWorkerV2: not on the allowlist yet
        ("sglang-0.5.11", 2, True),  # a tree falls back to EAGLEWorker
        ("sglang-0.5.13", 1, True),  # TRTLLMHAAttnBackend joins the allowlist
        ("sglang-current", 1, True),
    ],
)
def test_trtllm_mha_draft_extend_per_release(profile: str, topk: int, graph: bool) -> None:
    # the rig plans trtllm_mha as flash_attn, whose own rule differs from 0.5.13 to 0.5.22
    assert draft_extend_graph("flash_attn", PROFILES[profile], topk, "trtllm_mha") is graph
    fa = draft_extend_graph("flash_attn", PROFILES[profile], topk)
    assert fa is (profile in ("sglang-0.5.4", "sglang-current") or topk > 1)


@pytest.mark.parametrize("profile", ["sglang-0.5.4", "sglang-0.5.11", "sglang-0.5.15"])
def test_trtllm_mla_draft_extend_on_both_workers(profile: str) -> None:
    # on EAGLEWorkerV2's allowlist (TRTLLMMLABackend) since 0.5.8, before it was the default
    assert draft_extend_graph("flash_attn", PROFILES[profile], 1, "trtllm_mla") is True


@pytest.mark.parametrize(("engine", "mode"), [("0.5.12", "NONE"), ("0.5.16", "FULL")])
def test_inspect_plans_the_default_trtllm_mha_extend(engine: str, mode: str) -> None:
    # B200, topk given: SGLang defaults to trtllm_mha (`_get_default_attn_backend`)
    args = ["inspect", "llama3.1-8b-eagle3", "--json", "--engine", f"sglang=={engine}"]
    args += ["--gpu", "B200", "-K", "3", "--max-num-seqs", "8", "--speculative-eagle-topk", "1"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code in (0, 1), result.stderr
    plan = json.loads(result.stdout)["plan"]
    assert any("attention backend trtllm_mha" in d for d in plan["defaults"])
    extend = next(p for p in plan["phases"] if p["phase"] == "draft_prefill")
    assert extend["mode"] == mode
    if mode == "FULL":
        assert extend["descriptors"] == [[4 * b, b] for b in range(1, 9)]


@pytest.mark.parametrize("engine", ["0.5.16", "0.5.23"])
def test_deepseek_trtllm_mla_default_has_no_prefill_graphs(engine: str) -> None:
    # `_disable_prefill_cuda_graph_for_deepseek_trtllm_mla` (0.5.15+): the draft's breakable
    # prefill graphs go too; the draft extend keeps its FULL graphs (TRTLLMMLABackend)
    args = ["inspect", "tiny-deepseek-mtp", "--json", "--engine", f"sglang=={engine}"]
    result = CliRunner().invoke(cli, [*args, "--gpu", "B200", "--max-num-seqs", "4"])
    assert result.exit_code in (0, 1), result.stderr
    plan = json.loads(result.stdout)["plan"]
    assert any(d.startswith("attention backend trtllm_mla ") for d in plan["defaults"])
    phases = {p["phase"]: p for p in plan["phases"]}
    assert "draft_prompt_prefill" not in phases
    assert phases["draft_prefill"]["mode"] == "FULL"
    explicit = CliRunner().invoke(cli, [*args, "--gpu", "B200", "--mode", "BREAKABLE"])
    assert "draft_prompt_prefill" in {
        p["phase"] for p in json.loads(explicit.stdout)["plan"]["phases"]
    }
