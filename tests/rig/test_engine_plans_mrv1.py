"""MRV1 plans pinned to what the V1 GPU model runner builds, worked out by hand from its source.

Each row follows, in the release named: `vllm/config/vllm.py::VllmConfig._set_cudagraph_sizes`
(the size list), the backend's `get_cudagraph_support`,
`vllm/config/compilation.py::CompilationConfig.resolve_cudagraph_mode_and_sizes` (the mode, and
`adjust_cudagraph_sizes_for_spec_decode` when decode graphs are FULL),
`vllm/v1/cudagraph_dispatcher.py::CudagraphDispatcher.initialize_cudagraph_keys` (the target's
keys) and `vllm/v1/spec_decode/llm_base_proposer.py::EagleProposer.initialize_cudagraph_keys`
(one PIECEWISE-or-NONE dispatcher for every draft pass). Descriptors are [num_tokens, num_reqs].
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.known.choose import profile_for_engine
from eaglegraph.known.runner_rules import TargetFacts
from eaglegraph.known.runners import ModelRunner
from eaglegraph.rig.options import PlanChoices, resolve_plan_options
from eaglegraph.rig.plan import CapturePlan, build_plan

pytestmark = pytest.mark.fast

N = None
ROWS = [
    # vllm 0.22, FA3 on SM90 (ALWAYS): 1,2,4,8,16,24,32 rounded to 4 under FULL decode
    dict(
        cite="vllm-0.22.0: resolve_cudagraph_mode_and_sizes + initialize_cudagraph_keys",
        engine="0.22.0", gpu="H100", backend="FLASH_ATTN", mode="FULL_AND_PIECEWISE", r=4, k=3,
        target=("FULL_AND_PIECEWISE",
                [[4, 1], [4, N], [8, 2], [8, N], [16, 4], [16, N], [24, N], [32, N]]),
        draft=("PIECEWISE", [[4, N], [8, N], [16, N], [24, N], [32, N]]),
    ),
    # FlashInfer on SM90 without XQA in 0.22 (UNIFORM_SINGLE_TOKEN_DECODE): PIECEWISE, and
    # PIECEWISE decode means no rounding
    dict(
        cite="vllm-0.22.0: flashinfer.py::FlashInferMetadataBuilder.get_cudagraph_support",
        engine="0.22.0", gpu="H100", backend="flashinfer", mode="FULL_AND_PIECEWISE", r=4, k=3,
        target=("PIECEWISE", [[1, N], [2, N], [4, N], [8, N], [16, N], [24, N], [32, N]]),
        draft=("PIECEWISE", [[1, N], [2, N], [4, N], [8, N], [16, N], [24, N], [32, N]]),
    ),
    # FULL: mixed FULL keys pad requests to min(size, max_num_seqs); the drafter is PIECEWISE
    dict(
        cite="vllm-0.22.0: CudagraphDispatcher._create_padded_batch_descriptor",
        engine="0.22.0", gpu="H100", backend="flash_attn", mode="FULL", r=3, k=3,
        target=("FULL", [[4, 3], [8, 3], [16, 3], [24, 3]]),
        draft=("PIECEWISE", [[4, N], [8, N], [16, N], [24, N]]),
    ),
    # FULL_DECODE_ONLY, R=16, K=5: 25 sizes rounded to 6; decode keys up to 6*16 = 96; the
    # drafter has no mixed mode, so it runs eagerly
    dict(
        cite="vllm-0.22.0: initialize_cudagraph_keys (separate_routine decode keys)",
        engine="0.22.0", gpu="H100", backend="flash_attn", mode="FULL_DECODE_ONLY", r=16, k=5,
        target=("FULL_DECODE_ONLY",
                [[6, 1], [12, 2], [18, 3], [24, 4], [36, 6], [42, 7], [48, 8], [60, 10],
                 [66, 11], [72, 12], [84, 14], [90, 15], [96, 16]]),
        draft=("NONE", []),
    ),
    # vllm 0.33 with VLLM_USE_V2_MODEL_RUNNER=0, Triton (ALWAYS): the decode sizes 4,8,12 join
    # the list (#50488), then MRV1 still rounds the global list to 4
    dict(
        cite="vllm-0.33.0: _set_cudagraph_sizes (request_counts) + resolve (not use_v2)",
        engine="0.33.0", gpu="H100", backend="TRITON_ATTN", mode="FULL_AND_PIECEWISE", r=3, k=3,
        target=("FULL_AND_PIECEWISE",
                [[4, 1], [4, N], [8, 2], [8, N], [12, 3], [12, N], [16, N], [24, N]]),
        draft=("PIECEWISE", [[4, N], [8, N], [12, N], [16, N], [24, N]]),
    ),
]  # fmt: skip


def _ids(row: dict) -> str:
    return f"{row['engine']}-{row['gpu']}-{row['backend']}-{row['mode']}-R{row['r']}-K{row['k']}"


# row key -> PlanChoices field
CHOICE = {
    "engine": "engine_version",
    "gpu": "gpu",
    "backend": "attention_backend",
    "mode": "mode",
    "r": "max_num_seqs",
    "k": "num_speculative_tokens",
}


def _plan(row: dict) -> CapturePlan:
    behavior = profile_for_engine(f"vllm=={row['engine']}").name
    fields = {CHOICE[key]: value for key, value in row.items() if key in CHOICE}
    choices = PlanChoices(behavior=behavior, runner=ModelRunner.MRV1, **fields)
    return build_plan(resolve_plan_options(choices, target=TargetFacts("LlamaForCausalLM")))


@pytest.mark.parametrize("row", ROWS, ids=_ids)
def test_mrv1_plan_matches_the_v1_runner(row: dict) -> None:
    plan = _plan(row)
    assert plan.runner == ModelRunner.MRV1 and row["cite"]
    got = {p.phase: (p.mode.name, [[d.num_tokens, d.num_reqs] for d in p.descriptors])
           for p in plan.phases}  # fmt: skip
    assert got["target"] == row["target"]
    assert got["draft_prefill"] == row["draft"]
    assert got["draft_decode"] == row["draft"]  # the same dispatcher for every draft pass
    assert plan.phase("draft_decode").fused_steps == 1


def test_full_mode_drafter_graphs_are_not_captured_at_start_up() -> None:
    """Under FULL the target has no PIECEWISE pass, in which the drafter's graphs are taken."""
    plan = _plan(ROWS[2])
    assert any("not captured at start-up" in n for n in plan.phase("draft_prefill").notes)


def _inspect(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["inspect", "tiny-llama-eagle3", "--json", *args])
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)["plan"]


@pytest.mark.parametrize(
    ("engine", "runner", "want"),
    [
        ("vllm==0.22.0", None, "mrv1"),  # Llama is not a default-V2 architecture in 0.22
        ("vllm==0.22.0", "v2", "mrv2"),  # VLLM_USE_V2_MODEL_RUNNER=1
        ("vllm==0.24.0", None, "mrv2"),  # listed from 0.23
        ("vllm==0.33.0", "v1", "mrv1"),
        ("vllm==0.33.0", None, "mrv2"),
    ],
)
def test_inspect_json_names_the_runner(engine: str, runner: str | None, want: str) -> None:
    extra = ["--runner", runner] if runner else []
    plan = _inspect("--engine", engine, "--max-num-seqs", "4", "-K", "3", *extra)
    assert plan["runner"] == want and plan["runner_why"]
    drafts = {p["phase"]: p["mode"] for p in plan["phases"]}
    if want == "mrv1":  # MRV1's drafter: PIECEWISE for every draft pass
        assert drafts["draft_prefill"] == drafts["draft_decode"] == "PIECEWISE"
    else:  # MRV2 clamps draft decodes to FULL_DECODE_ONLY
        assert drafts["draft_decode"] == "FULL_DECODE_ONLY"


def test_engine_backend_spellings_plan_like_ours() -> None:
    same = _inspect("--attention-backend", "flash_attn", "--max-num-seqs", "4")
    upper = _inspect("--attention-backend", "FLASH_ATTN", "--max-num-seqs", "4")
    assert upper["attention_backend"] == "flash_attn"
    assert upper["phases"] == same["phases"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--attention-backend", "FLASH_ATN"], "did you mean FLASH_ATTN"),
        (["--attention-backend", "FLASHINFER_MLA"], "is an MLA backend"),
        (["--runner", "v3"], "'v3' is not one of"),
        (["--framework", "sglang", "--runner", "v1"], "SGLang has one runner"),
    ],
)
def test_bad_runner_or_backend_is_one_line(args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["inspect", "tiny-llama-eagle3", *args])
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_release_outside_the_modelled_range_is_planned_with_a_warning() -> None:
    old = CliRunner().invoke(
        cli, ["inspect", "tiny-llama-eagle3", "--json", "--engine", "vllm==0.6.3"]
    )
    assert old.exit_code in (0, 1)
    assert "older than the oldest modelled release" in old.stderr
    new = CliRunner().invoke(
        cli, ["inspect", "tiny-llama-eagle3", "--json", "--engine", "vllm==0.40.0"]
    )
    assert new.exit_code in (0, 1)
    assert "planned as 0.33" in new.stderr
    assert json.loads(new.stdout)["plan"]["behavior"] == "vllm-current"


def test_a_run_spec_keeps_its_runner_through_json() -> None:
    """Workers rebuild the runner the parent chose: the spec's JSON carries it back typed."""
    from eaglegraph.probes.spec import RunSpec, resolve_run

    choices = PlanChoices(runner=ModelRunner.MRV1, behavior="vllm-0.22", max_num_seqs=4)
    spec = resolve_run("tiny-llama-eagle3", plan=choices, device="cpu")
    back = RunSpec.from_json(json.loads(json.dumps(spec.to_json())))
    assert back == spec
    assert back.options.runner is ModelRunner.MRV1
    assert "VLLM_USE_V2_MODEL_RUNNER=0" in back.options.runner_why
