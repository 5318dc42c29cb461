"""SGLang's EAGLE graphs for one configuration, under the profile of a release.

Target verify and draft decode graphs are captured per batch size (requests), from the
speculative list capped at max_running_requests and at a GPU-memory-dependent maximum
(`_handle_gpu_memory_settings`). The draft-extend graph after verify exists only for the
attention backends the worker allowlists (`eagle_worker_v2._capture_cuda_graphs`); the draft's
prefill graphs are breakable graphs (BCG) over a token ladder up to the chunked-prefill size,
on by default on CUDA in newer releases and opt-in before. Which release does what is profile
data (known/).
"""

from __future__ import annotations

from eaglegraph.known.profiles import Profile
from eaglegraph.rig.capture_sizes import sglang_batch_sizes, sglang_prefill_tokens
from eaglegraph.rig.gpus import GpuSpec


def sglang_gpu_max_bs(gpu: GpuSpec, tp_size: int = 1) -> int:
    """Default `cuda_graph_max_bs` by GPU memory (MB thresholds in the engine)."""
    mb = gpu.memory_gib * 1024
    small_tp = tp_size < 4
    if mb < 20 * 1024:
        return 8
    if mb < 35 * 1024:
        return 48 if small_tp else 160
    if mb < 60 * 1024:
        return 32 if small_tp else 160
    if mb < 160 * 1024:
        return 256 if small_tp else 512
    return 512


def sglang_chunked_prefill_size(gpu: GpuSpec) -> int:
    """Default chunked prefill size by GPU memory: the prefill graphs' largest token count."""
    mb = gpu.memory_gib * 1024
    if mb < 20 * 1024:
        return 2048
    if mb < 60 * 1024:
        return 4096
    if mb < 160 * 1024:
        return 8192
    return 16384


def sglang_decode_batch_sizes(
    num_spec_tokens: int, gpu: GpuSpec, max_running_requests: int
) -> list[int]:
    max_bs = min(sglang_gpu_max_bs(gpu), max_running_requests)
    return sglang_batch_sizes(num_spec_tokens, max_bs=max_bs, max_running_requests=max_bs)


def draft_extend_graph(backend: str, profile: Profile) -> bool:
    """Whether the draft-extend graph runner exists for this backend (else it runs eagerly)."""
    if backend == "triton":
        return True
    if backend == "flashinfer":
        return bool(profile.sglang_flashinfer_draft_extend_graph)
    if backend == "flash_attn":
        return bool(profile.sglang_fa_draft_extend_graph)
    return False


def draft_prefill_bcg(explicit: bool | None, profile: Profile) -> bool:
    """Breakable prefill graphs for the draft: the default on CUDA where the profile has it,
    else only when asked for (and only where the draft can have them at all)."""
    if not profile.sglang_draft_breakable_prefill:
        return False
    if explicit is not None:
        return explicit
    return bool(profile.sglang_default_breakable_prefill)


def prefill_token_ladder(max_tokens: int) -> list[int]:
    return sglang_prefill_tokens(max_tokens)
