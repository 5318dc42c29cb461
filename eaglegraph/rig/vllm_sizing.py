"""What a vLLM plan settles before its graph managers: capture sizes, support, resolved mode.

The engine's order (`VllmConfig._set_cudagraph_sizes`, then the attention backend's graph
support on the target GPU and `resolve_cudagraph_mode_and_sizes`), read from one resolved
`PlanOptions` and the profile whose rules apply (the options' own, or the MRV1 profile the
plan derives from it); what changed between releases comes from that profile's flags.
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.known.profiles import Profile
from eaglegraph.rig.capture_sizes import round_for_spec_decode, user_sizes, vllm_default_sizes
from eaglegraph.rig.gpus import GpuSpec
from eaglegraph.rig.mode_resolution import (
    Resolution,
    SupportLevel,
    SupportRules,
    attention_support,
    resolve_mode,
)
from eaglegraph.rig.modes import Mode
from eaglegraph.rig.options import PlanOptions


def support_rules(profile: Profile) -> SupportRules:
    return SupportRules(
        flashinfer_xqa_sm90=profile.flashinfer_xqa_sm90,
        flashinfer_xqa_sm12x=profile.flashinfer_xqa_sm12x,
        flashinfer_fa2_native_decode=profile.flashinfer_fa2_native_decode,
        fa4_full_graphs=profile.fa4_full_graphs,
    )


def capture_ceiling(gpu: GpuSpec, profile: Profile) -> int:
    """The default largest capture size: 1024 on SM10x where the profile has it, else 512."""
    return 1024 if gpu.family == 100 and profile.sm100_capture_ceiling else 512


@dataclass(frozen=True)
class VllmSizing:
    """Everything before the managers: sizes, support, resolved mode."""

    sizes_before_rounding: list[int]
    sizes: list[int]
    support: SupportLevel
    resolution: Resolution
    breakable: bool


def vllm_sizing(opts: PlanOptions, profile: Profile) -> VllmSizing:
    """Sizes, support and resolved mode for these options under `profile`'s rules."""
    k, tokens = opts.num_speculative_tokens, opts.max_num_batched_tokens
    support = attention_support(
        opts.attention_backend,
        opts.gpu,
        support_rules(profile),
        trtllm_artifacts=opts.trtllm_artifacts,
        head_dim=opts.head_dim,
    )
    resolution = resolve_mode(
        opts.mode,
        support,
        k,
        attention_splits=opts.compiled and not opts.breakable,
        compiled=opts.compiled,
        breakable=opts.breakable,
        compile_off_keeps_full=profile.compile_off_keeps_full,
    )
    if opts.capture_sizes is not None:
        base = user_sizes(list(opts.capture_sizes), tokens)
    else:
        base = vllm_default_sizes(
            opts.max_num_seqs,
            k,
            tokens,
            opts.max_capture_size,
            ceiling=capture_ceiling(opts.gpu, profile),
            decode_sizes=profile.spec_decode_capture_sizes,
            add_max_num_batched_tokens=profile.captures_max_num_batched_tokens,
        )
    rounds = not profile.per_descriptor_rounding and (
        profile.rounds_every_mode or resolution.mode.decode_mode() is Mode.FULL
    )
    if not resolution.mode:
        sizes: list[int] = []
    elif rounds:
        sizes = round_for_spec_decode(base, k + 1)
    else:
        sizes = base
    return VllmSizing(base, sizes, support, resolution, opts.breakable)
