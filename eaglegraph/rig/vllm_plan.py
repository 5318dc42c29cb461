"""vLLM MRV2's capture plan for one configuration, under the profile of a release.

The steps mirror the engine's: default sizes (`VllmConfig._set_cudagraph_sizes`), the backend's
graph support on the target GPU and the mode it leads to (`resolve_cudagraph_mode_and_sizes`),
then one `CudaGraphManager._init_candidates` per phase: the target and the draft prefill with
the runner's mode and decode query length K+1, the draft decodes clamped to FULL_DECODE_ONLY or
NONE with query length 1. Breakable graphs are a runner flag: they turn the PIECEWISE
descriptors into BREAKABLE ones and leave FULL decode graphs alone. What changed between
releases comes from the profile's flags (known/), never from a version number here.
"""

from __future__ import annotations

from eaglegraph.known.breakable import BREAKABLE_ARCHITECTURES
from eaglegraph.known.profiles import Profile
from eaglegraph.rig.descriptors import BatchDescriptor, build_descriptors
from eaglegraph.rig.gpus import GpuSpec
from eaglegraph.rig.modes import Mode


def vllm_batch_defaults(gpu: GpuSpec, profile: Profile) -> tuple[int, int]:
    """`EngineArgs.get_batch_defaults` for the API server: (max_num_seqs, max_num_batched_tokens)."""
    if gpu.memory_gib >= 160 and profile.large_gpu_batch_defaults:
        return 1024, 16384
    if gpu.memory_gib >= 70 and "a100" not in gpu.name.lower():
        return 1024, 8192
    return 256, 2048


def breakable_enabled(requested: bool | None, architecture: str | None, profile: Profile) -> bool:
    """Explicit choice, else on for the architectures the engine lists (where it lists any)."""
    if not profile.breakable_graphs:
        return False
    if requested is not None:
        return requested
    return architecture in BREAKABLE_ARCHITECTURES


def phase_descriptors(
    mode: Mode,
    sizes: list[int],
    max_num_seqs: int,
    decode_query_len: int,
    *,
    profile: Profile,
    breakable: bool,
) -> list[BatchDescriptor]:
    """One manager's descriptors, ascending by size (decode descriptor first at a size)."""
    segmented = Mode.BREAKABLE if breakable and mode.has_piecewise() else Mode.PIECEWISE
    by_size = build_descriptors(
        mode,
        sizes,
        max_num_seqs,
        decode_query_len,
        round_uniform=profile.per_descriptor_rounding,
        max_capture_size=max(sizes) if sizes else None,
        segmented=segmented,
        pad_segmented_reqs=segmented is Mode.BREAKABLE and profile.breakable_pads_reqs,
    )
    return [d for n in sorted(by_size) for d in by_size[n]]


def draft_decode_mode(resolved: Mode, profile: Profile) -> Mode:
    """The draft-decode manager's mode: clamped to FULL_DECODE_ONLY/NONE, or the runner's."""
    if not profile.draft_decode_mode_clamp:
        return resolved
    return Mode.FULL_DECODE_ONLY if resolved.decode_mode() is Mode.FULL else Mode.NONE


def fused_draft_decode(
    backend: str, gpu: GpuSpec, profile: Profile, trtllm_artifacts: bool
) -> bool:
    """K−1 draft decodes recorded in one graph with the metadata update inside: where the
    backend updates draft decode metadata in place (FlashAttention, Triton; FlashInfer only on
    its TRT-LLM-gen decode path)."""
    if not profile.fused_draft_decode:
        return False
    if backend in ("flash_attn", "triton"):
        return True
    return (
        backend == "flashinfer"
        and profile.flashinfer_fused_draft_decode
        and gpu.family == 100
        and trtllm_artifacts
    )
