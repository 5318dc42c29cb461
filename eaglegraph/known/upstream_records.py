"""Upstream pull requests and issues that eaglegraph cites: the record type and the table.

A record says what the change did (or what the issue reports) and, for a merged fix, the first
release that carries it, so a finding can say "fixed by X in vLLM ≥ Y" from data alone. Refs are
written short (`vllm#39773`); `full_ref` gives the GitHub form (`vllm-project/vllm#39773`).

Records are looked up through `known.upstream`, which adds to this table the records engine
flags declare beside themselves (`known.profiles` `Flag.record`); this module sits below the
profiles so that a flag row can build its record with `pr` / `release`.
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.known.tables import keyed
from eaglegraph.known.versions import ENGINE_LABELS, Version, parse_version, version_text

REPOS = {"vllm": "vllm-project/vllm", "sglang": "sgl-project/sglang"}


@dataclass(frozen=True)
class Upstream:
    id: str  # a name code outside this package cites it by, never the number
    ref: str  # "vllm#39773", or "vllm@0.33.0" for a change read in a release whose PR is unknown
    kind: str  # "pr", "issue" or "release"
    summary: str
    released_in: Version | None = None

    @property
    def engine(self) -> str:
        return self.ref.split("#")[0].split("@")[0]

    @property
    def number(self) -> int:
        return int(self.ref.split("#")[1])

    @property
    def full_ref(self) -> str:
        if self.kind == "release":
            return f"{REPOS[self.engine]} v{self.ref.split('@')[1]}"
        return f"{REPOS[self.engine]}#{self.number}"

    @property
    def pr(self) -> str:
        """How prose names it: 'PR #39773', 'issue #44740' or 'release 0.33.0'."""
        if self.kind == "release":
            return f"{ENGINE_LABELS[self.engine]} {self.ref.split('@')[1]}"
        return f"{'PR' if self.kind == 'pr' else 'issue'} #{self.number}"

    def carried_in(self, version: Version | None) -> bool | None:
        """Whether a release has this change; None when that cannot be told."""
        if version is None or self.released_in is None:
            return None
        return version >= self.released_in

    def carried_by(self) -> str | None:
        """'vLLM ≥ 0.20' when the first release with this change is known."""
        if self.released_in is None:
            return None
        return f"{ENGINE_LABELS[self.engine]} ≥ {version_text(self.released_in)}"


def pr(id: str, ref: str, summary: str, released_in: str | None = None) -> Upstream:
    return Upstream(id, ref, "pr", summary, parse_version(released_in))


def issue(id: str, ref: str, summary: str) -> Upstream:
    return Upstream(id, ref, "issue", summary)


def release(id: str, engine: str, version: str, summary: str) -> Upstream:
    """A change read in the release wheels whose pull request was not identified."""
    return Upstream(id, f"{engine}@{version}", "release", summary, parse_version(version))


RECORDS: tuple[Upstream, ...] = (
    # --- vLLM -----------------------------------------------------------------------------
    pr(
        "vllm-mrv2-eagle-prefill-graphs",
        "vllm#37588",
        "MRV2 EAGLE prefill CUDA graphs (draft prefill captured FULL)",
    ),
    pr(
        "vllm-mrv1-draft-decode-rejected",
        "vllm#29845",
        "MRV1 padded drafter batch: the draft decodes' seq_lens drop each request's rejected "
        "drafts (0.11-0.13 kept them: every draft decode attended the rejected positions)",
        "0.14",
    ),
    pr(
        "vllm-mrv2-eagle-padding",
        "vllm#39773",
        "MRV2: `last_token_indices` not padded before draft prefill (stale values -> OOB "
        "gather), and PIECEWISE draft decodes made FlashInfer read a stale paged-KV indptr",
        "0.20",
    ),
    pr(
        "vllm-draft-prefill-attn-state",
        "vllm#40410",
        "draft-prefill graphs reuse the target's captured attention state; before it every "
        "FULL draft-prefill replay depended on a metadata rebuild",
        "0.21",
    ),
    pr(
        "vllm-shared-eagle-pool",
        "vllm#44078",
        "MRV2 EAGLE graphs in a dedicated pool reserved the draft's transient footprint a "
        "second time; the shared global pool reuses the target's blocks (1.39 -> 1.12 GiB)",
        "0.23",
    ),
    pr(
        "vllm-multi-module-mtp",
        "vllm#48892",
        "multi-layer MTP speculator: one manager with decode length K+1 runs every MTP module "
        "over the request's window in one graph (PIECEWISE dropped unless breakable) and "
        "re-prefills slots that rejected drafts left stale",
    ),
    pr(
        "vllm-dflash-padded-query-buffers",
        "vllm#50065",
        "DFlash query buffers sized for CUDA-graph-padded batches; before, a FULL replay padded "
        'past max_num_seqs read rows no step wrote ("any odd max_num_seqs hits this")',
    ),
    pr(
        "vllm-breakable-graphs",
        "vllm#44050",
        "breakable CUDA graphs: graph segments broken at attention, attention eager between "
        "them; a runner flag (VLLM_USE_BREAKABLE_CUDAGRAPH), on by default for the listed "
        "architectures that torch.compile does not cover",
        "0.23",
    ),
    pr(
        "vllm-slot-mapping-padded-seq-lens",
        "vllm#43682",
        "`eagle_step_slot_mapping_metadata_kernel` incremented seq_lens of CUDA-graph padded "
        "rows (block_table = -1) -> cudaErrorIllegalAddress under concurrency",
        "0.23",
    ),
    pr(
        "vllm-piecewise-capture-alignment",
        "vllm#46324",
        "capture sizes were aligned to K+1 only in FULL mode; in PIECEWISE a partial-"
        "acceptance step hit a misaligned graph and read slot_mapping/positions at wrong "
        "offsets",
    ),
    pr(
        "vllm-eagle-dummy-run-graphs",
        "vllm#32818",
        "the EAGLE dummy_run ignored use_cudagraphs, so graphs were dispatched during "
        "capture -> segfault (MI300X, TP>1)",
    ),
    pr(
        "vllm-spec-capture-sizes-memory",
        "vllm#54418",
        "default spec-decode capture sizes grew to 2176/6400 tokens -> FULL capture OOM and a "
        "KV cache shrunk to 0.94 GiB",
    ),
    issue(
        "vllm-negative-graph-memory-estimate",
        "vllm#44740",
        "issue: negative CUDA-graph memory estimate inflates the KV budget (proposed fix PR "
        "#45076: clamp negative deltas, flush the allocator cache); workaround: lower "
        "--gpu-memory-utilization or VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0",
    ),
    pr(
        "vllm-flashinfer-decode-graph-choice",
        "vllm#26499",
        "FlashInfer chose decode CUDA graphs by num_decodes instead of num_decode_tokens, "
        "wrong under spec decode at high concurrency",
        "0.12",
    ),
    pr(
        "vllm-eagle-input-dtype-acceptance",
        "vllm#17504",
        "acceptance collapse: a draft compiled for int32 input ids was fed int64 from argmax "
        "(gibberish drafts) and EAGLE-3 was not actually captured (with #17211; mean "
        "acceptance length back to 3.57)",
        "0.9",
    ),
    issue(
        "vllm-draft-max-positions",
        "vllm#21986",
        "draft max_position_embeddings below the serving context: rotary index out of range",
    ),
    pr(
        "vllm-eagle3-target-hidden-size",
        "vllm#38073",
        "EAGLE-3 draft input width from the draft config's target_hidden_size",
    ),
    pr("vllm-eagle1-fc-bias-a", "vllm#8790", "EAGLE-1 fc-bias bug thread (draft loader)"),
    pr(
        "vllm-eagle1-fc-bias-b",
        "vllm#9580",
        "EAGLE-1 fc bias read from `eagle_fc_bias`, apart from the attention-bias `bias` key",
    ),
    pr("vllm-eagle1-fc-bias-c", "vllm#22323", "EAGLE-1 fc-bias bug thread (draft loader)"),
    issue(
        "vllm-compile-not-graphs",
        "vllm#48894",
        "issue: a crash that persists with cudagraph_mode=NONE but not with --enforce-eager "
        "is a torch.compile/inductor kernel, not a CUDA-graph bug",
    ),
    issue(
        "vllm-flashinfer-spec-piecewise",
        "vllm#49547",
        "FlashInfer + spec-decode silently runs PIECEWISE",
    ),
    pr(
        "vllm-mrv2-per-descriptor-rounding",
        "vllm#45953",
        "MRV2 stops rounding every capture size to a multiple of K+1: only FULL uniform-decode "
        "descriptors are rounded (per descriptor); PIECEWISE and draft-decode graphs use the raw "
        "sizes",
        "0.25",
    ),
    pr(
        "vllm-draft-prefill-fresh-metadata",
        "vllm#48261",
        "draft-prefill capture builds fresh dummy metadata through the target's builders for "
        "every warmup and capture instead of reusing target-captured state that later captures "
        "had overwritten (with #49364)",
        "0.26",
    ),
    pr(
        "vllm-always-build-capture-metadata",
        "vllm#49364",
        "always build attention metadata at capture time (PIECEWISE too, for_capture only for "
        "FULL)",
        "0.26",
    ),
    release(
        "vllm-0.21-capture-sizes",
        "vllm",
        "0.21.0",
        "every MRV2 graph manager rounds the shared capture sizes to multiples of K+1 at init, "
        "whatever the mode (0.20 rounded only in resolve_cudagraph_mode_and_sizes, when decode "
        "graphs are FULL); max_num_batched_tokens joins the default list when it fits",
    ),
    release(
        "vllm-breakable-pads-requests",
        "vllm",
        "0.26.0",
        "0.26 only: breakable PIECEWISE descriptors pad num_reqs like FULL ones (min(n, "
        "max_num_seqs)); 0.27 returns to num_reqs None",
    ),
    pr(
        "vllm-sm100-capture-ceiling",
        "vllm#49390",
        "default largest capture size 1024 on data-center Blackwell (SM10x), 512 elsewhere",
        "0.28",
    ),
    pr(
        "vllm-fused-draft-decode",
        "vllm#46849",
        "the K-1 draft decodes are recorded in one CUDA graph with the metadata update inside "
        "(backends that update draft decode metadata in place: FlashAttention with DCP 1, "
        "Triton); others replay a one-step graph K-1 times with a rebuild before each",
        "0.28",
    ),
    release(
        "vllm-large-gpu-batch-defaults",
        "vllm",
        "0.28.0",
        "GPUs with >= 160 GiB (B200/B300) default to max_num_batched_tokens 16384 for the API "
        "server as well (8192 before)",
    ),
    pr(
        "vllm-flashinfer-xqa-sm12x",
        "vllm#49718",
        "FlashInfer's dedicated XQA decode on SM12x: UNIFORM_BATCH graphs with spec decode",
        "0.28",
    ),
    pr(
        "vllm-spec-decode-capture-sizes",
        "vllm#50488",
        "the default capture list adds the uniform-decode sizes n·(K+1) for a request-count "
        "grid (kept under the platform ceiling by #54418)",
        "0.29",
    ),
    pr(
        "vllm-per-mode-dispatch",
        "vllm#53407",
        "dispatch gives FULL and PIECEWISE descriptors their own pad-up ranges, so a uniform "
        "decode batch pads into the next FULL graph instead of an eager PIECEWISE one",
        "0.29",
    ),
    pr(
        "vllm-flashinfer-xqa-sm90",
        "vllm#50439",
        "FlashInfer on SM90 decodes spec-decode queries through XQA: UNIFORM_BATCH, so "
        "FULL_AND_PIECEWISE is kept on Hopper when the TRT-LLM attention artifacts load",
        "0.30",
    ),
    pr(
        "vllm-graph-memory-profiling",
        "vllm#53306",
        "MRV2 profiles CUDA-graph memory in a throwaway pool before the KV cache is sized and "
        "takes the estimate out of the KV budget (with #53682)",
        "0.30",
    ),
    pr(
        "vllm-graph-memory-profiling-speculator",
        "vllm#53682",
        "graph memory profiling covers the speculator's graphs",
        "0.30",
    ),
    pr(
        "vllm-noncompiled-full-decode",
        "vllm#55095",
        "a model without torch.compile falls back to FULL_DECODE_ONLY (without_piecewise) "
        "instead of NONE when piecewise capture is unavailable",
        "0.30",
    ),
    release(
        "vllm-flashinfer-fused-draft-decode",
        "vllm",
        "0.32.0",
        "FlashInfer's TRT-LLM-gen decode path updates draft decode metadata in place, so it "
        "joins the fused K-1 draft decode graph (XQA and native decode do not)",
    ),
    release(
        "vllm-0.33-graph-support",
        "vllm",
        "0.33.0",
        "backends report more graph support: FlashInfer below SM90 decodes uniform multi-token "
        "queries natively (fa2) and reports UNIFORM_BATCH with spec decode (see issue #54992); "
        "FlashAttention 4 (SM10x) reports ALWAYS like FA3 (UNIFORM_BATCH before)",
    ),
    # --- vLLM: DP agreement and speculative decoding (issue 25) ---------------------------
    pr(
        "vllm-dp-dummy-run-padded-descriptor",
        "vllm#25906",
        "_dummy_run dispatches its BatchDescriptor from num_tokens_after_padding (the DP-agreed "
        "count), not the rank's unpadded num_tokens: an idle rank picked another graph (DP/EP "
        "hang)",
    ),
    pr(
        "vllm-eagle-dp-explicit-syncs",
        "vllm#26086",
        "EAGLE under DP > 1: explicit DP all-reduces in the drafter, idle ranks' dummy runs "
        "issue as many as propose(); before, idle ranks all-reduced once per step while busy "
        "ranks did k times (phase shift, hang at the finish-sync)",
    ),
    pr(
        "vllm-dp-cudagraph-mode-sync",
        "vllm#30173",
        "coordinate_batch_across_dp all-reduces each rank's cudagraph mode and takes the min: "
        "one eager rank makes every rank eager (FULL_DECODE_ONLY with a prefill on one rank)",
    ),
    pr(
        "vllm-drafter-unconditional",
        "vllm#29422",
        "run the drafter unconditionally: input_fits_in_drafter made some DP ranks skip "
        "speculation while others drafted, so their collectives diverged (closed)",
    ),
    issue(
        "vllm-mtp-dp-ep-hang-max-len",
        "vllm#44185",
        "MTP + DP 2 + EP hangs near max_model_len: one rank skips drafting",
    ),
    pr(
        "vllm-mtp-dp-hang-max-len-fix",
        "vllm#44954",
        "keep DP ranks drafting together near max_model_len (open in the corpus)",
    ),
    release(
        "vllm-v1-unfit-drafter-dummy",
        "vllm",
        "0.25.0",
        "V1: a rank whose batch does not fit the drafter (input_fits_in_drafter) runs "
        "drafter.dummy_run(num_tokens=1) under DP instead of skipping the drafter (absent "
        "from 0.24's gpu_model_runner.py)",
    ),
    pr(
        "vllm-mrv2-idle-ranks-propose",
        "vllm#35294",
        "MRV2: idle DP ranks run speculator.propose(dummy_run=True) after their dummy target "
        "forward; before, the speculator's EP communication had no counterpart (hang)",
    ),
    pr(
        "vllm-mrv2-draft-reuses-dp-sync",
        "vllm#53694",
        "MRV2: the EAGLE/MTP draft prefill reuses the target's DP agreement (DPSync) instead "
        "of its own DP sync",
        "0.29.0",
    ),
    # --- SGLang ---------------------------------------------------------------------------
    # --- SGLang: DP attention and speculative decoding (issue 25) --------------------------
    issue(
        "sglang-dp-draft-deadlock",
        "sglang#32527",
        "GLM-5.2 TP8 DP8, DP attention, EAGLE: asymmetric can_cuda_graph decisions between idle "
        "and non-idle DP ranks in draft() deadlock the draft's NCCL all_gather",
    ),
    pr(
        "sglang-dsa-seed-eager-fallback",
        "sglang#30839",
        "GLM-5.2 MTP IndexShare: a draft without a valid DSA top-k seed falls back to eager "
        "on its own rank (cherry-picked into 0.5.15.post1 as #31083; absent from 0.5.15)",
    ),
    pr(
        "sglang-dp-draft-graph-vote",
        "sglang#32196",
        "keep EAGLE DP graph and token metadata consistent: a min-reduced "
        "can_run_draft_cuda_graph column and draft-specific token counts "
        "(draft_global_num_tokens)",
    ),
    issue(
        "sglang-draft-a2a-token-counts",
        "sglang#32182",
        "PD decode with a draft MoE A2A backend unlike the target's: the scheduler kept "
        "target-local token counts for the draft, so DP ranks padded the draft to different "
        "lengths",
    ),
    issue(
        "sglang-flashinfer-a2a-ima",
        "sglang#30242",
        "DeepSeek-V4 NVFP4 disaggregated decode, FlashInfer MoE A2A, DP attention: each rank "
        "picked its decode graph bucket from its local batch size (illegal memory access)",
    ),
    pr(
        "sglang-flashinfer-a2a-max-bucket",
        "sglang#30450",
        "require_mlp_tp_gather is True for FlashInfer A2A: every rank replays the bucket of "
        "the largest rank (absent from 0.5.15's require_mlp_tp_gather)",
    ),
    issue(
        "sglang-megamoe-prefill-hang",
        "sglang#37561",
        "MegaMoE sparse-DP prefill graphs with per-rank buckets while the graph holds a DP "
        "gather frozen at MAX_LEN geometry: the 0-token rank runs eager (SUM_LEN all_reduce), "
        "the busy rank replays the graph (NCCL hang)",
    ),
    pr(
        "sglang-prefill-shared-bucket",
        "sglang#37933",
        "keep a shared MAX_LEN prefill CUDA graph bucket when the graph captures a DP gather",
    ),
    pr(
        "sglang-padded-positions-reset",
        "sglang#10892",
        "EAGLE CUDA-graph runners reset `positions` for padded rows when raw_bs != capture "
        "bs (root fix of the padded-replay IMA family #6309/#8296/#8336/#9888; #9687 only "
        "mitigated)",
        "0.5.4",
    ),
    pr(
        "sglang-flashinfer-verify-positions",
        "sglang#24361",
        "the FlashInfer target-verify plan read the padded tail of `positions`; fixed by "
        "zeroing positions/mrope_positions on pad",
    ),
    pr(
        "sglang-draft-seq-lens-sum",
        "sglang#26880",
        "draft-decode replay padded `seq_lens` but left `seq_lens_sum` raw; FlashInfer/"
        "FlashInfer-MLA/Aiter slice draft kv_indices by it",
    ),
    pr(
        "sglang-dp-mtp-draft-extend-ima",
        "sglang#23037",
        "EAGLE CUDA-graph IMA under PD + DP + MTP; clone topk_p/topk_index/hidden_states out "
        "of graph buffers after draft-extend replay",
    ),
    pr(
        "sglang-draft-kv-indices-topk",
        "sglang#27338",
        "draft multi-step `cuda_graph_kv_indices` sized without the topk factor: writes past "
        "its row into graph-pool memory -> wrong drafts or out-of-vocab ids "
        "(`vectorized_gather_kernel` index out of bounds)",
    ),
    pr(
        "sglang-target-prefill-capture-state",
        "sglang#31198",
        "capturing the EAGLE target prefill graph perturbed FP4/TRTLLM-MoE state and a stale "
        "prefill fallback was recorded into the spec-verify graphs (with #29248)",
    ),
    pr(
        "sglang-dp-attention-hang",
        "sglang#2684",
        "hang with CUDA graphs + DP attention for EAGLE (issue #2678)",
    ),
    pr(
        "sglang-capture-max-bs",
        "sglang#3430",
        "EAGLE startup can fail in CUDA-graph capture for large topk/draft-token counts; the "
        "hint is to reduce --cuda-graph-max-bs",
    ),
    pr(
        "sglang-expert-recorder-capture-sync",
        "sglang#32106",
        "skip the expert-distribution recorder's pass boundary (a host sync) during CUDA-"
        "graph capture",
    ),
    pr(
        "sglang-draft-extend-hidden-width",
        "sglang#8163",
        "draft-extend hidden_states buffer was sized hidden_size x 3 while the draft's "
        "target_hidden_size differs",
        "0.4.9.post3",
    ),
    pr(
        "sglang-draft-input-width-helper",
        "sglang#29464",
        "one helper (get_draft_input_from_target_hidden_dim) for the draft input width, "
        "replacing per-runner guesses",
    ),
    pr(
        "sglang-eagle3-aux-capture-order",
        "sglang#22836",
        "EAGLE-3 aux-layer capture was enabled after CUDA-graph capture: captured target "
        "graphs produced no aux states -> zero acceptance",
    ),
    issue(
        "sglang-draft-hidden-width",
        "sglang#7011",
        "draft-extend CUDA graph fails to load with Llama 3.3 70B (EAGLE-3): the draft-extend "
        "buffer used the draft's hidden size, not target_hidden_size x 3",
    ),
    issue(
        "sglang-draft-max-positions",
        "sglang#3513",
        "draft max_position_embeddings below the serving context: rotary index out of range",
    ),
    issue(
        "sglang-eagle1-fc-bias",
        "sglang#5773",
        "EAGLE-1 fc-bias bug thread: fc always has a bias in that layout",
    ),
    issue(
        "sglang-draft-vocab-logits",
        "sglang#12421",
        "logits buffer sized from the wrong vocabulary",
    ),
    pr(
        "sglang-bcg",
        "sglang#25795",
        "breakable CUDA graphs (BCG) for the draft extend; get_draft_hidden_dim",
        "0.5.13",
    ),
    pr(
        "sglang-flashinfer-draft-extend-graph",
        "sglang#28782",
        "FlashInfer joins the EAGLE draft-extend CUDA-graph allowlist (eager before)",
        "0.5.14",
    ),
    release(
        "sglang-default-breakable-prefill",
        "sglang",
        "0.5.15",
        "breakable prefill CUDA graphs on by default on CUDA (default_prefill_backend), the "
        "EAGLE draft included, over the prefill token ladder up to the chunked-prefill size",
    ),
    release(
        "sglang-fa-draft-extend-graph",
        "sglang",
        "0.5.23",
        "FlashAttention joins the EAGLE draft-extend CUDA-graph allowlist (eager before)",
    ),
    # --- SGLang 0.5.x capture lists and workers, read release by release (issue 28)
    release(
        "sglang-max-bs-every-gpu",
        "sglang",
        "0.5.3",
        "the decode capture list is built in ServerArgs up to cuda_graph_max_bs, whose "
        "default is set for every GPU size by memory and TP; the EAGLE draft-decode graph "
        "runner exists only when speculative_num_steps > 1",
    ),
    release(
        "sglang-bs-list-64",
        "sglang",
        "0.5.4",
        "the speculative capture list's 40-64 stretch includes 64; small GPUs default to "
        "cuda_graph_max_bs 24",
    ),
    release(
        "sglang-spec-v2-default",
        "sglang",
        "0.5.11",
        "EAGLE runs on the overlap worker (EAGLEWorkerV2) by default, whose draft-extend "
        "graph has a backend allowlist",
    ),
    release(
        "sglang-tree-spec-v2",
        "sglang",
        "0.5.13",
        "the spec v1 EAGLE worker is removed: trees (topk > 1) run on EAGLEWorkerV2 too",
    ),
    release(
        "sglang-small-gpu-max-bs-48",
        "sglang",
        "0.5.20",
        "GPUs under 35 GB default to cuda_graph_max_bs 48 at TP < 4 and 160 at TP >= 4",
    ),
)

# The table by ref, for modules below `known.upstream` (the profiles' prose).
TABLE: dict[str, Upstream] = keyed(lambda u: u.ref, *RECORDS)
