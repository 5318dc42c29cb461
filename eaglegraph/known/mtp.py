"""How each engine runs a checkpoint's MTP modules: which of them, and which K it accepts.

Facts from the engines' sources (sglang 0.5.9-0.5.23, vLLM 0.33):

- SGLang's NEXTN/EAGLE path for DeepSeek-style checkpoints (`DeepseekV3ForCausalLMNextN`)
  loads `model.layers.{num_hidden_layers}` only: the first MTP module, reused for every
  draft step, whatever `num_nextn_predict_layers` says. Multi-layer EAGLE (one draft runner
  and KV pool per step, `MultiLayerEagleWorkerV2` and its draft-extend graph runner) is
  switched on only for the target architectures below (`enable_multi_layer_eagle` set by
  the model overrides); the rig does not build that worker.
- vLLM refuses `num_speculative_tokens` larger than the module count unless it is a
  multiple of it ("must be divisible by n_predict", module reuse); with several modules and
  K > 1 it runs the multi-module speculator.
"""

from __future__ import annotations

SGLANG_MULTI_LAYER_EAGLE_ARCHS = frozenset(
    {
        "MiMoV2ForCausalLM",
        "MiMoV2FlashForCausalLM",
        "Step3p5ForCausalLM",
        "Step3p7ForConditionalGeneration",
        "GigaChat35ForCausalLM",
        "GigaChat35ForCausalLMNextN",
    }
)


# target model types whose checkpoint MTP modules no engine runs: why, as the engines say it
UNRUN_MTP = {
    "minimax_m2": (
        "vLLM (0.33) and SGLang (0.5.23) skip MiniMax-M2's MTP layers (model.layers.{L+i}) "
        "when loading it: no engine runs them"
    ),
}


def unrun_mtp(model_type: str) -> str | None:
    """Why no engine runs this target type's in-checkpoint MTP modules, or None."""
    return UNRUN_MTP.get(model_type)


def modules_run(framework: str, declared: int, architectures: list[str]) -> int:
    """MTP modules the engine runs for a checkpoint declaring `declared` of them."""
    if framework == "sglang" and not SGLANG_MULTI_LAYER_EAGLE_ARCHS & set(architectures):
        return min(declared, 1)  # NextN: the first module, reused every step
    return declared


def refusal(
    framework: str, modules: int, num_speculative_tokens: int, architectures: list[str]
) -> str | None:
    """Why this MTP configuration cannot run as the engine runs it, or None: vLLM's refusal
    of K, or SGLang's multi-layer EAGLE worker, which the rig does not build."""
    k = num_speculative_tokens
    multi = sorted(SGLANG_MULTI_LAYER_EAGLE_ARCHS & set(architectures))
    if framework == "sglang" and multi and modules > 1 and k > 1:
        return (
            f"SGLang runs the MTP modules of {multi[0]} as multi-layer EAGLE (one draft runner "
            "and KV pool per step), which the rig does not build; use K=1 or a vLLM profile"
        )
    if framework == "vllm" and modules > 1 and k > modules and k % modules:
        return (
            f"vLLM refuses num_speculative_tokens {k} with {modules} MTP modules: K above "
            f"the module count must be a multiple of it (modules are reused); use K ≤ "
            f"{modules} or a multiple of {modules}"
        )
    return None
