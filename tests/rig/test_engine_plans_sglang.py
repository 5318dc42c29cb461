"""SGLang tree drafting (EAGLE topk > 1) in the plan, pinned to the 0.5.23 wheel.

Per request, `speculative/spec_utils.py::resolve_num_tokens_per_req` gives the draft decode
`speculative_eagle_topk` tokens (`EAGLEDraftCudaGraphRunner.__init__`: captured_req_width), the
draft extend and target verify `speculative_num_draft_tokens`
(`EAGLEDraftExtendCudaGraphRunner.__init__`); the batch sizes are
`base_cuda_graph_runner.py::get_batch_sizes_to_capture` over
`cuda_graph_hook.py::generate_decode_cuda_graph_batch_sizes` (the speculative list), capped by
max_running_requests. Topk 1 keeps num_draft_tokens = num_steps + 1
(`speculative_hook.py::_handle_eagle_family`).
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.errors import BadInput
from eaglegraph.rig.options import PlanChoices, resolve_plan_options
from eaglegraph.rig.plan import build_plan

pytestmark = pytest.mark.fast


def _pairs(topk: int | None, tokens: int | None, k: int = 3, r: int = 4) -> dict[str, list]:
    opts = resolve_plan_options(
        PlanChoices(
            framework="sglang", gpu="H100", attention_backend="fa3", max_num_seqs=r,
            num_speculative_tokens=k, eagle_topk=topk, num_draft_tokens=tokens,
        )
    )  # fmt: skip
    plan = build_plan(opts)
    return {
        p.phase: [[d.num_tokens, d.num_reqs] for d in p.descriptors if d.num_reqs is not None]
        for p in plan.phases
    }


def test_tree_widths_per_phase() -> None:
    got = _pairs(topk=4, tokens=8)
    assert got["target"] == [[8, 1], [16, 2], [24, 3], [32, 4]]  # num_draft_tokens per request
    assert got["draft_decode"] == [[4, 1], [8, 2], [12, 3], [16, 4]]  # topk per request
    assert got["draft_prefill"] == [[8, 1], [16, 2], [24, 3], [32, 4]]  # draft extend (FA)


def test_a_chain_is_num_steps_plus_one() -> None:
    got = _pairs(topk=1, tokens=None)
    assert got["target"] == [[4, 1], [8, 2], [12, 3], [16, 4]]
    assert got["draft_decode"] == [[1, 1], [2, 2], [3, 3], [4, 4]]


@pytest.mark.parametrize(
    ("choices", "message"),
    [
        (dict(framework="sglang", eagle_topk=4), "needs --speculative-num-draft-tokens"),
        (dict(framework="sglang", eagle_topk=2, num_draft_tokens=9), "exceeds the tree's 7"),
        (dict(framework="vllm", eagle_topk=2, num_draft_tokens=4), "is SGLang's"),
    ],
)
def test_bad_trees_are_refused(choices: dict, message: str) -> None:
    with pytest.raises(BadInput, match=message):
        resolve_plan_options(PlanChoices(num_speculative_tokens=3, **choices))


def test_rig_commands_refuse_trees_in_one_line() -> None:
    args = ["--framework", "sglang", "--speculative-eagle-topk", "4"]
    args += ["--speculative-num-draft-tokens", "8"]
    result = CliRunner().invoke(cli, ["probe", "tiny-llama-eagle3", *args])
    assert result.exit_code == 2
    assert "planned by `eaglegraph inspect`" in result.stderr


# The draft's two multi-token passes, pinned to the 0.5.23 wheel:
# - draft EXTEND after verify: `eagle_draft_extend_cuda_graph_runner.py::
#   EAGLEDraftExtendCudaGraphRunner.__init__` captures one FULL graph per `capture_bs`
#   (`get_batch_sizes_to_capture`, the verify list) at captured_req_width =
#   `resolve_num_tokens_per_req(phase="draft_extend")` = speculative_num_draft_tokens tokens per
#   request (`::prepare_forward_batch`: num_tokens = bs * captured_req_width); which backends
#   have the runner: `eagle_worker_v2.py::EAGLEWorkerV2._capture_cuda_graphs`.
# - draft PROMPT prefill: breakable graphs over the prefill token ladder from
#   `eagle_worker_v2.py::EAGLEWorkerV2.init_cuda_graphs`
#   (`init_prefill_cuda_graph(force_for_draft_worker=True)` when the prefill backend is
#   BREAKABLE); without a draft-extend runner the extend runs on them
#   (`model_runner.py::ModelRunner.forward`: `is_extend(include_draft_extend_v2=True)`).
def _draft_passes(
    profile: str, backend: str, k: int = 3, r: int = 4, **kw: object
) -> tuple[str, list[list[int | None]], str | None, list[list[int | None]]]:
    opts = resolve_plan_options(
        PlanChoices(
            behavior=profile, gpu="H100", attention_backend=backend, max_num_seqs=r,
            num_speculative_tokens=k, **kw,  # type: ignore[arg-type]
        )
    )  # fmt: skip
    plan = build_plan(opts)
    extend = plan.phase("draft_prefill")
    prompt = next((p for p in plan.outside_step if p.phase == "draft_prompt_prefill"), None)
    return (
        extend.mode.name,
        [[d.num_tokens, d.num_reqs] for d in extend.descriptors],
        prompt.mode.name if prompt else None,
        [[d.num_tokens, d.num_reqs] for d in prompt.descriptors] if prompt else [],
    )


# (profile, backend, K, extend mode, prompt prefill graphs?) per the flags' releases
@pytest.mark.parametrize(
    ("profile", "backend", "k", "extend_mode", "prompt"),
    [
        ("sglang-current", "flash_attn", 3, "FULL", True),  # FA runner since 0.5.23
        ("sglang-current", "flashinfer", 5, "FULL", True),
        ("sglang-current", "triton", 2, "FULL", True),
        ("sglang-0.5.15", "flashinfer", 3, "FULL", True),
        ("sglang-0.5.15", "flash_attn", 3, "BREAKABLE", True),  # no FA runner: the prompt's BCG
        ("sglang-0.5.14", "flashinfer", 3, "FULL", False),  # BCG opt-in before 0.5.15
        ("sglang-0.5.11", "flash_attn", 3, "NONE", False),  # EAGLEWorkerV2: eager, no BCG
        ("sglang-0.5.11", "triton", 4, "FULL", False),
        ("sglang-0.5.4", "flash_attn", 3, "FULL", False),  # EAGLEWorker: every backend
    ],
)
def test_draft_extend_full_per_bs_apart_from_prompt_prefill(
    profile: str, backend: str, k: int, extend_mode: str, prompt: bool
) -> None:
    mode, extend, prompt_mode, ladder = _draft_passes(profile, backend, k=k)
    assert mode == extend_mode
    if extend_mode == "FULL":  # one graph per verify batch size, K+1 tokens each
        assert extend == [[b * (k + 1), b] for b in (1, 2, 3, 4)]
    elif extend_mode == "BREAKABLE":  # the prompt prefill's graphs, by tokens
        assert extend == ladder and all(reqs is None for _, reqs in extend)
    else:
        assert extend == []
    assert (prompt_mode == "BREAKABLE") is prompt
    assert bool(ladder) is prompt and all(reqs is None for _, reqs in ladder)
    if prompt:  # generate_prefill_cuda_graph_batch_sizes up to chunked prefill 8192 (H100)
        assert ladder[-1] == [8192, None] and len(ladder) == 58


def test_tree_draft_extend_at_num_draft_tokens() -> None:
    mode, extend, _, _ = _draft_passes("sglang-current", "flash_attn", eagle_topk=4,
                                       num_draft_tokens=8)  # fmt: skip
    assert mode == "FULL" and extend == [[8, 1], [16, 2], [24, 3], [32, 4]]


def test_explicit_modes_choose_the_prompt_graphs() -> None:
    # --mode FULL: no breakable graphs; --mode BREAKABLE on a release where BCG was opt-in
    assert _draft_passes("sglang-current", "flash_attn", mode="FULL")[2] is None
    assert _draft_passes("sglang-0.5.14", "flashinfer", mode="BREAKABLE")[2] == "BREAKABLE"
    none = _draft_passes("sglang-current", "flash_attn", mode="NONE")
    assert none == ("NONE", [], None, [])


def test_inspect_json_reports_the_prompt_prefill_beside_the_step() -> None:
    args = ["inspect", "tiny-llama-eagle3", "--json", "--framework", "sglang"]
    result = CliRunner().invoke(cli, [*args, "--max-num-seqs", "4", "-K", "3"])
    assert result.exit_code in (0, 1), result.stderr
    phases = {p["phase"]: p for p in json.loads(result.stdout)["plan"]["phases"]}
    assert list(phases) == ["target", "draft_prefill", "draft_decode", "draft_prompt_prefill"]
    assert phases["draft_prefill"]["mode"] == "FULL"
    assert phases["draft_prefill"]["descriptors"] == [[4, 1], [8, 2], [12, 3], [16, 4]]
    assert set(phases["draft_prompt_prefill"]["descriptor_modes"]) == {"BREAKABLE"}


def test_only_the_eagle_worker_has_prompt_prefill_graphs_for_its_draft() -> None:
    # `dflash_worker_v2.py::DFlashWorkerV2.init_cuda_graphs` never calls
    # `init_prefill_cuda_graph(force_for_draft_worker=True)`; the EAGLE worker does
    def phases(preset: str) -> list[str]:
        args = ["inspect", preset, "--json", "--framework", "sglang", "--max-num-seqs", "4"]
        result = CliRunner().invoke(cli, args)
        assert result.exit_code in (0, 1), result.stderr
        return [p["phase"] for p in json.loads(result.stdout)["plan"]["phases"]]

    assert "draft_prompt_prefill" in phases("tiny-llama-eagle3")
    assert phases("tiny-qwen3-dflash") == ["target", "draft_prefill", "draft_decode"]


@pytest.mark.parametrize(("profile", "extra"), [("sglang-current", 58), ("sglang-0.5.15", 0)])
def test_engine_graphs_count_the_prompt_prefill_once(profile: str, extra: int) -> None:
    # sglang-current: 58 prompt-prefill graphs beside the step; 0.5.15 flash_attn: the step's
    # draft extend borrows those same graphs, so they are counted once
    opts = resolve_plan_options(
        PlanChoices(behavior=profile, gpu="H100", attention_backend="flash_attn", max_num_seqs=4)
    )
    plan = build_plan(opts)
    step = sum(p.graph_count for p in plan.phases)
    assert plan.engine_graph_count() == step + extra
