"""`dtype=auto` as each engine resolves it: the dtype unquantized weights are loaded in.

A checkpoint whose config says `float32` (or says nothing) is not served in fp32: both engines
downcast it, and they disagree on the target. Read from the released wheels:

- vLLM 0.33.0 `vllm/config/model.py::_resolve_auto_dtype`: a float32 config takes the
  platform's first supported dtype (`vllm/platforms/cuda.py::CudaPlatform.supported_dtypes`:
  bfloat16 from SM 8.0 on, float16 on SM 6.0–7.5), skipping float16 for the model types of
  `_FLOAT16_NOT_SUPPORTED_MODELS` (gemma2, gemma3, gemma3_text, glm4, ...).
- SGLang 0.5.23 `sglang/srt/configs/model_config.py::_get_and_verify_dtype`: a float32 or
  missing config dtype loads as float16, except model types starting with `gemma`, which load
  as bfloat16.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AutoDtypeRule:
    engine: str
    float32_to: str  # what a float32 (or unset) config loads as on a bf16-capable GPU
    float32_to_pre_sm80: str  # the same on a GPU without bf16 (SM < 8.0)
    bf16_model_prefixes: tuple[str, ...]  # model types that never take float16 for float32
    source: str


AUTO_DTYPE_RULES = {
    "vllm": AutoDtypeRule(
        "vllm",
        float32_to="bfloat16",
        float32_to_pre_sm80="float16",
        bf16_model_prefixes=(),
        source="vllm 0.33.0 vllm/config/model.py::_resolve_auto_dtype",
    ),
    "sglang": AutoDtypeRule(
        "sglang",
        float32_to="float16",
        float32_to_pre_sm80="float16",
        bf16_model_prefixes=("gemma",),
        source="sglang 0.5.23 sglang/srt/configs/model_config.py::_get_and_verify_dtype",
    ),
}


def auto_dtype(engine: str, config_dtype: str | None, model_type: str, sm: int = 90) -> str:
    """The dtype `dtype=auto` loads a config's weights in (`config_dtype` normalised, e.g.
    'bfloat16'; None when the config names none)."""
    if config_dtype not in (None, "float32", "float64"):
        return config_dtype
    rule = AUTO_DTYPE_RULES.get(engine, AUTO_DTYPE_RULES["vllm"])
    if model_type.startswith(rule.bf16_model_prefixes) and rule.bf16_model_prefixes:
        return "bfloat16"
    return rule.float32_to if sm >= 80 else rule.float32_to_pre_sm80


def auto_dtype_source(engine: str) -> str:
    return AUTO_DTYPE_RULES.get(engine, AUTO_DTYPE_RULES["vllm"]).source
