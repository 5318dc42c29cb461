"""How vLLM turns the requested cudagraph mode into the one it runs.

Two steps, as the engine does them. The attention backend reports a graph support level for the
target GPU (`get_cudagraph_support`), then `resolve_cudagraph_mode_and_sizes` downgrades the
requested mode for it: mixed FULL needs ALWAYS, FULL decode with spec decode needs UNIFORM_BATCH,
NEVER raises, and a downgrade lands on PIECEWISE only when attention is a splitting op of the
compiled graph (not under breakable graphs, whose compilation mode is NONE). Which backend
reports what on which GPU changed across releases; `SupportRules` carries those switches, read
from the profile (known/) by the plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from eaglegraph.errors import BadInput
from eaglegraph.rig.gpus import GpuSpec
from eaglegraph.rig.modes import Mode


class Support(IntEnum):
    """vLLM's AttentionCGSupport, ordered."""

    NEVER = 0
    UNIFORM_SINGLE_TOKEN_DECODE = 1
    UNIFORM_BATCH = 2
    ALWAYS = 3


@dataclass(frozen=True)
class SupportRules:
    """Release-dependent answers of the backends' `get_cudagraph_support`."""

    flashinfer_xqa_sm90: bool = True  # FlashInfer on SM90 decodes spec queries through XQA
    flashinfer_xqa_sm12x: bool = True  # the same on SM12x
    flashinfer_fa2_native_decode: bool = True  # below SM90, FlashInfer's fa2 decode is uniform
    fa4_full_graphs: bool = True  # FlashAttention 4 (SM10x) supports mixed FULL graphs


@dataclass(frozen=True)
class SupportLevel:
    level: Support
    builder: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"level": self.level.name, "builder": self.builder, "reason": self.reason}


def _xqa_head_dim_ok(head_dim: int | None) -> bool:
    return head_dim is None or (16 <= head_dim <= 256 and head_dim % 16 == 0)


def attention_support(
    backend: str,
    gpu: GpuSpec,
    rules: SupportRules,
    *,
    trtllm_artifacts: bool = True,
    head_dim: int | None = None,
) -> SupportLevel:
    """The support level `backend` reports on `gpu`, and why."""
    if backend == "triton":
        return SupportLevel(Support.ALWAYS, "TritonAttentionMetadataBuilder", "Triton: ALWAYS")
    if backend == "flash_attn":
        builder = "FlashAttentionMetadataBuilder"
        if gpu.capability[0] == 9:
            return SupportLevel(Support.ALWAYS, builder, "FlashAttention 3 on SM90: ALWAYS")
        if gpu.capability[0] == 10:
            if rules.fa4_full_graphs:
                return SupportLevel(Support.ALWAYS, builder, "FlashAttention 4 on SM10x: ALWAYS")
            return SupportLevel(
                Support.UNIFORM_BATCH, builder, "FlashAttention 4 on SM10x: UNIFORM_BATCH"
            )
        return SupportLevel(
            Support.UNIFORM_BATCH, builder, f"FlashAttention 2 on SM{gpu.sm}: UNIFORM_BATCH"
        )
    if backend != "flashinfer":
        raise BadInput(f"unknown attention backend {backend!r}")
    builder = "FlashInferMetadataBuilder"
    single = Support.UNIFORM_SINGLE_TOKEN_DECODE
    artifacts = "" if trtllm_artifacts else " (TRT-LLM attention artifacts unavailable)"
    if gpu.family == 100:
        if trtllm_artifacts:
            return SupportLevel(Support.UNIFORM_BATCH, builder, "TRT-LLM decode on SM10x")
        return SupportLevel(single, builder, f"native decode on SM10x{artifacts}")
    if gpu.sm == 90 or gpu.capability[0] == 12:
        enabled = rules.flashinfer_xqa_sm90 if gpu.sm == 90 else rules.flashinfer_xqa_sm12x
        if not enabled:
            return SupportLevel(single, builder, f"native decode on SM{gpu.sm} (no XQA path)")
        if not trtllm_artifacts:
            return SupportLevel(single, builder, f"native decode on SM{gpu.sm}{artifacts}")
        if not _xqa_head_dim_ok(head_dim):
            return SupportLevel(
                single, builder, f"XQA does not take head_dim {head_dim}: native decode"
            )
        return SupportLevel(Support.UNIFORM_BATCH, builder, f"XQA decode on SM{gpu.sm}")
    if gpu.capability[0] < 9 and rules.flashinfer_fa2_native_decode:
        return SupportLevel(
            Support.UNIFORM_BATCH, builder, f"fa2 native decode on SM{gpu.sm} (uniform queries)"
        )
    return SupportLevel(single, builder, f"native decode on SM{gpu.sm}")


@dataclass(frozen=True)
class Resolution:
    mode: Mode
    reasons: tuple[str, ...]


def resolve_mode(
    requested: Mode,
    support: SupportLevel,
    num_spec_tokens: int,
    *,
    attention_splits: bool = True,
    compiled: bool = True,
    breakable: bool = False,
    compile_off_keeps_full: bool = True,
) -> Resolution:
    """`resolve_cudagraph_mode_and_sizes` (plus the config-time check for a model that is not
    torch-compiled): the mode the runner captures with, and each downgrade in words.

    `attention_splits`: attention is a splitting op of the compiled graph (false under breakable
    graphs). `compiled`: the model is torch-compiled; without it and without breakable graphs
    piecewise capture is unavailable, which newer releases answer with `without_piecewise()`
    (`compile_off_keeps_full`) and older ones with NONE.
    """
    if requested is Mode.BREAKABLE:
        raise BadInput("BREAKABLE is a runner flag in vLLM, not a cudagraph mode")
    mode: Mode = requested
    reasons: list[str] = []
    if not mode:
        return Resolution(Mode.NONE, ())
    if mode.has_piecewise() and not compiled and not breakable:
        fallback = mode.without_piecewise() if compile_off_keeps_full else Mode.NONE
        reasons.append(
            f"{mode.name} needs piecewise capture but the model is not torch-compiled and "
            f"breakable graphs are off: {fallback.name}"
        )
        mode = fallback
        if not mode:
            return Resolution(mode, tuple(reasons))
    name, level = support.builder, support.level
    if mode.mixed_mode() is Mode.FULL and level is not Support.ALWAYS:
        if level is Support.NEVER:
            raise BadInput(
                f"CUDAGraphMode.{mode.name} is not supported with {name} (support: NEVER); "
                "use cudagraph_mode=PIECEWISE"
            )
        new = Mode.FULL_AND_PIECEWISE if attention_splits else Mode.FULL_DECODE_ONLY
        reasons.append(
            f"CUDAGraphMode.{mode.name} needs mixed-batch FULL support; {name} supports "
            f"{level.name} ({support.reason}); setting cudagraph_mode={new.name}"
        )
        mode = new
    if mode.decode_mode() is Mode.FULL and level is Support.NEVER:
        new = Mode.PIECEWISE if attention_splits else Mode.NONE
        reasons.append(f"{name} supports no FULL graphs; setting cudagraph_mode={new.name}")
        mode = new
    if mode.decode_mode() is Mode.FULL and num_spec_tokens >= 1 and level < Support.UNIFORM_BATCH:
        new = Mode.PIECEWISE if attention_splits else Mode.NONE
        reasons.append(
            f"CUDAGraphMode.{mode.name} is not supported with spec-decode for attention "
            f"backend {name} (support: AttentionCGSupport.{level.name}: {support.reason}); "
            f"setting cudagraph_mode={new.name}"
        )
        mode = new
    if mode.has_full() and level is Support.NEVER:
        raise BadInput(f"CUDAGraphMode.{mode.name} is not supported with {name} (support: NEVER)")
    return Resolution(mode, tuple(reasons))
