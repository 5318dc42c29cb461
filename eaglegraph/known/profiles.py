"""Engine profiles: named sets of the framework semantics that changed between versions.

Each flag is tied to the upstream change that set it, and each profile to the engine releases it
reproduces, so `--behavior vllm-pre-39773` rebuilds the exact conditions under which an old bug
fired, a version read from a crash log picks the profile that behaves like it, and the default
(the newest profile of an engine) shows the bug is gone.

Profiles are written as deltas: each `Release` in `RELEASES` names only the flags its releases
turned on or off against the engine's previous entry, and `PROFILES` is derived from them. Adding
an engine release is one `Release(...)` entry after the engine's newest (its version range must
not overlap another profile of the same engine, and its delta must change something; tests check
both), plus a `Flag` and a `Profile` field when it brings new semantics.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from eaglegraph.errors import unknown_choice
from eaglegraph.known.hazard_spec import HazardSpec
from eaglegraph.known.pool_policies import PoolPolicy
from eaglegraph.known.runners import ModelRunner
from eaglegraph.known.upstream_records import TABLE, Upstream, release
from eaglegraph.known.versions import VersionRange, between


@dataclass(frozen=True)
class Flag:
    name: str
    ref: str  # the upstream change that set the flag's current value
    meaning: str
    # The record of `ref`, when this row declares it (`pr(...)`) instead of the table of
    # `known.upstream_records`; `known.upstream` collects it.
    record: Upstream | None = None
    hazard: HazardSpec | None = None  # what the off state reproduces; `known.hazards` collects it

    def __post_init__(self) -> None:
        if self.record is not None and self.record.ref != self.ref:
            raise ValueError(
                f"flag {self.name}: record {self.record.ref} is not its ref {self.ref}"
            )

    @property
    def engine(self) -> str:
        return self.ref.split("#")[0].split("@")[0]


FLAGS = {
    f.name: f
    for f in (
        Flag(
            "draft_decode_mode_clamp",
            "vllm#39773",
            "draft decodes run FULL_DECODE_ONLY or eagerly, never PIECEWISE (PIECEWISE pads "
            "num_tokens without num_reqs, so FlashInfer-style decode reads stale kv_indptr)",
        ),
        Flag(
            "pad_last_token_indices",
            "vllm#39773",
            "prepare_eagle_inputs zeroes last_token_indices[num_reqs:]; before, a FULL "
            "draft-prefill graph gathered hidden rows at stale indices (out of bounds)",
        ),
        Flag(
            "reuse_target_attn_state",
            "vllm#40410",
            "the draft prefill is captured with the target's captured attention state and "
            "replays without rebuilding metadata",
        ),
        Flag(
            "dedicated_eagle_pool",
            "vllm#44078",
            "EAGLE graphs capture into their own graph pool (vLLM 0.22); removed in 0.23, "
            "saving 0.27 GiB on Llama-3.1-8B + EAGLE, K=5, H200",
        ),
        Flag(
            "dflash_padded_query_buffers",
            "vllm#50065",
            "DFlash query buffers (block ids, positions, query_start_loc, seq_lens, sample "
            "indices) are sized and written for the graph-padded request count; before, for "
            "the unpadded batch, so a FULL replay's padded requests read stale rows",
        ),
        Flag(
            "draft_decode_excludes_rejected",
            "vllm#29845",
            "MRV1's draft decodes drop each request's rejected drafts from the seq_lens of the "
            "padded drafter batch; before (0.11-0.13), every draft decode attended the rejected "
            "positions' stale draft KV",
        ),
        Flag(
            "reset_positions_on_padded_replay",
            "sglang#10892",
            "the EAGLE draft graph runner zeroes positions[raw_bs:bs] before a padded replay; "
            "before, stale positions in padded rows indexed the KV cache out of range (IMA)",
        ),
        Flag(
            "breakable_graphs",
            "vllm#44050",
            "breakable graphs are a runner flag independent of the mode: PIECEWISE batches run one capture broken at attention, FULL decode graphs stay; on by default for the architectures the engine lists",
        ),
        Flag(
            "per_descriptor_rounding",
            "vllm#45953",
            "capture sizes are not rounded to multiples of K+1 globally; each FULL uniform-decode descriptor is rounded, PIECEWISE and draft-decode graphs use the raw sizes",
        ),
        Flag(
            "rounds_every_mode",
            "vllm@0.21.0",
            "every graph manager rounds the shared capture sizes to multiples of K+1 whatever "
            "the mode (0.21-0.24); 0.20 rounds only when decode graphs are FULL, so PIECEWISE "
            "runs keep the raw sizes",
        ),
        Flag(
            "captures_max_num_batched_tokens",
            "vllm@0.21.0",
            "max_num_batched_tokens joins the default capture list when it is under the largest "
            "capture size",
        ),
        Flag(
            "breakable_pads_reqs",
            "vllm@0.26.0",
            "breakable PIECEWISE descriptors pad num_reqs like FULL ones (0.26 only)",
        ),
        Flag(
            "fresh_prefill_capture_metadata",
            "vllm#48261",
            "draft-prefill graphs are captured with fresh dummy metadata built through the target's builders, not the target's captured state (no hand-off by descriptor key)",
        ),
        Flag(
            "sm100_capture_ceiling",
            "vllm#49390",
            "the default largest capture size is 1024 on SM10x (512 elsewhere)",
        ),
        Flag(
            "fused_draft_decode",
            "vllm#46849",
            "the K-1 draft decodes run as one graph with the metadata update inside, where the backend updates draft decode metadata in place",
        ),
        Flag(
            "large_gpu_batch_defaults",
            "vllm@0.28.0",
            "GPUs with >= 160 GiB default to 16384 batched tokens for the API server",
        ),
        Flag(
            "flashinfer_xqa_sm12x",
            "vllm#49718",
            "FlashInfer on SM12x reports UNIFORM_BATCH through XQA",
        ),
        Flag(
            "spec_decode_capture_sizes",
            "vllm#50488",
            "the default capture list adds the decode sizes n·(K+1), under the platform ceiling",
        ),
        Flag(
            "per_mode_dispatch",
            "vllm#53407",
            "FULL and PIECEWISE descriptors pad up within their own sizes (FULL first)",
        ),
        Flag(
            "flashinfer_xqa_sm90",
            "vllm#50439",
            "FlashInfer on SM90 reports UNIFORM_BATCH through XQA when the TRT-LLM attention artifacts load, so spec decode keeps FULL decode graphs on Hopper",
        ),
        Flag(
            "graph_memory_profiling",
            "vllm#53306",
            "graph memory is profiled in a throwaway pool and taken out of the KV budget",
        ),
        Flag(
            "compile_off_keeps_full",
            "vllm#55095",
            "without torch.compile (and without breakable graphs) a piecewise mode falls back to without_piecewise() (FULL_DECODE_ONLY), not NONE",
        ),
        Flag(
            "flashinfer_fused_draft_decode",
            "vllm@0.32.0",
            "FlashInfer's TRT-LLM-gen decode joins the fused draft decode graph",
        ),
        Flag(
            "flashinfer_fa2_native_decode",
            "vllm@0.33.0",
            "below SM90 FlashInfer reports UNIFORM_BATCH (fa2 native decode of uniform queries)",
        ),
        Flag(
            "fa4_full_graphs",
            "vllm@0.33.0",
            "FlashAttention 4 (SM10x) reports ALWAYS",
        ),
        Flag(
            "sglang_draft_breakable_prefill",
            "sglang#25795",
            "the EAGLE draft can run breakable prefill graphs (--enable-breakable-cuda-graph)",
        ),
        Flag(
            "sglang_flashinfer_draft_extend_graph",
            "sglang#28782",
            "FlashInfer draft extends after verify replay a CUDA graph",
        ),
        Flag(
            "sglang_default_breakable_prefill",
            "sglang@0.5.15",
            "breakable prefill graphs are on by default on CUDA, the draft's too",
        ),
        Flag(
            "sglang_fa_draft_extend_graph",
            "sglang@0.5.23",
            "FlashAttention draft extends after verify replay a CUDA graph",
        ),
        Flag(
            "sglang_max_bs_every_gpu",
            "sglang@0.5.3",
            "the decode capture list is ServerArgs' speculative list up to cuda_graph_max_bs, "
            "defaulted by GPU memory and TP for every card; before, a fixed list to 160, "
            "extended to 256 above 90 GiB and to 512 above 160000 MiB "
            "(cuda_graph_runner.get_batch_sizes_to_capture)",
        ),
        Flag(
            "sglang_draft_decode_two_steps",
            "sglang@0.5.3",
            "no draft-decode graph when speculative_num_steps is 1; before, "
            "EAGLEDraftCudaGraphRunner captured one per batch size whatever the steps",
        ),
        Flag(
            "sglang_bs_list_has_64",
            "sglang@0.5.4",
            "the speculative capture list steps 40-64 by 4 with 64 included (40-60 before)",
        ),
        Flag(
            "sglang_small_gpu_max_bs_24",
            "sglang@0.5.4",
            "GPUs under 35 GB default to cuda_graph_max_bs 24 at TP < 4 (16 before)",
        ),
        Flag(
            "sglang_spec_v2_default",
            "sglang@0.5.11",
            "EAGLE with topk 1 runs on EAGLEWorkerV2, whose draft-extend graph has a backend "
            "allowlist; before, EAGLEWorker captured it for every backend with a draft-extend "
            "backend, at speculative_num_steps + 1 tokens per request",
        ),
        Flag(
            "sglang_tree_spec_v2",
            "sglang@0.5.13",
            "trees (topk > 1) run on EAGLEWorkerV2 and the draft-extend graph holds "
            "speculative_num_draft_tokens per request; before, trees fell back to EAGLEWorker "
            "and the draft extend held speculative_num_steps + 1",
        ),
        Flag(
            "sglang_trtllm_mha_draft_extend_graph",
            "sglang@0.5.13",
            "TRT-LLM MHA (trtllm_mha) draft extends after verify replay a CUDA graph on "
            "EAGLEWorkerV2 (TRTLLMHAAttnBackend joins the allowlist)",
        ),
        Flag(
            "sglang_small_gpu_max_bs_48",
            "sglang@0.5.20",
            "GPUs under 35 GB default to cuda_graph_max_bs 48 at TP < 4 and 160 at TP >= 4 "
            "(24 and 80 before)",
        ),
        Flag(
            "sglang_max_bs_appended",
            "sglang@0.5.10",
            "a cuda_graph_max_bs off the speculative list (a --cuda-graph-max-bs such as 50) "
            "joins the capture list (server_args.py::ServerArgs._generate_cuda_graph_batch_"
            "sizes); before, the list stopped at the last size below it",
            record=release(
                "sglang-max-bs-appended",
                "sglang",
                "0.5.10",
                "a cuda_graph_max_bs off the speculative capture list is appended to it "
                "(ServerArgs._generate_cuda_graph_batch_sizes; absent in 0.5.9)",
            ),
        ),
        Flag(
            "sglang_bs_align_per_token",
            "sglang@0.5.8",
            "under DP attention or two-batch overlap a graph batch size is kept when "
            "bs x the runner's tokens per request is a multiple of the alignment "
            "(cuda_graph_runner.py::get_batch_sizes_to_capture, num_tokens_per_bs); before, "
            "when bs itself was, for every runner",
            record=release(
                "sglang-bs-align-per-token",
                "sglang",
                "0.5.8",
                "get_batch_sizes_to_capture aligns bs x num_tokens_per_bs (the target verify's "
                "draft tokens) to the attention-TP size; absent in 0.5.7",
            ),
        ),
        Flag(
            "sglang_pool_per_dp_worker",
            "sglang@0.5.10",
            "the request pool the graph list is capped at is max_running_requests // "
            "attention-DP size per DP worker, rounded up to the alignment "
            "(model_runner_kv_cache_mixin.py::_resolve_max_num_reqs, get_batch_sizes_to_"
            "capture); before, max_running_requests, unrounded",
        ),
        Flag(
            "sglang_mla_breakable_prefill",
            "sglang@0.5.18",
            "an MLA attention backend keeps the default breakable prefill graphs; 0.5.14-0.5.17 "
            "turned them off for MLA unless the prefill backend was set explicitly "
            "(server_args.py::ServerArgs._disable_breakable_cudagraph_if_incompatible, rule "
            "'MLA attention'; 0.5.17: non-DSA MLA)",
            record=release(
                "sglang-mla-breakable-prefill",
                "sglang",
                "0.5.18",
                "the breakable-graph compatibility rules no longer turn the default prefill "
                "graphs off for MLA attention (the rule is in 0.5.14-0.5.17)",
            ),
        ),
        Flag(
            "sglang_mla_prefill_cap_8192",
            "sglang@0.5.23",
            "under an MLA backend the prefill graphs' token ladder runs to "
            "min(8192, chunked_prefill_size) (arg_groups/memory_hook.py::handle_gpu_memory_"
            "settings); before, to 2048",
        ),
        # --- DP agreement (issue 25): read through `known.dp_rules.dp_rule`, never directly
        Flag(
            "dp_cudagraph_mode_sync",
            "vllm#30173",
            "V1 DP ranks all-reduce their cudagraph mode with the token counts and take the "
            "min (coordinate_batch_across_dp); before, each rank kept its own mode, so one "
            "eager rank faced peers replaying FULL graphs",
        ),
        Flag(
            "dp_explicit_drafter_syncs",
            "vllm#26086",
            "the V1 EAGLE drafter runs its own DP agreement before the draft prefill and the "
            "draft decodes, and idle ranks' dummy runs issue as many; before, one implicit "
            "all-reduce per draft forward, and one per step on idle ranks",
        ),
        Flag(
            "dp_dummy_run_padded_descriptor",
            "vllm#25906",
            "V1 dummy runs dispatch their graph from the DP-agreed padded token count, not "
            "the rank's unpadded one",
        ),
        Flag(
            "dp_unfit_drafter_dummy",
            "vllm@0.25.0",
            "a V1 rank whose batch does not fit the drafter (near max_model_len) runs the "
            "drafter's dummy run under DP instead of skipping the drafter and its DP syncs",
        ),
        Flag(
            "dp_idle_ranks_propose",
            "vllm#35294",
            "MRV2 idle DP ranks run the speculator's propose (dummy) after their dummy "
            "target forward, so the draft's collectives have counterparts",
        ),
        Flag(
            "dp_draft_reuses_target_sync",
            "vllm#53694",
            "the MRV2 draft prefill reuses the target's DP agreement (one DP collective a "
            "step); before, it ran its own DP sync",
        ),
        Flag(
            "sglang_dp_draft_graph_vote",
            "sglang#32196",
            "the draft's graph eligibility is a min-reduced MLP-sync column "
            "(can_run_draft_cuda_graph); before, a rank-local veto made only that rank eager",
        ),
        Flag(
            "sglang_dp_draft_token_counts",
            "sglang#32196",
            "the draft's token counts follow the draft's own MoE A2A backend "
            "(draft_global_num_tokens); before, the draft reused the target's representation",
        ),
        Flag(
            "sglang_dsa_seed_eager_fallback",
            "sglang#30839",
            "a draft input without its DSA top-k seed (GLM-5.x MTP IndexShare) cannot replay "
            "the draft graph",
        ),
        Flag(
            "sglang_a2a_max_bucket",
            "sglang#30450",
            "with FlashInfer MoE A2A every DP rank replays the decode graph bucket of the "
            "largest rank (require_mlp_tp_gather); before, each rank its local bucket",
        ),
        Flag(
            "sglang_prefill_shared_bucket",
            "sglang#37933",
            "prefill graphs that capture a DP gather replay one shared MAX_LEN bucket on every "
            "rank, idle ones included; before, per-rank buckets and an eager idle rank",
        ),
    )
}


@dataclass(frozen=True)
class Profile:
    """One engine's semantics over a range of releases. Flag defaults are current semantics;
    profiles are derived from `RELEASES`, not written out."""

    name: str
    engine: str
    summary: str
    versions: VersionRange
    draft_decode_mode_clamp: bool = True
    pad_last_token_indices: bool = True
    reuse_target_attn_state: bool = True
    dedicated_eagle_pool: bool = False
    dflash_padded_query_buffers: bool = True
    draft_decode_excludes_rejected: bool = True
    reset_positions_on_padded_replay: bool = True
    breakable_graphs: bool = True
    per_descriptor_rounding: bool = True
    rounds_every_mode: bool = True
    captures_max_num_batched_tokens: bool = True
    breakable_pads_reqs: bool = False  # 0.26 only
    fresh_prefill_capture_metadata: bool = True
    sm100_capture_ceiling: bool = True
    fused_draft_decode: bool = True
    large_gpu_batch_defaults: bool = True
    flashinfer_xqa_sm12x: bool = True
    spec_decode_capture_sizes: bool = True
    per_mode_dispatch: bool = True
    flashinfer_xqa_sm90: bool = True
    graph_memory_profiling: bool = True
    compile_off_keeps_full: bool = True
    flashinfer_fused_draft_decode: bool = True
    flashinfer_fa2_native_decode: bool = True
    fa4_full_graphs: bool = True
    sglang_draft_breakable_prefill: bool = True
    sglang_flashinfer_draft_extend_graph: bool = True
    sglang_default_breakable_prefill: bool = True
    sglang_fa_draft_extend_graph: bool = True
    sglang_max_bs_every_gpu: bool = True
    sglang_draft_decode_two_steps: bool = True
    sglang_bs_list_has_64: bool = True
    sglang_small_gpu_max_bs_24: bool = True
    sglang_spec_v2_default: bool = True
    sglang_tree_spec_v2: bool = True
    sglang_trtllm_mha_draft_extend_graph: bool = True
    sglang_small_gpu_max_bs_48: bool = True
    sglang_max_bs_appended: bool = True
    sglang_bs_align_per_token: bool = True
    sglang_pool_per_dp_worker: bool = True
    sglang_mla_prefill_cap_8192: bool = True
    sglang_mla_breakable_prefill: bool = True
    dp_cudagraph_mode_sync: bool = True
    dp_explicit_drafter_syncs: bool = True
    dp_dummy_run_padded_descriptor: bool = True
    dp_unfit_drafter_dummy: bool = True
    dp_idle_ranks_propose: bool = True
    dp_draft_reuses_target_sync: bool = True
    sglang_dp_draft_graph_vote: bool = True
    sglang_dp_draft_token_counts: bool = True
    sglang_dsa_seed_eager_fallback: bool = True
    sglang_a2a_max_bucket: bool = True
    sglang_prefill_shared_bucket: bool = True
    refs: tuple[str, ...] = ()
    # Why a release in `versions` behaves like this profile (shown by triage and --engine).
    version_note: str = ""
    # The one model runner this profile rebuilds (None: the runner the release picks for the
    # model, `known.runner_rules`; SGLang has one runner).
    runner: ModelRunner | None = None

    @property
    def framework(self) -> str:
        return self.engine

    @property
    def default_pool(self) -> PoolPolicy:
        return PoolPolicy.DEDICATED if self.dedicated_eagle_pool else PoolPolicy.SHARED

    def flags(self) -> dict[str, bool]:
        return {name: getattr(self, name) for name in FLAGS}

    def flag_refs(self) -> dict[str, tuple[bool, str]]:
        """Each flag's value here and the change that set its current value."""
        return {name: (on, FLAGS[name].ref) for name, on in self.flags().items()}


# what a `Release` entry sets on its profile itself, whatever its predecessor had
RELEASE_OWN_FIELDS = ("name", "engine", "summary", "versions", "refs", "version_note", "runner")


@dataclass(frozen=True)
class Release:
    """One profile as data: the flags its releases changed against its predecessor.

    The predecessor is the engine's previous mainline release in `RELEASES`; the oldest one is
    stated against current semantics (the `Profile` defaults: what was still off, or on, then).
    A profile that models one change out of line (`branch_of`) is the named profile with only
    that change undone. The fields of `RELEASE_OWN_FIELDS` belong to the entry alone; only flags
    carry over.
    """

    name: str
    engine: str
    summary: str
    versions: VersionRange
    refs: tuple[str, ...]
    version_note: str
    on: tuple[str, ...] = ()  # flags this release turned on
    off: tuple[str, ...] = ()  # flags this release turned off
    branch_of: str | None = None
    runner: ModelRunner | None = None

    def __post_init__(self) -> None:
        unknown = set(self.on + self.off) - set(FLAGS)
        if unknown or set(self.on) & set(self.off):
            bad = unknown or set(self.on) & set(self.off)
            raise ValueError(f"{self.name}: unknown or contradictory flags {sorted(bad)}")

    @property
    def delta(self) -> dict[str, bool]:
        return {**dict.fromkeys(self.on, True), **dict.fromkeys(self.off, False)}

    def apply(self, base: Profile) -> Profile:
        """The predecessor's flags with this release's delta, and this entry's own metadata."""
        own: dict[str, Any] = {name: getattr(self, name) for name in RELEASE_OWN_FIELDS}
        return replace(base, **own | self.delta)


def _pr(ref: str) -> str:
    """How prose names a change: read from the flag that declares it, else from the table."""
    declared = {f.record.ref: f.record for f in FLAGS.values() if f.record is not None}
    return (declared.get(ref) or TABLE[ref]).pr


RELEASES = (
    Release(
        "vllm-mrv1-pre-29845",
        "vllm",
        "vLLM 0.11-0.13, V1 GPU model runner (MRV1): one PIECEWISE-or-eager dispatcher for every "
        "draft pass; the padded drafter batch's draft decodes attend the rejected drafts "
        f"(before {_pr('vllm#29845')})",
        between(None, "0.14"),
        refs=("vllm#29845",),
        version_note=f"MRV1 only; padded drafter batch without {_pr('vllm#29845')}",
        runner=ModelRunner.MRV1,
        off=(
            "draft_decode_excludes_rejected",
            "draft_decode_mode_clamp",
            "pad_last_token_indices",
            "reuse_target_attn_state",
            "breakable_graphs",
            "per_descriptor_rounding",
            "fresh_prefill_capture_metadata",
            "sm100_capture_ceiling",
            "fused_draft_decode",
            "large_gpu_batch_defaults",
            "flashinfer_xqa_sm12x",
            "spec_decode_capture_sizes",
            "per_mode_dispatch",
            "flashinfer_xqa_sm90",
            "graph_memory_profiling",
            "compile_off_keeps_full",
            "flashinfer_fused_draft_decode",
            "flashinfer_fa2_native_decode",
            "fa4_full_graphs",
            "dp_unfit_drafter_dummy",
            "dp_draft_reuses_target_sync",
        ),
    ),
    Release(
        "vllm-pre-39773",
        "vllm",
        f"vLLM main between {_pr('vllm#37588')} and {_pr('vllm#39773')} (March–April 2026): "
        "EAGLE prefill graphs exist, draft decodes may run PIECEWISE, last_token_indices not "
        "padded",
        between("0.14", "0.20"),
        refs=("vllm#37588", "vllm#39773"),
        version_note=f"predates {_pr('vllm#39773')}",
        runner=ModelRunner.MRV2,
        on=("dedicated_eagle_pool", "draft_decode_excludes_rejected"),
    ),
    Release(
        "vllm-0.20",
        "vllm",
        "vLLM 0.20: #39773 in (decode clamp, padded last_token_indices); the draft prefill "
        "still rebuilds its own metadata; dedicated EAGLE pool",
        between("0.20", "0.21"),
        refs=("vllm#39773",),
        version_note="#39773 in, #40410 not yet",
        on=("draft_decode_mode_clamp", "pad_last_token_indices"),
        off=("rounds_every_mode", "captures_max_num_batched_tokens"),
    ),
    Release(
        "vllm-0.22",
        "vllm",
        "vLLM 0.22: draft prefill reuses the target's captured attention state (#40410); "
        "EAGLE graphs in a dedicated pool",
        between("0.21", "0.23"),
        refs=("vllm#39773", "vllm#40410"),
        version_note="#40410 in, dedicated EAGLE pool (pre-#44078)",
        on=("reuse_target_attn_state", "rounds_every_mode", "captures_max_num_batched_tokens"),
    ),
    Release(
        "vllm-pre-50065",
        "vllm",
        f"vLLM current semantics before {_pr('vllm#50065')}: DFlash query buffers written for "
        "the unpadded batch only (select with --behavior; the first release with the fix is "
        "not recorded here, so no version maps to it)",
        between("0.23", "0.23"),
        refs=("vllm#39773", "vllm#40410", "vllm#44078", "vllm#50065"),
        version_note=f"predates {_pr('vllm#50065')}",
        off=("dflash_padded_query_buffers",),
        branch_of="vllm-current",
    ),
    Release(
        "vllm-0.23",
        "vllm",
        "vLLM 0.23–0.24: shared EAGLE pool; breakable graphs as a runner flag; every capture size still rounded to a multiple of K+1",
        between("0.23", "0.25"),
        refs=("vllm#44078", "vllm#44050"),
        version_note="shared pool (#44078), breakable graphs (#44050), global K+1 rounding",
        on=("breakable_graphs",),
        off=("dedicated_eagle_pool",),
    ),
    Release(
        "vllm-0.25",
        "vllm",
        "vLLM 0.25: MRV2 rounds only FULL uniform-decode descriptors to K+1; PIECEWISE and draft decode use the raw sizes",
        between("0.25", "0.26"),
        refs=("vllm#45953",),
        version_note="per-descriptor rounding (#45953); draft prefill still takes the target's captured state",
        on=("per_descriptor_rounding", "dp_unfit_drafter_dummy"),
    ),
    Release(
        "vllm-0.26",
        "vllm",
        "vLLM 0.26: draft-prefill capture metadata built fresh through the target's builders; "
        "breakable PIECEWISE graphs pad num_reqs",
        between("0.26", "0.27"),
        refs=("vllm#48261", "vllm#49364"),
        version_note="fresh draft-prefill capture metadata (#48261, #49364)",
        on=("fresh_prefill_capture_metadata", "breakable_pads_reqs"),
    ),
    Release(
        "vllm-0.27",
        "vllm",
        "vLLM 0.27: as 0.26, breakable PIECEWISE graphs back to unpadded num_reqs",
        between("0.27", "0.28"),
        refs=("vllm#48261", "vllm#49364"),
        version_note="fresh draft-prefill capture metadata (#48261, #49364); breakable graphs leave num_reqs unpadded",
        off=("breakable_pads_reqs",),
    ),
    Release(
        "vllm-0.28",
        "vllm",
        "vLLM 0.28: capture ceiling 1024 on SM10x; K-1 draft decodes fused into one graph (FlashAttention, Triton)",
        between("0.28", "0.29"),
        refs=("vllm#49390", "vllm#46849"),
        version_note="SM10x ceiling (#49390), fused draft decode (#46849)",
        on=(
            "sm100_capture_ceiling",
            "fused_draft_decode",
            "large_gpu_batch_defaults",
            "flashinfer_xqa_sm12x",
        ),
    ),
    Release(
        "vllm-0.29",
        "vllm",
        "vLLM 0.29: decode sizes n·(K+1) in the default list (under the ceiling); FULL and PIECEWISE dispatch ranges apart",
        between("0.29", "0.30"),
        refs=("vllm#50488", "vllm#54418", "vllm#53407"),
        version_note="decode capture sizes (#50488, #54418), per-mode dispatch (#53407)",
        on=("spec_decode_capture_sizes", "per_mode_dispatch", "dp_draft_reuses_target_sync"),
    ),
    Release(
        "vllm-0.30",
        "vllm",
        "vLLM 0.30–0.31: FlashInfer XQA decode on SM90 keeps FULL graphs with spec decode; graph memory profiled out of the KV budget",
        between("0.30", "0.32"),
        refs=("vllm#50439", "vllm#53306", "vllm#53682"),
        version_note="XQA on SM90 (#50439), graph memory profiling (#53306, #53682)",
        on=("flashinfer_xqa_sm90", "graph_memory_profiling", "compile_off_keeps_full"),
    ),
    Release(
        "vllm-0.32",
        "vllm",
        "vLLM 0.32: FlashInfer's TRT-LLM-gen decode joins the fused draft decode graph",
        between("0.32", "0.33"),
        refs=("vllm#46849",),
        version_note="FlashInfer TRT-LLM-gen fused draft decode",
        on=("flashinfer_fused_draft_decode",),
    ),
    Release(
        "vllm-v1-0.11-dp",
        "vllm",
        f"vLLM 0.11.0's V1 DP agreement under current single-rank semantics: token counts "
        f"all-reduced without the graph mode (before {_pr('vllm#30173')}), one implicit DP "
        f"all-reduce per draft forward (before {_pr('vllm#26086')}), a rank near max_model_len "
        "skips the drafter (select with --behavior; no version maps to it)",
        between("0.33", "0.33"),
        refs=("vllm#26086", "vllm#30173"),
        version_note="DP agreement as read in the vLLM 0.11.0 wheel (gpu_model_runner.py, "
        "forward_context.py)",
        off=("dp_cudagraph_mode_sync", "dp_explicit_drafter_syncs", "dp_unfit_drafter_dummy"),
        branch_of="vllm-current",
        runner=ModelRunner.MRV1,
    ),
    Release(
        "vllm-v1-pre-25906",
        "vllm",
        f"vLLM V1 under DP before {_pr('vllm#25906')} (releases before 0.11): as vllm-v1-0.11-dp, "
        "and an idle rank's dummy run dispatches the graph of its unpadded token count",
        between("0.33", "0.33"),
        refs=("vllm#25906", "vllm#26086", "vllm#30173"),
        version_note=f"predates {_pr('vllm#25906')}",
        off=("dp_dummy_run_padded_descriptor",),
        branch_of="vllm-v1-0.11-dp",
        runner=ModelRunner.MRV1,
    ),
    Release(
        "vllm-mrv2-pre-35294",
        "vllm",
        f"vLLM MRV2 current semantics before {_pr('vllm#35294')}: idle DP ranks run only the "
        "target's dummy forward, never the speculator (select with --behavior; no version "
        "maps to it)",
        between("0.33", "0.33"),
        refs=("vllm#35294",),
        version_note=f"predates {_pr('vllm#35294')} (MRV2 only)",
        off=("dp_idle_ranks_propose",),
        branch_of="vllm-current",
        runner=ModelRunner.MRV2,
    ),
    Release(
        "vllm-current",
        "vllm",
        "vLLM ≥ 0.33: FlashInfer fa2 native decode below SM90 and FlashAttention 4 keep FULL graphs",
        between("0.33", None),
        refs=(
            "vllm#39773",
            "vllm#40410",
            "vllm#44078",
            "vllm#45953",
            "vllm#46849",
            "vllm#50439",
            "vllm#50065",
        ),
        version_note="newest modelled release (0.33)",
        on=("flashinfer_fa2_native_decode", "fa4_full_graphs"),
    ),
    Release(
        "sglang-pre-10892",
        "sglang",
        f"SGLang 0.5.1–0.5.2, before {_pr('sglang#10892')}: padded draft replays keep stale "
        "positions; a fixed capture list to 160 (256 above 90 GiB, 512 above 160000 MiB); "
        "EAGLEWorker captures draft-extend graphs for every backend",
        between(None, "0.5.3"),
        refs=("sglang#10892",),
        version_note=f"predates {_pr('sglang#10892')} (v0.5.4); fixed capture list",
        off=(
            "reset_positions_on_padded_replay",
            "sglang_draft_breakable_prefill",
            "sglang_flashinfer_draft_extend_graph",
            "sglang_default_breakable_prefill",
            "sglang_fa_draft_extend_graph",
            "sglang_dp_draft_graph_vote",
            "sglang_dp_draft_token_counts",
            "sglang_dsa_seed_eager_fallback",
            "sglang_a2a_max_bucket",
            "sglang_prefill_shared_bucket",
            "sglang_max_bs_every_gpu",
            "sglang_draft_decode_two_steps",
            "sglang_bs_list_has_64",
            "sglang_small_gpu_max_bs_24",
            "sglang_spec_v2_default",
            "sglang_tree_spec_v2",
            "sglang_trtllm_mha_draft_extend_graph",
            "sglang_small_gpu_max_bs_48",
            "sglang_max_bs_appended",
            "sglang_bs_align_per_token",
            "sglang_pool_per_dp_worker",
            "sglang_mla_prefill_cap_8192",
            "sglang_mla_breakable_prefill",
        ),
    ),
    Release(
        "sglang-0.5.3",
        "sglang",
        "SGLang 0.5.3: capture list up to cuda_graph_max_bs by GPU memory and TP (40-60 by 4, "
        "no 64); no draft-decode graph at one step; positions still stale on padded replay",
        between("0.5.3", "0.5.4"),
        refs=("sglang#10892",),
        version_note=f"cuda_graph_max_bs for every GPU; predates {_pr('sglang#10892')}",
        on=("sglang_max_bs_every_gpu", "sglang_draft_decode_two_steps"),
    ),
    Release(
        "sglang-0.5.4",
        "sglang",
        "SGLang 0.5.4–0.5.7: positions reset on padded replay (#10892); EAGLEWorker (spec "
        "v1, the default) captures draft-extend graphs for every backend; no draft BCG",
        between("0.5.4", "0.5.8"),
        refs=("sglang#10892",),
        version_note="contains #10892; spec v1 worker by default",
        on=(
            "reset_positions_on_padded_replay",
            "sglang_bs_list_has_64",
            "sglang_small_gpu_max_bs_24",
        ),
    ),
    Release(
        "sglang-0.5.8",
        "sglang",
        "SGLang 0.5.8–0.5.9: as 0.5.4; under DP attention or two-batch overlap the target's "
        "graph batch sizes are aligned by their tokens (bs x draft tokens)",
        between("0.5.8", "0.5.10"),
        refs=("sglang#10892",),
        version_note="batch sizes aligned per token (num_tokens_per_bs)",
        on=("sglang_bs_align_per_token",),
    ),
    Release(
        "sglang-0.5.10",
        "sglang",
        "SGLang 0.5.10: as 0.5.4; a --cuda-graph-max-bs off the speculative list joins the "
        "capture list",
        between("0.5.10", "0.5.11"),
        refs=("sglang#10892",),
        version_note="cuda_graph_max_bs appended to the capture list",
        on=("sglang_max_bs_appended", "sglang_pool_per_dp_worker"),
    ),
    Release(
        "sglang-0.5.11",
        "sglang",
        "SGLang 0.5.11–0.5.12: EAGLEWorkerV2 by default (topk 1): draft-extend graphs for "
        "Triton/TRT-LLM MLA only; trees still on EAGLEWorker",
        between("0.5.11", "0.5.13"),
        refs=("sglang#10892",),
        version_note="spec v2 worker by default; draft-extend graphs Triton only",
        on=("sglang_spec_v2_default",),
    ),
    Release(
        "sglang-0.5.13",
        "sglang",
        "SGLang 0.5.13: trees on EAGLEWorkerV2 too; draft BCG with --enable-breakable-cuda-graph; "
        "trtllm_mha draft-extend graphs",
        between("0.5.13", "0.5.14"),
        refs=("sglang#25795",),
        version_note="spec v1 worker removed; draft BCG opt-in",
        on=(
            "sglang_tree_spec_v2",
            "sglang_draft_breakable_prefill",
            "sglang_trtllm_mha_draft_extend_graph",
        ),
    ),
    Release(
        "sglang-0.5.14",
        "sglang",
        "SGLang 0.5.14: FlashInfer draft-extend graphs (#28782)",
        between("0.5.14", "0.5.15"),
        refs=("sglang#28782",),
        version_note="FlashInfer draft-extend graph (#28782)",
        on=("sglang_flashinfer_draft_extend_graph",),
    ),
    Release(
        "sglang-0.5.15",
        "sglang",
        "SGLang 0.5.15–0.5.17: breakable prefill graphs on by default on CUDA, the draft's too "
        "(not under an MLA backend)",
        between("0.5.15", "0.5.18"),
        refs=("sglang#25795",),
        version_note="default breakable prefill graphs",
        on=("sglang_default_breakable_prefill", "sglang_dsa_seed_eager_fallback"),
    ),
    Release(
        "sglang-0.5.18",
        "sglang",
        "SGLang 0.5.18–0.5.19: as 0.5.15; MLA backends keep the default breakable prefill graphs",
        between("0.5.18", "0.5.20"),
        refs=("sglang#25795",),
        version_note="breakable prefill graphs under MLA too",
        on=("sglang_mla_breakable_prefill",),
    ),
    Release(
        "sglang-0.5.20",
        "sglang",
        "SGLang 0.5.20–0.5.22: as 0.5.15; GPUs under 35 GB capture up to 48 requests (160 at "
        "TP >= 4)",
        between("0.5.20", "0.5.23"),
        refs=("sglang#25795",),
        version_note="small-GPU cuda_graph_max_bs 48/160",
        on=("sglang_small_gpu_max_bs_48",),
    ),
    Release(
        "sglang-current",
        "sglang",
        "SGLang ≥ 0.5.23: FlashAttention draft-extend graphs; one shared pool",
        between("0.5.23", None),
        refs=("sglang#10892", "sglang#28782"),
        version_note="newest modelled release (0.5.23)",
        on=(
            "sglang_fa_draft_extend_graph",
            "sglang_dp_draft_graph_vote",
            "sglang_dp_draft_token_counts",
            "sglang_a2a_max_bucket",
            "sglang_prefill_shared_bucket",
            "sglang_mla_prefill_cap_8192",
        ),
    ),
)


def predecessors(releases: tuple[Release, ...] = RELEASES) -> dict[str, str | None]:
    """Each release's predecessor: its `branch_of`, else the engine's previous mainline entry
    (None for the oldest, which is stated against the `Profile` defaults)."""
    last: dict[str, str] = {}
    before: dict[str, str | None] = {}
    for r in releases:
        before[r.name] = r.branch_of or last.get(r.engine)
        if r.branch_of is None:
            last[r.engine] = r.name
    return before


def _derive(releases: tuple[Release, ...]) -> dict[str, Profile]:
    """Every release as a full profile, in `releases` order (a branch may name a later entry)."""
    by_name = {r.name: r for r in releases}
    before = predecessors(releases)
    built: dict[str, Profile] = {}

    def build(name: str) -> Profile:
        if name not in built:
            r = by_name[name]
            base = before[name]
            start = build(base) if base else Profile(r.name, r.engine, r.summary, r.versions)
            built[name] = r.apply(start)
        return built[name]

    return {r.name: build(r.name) for r in releases}


PROFILES: dict[str, Profile] = _derive(RELEASES)
_PROFILES = tuple(PROFILES.values())

# The newest profile of each engine: what runs when nothing older is asked for.
DEFAULT_PROFILE = {
    engine: next(p.name for p in _PROFILES if p.engine == engine and p.versions.until is None)
    for engine in ("vllm", "sglang")
}

FLAG_FIELDS = tuple(f.name for f in fields(Profile) if f.type in ("bool", bool))


def get_profile(name: str | None, engine: str = "vllm") -> Profile:
    """A profile by name (case-insensitive), or the engine's default when no name is given."""
    if name is None:
        return PROFILES[DEFAULT_PROFILE[engine]]
    key = name.strip().lower()
    if key not in PROFILES:
        raise unknown_choice("behavior", name, PROFILES)
    return PROFILES[key]


def engine_profiles(engine: str) -> list[Profile]:
    return [p for p in _PROFILES if p.engine == engine]
