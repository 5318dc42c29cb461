"""SGLang's decode capture batch sizes per 0.5.x release, as read from the wheels.

A customer's SGLang server captures its target-verify, draft-decode and draft-extend graphs
over one batch-size list; which list it was depends on the release, the GPU's memory (what
`get_device_memory_capacity` reports, in MiB) and the TP size. Each stretch and each memory
tier below names the function it was read from; which stretches a release uses is a profile
flag (`known.profiles`: sglang_max_bs_every_gpu, sglang_bs_list_has_64,
sglang_small_gpu_max_bs_24, sglang_small_gpu_max_bs_48).
"""

from __future__ import annotations

from dataclasses import dataclass

# (start, stop, step) as Python ranges; `None` as stop: up to the largest batch size
Stretch = tuple[int, int | None, int]

# 0.5.1-0.5.2: `model_executor/cuda_graph_runner.py::get_batch_sizes_to_capture`, speculative
# branch ("capture less"), then two memory extensions
FIXED_SPEC_STRETCHES: tuple[Stretch, ...] = ((1, 9, 1), (10, 33, 2), (40, 64, 8), (80, 161, 16))
FIXED_SOURCE = "sglang 0.5.2 srt/model_executor/cuda_graph_runner.py::get_batch_sizes_to_capture"


@dataclass(frozen=True)
class MemoryExtension:
    """0.5.1-0.5.2: sizes added to the fixed list on a GPU with more than `above_mib` MiB."""

    above_mib: float
    stretch: Stretch


FIXED_EXTENSIONS = (
    MemoryExtension(90 * 1024, (160, 257, 8)),  # "H200, H20"
    MemoryExtension(160 * 1000, (256, 513, 16)),  # "B200, MI300" (sic: 1000, not 1024)
)
# 0.5.1-0.5.2 `ServerArgs.__post_init__`: cuda_graph_max_bs defaults only under 35 GB
FIXED_SMALL_GPU_MIB = 35 * 1024
FIXED_SMALL_GPU_MAX_BS = (8, 80)  # (TP < 4, TP >= 4)
# 0.5.1-0.5.2: with cuda_graph_max_bs above the list's largest size, the list is extended
# from that size to cuda_graph_max_bs by this step
FIXED_EXTEND_STEP = 16

# 0.5.3-0.5.9 `server_args.py::ServerArgs._generate_cuda_graph_batch_sizes`, 0.5.14-0.5.18
# `::_generate_decode_cuda_graph_batch_sizes`, 0.5.19+ `arg_groups/cuda_graph_hook.py::
# generate_decode_cuda_graph_batch_sizes` (speculative branch)
SPEC_STRETCHES: tuple[Stretch, ...] = (
    (1, 9, 1),
    (10, 33, 2),
    (40, 65, 4),
    (72, 257, 8),
    (272, None, 16),
)
# 0.5.3 is the same list but for its third stretch: it stops the 40s at 60
SPEC_STRETCHES_053: tuple[Stretch, ...] = (*SPEC_STRETCHES[:2], (40, 64, 4), *SPEC_STRETCHES[3:])
SPEC_SOURCE = (
    "sglang 0.5.23 srt/arg_groups/cuda_graph_hook.py::generate_decode_cuda_graph_batch_sizes "
    "(0.5.3-0.5.18: srt/server_args.py::ServerArgs._generate_cuda_graph_batch_sizes)"
)


@dataclass(frozen=True)
class MaxBsTier:
    """`cuda_graph_max_bs` on a GPU with less than `below_mib` MiB (None: any larger one)."""

    below_mib: float | None
    small_tp: int  # TP < 4
    large_tp: int  # TP >= 4


# 0.5.3+ `server_args.py::ServerArgs._handle_gpu_memory_settings` (0.5.19+
# `arg_groups/memory_hook.py::handle_gpu_memory_settings`), CUDA cards, smallest first; the
# tier under 35 GB moved between releases and is `SMALL_GPU_TIERS`' (it sits second)
MAX_BS_TIERS = (
    MaxBsTier(20 * 1024, 8, 8),
    MaxBsTier(60 * 1024, 32, 160),
    MaxBsTier(90 * 1024, 256, 512),
    MaxBsTier(160 * 1024, 256, 512),
    MaxBsTier(None, 512, 512),
)
# the tier under 35 GB by the first release that had it
SMALL_GPU_TIERS = {
    "0.5.3": MaxBsTier(35 * 1024, 16, 80),
    "0.5.4": MaxBsTier(35 * 1024, 24, 80),
    "0.5.20": MaxBsTier(35 * 1024, 48, 160),
}
MAX_BS_SOURCE = (
    "sglang 0.5.23 srt/arg_groups/memory_hook.py::handle_gpu_memory_settings "
    "(0.5.3-0.5.18: srt/server_args.py::ServerArgs._handle_gpu_memory_settings)"
)
# TP at or above which the larger column applies (`tp_size < 4` in every release)
LARGE_TP = 4
POOL_SOURCE = (
    "sglang 0.5.23 srt/model_executor/runner/base_cuda_graph_runner.py::"
    "get_batch_sizes_to_capture (capped at req_to_token_pool.size = max_running_requests, "
    "which is appended when the list goes past it)"
)
# `_handle_eagle_family` (0.5.13+ arg_groups/speculative_hook.py; before, ServerArgs):
# EAGLE-family servers default max_running_requests to 48 in every 0.5.x release
EAGLE_MAX_RUNNING_REQUESTS = 48

# `_auto_choose_speculative_params` (0.5.1-0.5.18 srt/server_args.py::ServerArgs.
# auto_choose_speculative_params / ::_auto_choose_speculative_params, 0.5.19+ arg_groups/
# speculative_hook.py): an EAGLE-family launch without --speculative-num-steps gets
# (steps, topk, num_draft_tokens) by the target's architecture, the same in every 0.5.x; it
# runs after the default attention backend is chosen (which saw no topk)
AUTO_SPEC_PARAMS: dict[str, tuple[int, int, int]] = {
    "LlamaForCausalLM": (5, 4, 8),
    "Grok1ForCausalLM": (5, 4, 8),
    "Grok1VForCausalLM": (5, 4, 8),
}
AUTO_SPEC_OTHERWISE = (3, 1, 4)
AUTO_SPEC_SOURCE = (
    "sglang 0.5.23 srt/arg_groups/speculative_hook.py::_auto_choose_speculative_params"
)

# --- alignment of the graph batch sizes (DP attention, two-batch overlap) -----------------
# `get_batch_sizes_to_capture` keeps a listed batch size only when the runner's model input
# for it is a multiple of `mul_base`: x2 under two-batch overlap, x the attention-TP size
# (TP / attention-DP groups) when the runner needs a gathered buffer. Which input counts and
# what the request pool is moved by release (profile flags sglang_bs_align_per_token and
# sglang_pool_per_dp_worker); the rows below say where each part was read.
TBO_ALIGNMENT = 2


@dataclass(frozen=True)
class AlignmentRow:
    """One part of the alignment rule, the first release that had it and where it was read."""

    since: str
    rule: str
    source: str


ALIGNMENT_ROWS = (
    AlignmentRow(
        "0.5.1",
        "x2 under --enable-two-batch-overlap; x attention-TP size with a gathered buffer; "
        "a batch size is kept when it is a multiple",
        "sglang 0.5.1 srt/model_executor/cuda_graph_runner.py::get_batch_sizes_to_capture "
        "(0.5.23: srt/utils/common.py::get_cuda_graph_batch_size_alignment)",
    ),
    AlignmentRow(
        "0.5.1",
        "a gathered buffer is needed under DP attention (require_mlp_tp_gather: "
        "moe_dense_tp_size unset) and not without it (require_attn_tp_gather: no A2A "
        "backend, moe_dense_tp_size unset)",
        "sglang 0.5.23 srt/utils/common.py::require_gathered_buffer",
    ),
    AlignmentRow(
        "0.5.8",
        "the multiple applies to bs x tokens per request of the runner (target verify: "
        "speculative_num_draft_tokens; draft decode and draft extend: 1); two-batch overlap "
        "counts one per request",
        "sglang 0.5.8 srt/model_executor/cuda_graph_runner.py::get_batch_sizes_to_capture "
        "(num_tokens_per_bs; 0.5.23 runner/base_cuda_graph_runner.py: captured_req_width, "
        "runner/decode_cuda_graph_runner.py::DecodeCudaGraphRunner.__init__)",
    ),
    AlignmentRow(
        "0.5.10",
        "the request pool is max_running_requests // attention-DP size per DP worker, "
        "rounded up to the multiple before it joins the list",
        "sglang 0.5.10 srt/model_executor/cuda_graph_runner.py::get_batch_sizes_to_capture "
        "and model_runner_kv_cache_mixin.py::_resolve_max_num_reqs (0.5.23 mem_cache/"
        "kv_cache_configurator.py::resolve_max_num_reqs)",
    ),
)

# --- the prefill (breakable) graphs' largest token count for MLA models -------------------
# `_handle_gpu_memory_settings` defaults the prefill graphs' max_bs (their token ladder's top)
# to chunked_prefill_size, except under an MLA backend: 2048 in 0.5.15-0.5.22 (0.5.13-0.5.14:
# piecewise_cuda_graph_max_tokens), min(8192, chunked_prefill_size) from 0.5.23
# (profile flag sglang_mla_prefill_cap_8192)
MLA_PREFILL_TOKENS_BEFORE = 2048
MLA_PREFILL_TOKENS_CAP = 8192
MLA_PREFILL_SOURCE = (
    "sglang 0.5.23 srt/arg_groups/memory_hook.py::handle_gpu_memory_settings "
    "(0.5.15-0.5.18: srt/server_args.py::ServerArgs._handle_gpu_memory_settings, 2048)"
)
