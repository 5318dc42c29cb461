"""Which runner each vLLM release picks, pinned to `VllmConfig.use_v2_model_runner` and
`_is_default_v2_model_runner_model` as each wheel's `vllm/config/vllm.py` has them (0.20 and
0.21: `vllm/envs.py`, VLLM_USE_V2_MODEL_RUNNER default "0")."""

from __future__ import annotations

import pytest

from eaglegraph.errors import BadInput
from eaglegraph.known.backends import trtllm_cubins_bundled, vllm_default_backend
from eaglegraph.known.runner_rules import TargetFacts, parse_runner, runner_for
from eaglegraph.known.runners import ModelRunner
from eaglegraph.known.versions import parse_version

pytestmark = pytest.mark.fast

V1, V2 = ModelRunner.MRV1, ModelRunner.MRV2
LLAMA = TargetFacts("LlamaForCausalLM")
QWEN3 = TargetFacts("Qwen3ForCausalLM")
QWEN3_FP8 = TargetFacts("Qwen3ForCausalLM", quantized=True)
DSV3 = TargetFacts("DeepseekV3ForCausalLM", moe=True)
DSV2 = TargetFacts("DeepseekV2ForCausalLM", moe=True)
LLAMA_FP8 = TargetFacts("LlamaForCausalLM", quantized=True)


@pytest.mark.parametrize(
    ("version", "target", "method", "want"),
    [
        ("0.20.0", QWEN3, "eagle3", V1),  # envs.py: the variable alone, default 0
        ("0.21.0", LLAMA, "eagle3", V1),
        ("0.22.0", QWEN3, "eagle3", V2),  # DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES = {Qwen3}
        ("0.22.0", QWEN3_FP8, "eagle3", V1),  # not is_quantized
        ("0.22.0", LLAMA, "eagle3", V1),
        ("0.22.0", QWEN3, "dflash", V1),  # MRV2 runs eagle/eagle3/mtp only in 0.22
        ("0.23.0", LLAMA, "eagle", V2),  # Llama, Mistral, Qwen3 listed
        ("0.23.0", LLAMA_FP8, "eagle3", V1),
        ("0.24.0", LLAMA_FP8, "eagle3", V2),  # no MoE/quantization check in 0.24
        ("0.24.0", DSV2, "mtp", V2),
        ("0.24.0", DSV3, "mtp", V1),
        ("0.25.0", LLAMA, "eagle3", V2),  # listed or not is_moe
        ("0.25.0", DSV3, "mtp", V1),
        ("0.28.0", LLAMA, "eagle3", V2),
        ("0.28.0", DSV3, "mtp", V1),
        ("0.28.0", TargetFacts("DeepseekV4ForCausalLM", moe=True), "mtp", V2),
        ("0.29.0", DSV3, "mtp", V2),  # no default-architecture rule from 0.29
        ("0.33.0", DSV3, "mtp", V2),
    ],
)
def test_release_picks_the_runner(
    version: str, target: TargetFacts, method: str, want: ModelRunner
) -> None:
    parsed = parse_version(version)
    assert parsed is not None
    choice = runner_for(parsed, target, method=method)
    assert choice.runner is want, choice.why
    assert "vllm/" in choice.source and "::" in choice.source


def test_the_variable_wins_over_every_default() -> None:
    for version in ((0, 20, 0), (0, 22, 0), (0, 33, 0)):
        assert runner_for(version, DSV3, explicit=V2).runner is V2
        assert runner_for(version, QWEN3, explicit=V1).runner is V1
    assert "VLLM_USE_V2_MODEL_RUNNER=0" in runner_for((0, 33, 0), QWEN3, explicit=V1).why


def test_moe_and_quantization_read_as_vllm_reads_them() -> None:
    assert TargetFacts.from_config("DeepseekV3ForCausalLM", {"n_routed_experts": 256}).moe
    assert TargetFacts.from_config("MixtralForCausalLM", {"num_local_experts": 8}).moe
    assert not TargetFacts.from_config("LlamaForCausalLM", {"num_experts": 0}).moe
    fp8 = TargetFacts.from_config("Qwen3ForCausalLM", {"quantization_config": {"quant": "fp8"}})
    assert fp8.quantized and not fp8.moe


def test_runner_spellings() -> None:
    assert parse_runner(None) is None and parse_runner("AUTO") is None
    assert parse_runner("v1") is V1 and parse_runner("1") is V2 and parse_runner("mrv2") is V2
    with pytest.raises(BadInput, match="did you mean"):
        parse_runner("v11")


@pytest.mark.parametrize(
    ("major", "mla", "head_dim", "want"),
    [
        (9, False, 128, ("FLASH_ATTN", "flash_attn")),  # H100/H200
        (10, False, 128, ("FLASHINFER", "flashinfer")),  # B200: FLASHINFER first on SM10x
        (8, False, 128, ("FLASH_ATTN", "flash_attn")),
        (9, False, 512, ("FLASHINFER", "flashinfer")),  # FLASH_ATTN takes head sizes <= 256
        (9, True, None, ("FLASH_ATTN_MLA", "flash_attn")),
        (10, True, None, ("FLASHINFER_MLA", "flash_attn")),
        (12, True, None, ("TRITON_MLA", "flash_attn")),
    ],
)
def test_default_backend_per_gpu_and_architecture(
    major: int, mla: bool, head_dim: int | None, want: tuple[str, str]
) -> None:
    """`vllm/platforms/cuda.py::_get_backend_priorities` (0.22-0.33), first backend that
    supports the layer (`FlashAttentionBackend.supports_head_size`)."""
    chosen = vllm_default_backend(major, mla=mla, head_dim=head_dim)
    assert (chosen.engine_name, chosen.rig_backend) == want


def test_trtllm_cubins_ship_until_0_25() -> None:
    """The wheels' METADATA: flashinfer-cubin is a requirement of 0.20-0.25 only."""
    for minor in range(20, 34):
        rule = trtllm_cubins_bundled((0, minor, 0))
        assert rule.bundled is (minor <= 25), minor
        assert "METADATA" in rule.source


@pytest.mark.parametrize(
    ("engine", "gpu", "backend", "trtllm", "target_mode"),
    [
        ("vllm==0.33.0", "B200", "flashinfer", False, "PIECEWISE"),  # offline: no XQA/TRT-LLM
        ("vllm==0.25.0", "B200", "flashinfer", True, "FULL_AND_PIECEWISE"),
        ("vllm==0.33.0", "H100", "flash_attn", True, "FULL_AND_PIECEWISE"),
    ],
)
def test_inspect_takes_the_release_defaults_for_the_gpu(
    engine: str, gpu: str, backend: str, trtllm: bool, target_mode: str
) -> None:
    import json

    from click.testing import CliRunner

    from eaglegraph.cli import cli

    args = ["inspect", "tiny-llama-eagle3", "--json", "--engine", engine, "--gpu", gpu]
    result = CliRunner().invoke(cli, [*args, "--max-num-seqs", "8", "-K", "3"])
    assert result.exit_code in (0, 1), result.stderr
    plan = json.loads(result.stdout)["plan"]
    assert (plan["attention_backend"], plan["trtllm_artifacts"]) == (backend, trtllm)
    assert plan["phases"][0]["mode"] == target_mode
    assert any(d.startswith("attention backend ") for d in plan["defaults"])
