"""Upstream fixes, each listed only when the log shows its mechanism.

A PR number is useful to a support engineer only if it is the right one: every entry states
the mechanism it fixed and a condition over the evidence (category, framework, version, mode,
backend, topology) under which that mechanism can be what happened. Facts come from
`shared/research/crash-triage.md`, `sglang.md` and `vllm-mrv2.md`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from eaglegraph.triage.model import CATEGORIES, Fix, TriageConfig
from eaglegraph.triage.rules import Verdict
from eaglegraph.triage.state import ScanState

STALE, OOB, OOM, CAPTURE, MODE, CONFIG, ACCEPT, HANG, OTHER = CATEGORIES


def parse_version(text: str | None) -> tuple[int, int, int] | None:
    """'0.22.1rc1.dev23+g6bdabbad5' -> (0, 22, 1); 'v0.5.4.post1' -> (0, 5, 4)."""
    if not text:
        return None
    m = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", text.strip())
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


@dataclass
class FixContext:
    verdict: Verdict
    config: TriageConfig
    state: ScanState
    framework: str | None
    version: tuple[int, int, int] | None

    @property
    def category(self) -> str:
        return self.verdict.category

    def before(self, *v: int) -> bool:
        """True when the version is older than `v`, or unknown (the fix may be missing)."""
        return self.version is None or self.version[: len(v)] < v

    def primary_text(self) -> str:
        return self.verdict.primary.text if self.verdict.primary else ""

    def text_of(self, *signals: str) -> str:
        return " ".join(h.text for h in self.state.hits(*signals))

    def frames_text(self) -> str:
        return " ".join(f"{f.file} {f.func}" for f in self.verdict.frames)


@dataclass(frozen=True)
class KnownFix:
    ref: str
    summary: str
    applies: Callable[[FixContext], str | None]


def _sg(c: FixContext) -> bool:
    return c.framework == "sglang"


def _vl(c: FixContext) -> bool:
    return c.framework == "vllm"


def _async_like(c: FixContext) -> bool:
    return c.verdict.primary_mechanism in ("async", "assert", "nan", None)


def _dp(c: FixContext) -> bool:
    cfg = c.config
    return bool(cfg.dp_attention) or (cfg.dp or 1) > 1 or c.state.ranks.get("DP", 0) > 0


def mismatch_kind(c: FixContext) -> str | None:
    """'vocab' or 'width' for a shape/config error, from its words and the sizes it names."""
    code = " ".join(f.code or "" for f in c.verdict.frames[-3:])
    t = " ".join((c.primary_text(), c.text_of("shape.mismatch", "config.keys"), code)).lower()
    nums = [int(n) for n in re.findall(r"\b\d{3,7}\b", t)]
    if re.search(r"vocab|lm_head|logits|token_map|d2t|t2d", t) or any(n >= 30000 for n in nums):
        return "vocab"
    if re.search(r"hidden|fc\.|\bfc\b|aux|width|embed_dim", t) or "draft_extend" in t:
        return "width"
    if len(nums) >= 2 and min(nums) > 0 and max(nums) % min(nums) == 0 and max(nums) != min(nums):
        return "width"  # e.g. 3 x hidden against hidden: EAGLE-3 aux concatenation
    return None


def _width(c: FixContext) -> bool:
    return _sg(c) and c.category == CONFIG and mismatch_kind(c) == "width"


KNOWN_FIXES: tuple[KnownFix, ...] = (
    KnownFix(
        "sgl-project/sglang#10892",
        "EAGLE CUDA-graph runners reset `positions` for padded rows when raw_bs != capture bs "
        "(root fix of the padded-replay IMA family #6309/#8296/#8336/#9888; #9687 only mitigated)",
        lambda c: (
            "padded replay in an SGLang build that may predate v0.5.4"
            if _sg(c) and c.category == STALE and c.before(0, 5, 4)
            else None
        ),
    ),
    KnownFix(
        "sgl-project/sglang#24361",
        "the FlashInfer target-verify plan read the padded tail of `positions`; fixed by zeroing "
        "positions/mrope_positions on pad",
        lambda c: (
            "stale read with the FlashInfer backend"
            if _sg(c) and c.category == STALE and c.config.attention_backend == "flashinfer"
            else None
        ),
    ),
    KnownFix(
        "sgl-project/sglang#26880",
        "draft-decode replay padded `seq_lens` but left `seq_lens_sum` raw; FlashInfer/"
        "FlashInfer-MLA/Aiter slice draft kv_indices by it",
        lambda c: (
            "padded draft-decode replay"
            if _sg(c)
            and c.category == STALE
            and "draft" in c.text_of("context.padding").lower()
            and c.config.attention_backend not in ("flash_attn", "triton")
            else None
        ),
    ),
    KnownFix(
        "sgl-project/sglang#23037",
        "EAGLE CUDA-graph IMA under PD + DP + MTP; clone topk_p/topk_index/hidden_states out of "
        "graph buffers after draft-extend replay",
        lambda c: (
            "asynchronous fault with data-parallel attention"
            if _sg(c) and c.category in (STALE, OTHER) and _async_like(c) and _dp(c)
            else None
        ),
    ),
    KnownFix(
        "sgl-project/sglang#27338",
        "draft multi-step `cuda_graph_kv_indices` sized without the topk factor: writes past its "
        "row into graph-pool memory -> wrong drafts or out-of-vocab ids "
        "(`vectorized_gather_kernel` index out of bounds)",
        lambda c: (
            "out-of-range draft ids or silent draft corruption with topk > 1"
            if _sg(c)
            and (
                (c.category == OOB and "vectorized_gather" in c.text_of("index.oob"))
                or (c.category in (OOB, ACCEPT) and (c.config.topk or 1) > 1)
            )
            else None
        ),
    ),
    KnownFix(
        "sgl-project/sglang#31198",
        "capturing the EAGLE target prefill graph perturbed FP4/TRTLLM-MoE state and a stale "
        "prefill fallback was recorded into the spec-verify graphs (with #29248)",
        lambda c: (
            "failure next to a target-prefill graph capture"
            if _sg(c)
            and c.category in (CAPTURE, STALE, OTHER)
            and any("prefill" in ph.name for ph in c.state.captures)
            else None
        ),
    ),
    KnownFix(
        "sgl-project/sglang#2684",
        "hang with CUDA graphs + DP attention for EAGLE (issue #2678)",
        lambda c: (
            "hang with data-parallel attention"
            if _sg(c) and c.category == HANG and _dp(c)
            else None
        ),
    ),
    KnownFix(
        "sgl-project/sglang#3430",
        "EAGLE startup can fail in CUDA-graph capture for large topk/draft-token counts; the "
        "hint is to reduce --cuda-graph-max-bs",
        lambda c: (
            "capture failure or capture-time OOM"
            if _sg(c)
            and (
                c.category == CAPTURE
                or (c.category == OOM and c.verdict.phase.at_failure == "capture")
            )
            else None
        ),
    ),
    KnownFix(
        "sgl-project/sglang#32106",
        "skip the expert-distribution recorder's pass boundary (a host sync) during CUDA-graph "
        "capture",
        lambda c: (
            "capture failure with expert-distribution metrics enabled"
            if _sg(c)
            and c.category == CAPTURE
            and (c.config.expert_distribution_metrics or "expert_distribution" in c.frames_text())
            else None
        ),
    ),
    KnownFix(
        "sgl-project/sglang#8163",
        "draft-extend hidden_states buffer was sized hidden_size x 3 while the draft's "
        "target_hidden_size differs",
        lambda c: "width mismatch between draft and target" if _width(c) else None,
    ),
    KnownFix(
        "sgl-project/sglang#29464",
        "one helper (get_draft_input_from_target_hidden_dim) for the draft input width, replacing "
        "per-runner guesses",
        lambda c: "width mismatch between draft and target" if _width(c) else None,
    ),
    KnownFix(
        "sgl-project/sglang#22836",
        "EAGLE-3 aux-layer capture was enabled after CUDA-graph capture: captured target graphs "
        "produced no aux states -> zero acceptance",
        lambda c: (
            "acceptance collapse with an EAGLE-3 draft"
            if _sg(c) and c.category == ACCEPT and c.config.spec_method in ("eagle3", None)
            else None
        ),
    ),
    KnownFix(
        "vllm-project/vllm#39773",
        "MRV2: `last_token_indices` not padded before draft prefill (stale values -> OOB gather), "
        "and PIECEWISE draft decodes made FlashInfer read a stale paged-KV indptr",
        lambda c: (
            "stale/OOB read on an MRV2 build that may predate 0.20"
            if _vl(c)
            and c.category in (STALE, OOB, MODE)
            and c.before(0, 20)
            and (c.config.runner == "mrv2" or (c.version is not None and c.version >= (0, 19, 0)))
            and (c.category != MODE or c.config.cudagraph_mode_resolved == "PIECEWISE")
            else None
        ),
    ),
    KnownFix(
        "vllm-project/vllm#43682",
        "`eagle_step_slot_mapping_metadata_kernel` incremented seq_lens of CUDA-graph padded rows "
        "(block_table = -1) -> cudaErrorIllegalAddress under concurrency",
        lambda c: (
            "illegal address during padded replay"
            if _vl(c) and c.category == STALE and c.before(0, 23)
            else None
        ),
    ),
    KnownFix(
        "vllm-project/vllm#46324",
        "capture sizes were aligned to K+1 only in FULL mode; in PIECEWISE a partial-acceptance "
        "step hit a misaligned graph and read slot_mapping/positions at wrong offsets",
        lambda c: (
            "fault with PIECEWISE graphs and speculative decoding"
            if _vl(c)
            and c.category in (STALE, OOB)
            and c.config.cudagraph_mode_resolved == "PIECEWISE"
            else None
        ),
    ),
    KnownFix(
        "vllm-project/vllm#32818",
        "the EAGLE dummy_run ignored use_cudagraphs, so graphs were dispatched during capture -> "
        "segfault (MI300X, TP>1)",
        lambda c: (
            "crash during capture"
            if _vl(c)
            and c.category == CAPTURE
            and (c.state.hits("error.segfault") or "dummy_run" in c.frames_text())
            else None
        ),
    ),
    KnownFix(
        "vllm-project/vllm#54418",
        "default spec-decode capture sizes grew to 2176/6400 tokens -> FULL capture OOM and a "
        "KV cache shrunk to 0.94 GiB",
        lambda c: (
            "OOM with large capture sizes or a squeezed KV cache"
            if _vl(c)
            and c.category == OOM
            and (
                (c.config.capture_sizes and max(c.config.capture_sizes) >= 2048)
                or (
                    c.config.memory.available_kv_gib is not None
                    and c.config.memory.available_kv_gib < 1.5
                )
                or c.verdict.phase.at_failure == "capture"
            )
            else None
        ),
    ),
    KnownFix(
        "vllm-project/vllm#44078",
        "MRV2 EAGLE graphs in a dedicated pool reserved the draft's transient footprint a second "
        "time; the shared global pool reuses the target's blocks (1.39 -> 1.12 GiB)",
        lambda c: (
            "graph-pool memory on a 0.22 build (dedicated EAGLE pool)"
            if _vl(c)
            and c.category == OOM
            and (
                (c.version is not None and c.version[:2] in ((0, 21), (0, 22)))
                or (c.version is None and c.config.runner == "mrv2")
            )
            else None
        ),
    ),
    KnownFix(
        "vllm-project/vllm#44740",
        "issue: negative CUDA-graph memory estimate inflates the KV budget (proposed fix PR "
        "#45076: clamp negative deltas, flush the allocator cache); workaround: lower "
        "--gpu-memory-utilization or VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0",
        lambda c: (
            "negative graph-memory estimate in the log"
            if _vl(c) and c.state.hits("memory.negative-estimate")
            else None
        ),
    ),
    KnownFix(
        "vllm-project/vllm#26499",
        "FlashInfer chose decode CUDA graphs by num_decodes instead of num_decode_tokens, wrong "
        "under spec decode at high concurrency",
        lambda c: (
            "FlashInfer graphs with speculative decoding on an older build"
            if _vl(c)
            and c.category in (STALE, MODE)
            and c.config.attention_backend == "flashinfer"
            and c.before(0, 12)
            else None
        ),
    ),
    KnownFix(
        "vllm-project/vllm#17504",
        "acceptance collapse: a draft compiled for int32 input ids was fed int64 from argmax "
        "(gibberish drafts) and EAGLE-3 was not actually captured (with #17211; mean acceptance "
        "length back to 3.57)",
        lambda c: (
            "acceptance collapse with an EAGLE draft on an older build"
            if _vl(c)
            and c.category == ACCEPT
            and c.config.spec_method in ("eagle", "eagle3", None)
            and c.before(0, 9)
            else None
        ),
    ),
    KnownFix(
        "vllm-project/vllm#40410",
        "draft-prefill graphs reuse the target's captured attention state; before it every FULL "
        "draft-prefill replay depended on a metadata rebuild",
        lambda c: (
            "stale metadata on a 0.20 MRV2 build"
            if _vl(c)
            and c.category in (STALE, ACCEPT)
            and c.version is not None
            and c.version[:2] == (0, 20)
            else None
        ),
    ),
    KnownFix(
        "vllm-project/vllm#48894",
        "issue: a crash that persists with cudagraph_mode=NONE but not with --enforce-eager is a "
        "torch.compile/inductor kernel, not a CUDA-graph bug",
        lambda c: (
            "the reporter's A/B points at torch.compile"
            if _vl(c) and c.state.hits("context.none-still-fails")
            else None
        ),
    ),
)


def matching_fixes(ctx: FixContext) -> list[Fix]:
    out: list[Fix] = []
    for kf in KNOWN_FIXES:
        why = kf.applies(ctx)
        if why:
            out.append(Fix(kf.ref, kf.summary, why))
    return out
