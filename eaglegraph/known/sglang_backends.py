"""SGLang's default attention backend per release, GPU and architecture.

A customer's SGLang launch line rarely names `--attention-backend`; the server picks one from
the GPU, whether the model uses MLA, and whether EAGLE drafts a tree (topk > 1). The rule moved
between 0.5.x releases (0.5.23 adds fa4 for asymmetric K/V and the topk-one algorithms on
SM100), so each release's rule is data here with the function it was read from.
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.known.versions import Version, VersionRange, between

# SGLang backend -> the rig family it runs as; one absent here is not modelled
SGLANG_RIG_FAMILY: dict[str, str] = {
    "fa3": "flash_attn",
    "flashinfer": "flashinfer",
    "triton": "triton",
}

# Backends the spec v1 EAGLEWorker builds a draft-extend backend for, and so captures the
# draft-extend graph of (`EAGLEWorker.init_cuda_graphs`: `if self.draft_extend_attn_backend`):
# 0.5.1-0.5.3 `speculative/eagle_worker.py::EAGLEWorker._create_draft_extend_backend`, 0.5.4+
# `speculative/draft_utils.py::DraftBackendFactory.create_draft_extend_backend` (flashmla has
# none there: its prefill factory returns None)
V1_DRAFT_EXTEND_BACKENDS = ("flashinfer", "triton", "aiter", "fa3", "trtllm_mha", "trtllm_mla")
# (fa4 joins that map in 0.5.10, EAGLE refused it before; no default picks fa4 before 0.5.23,
# when EAGLEWorker is gone, so the rig never plans fa4 on it)

# Backends the rig plans as another family (`SGLANG_RIG_FAMILY` lacks them) whose
# draft-extend graph on EAGLEWorkerV2 follows their own release (`eagle_worker_v2.py::
# EAGLEWorkerV2._capture_cuda_graphs`): the profile flag that says so, None where the
# backend was on the allowlist before EAGLEWorkerV2 became the default (TRTLLMMLABackend,
# since 0.5.8); TRTLLMHAAttnBackend from 0.5.13; fa4 is a FlashAttentionBackend (0.5.23)
V2_DRAFT_EXTEND_FLAG: dict[str, str | None] = {
    "trtllm_mla": None,
    "trtllm_mha": "sglang_trtllm_mha_draft_extend_graph",
    "fa4": "sglang_fa_draft_extend_graph",
}


# Backends whose default turns prefill CUDA graphs off (the draft's breakable ones too) from
# 0.5.15, when breakable prefill graphs became the default: `server_args.py::ServerArgs.
# _disable_prefill_cuda_graph_for_deepseek_trtllm_mla` (0.5.19+ `arg_groups/cuda_graph_hook.
# py::disable_prefill_cuda_graph_for_deepseek_trtllm_mla`), for DeepseekV3ForCausalLM on
# trtllm_mla, the very pair the DeepSeek V3/R1 sm100 override picks
PREFILL_GRAPHS_OFF_BY_DEFAULT = ("trtllm_mla",)


def engine_names_of(rig_backend: str) -> tuple[str, ...]:
    """The SGLang backends the rig runs as this family ("flash_attn" -> ("fa3",))."""
    return tuple(name for name, family in SGLANG_RIG_FAMILY.items() if family == rig_backend)


@dataclass(frozen=True)
class SglangBackendRule:
    """One release range's default-backend rule, as read from its wheel."""

    versions: VersionRange
    source: str  # file::function
    sm100_topk_one_algorithms: bool  # `_forces_eagle_topk_one`: NextN/MTP count as topk one
    fa4_for_asymmetric_kv: bool  # SM100 MHA with unequal K/V widths picks fa4
    deepseek_v3_sm100: str | None  # DeepseekV3ForCausalLM on SM100 with no backend named
    # MHA on Hopper picks fa3 (topk one) only for these architectures; None: for any
    fa3_architectures: tuple[str, ...] | None = None
    # SM majors whose MHA default is trtllm_mha with topk one (empty: flashinfer there)
    trtllm_mha_majors: tuple[int, ...] = (10,)
    # trtllm_mha also needs no speculation or an explicit --speculative-eagle-topk
    trtllm_mha_needs_explicit_topk: bool = True
    # where the DeepSeek V3/R1 sm100 override was read (None: this rule's own source)
    deepseek_source: str | None = None
    # chosen in the model runner, after ServerArgs filled in the auto speculative params (so
    # it sees their topk); from 0.5.4 ServerArgs chooses it before them
    after_auto_params: bool = False


# `utils.is_fa3_default_architecture` (0.5.1-0.5.7): the MHA architectures fa3 was the Hopper
# default for, as listed in each release
_FA3_ARCHS_051 = (
    "Qwen2ForCausalLM",
    "Llama4ForConditionalGeneration",
    "LlamaForCausalLM",
    "Gemma2ForCausalLM",
    "Gemma3ForConditionalGeneration",
    "Qwen3ForCausalLM",
    "Qwen3MoeForCausalLM",
    "Glm4MoeForCausalLM",
    "Glm4vMoeForConditionalGeneration",
    "Step3VLForConditionalGeneration",
)
_FA3_ARCHS_054 = (*_FA3_ARCHS_051, "Olmo2ForCausalLM")
_FA3_ARCHS_056 = (
    *_FA3_ARCHS_054,
    "Qwen3VLForConditionalGeneration",
    "Qwen3VLMoeForConditionalGeneration",
    "Glm4vForConditionalGeneration",
)

# 0.5.3-0.5.18 read the DeepSeek V3/R1 sm100 override here (0.5.19+ model_overrides/)
_DEEPSEEK_SERVER_ARGS = (
    "sglang 0.5.9 srt/server_args.py::ServerArgs._handle_model_specific_adjustments "
    "(DeepseekV3ForCausalLM on sm100)"
)

SGLANG_RULES = (
    SglangBackendRule(
        between(None, "0.5.3"),
        "sglang 0.5.2 srt/model_executor/model_runner.py::ModelRunner.model_specific_adjustment",
        False,
        False,
        None,
        _FA3_ARCHS_051,
        (),
        after_auto_params=True,
    ),
    SglangBackendRule(
        between("0.5.3", "0.5.4"),
        "sglang 0.5.3 srt/model_executor/model_runner.py::ModelRunner.model_specific_adjustment",
        False,
        False,
        "trtllm_mla",
        _FA3_ARCHS_051,
        (),
        deepseek_source=_DEEPSEEK_SERVER_ARGS,
        after_auto_params=True,
    ),
    SglangBackendRule(
        between("0.5.4", "0.5.6"),
        "sglang 0.5.5 srt/server_args.py::ServerArgs._handle_attention_backend_compatibility",
        False,
        False,
        "trtllm_mla",
        _FA3_ARCHS_054,
        (),
        deepseek_source=_DEEPSEEK_SERVER_ARGS,
    ),
    SglangBackendRule(
        between("0.5.6", "0.5.7"),
        "sglang 0.5.6 srt/server_args.py::ServerArgs._handle_attention_backend_compatibility "
        "(is_blackwell: SM10x and SM12x)",
        False,
        False,
        "trtllm_mla",
        _FA3_ARCHS_056,
        (10, 12),
        False,
        deepseek_source=_DEEPSEEK_SERVER_ARGS,
    ),
    SglangBackendRule(
        between("0.5.7", "0.5.8"),
        "sglang 0.5.7 srt/server_args.py::ServerArgs._handle_attention_backend_compatibility",
        False,
        False,
        "trtllm_mla",
        _FA3_ARCHS_056,
        deepseek_source=_DEEPSEEK_SERVER_ARGS,
    ),
    SglangBackendRule(
        between("0.5.8", "0.5.23"),
        "sglang 0.5.15 srt/server_args.py::ServerArgs._get_default_attn_backend",
        False,
        False,
        "trtllm_mla",
        deepseek_source=_DEEPSEEK_SERVER_ARGS,
    ),
    SglangBackendRule(
        between("0.5.23", None),
        "sglang 0.5.23 srt/arg_groups/model_override_base.py::get_default_attn_backend",
        True,
        True,
        "trtllm_mla",
    ),
)
DEEPSEEK_SM100_SOURCE = (
    "sglang 0.5.23 srt/arg_groups/model_overrides/deepseek_v2.py (DeepSeek V3/R1 on sm100)"
)
# SGLang speculative algorithms that force topk 1 (`_forces_eagle_topk_one`, 0.5.23)
TOPK_ONE_ALGORITHMS = ("NEXTN", "MTP")


@dataclass(frozen=True)
class SglangDefault:
    """The backend SGLang picks when the launch line names none."""

    engine_name: str  # as SGLang logs it
    rig_backend: str | None  # the family the rig models it as; None: not modelled
    why: str
    source: str

    def to_json(self) -> dict[str, str | None]:
        return {
            "attention_backend": self.engine_name,
            "rig_backend": self.rig_backend,
            "why": self.why,
            "source": self.source,
        }


def _rule(version: Version) -> SglangBackendRule:
    return next(r for r in SGLANG_RULES if version in r.versions)


def sglang_default_backend(
    version: Version,
    capability_major: int,
    *,
    mla: bool,
    architecture: str | None = None,
    speculative_algorithm: str | None = None,
    eagle_topk: int | None = None,
    asymmetric_kv: bool = False,
    has_flashinfer: bool = True,
    auto_topk: int | None = None,
) -> SglangDefault:
    """What an SGLang server of `version` picks on a CUDA GPU of this SM major (9: Hopper with
    CUDA >= 12.3, 10: SM100/SM103)."""
    rule = _rule(version)
    gpu = f"SM{capability_major}x"
    if rule.after_auto_params and eagle_topk is None:
        eagle_topk = auto_topk  # `auto_topk`: the topk SGLang's auto params give

    def pick(name: str, why: str, source: str = rule.source) -> SglangDefault:
        return SglangDefault(name, SGLANG_RIG_FAMILY.get(name), f"{why} on {gpu}", source)

    if mla:
        override = rule.deepseek_v3_sm100
        if capability_major == 10 and architecture == "DeepseekV3ForCausalLM" and override:
            source = rule.deepseek_source or DEEPSEEK_SM100_SOURCE
            return pick(override, "DeepSeek V3/R1 override", source)
        if capability_major == 9:
            return pick("fa3", "MLA default (Hopper, CUDA >= 12.3)")
        if capability_major == 10:
            return pick("flashinfer", "MLA default (SM100)")
        return pick("triton", "MLA default")
    topk_one = eagle_topk is None or eagle_topk == 1
    fa3_arch = rule.fa3_architectures is None or architecture in rule.fa3_architectures
    if capability_major == 9 and topk_one and fa3_arch:
        return pick("fa3", "MHA default with no tree drafting (Hopper, CUDA >= 12.3)")
    algorithm = (speculative_algorithm or "").upper()
    forced_one = rule.sm100_topk_one_algorithms and algorithm in TOPK_ONE_ALGORITHMS
    explicit = not rule.trtllm_mha_needs_explicit_topk or (
        not algorithm or eagle_topk is not None or forced_one
    )
    if capability_major in rule.trtllm_mha_majors and topk_one and explicit:
        if asymmetric_kv and rule.fa4_for_asymmetric_kv:
            return pick("fa4", "MHA default with unequal K/V widths")
        return pick("trtllm_mha", "MHA default with no tree drafting")
    why = "MHA default" if fa3_arch else "MHA default (fa3 only for the listed architectures)"
    if has_flashinfer:
        return pick("flashinfer", why)
    return pick("triton", f"{why} without FlashInfer")
