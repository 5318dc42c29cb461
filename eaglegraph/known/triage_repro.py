"""What a triage reproduction line may say, as data: target names to the preset families that
stand in for them, the log's runner to the CLI's `--runner`, and the fact that marks a fault in
an engine kernel the rig does not rebuild (no command is suggested for it)."""

from __future__ import annotations

# Target (or draft) model names to the preset families (config model_type) that stand in for
# them: DeepSeek-style MLA + MoE targets (DeepSeek, GLM, Kimi, MiMo) share one family.
PRESET_FAMILIES: tuple[tuple[str, str], ...] = (
    ("qwen", "qwen3"),
    ("deepseek", "deepseek_v3"),
    ("glm", "deepseek_v3"),
    ("kimi", "deepseek_v3"),
    ("mimo", "deepseek_v3"),
    ("llama", "llama"),
)

# The runner triage reads off a log (extract: "mrv2" when MRV2 modules appear) to `--runner`.
# The V1 *engine* line names no model runner, so only MRV2 is passed; otherwise `auto`.
RUNNER_FLAGS: dict[str, str] = {"mrv2": "v2"}

# The log fact (known.triage_log_rules) of a fault inside an engine's own kernel.
ENGINE_KERNEL_FACT = "log.engine-kernel"
