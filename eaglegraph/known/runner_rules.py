"""Which vLLM model runner a release runs for a model, as the release decides it.

`VllmConfig.use_v2_model_runner` (`vllm/config/vllm.py`) answers it at engine start-up:
`VLLM_USE_V2_MODEL_RUNNER` wins when set (1 = MRV2, 0 = MRV1); otherwise the release's default
rule, then `_get_v2_model_runner_unsupported_features` (a speculative method MRV2 does not run
sends the model back to MRV1). The default rule widened release by release:

- 0.20–0.21: the variable alone, default "0" (`vllm/envs.py`): MRV1 for every model.
- 0.22–0.23: `DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES`, and only dense unquantized checkpoints
  (`_is_default_v2_model_runner_model`: `not is_moe and not is_quantized`).
- 0.24: the listed architectures, MoE or quantized alike.
- 0.25–0.28: the listed architectures, or any dense (non-MoE) one.
- 0.29 on: every architecture (the default rule is gone from `use_v2_model_runner`).

A model's facts are read as vLLM reads them: `is_moe` when the config names a positive expert
count (`ModelArchConfigConvertor.get_num_experts`), `is_quantized` when it has a
`quantization_config` (`ModelConfig.is_quantized`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from eaglegraph.errors import unknown_choice
from eaglegraph.known.runners import RUNNER_SPELLINGS, ModelRunner
from eaglegraph.known.versions import Version, VersionRange, between, version_text

SOURCE = "vllm/config/vllm.py::VllmConfig.use_v2_model_runner"
ENV = "VLLM_USE_V2_MODEL_RUNNER"

# `ModelArchConfigConvertor.get_num_experts` (vllm 0.22,
# vllm/transformers_utils/model_arch_config_convertor.py): the first of these keys that is set
EXPERT_KEYS = ("num_experts", "moe_num_experts", "n_routed_experts", "num_local_experts")

_EAGLE_METHODS = frozenset({"eagle", "eagle3", "mtp"})


@dataclass(frozen=True)
class RunnerRule:
    """One range of releases and how it picks MRV2 by default."""

    versions: VersionRange
    architectures: frozenset[str]  # DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES
    source: str
    dense_only: bool = False  # listed architectures only when not MoE and not quantized
    any_dense: bool = False  # every non-MoE architecture too
    every_model: bool = False  # no default rule left: MRV2 unless a feature is unsupported
    env_only: bool = False  # only the environment variable chooses (default MRV1)
    # speculative methods MRV2 runs (`_get_v2_model_runner_unsupported_features`); None: all
    # that eaglegraph rebuilds
    v2_methods: frozenset[str] | None = None


_LISTED_024 = frozenset(
    {
        "DeepseekV2ForCausalLM",
        "GraniteMoeForCausalLM",
        "LlamaForCausalLM",
        "MistralForCausalLM",
        "Qwen2MoeForCausalLM",
        "Qwen3ForCausalLM",
    }
)
_LISTED_025 = frozenset({"DeepseekV2ForCausalLM", "GraniteMoeForCausalLM", "Qwen2MoeForCausalLM"})
_LISTED_026 = _LISTED_025 | {
    "InklingForCausalLM",
    "InklingForConditionalGeneration",
    "LongcatFlashNgramForCausalLM",
}
_LISTED_027 = _LISTED_026 | {"KimiK3ForConditionalGeneration"}

RUNNER_RULES: tuple[RunnerRule, ...] = (
    RunnerRule(
        between(None, "0.22"),
        frozenset(),
        "vllm 0.20/0.21: vllm/envs.py::VLLM_USE_V2_MODEL_RUNNER (default '0')",
        env_only=True,
    ),
    RunnerRule(
        between("0.22", "0.23"),
        frozenset({"Qwen3ForCausalLM"}),
        f"vllm 0.22: {SOURCE}, VllmConfig._is_default_v2_model_runner_model",
        dense_only=True,
        v2_methods=_EAGLE_METHODS,
    ),
    RunnerRule(
        between("0.23", "0.24"),
        frozenset({"LlamaForCausalLM", "MistralForCausalLM", "Qwen3ForCausalLM"}),
        f"vllm 0.23: {SOURCE}, VllmConfig._is_default_v2_model_runner_model",
        dense_only=True,
        v2_methods=_EAGLE_METHODS,
    ),
    RunnerRule(
        between("0.24", "0.25"),
        _LISTED_024,
        f"vllm 0.24: {SOURCE}, VllmConfig._is_default_v2_model_runner_model",
        v2_methods=_EAGLE_METHODS | {"dflash"},
    ),
    RunnerRule(
        between("0.25", "0.26"),
        _LISTED_025,
        f"vllm 0.25: {SOURCE}, VllmConfig._is_default_v2_model_runner_model",
        any_dense=True,
    ),
    RunnerRule(
        between("0.26", "0.27"),
        _LISTED_026,
        f"vllm 0.26: {SOURCE}, VllmConfig._is_default_v2_model_runner_model",
        any_dense=True,
    ),
    RunnerRule(
        between("0.27", "0.28"),
        _LISTED_027,
        f"vllm 0.27: {SOURCE}, default_v2_model_runner_architectures",
        any_dense=True,
    ),
    RunnerRule(
        between("0.28", "0.29"),
        _LISTED_027 | {"DeepseekV4ForCausalLM"},
        f"vllm 0.28: {SOURCE}, default_v2_model_runner_architectures",
        any_dense=True,
    ),
    RunnerRule(
        between("0.29", None),
        frozenset(),
        f"vllm 0.29-0.33: {SOURCE} (no default-architecture rule)",
        every_model=True,
    ),
)


@dataclass(frozen=True)
class TargetFacts:
    """What the runner rule reads of the target: its architecture, MoE and quantization."""

    architecture: str | None = None
    moe: bool = False
    quantized: bool = False
    mla: bool = False  # DeepSeek-style latent attention (`kv_lora_rank`): MLA backends

    @classmethod
    def from_config(cls, architecture: str | None, config: Mapping[str, Any]) -> TargetFacts:
        experts = next((config[k] for k in EXPERT_KEYS if config.get(k)), 0)
        if isinstance(experts, list):  # one count per layer group: the same value each
            experts = experts[0] if experts else 0
        moe = isinstance(experts, int) and not isinstance(experts, bool) and experts > 0
        quantized = config.get("quantization_config") is not None
        return cls(architecture, moe, quantized, mla=config.get("kv_lora_rank") is not None)

    def describe(self) -> str:
        kind = ("MoE" if self.moe else "dense") + (", quantized" if self.quantized else "")
        return f"{self.architecture or 'architecture unknown'} ({kind})"


@dataclass(frozen=True)
class RunnerChoice:
    runner: ModelRunner
    why: str
    source: str = ""  # the engine function the rule was read from


def parse_runner(text: str | None) -> ModelRunner | None:
    """`--runner auto|v1|v2` (and the stored names, and the variable's 0/1): None for auto."""
    if text is None or text.strip().lower() == "auto":
        return None
    key = text.strip().lower()
    if key not in RUNNER_SPELLINGS:
        raise unknown_choice("runner", text, ["auto", "v1", "v2"])
    return RUNNER_SPELLINGS[key]


def rule_for(version: Version) -> RunnerRule:
    return next(r for r in RUNNER_RULES if version in r.versions)


def _default_v2(rule: RunnerRule, target: TargetFacts) -> tuple[bool, str]:
    """The release's default for this model, before the unsupported-feature check."""
    listed = target.architecture in rule.architectures
    if rule.env_only:
        return False, f"{ENV} unset means 0 in this release"
    if rule.every_model:
        return True, "Model Runner V2 is the default for every architecture"
    if rule.dense_only:
        if not listed:
            return False, f"{target.architecture} is not a default-V2 architecture"
        if target.moe or target.quantized:
            return False, "default-V2 architectures run MRV2 only dense and unquantized"
        return True, f"{target.architecture} is a default-V2 architecture (dense, unquantized)"
    if listed:
        return True, f"{target.architecture} is a default-V2 architecture"
    if rule.any_dense and not target.moe:
        return True, "dense models default to MRV2"
    if rule.any_dense:
        return False, "MoE architectures run MRV2 only when listed, and this one is not"
    return False, f"{target.architecture} is not a default-V2 architecture"


def runner_for(
    version: Version,
    target: TargetFacts,
    *,
    method: str | None = None,
    explicit: ModelRunner | None = None,
) -> RunnerChoice:
    """The runner vLLM `version` runs `target` with; `explicit` is `--runner v1|v2`, what
    VLLM_USE_V2_MODEL_RUNNER=0|1 does (it wins over every default)."""
    release = f"vLLM {version_text(version)}"
    if explicit is not None:
        value = "1" if explicit is ModelRunner.MRV2 else "0"
        return RunnerChoice(explicit, f"asked for ({ENV}={value})", SOURCE)
    rule = rule_for(version)
    v2, reason = _default_v2(rule, target)
    if v2 and rule.v2_methods is not None and method and method not in rule.v2_methods:
        v2, reason = False, f"MRV2 in {release} does not run speculative method '{method}'"
    runner = ModelRunner.MRV2 if v2 else ModelRunner.MRV1
    return RunnerChoice(runner, f"{release}, {target.describe()}: {reason}", rule.source)
