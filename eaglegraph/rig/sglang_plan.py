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

from dataclasses import dataclass

from eaglegraph.errors import BadInput
from eaglegraph.known.profiles import Profile
from eaglegraph.known.sglang_backends import (
    PREFILL_GRAPHS_OFF_BY_DEFAULT,
    V1_DRAFT_EXTEND_BACKENDS,
    V2_DRAFT_EXTEND_FLAG,
    engine_names_of,
)
from eaglegraph.known.sglang_capture import (
    AUTO_SPEC_OTHERWISE,
    AUTO_SPEC_PARAMS,
    FIXED_EXTEND_STEP,
    FIXED_EXTENSIONS,
    FIXED_SMALL_GPU_MAX_BS,
    FIXED_SMALL_GPU_MIB,
    FIXED_SPEC_STRETCHES,
    LARGE_TP,
    MAX_BS_TIERS,
    MLA_PREFILL_TOKENS_BEFORE,
    MLA_PREFILL_TOKENS_CAP,
    SMALL_GPU_TIERS,
    SPEC_STRETCHES,
    SPEC_STRETCHES_053,
    TBO_ALIGNMENT,
    MaxBsTier,
    Stretch,
)
from eaglegraph.rig.capture_sizes import sglang_prefill_tokens
from eaglegraph.rig.gpus import GpuSpec


def _sizes(stretches: tuple[Stretch, ...], max_bs: int) -> list[int]:
    """The stretches' sizes up to max_bs (an open stretch runs to max_bs)."""
    out: list[int] = []
    for start, stop, step in stretches:
        out += range(start, max_bs + 1 if stop is None else stop, step)
    return [s for s in out if s <= max_bs]


def _small_gpu_tier(profile: Profile) -> MaxBsTier:
    if profile.sglang_small_gpu_max_bs_48:
        return SMALL_GPU_TIERS["0.5.20"]
    if profile.sglang_small_gpu_max_bs_24:
        return SMALL_GPU_TIERS["0.5.4"]
    return SMALL_GPU_TIERS["0.5.3"]


def sglang_gpu_max_bs(gpu: GpuSpec, tp_size: int = 1, profile: Profile | None = None) -> int | None:
    """Default `cuda_graph_max_bs` by GPU memory (MiB thresholds in the engine) and TP; None
    where the release sets none (0.5.1-0.5.2 above 35 GB). No profile: current semantics."""
    mib = gpu.memory_gib * 1024
    large = tp_size >= LARGE_TP
    if profile is not None and not profile.sglang_max_bs_every_gpu:
        if mib < FIXED_SMALL_GPU_MIB:
            return FIXED_SMALL_GPU_MAX_BS[1 if large else 0]
        return None
    small = SMALL_GPU_TIERS["0.5.20"] if profile is None else _small_gpu_tier(profile)
    tiers = (MAX_BS_TIERS[0], small, *MAX_BS_TIERS[1:])
    tier = next(t for t in tiers if t.below_mib is None or mib < t.below_mib)
    return tier.large_tp if large else tier.small_tp


@dataclass(frozen=True)
class GraphLayout:
    """What of the deployment SGLang's `get_batch_sizes_to_capture` reads: the TP size, the
    attention-DP groups inside it (1: no DP attention) and two-batch overlap."""

    tp_size: int = 1
    attn_dp_size: int = 1
    two_batch_overlap: bool = False

    @property
    def alignment(self) -> int:
        """`mul_base`: x2 under two-batch overlap, x the attention-TP size where a gathered
        buffer is needed (under DP attention, with the default MoE layout)."""
        base = TBO_ALIGNMENT if self.two_batch_overlap else 1
        if self.attn_dp_size > 1:
            base *= self.tp_size // self.attn_dp_size
        return base


def request_pool(profile: Profile, max_running_requests: int, layout: GraphLayout) -> int:
    """`req_to_token_pool.size` as the graph list sees it: per DP worker from 0.5.10,
    rounded up to the alignment."""
    if not profile.sglang_pool_per_dp_worker:
        return max_running_requests
    pool = max(1, max_running_requests // layout.attn_dp_size)
    step = layout.alignment
    return -(-pool // step) * step


def _aligned(profile: Profile, sizes: list[int], width: int, layout: GraphLayout) -> list[int]:
    """The sizes whose model input (bs, or bs x width from 0.5.8 without two-batch overlap)
    is a multiple of the alignment."""
    per_token = profile.sglang_bs_align_per_token and not layout.two_batch_overlap
    step = layout.alignment
    return [s for s in sizes if (s * width if per_token else s) % step == 0]


def captured_batch_sizes(
    profile: Profile,
    listed: list[int],
    max_running_requests: int,
    width: int = 1,
    layout: GraphLayout | None = None,
) -> list[int]:
    """`get_batch_sizes_to_capture` for one runner (`width` tokens per request: the target
    verify's draft tokens, 1 for the draft runners) over the server's list: the pool joins a
    list that goes past it, the sizes are aligned and capped at the pool. An empty result is
    SGLang's startup assertion (`len(capture_bs) > 0`), refused here."""
    layout = layout or GraphLayout()
    pool = request_pool(profile, max_running_requests, layout)
    sizes = [*listed, pool] if max(listed) > pool else list(listed)
    kept = sorted({s for s in _aligned(profile, sizes, width, layout) if s <= pool})
    if not kept:
        raise BadInput(
            f"SGLang captures no graph batch size here (a multiple of {layout.alignment} up to "
            f"{pool} requests): it fails its startup assertion `len(capture_bs) > 0`",
            "raise --max-running-requests or --cuda-graph-max-bs",
        )
    return kept


def _fixed_list(
    gpu: GpuSpec, max_bs: int | None, pool: int, keep: list[int] | None = None
) -> list[int]:
    """0.5.1-0.5.2 `get_batch_sizes_to_capture`: the fixed list and its memory extensions,
    the pool size appended past it, aligned (`keep`: the aligned sizes), cut (or extended by
    16s) to cuda_graph_max_bs."""
    mib = gpu.memory_gib * 1024
    sizes = _sizes(FIXED_SPEC_STRETCHES, 10**9)
    for ext in FIXED_EXTENSIONS:
        if mib > ext.above_mib:
            sizes += _sizes((ext.stretch,), 10**9)
    if max(sizes) > pool:
        sizes.append(pool)
    if keep is not None:
        sizes = [s for s in sizes if s in keep]
    if max_bs:
        sizes = [s for s in sizes if s <= max_bs]
        if max(sizes) < max_bs:
            sizes += range(max(sizes), max_bs + 1, FIXED_EXTEND_STEP)
    return sorted({s for s in sizes if s <= pool})


def sglang_decode_batch_sizes(
    profile: Profile,
    gpu: GpuSpec,
    max_running_requests: int,
    tp_size: int = 1,
    max_bs: int | None = None,
    *,
    width: int = 1,
    layout: GraphLayout | None = None,
) -> list[int]:
    """The batch sizes an EAGLE graph runner of `width` tokens per request captures
    (`get_batch_sizes_to_capture`): the release's speculative list up to cuda_graph_max_bs
    (`max_bs`, the user's --cuda-graph-max-bs; None: the release's default for the GPU and TP),
    capped at the request pool (max_running_requests), which joins the list when the list goes
    past it, aligned under DP attention or two-batch overlap (`layout`; its TP wins over
    `tp_size`). A given max_bs is never raised or capped before the list is built (0.5.22+
    caps only its default at max_running_requests, which the pool cap here already does)."""
    layout = layout or GraphLayout(tp_size)
    if max_bs is None:
        max_bs = sglang_gpu_max_bs(gpu, layout.tp_size, profile)
    if not profile.sglang_max_bs_every_gpu:
        pool = request_pool(profile, max_running_requests, layout)
        keep = captured_batch_sizes(profile, _fixed_list(gpu, None, pool), pool, width, layout)
        return _fixed_list(gpu, max_bs, pool, keep)
    assert max_bs is not None  # every GPU has a default from 0.5.3
    stretches = SPEC_STRETCHES if profile.sglang_bs_list_has_64 else SPEC_STRETCHES_053
    sizes = _sizes(stretches, max_bs)
    if profile.sglang_max_bs_appended and max_bs not in sizes:  # every default is on the list
        sizes.append(max_bs)
    return captured_batch_sizes(profile, sizes, max_running_requests, width, layout)


def sglang_auto_spec(architecture: str | None) -> tuple[int, int, int]:
    """(steps, topk, num_draft_tokens) an EAGLE launch without --speculative-num-steps runs."""
    return AUTO_SPEC_PARAMS.get(architecture or "", AUTO_SPEC_OTHERWISE)


def on_spec_v2(profile: Profile, topk: int) -> bool:
    """Whether EAGLE runs on EAGLEWorkerV2 (else the spec v1 EAGLEWorker)."""
    return profile.sglang_spec_v2_default and (topk == 1 or profile.sglang_tree_spec_v2)


def eagle_worker_name(profile: Profile, topk: int) -> str:
    """The EAGLE worker class this release runs the configuration on, as SGLang logs it."""
    if on_spec_v2(profile, topk):
        return "EAGLEWorkerV2 (spec v2)"
    return "EAGLEWorker (spec v1)"


def draft_extend_tokens(profile: Profile, num_steps: int, num_draft_tokens: int) -> int:
    """Tokens per request of the draft-extend graph: num_draft_tokens from 0.5.13
    (`resolve_num_tokens_per_req(phase="draft_extend")`), num_steps + 1 before
    (`EAGLEDraftExtendCudaGraphRunner.__init__`: num_tokens_per_bs)."""
    return num_draft_tokens if profile.sglang_tree_spec_v2 else num_steps + 1


def draft_decode_graph(profile: Profile, num_steps: int) -> bool:
    """The draft-decode graph runner exists for more than one step (from 0.5.3)."""
    return num_steps > 1 or not profile.sglang_draft_decode_two_steps


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


def draft_extend_graph(
    backend: str, profile: Profile, topk: int = 1, engine_name: str | None = None
) -> bool:
    """Whether the draft-extend graph runner exists for this backend (else it runs eagerly):
    EAGLEWorker captures it for every backend with a draft-extend backend; EAGLEWorkerV2 for
    the backends on its allowlist (`_capture_cuda_graphs`), which grew by release.
    `engine_name`: SGLang's own backend where the rig family stands in for it (trtllm_mha)."""
    if engine_name in V2_DRAFT_EXTEND_FLAG:
        if not on_spec_v2(profile, topk):
            return engine_name in V1_DRAFT_EXTEND_BACKENDS
        flag = V2_DRAFT_EXTEND_FLAG[engine_name]
        return flag is None or bool(getattr(profile, flag))
    if not on_spec_v2(profile, topk):
        return any(name in V1_DRAFT_EXTEND_BACKENDS for name in engine_names_of(backend))
    if backend == "triton":
        return True
    if backend == "flashinfer":
        return bool(profile.sglang_flashinfer_draft_extend_graph)
    if backend == "flash_attn":
        return bool(profile.sglang_fa_draft_extend_graph)
    return False


def draft_prefill_bcg(
    explicit: bool | None,
    profile: Profile,
    engine_name: str | None = None,
    mla: bool = False,
) -> bool:
    """Breakable prefill graphs for the draft: the default on CUDA where the profile has it
    (not under a default backend that turns prefill graphs off, nor under an MLA backend in
    the releases whose compatibility rules turned them off for MLA), else only when asked
    for (and only where the draft can have them at all): an explicit choice skips those
    rules, as SGLang skips them for a prefill backend the user set."""
    if not profile.sglang_draft_breakable_prefill:
        return False
    if explicit is not None:
        return explicit
    if engine_name in PREFILL_GRAPHS_OFF_BY_DEFAULT:
        return False
    if mla and not profile.sglang_mla_breakable_prefill:
        return False
    return bool(profile.sglang_default_breakable_prefill)


def prefill_graph_tokens(profile: Profile, chunked_prefill_size: int, mla: bool) -> int:
    """The prefill (breakable) graphs' largest token count (`handle_gpu_memory_settings`):
    the chunked prefill size, or under an MLA backend 2048 before 0.5.23 and
    min(8192, chunked prefill size) from it."""
    if not mla:
        return chunked_prefill_size
    if profile.sglang_mla_prefill_cap_8192:
        return min(MLA_PREFILL_TOKENS_CAP, chunked_prefill_size)
    return MLA_PREFILL_TOKENS_BEFORE


def prefill_token_ladder(max_tokens: int) -> list[int]:
    return sglang_prefill_tokens(max_tokens)
