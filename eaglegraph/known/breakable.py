"""Architectures vLLM runs with breakable CUDA graphs by default.

`DEFAULT_BREAKABLE_CUDAGRAPH_ARCHITECTURES` in vllm/config/vllm.py (0.33): models that
torch.compile does not cover, for which breakable graphs are the supported PIECEWISE path. The
auto-enable exists since 0.23 with a shorter list (0.24: DeepseekV4ForCausalLM,
DeepSeekV4MTPModel, MiniMaxM3Sparse*); the list here is the newest.
"""

from __future__ import annotations

BREAKABLE_ARCHITECTURES = frozenset(
    {
        "AliceAIForCausalLM",
        "BeamForCausalLM",
        "DeepseekV32ForCausalLM",
        "DeepseekV32MTPModel",
        "DeepseekV41ForCausalLM",
        "DeepseekV4ForCausalLM",
        "DeepseekV4ForConditionalGeneration",
        "DeepSeekV4MTPModel",
        "Dots3NoteForCausalLM",
        "Dots3NoteMTPModel",
        "Glm5NextForCausalLM",
        "Glm5NextForConditionalGeneration",
        "Glm5NextMTPModel",
        "GlmMoeDsaForCausalLM",
        "HYV4ForCausalLM",
        "HYV4MTPModel",
        "InklingForCausalLM",
        "InklingForConditionalGeneration",
        "KimiK3ForConditionalGeneration",
        "KimiK3MTPModel",
        "KimiLinearForCausalLM",
        "MiniMaxM3SparseForCausalLM",
        "MiniMaxM3SparseForConditionalGeneration",
        "MuseSpark1xForCausalLM",
        "MuseSparkForConditionalGeneration",
        "Qwen4ExpForCausalLM",
        "Qwen4ExpForConditionalGeneration",
        "Qwen4ExpMTP",
        "Step5ForCausalLM",
        "Step5ForConditionalGeneration",
    }
)
