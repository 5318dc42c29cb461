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


# `_auto_choose_speculative_params`: a launch without --speculative-num-steps (no -K here);
# the default backend is chosen before the auto params from 0.5.4 (no topk seen: fa3 on
# Hopper), after them in 0.5.1-0.5.3 (`ModelRunner.model_specific_adjustment`: a tree, so
# flashinfer); EAGLEWorker's draft extend holds num_steps + 1 tokens, EAGLEWorkerV2's (0.5.13+)
# num_draft_tokens
@pytest.mark.parametrize(
    ("preset", "engine", "k", "topk", "ndt", "backend", "extend_width"),
    [
        ("llama3.1-8b-eagle3", "0.5.16", 5, 4, 8, "fa3", None),  # fa3 extend eager: BCG ladder
        ("llama3.1-8b-eagle3", "0.5.23", 5, 4, 8, "fa3", 8),
        ("llama3.1-8b-eagle3", "0.5.2", 5, 4, 8, "flashinfer", 6),
        ("tiny-deepseek-mtp", "0.5.9", 3, 1, 4, "fa3", 4),
    ],
)
def test_launch_without_steps_gets_the_auto_params(
    preset: str, engine: str, k: int, topk: int, ndt: int, backend: str, extend_width: int | None
) -> None:
    args = ["inspect", preset, "--json", "--engine", f"sglang=={engine}", "--gpu", "H100"]
    result = CliRunner().invoke(cli, [*args, "--max-num-seqs", "4"])
    assert result.exit_code in (0, 1), result.stderr
    plan = json.loads(result.stdout)["plan"]
    assert plan["num_speculative_tokens"] == k
    assert any(d.startswith(f"speculative steps {k}, topk {topk}") for d in plan["defaults"])
    assert any(d.startswith(f"attention backend {backend} ") for d in plan["defaults"])
    phases = {p["phase"]: p for p in plan["phases"]}
    assert phases["target"]["descriptors"] == [[ndt * b, b] for b in (1, 2, 3, 4)]
    assert phases["draft_decode"]["descriptors"] == [[topk * b, b] for b in (1, 2, 3, 4)]
    extend = phases["draft_prefill"]
    if extend_width is None:
        assert extend["mode"] == "BREAKABLE"
    else:
        assert extend["descriptors"] == [[extend_width * b, b] for b in (1, 2, 3, 4)]


def test_dflash_keeps_its_own_steps() -> None:
    # `_handle_dflash` has no auto params: the draft's block size decides (as before)
    args = ["inspect", "tiny-qwen3-dflash", "--json", "--framework", "sglang"]
    result = CliRunner().invoke(cli, [*args, "--max-num-seqs", "4"])
    assert result.exit_code in (0, 1), result.stderr
    plan = json.loads(result.stdout)["plan"]
    assert not any(d.startswith("speculative steps") for d in plan["defaults"])
