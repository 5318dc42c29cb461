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


@dataclass(frozen=True)
class SglangBackendRule:
    """One release range's default-backend rule, as read from its wheel."""

    versions: VersionRange
    source: str  # file::function
    sm100_topk_one_algorithms: bool  # `_forces_eagle_topk_one`: NextN/MTP count as topk one
    fa4_for_asymmetric_kv: bool  # SM100 MHA with unequal K/V widths picks fa4
    deepseek_v3_sm100: str  # DeepseekV3ForCausalLM on SM100 with no backend named


SGLANG_RULES = (
    SglangBackendRule(
        between(None, "0.5.23"),
        "sglang 0.5.15 srt/server_args.py::ServerArgs._get_default_attn_backend",
        False,
        False,
        "trtllm_mla",
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
) -> SglangDefault:
    """What an SGLang server of `version` picks on a CUDA GPU of this SM major (9: Hopper with
    CUDA >= 12.3, 10: SM100/SM103)."""
    rule = _rule(version)
    gpu = f"SM{capability_major}x"

    def pick(name: str, why: str, source: str = rule.source) -> SglangDefault:
        return SglangDefault(name, SGLANG_RIG_FAMILY.get(name), f"{why} on {gpu}", source)

    if mla:
        if capability_major == 10 and architecture == "DeepseekV3ForCausalLM":
            return pick(rule.deepseek_v3_sm100, "DeepSeek V3/R1 override", DEEPSEEK_SM100_SOURCE)
        if capability_major == 9:
            return pick("fa3", "MLA default (Hopper, CUDA >= 12.3)")
        if capability_major == 10:
            return pick("flashinfer", "MLA default (SM100)")
        return pick("triton", "MLA default")
    topk_one = eagle_topk is None or eagle_topk == 1
    if capability_major == 9 and topk_one:
        return pick("fa3", "MHA default with no tree drafting (Hopper, CUDA >= 12.3)")
    algorithm = (speculative_algorithm or "").upper()
    forced_one = rule.sm100_topk_one_algorithms and algorithm in TOPK_ONE_ALGORITHMS
    if (
        capability_major == 10
        and topk_one
        and (not algorithm or eagle_topk is not None or forced_one)
    ):
        if asymmetric_kv and rule.fa4_for_asymmetric_kv:
            return pick("fa4", "MHA default with unequal K/V widths")
        return pick("trtllm_mha", "MHA default with no tree drafting")
    if has_flashinfer:
        return pick("flashinfer", "MHA default")
    return pick("triton", "MHA default without FlashInfer")
