"""Which runner each vLLM release picks, pinned to `VllmConfig.use_v2_model_runner` and
`_is_default_v2_model_runner_model` as each wheel's `vllm/config/vllm.py` has them (0.20 and
0.21: `vllm/envs.py`, VLLM_USE_V2_MODEL_RUNNER default "0")."""

from __future__ import annotations

import pytest

from eaglegraph.errors import BadInput
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
