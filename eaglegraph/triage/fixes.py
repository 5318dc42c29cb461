"""Upstream fixes, each listed only when the log shows its mechanism.

A PR number is useful to a support engineer only if it is the right one: every entry names an
upstream change (its number and what it fixed are data in `eaglegraph.known.upstream`) and a
condition over the evidence (category, framework, version, mode, backend, topology) under which
that mechanism can be what happened. Facts come from `shared/research/crash-triage.md`,
`sglang.md` and `vllm-mrv2.md`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from eaglegraph.known.triage_fix_ranges import affected
from eaglegraph.known.upstream import Upstream, cite
from eaglegraph.known.versions import ENGINE_LABELS, version_text
from eaglegraph.results.triage import Category, Fix, TriageConfig
from eaglegraph.triage.rules import Verdict
from eaglegraph.triage.state import ScanState

STALE, OOB, OOM, CAPTURE, MODE, CONFIG, ACCEPT, HANG, OTHER = Category


@dataclass
class FixContext:
    verdict: Verdict
    config: TriageConfig
    state: ScanState
    framework: str | None
    version: tuple[int, int, int] | None

    @property
    def category(self) -> Category:
        return self.verdict.category

    def primary_text(self) -> str:
        return self.verdict.primary.text if self.verdict.primary else ""

    def text_of(self, *signals: str) -> str:
        return " ".join(h.text for h in self.state.hits(*signals))

    def frames_text(self) -> str:
        return " ".join(f"{f.file} {f.func}" for f in self.verdict.frames)


@dataclass(frozen=True)
class KnownFix:
    """An upstream change, why it is listed, and when its mechanism can be what happened."""

    change: str  # id of the upstream change or issue in eaglegraph.known.upstream
    why: str
    when: Callable[[FixContext], object]


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
        "sglang-padded-positions-reset",
        "padded replay in an SGLang build",
        lambda c: _sg(c) and c.category == STALE,
    ),
    KnownFix(
        "sglang-flashinfer-verify-positions",
        "stale read with the FlashInfer backend",
        lambda c: _sg(c) and c.category == STALE and c.config.attention_backend == "flashinfer",
    ),
    KnownFix(
        "sglang-draft-seq-lens-sum",
        "padded draft-decode replay",
        lambda c: (
            _sg(c)
            and c.category == STALE
            and "draft" in c.text_of("context.padding").lower()
            and c.config.attention_backend not in ("flash_attn", "triton")
        ),
    ),
    KnownFix(
        "sglang-dp-mtp-draft-extend-ima",
        "asynchronous fault with data-parallel attention",
        lambda c: _sg(c) and c.category in (STALE, OTHER) and _async_like(c) and _dp(c),
    ),
    KnownFix(
        "sglang-draft-kv-indices-topk",
        "out-of-range draft ids or silent draft corruption with topk > 1",
        lambda c: (
            _sg(c)
            and (
                (c.category == OOB and "vectorized_gather" in c.text_of("index.oob"))
                or (c.category in (OOB, ACCEPT) and (c.config.topk or 1) > 1)
            )
        ),
    ),
    KnownFix(
        "sglang-target-prefill-capture-state",
        "failure next to a target-prefill graph capture",
        lambda c: (
            _sg(c)
            and c.category in (CAPTURE, STALE, OTHER)
            and any("prefill" in ph.name for ph in c.state.captures)
        ),
    ),
    KnownFix(
        "sglang-dp-attention-hang",
        "hang with data-parallel attention",
        lambda c: _sg(c) and c.category == HANG and _dp(c),
    ),
    KnownFix(
        "sglang-capture-max-bs",
        "capture failure or capture-time OOM",
        lambda c: (
            _sg(c)
            and (
                c.category == CAPTURE
                or (c.category == OOM and c.verdict.phase.at_failure == "capture")
            )
        ),
    ),
    KnownFix(
        "sglang-expert-recorder-capture-sync",
        "capture failure with expert-distribution metrics enabled",
        lambda c: (
            _sg(c)
            and c.category == CAPTURE
            and (c.config.expert_distribution_metrics or "expert_distribution" in c.frames_text())
        ),
    ),
    KnownFix(
        "sglang-draft-extend-hidden-width",
        "width mismatch between draft and target",
        lambda c: _width(c),
    ),
    KnownFix(
        "sglang-draft-input-width-helper",
        "width mismatch between draft and target",
        lambda c: _width(c),
    ),
    KnownFix(
        "sglang-eagle3-aux-capture-order",
        "acceptance collapse with an EAGLE-3 draft",
        lambda c: _sg(c) and c.category == ACCEPT and c.config.spec_method in ("eagle3", None),
    ),
    KnownFix(
        "vllm-mrv2-eagle-padding",
        "stale/OOB read on an MRV2 build",
        lambda c: (
            _vl(c)
            and c.category in (STALE, OOB, MODE)
            and c.config.runner != "mrv1"
            and (c.category != MODE or c.config.cudagraph_mode_resolved == "PIECEWISE")
        ),
    ),
    KnownFix(
        "vllm-slot-mapping-padded-seq-lens",
        "illegal address during padded replay",
        lambda c: _vl(c) and c.category == STALE,
    ),
    KnownFix(
        "vllm-piecewise-capture-alignment",
        "fault with PIECEWISE graphs and speculative decoding",
        lambda c: (
            _vl(c)
            and c.category in (STALE, OOB)
            and c.config.cudagraph_mode_resolved == "PIECEWISE"
        ),
    ),
    KnownFix(
        "vllm-eagle-dummy-run-graphs",
        "crash during capture",
        lambda c: (
            _vl(c)
            and c.category == CAPTURE
            and (c.state.hits("error.segfault") or "dummy_run" in c.frames_text())
        ),
    ),
    KnownFix(
        "vllm-spec-capture-sizes-memory",
        "OOM with large capture sizes or a squeezed KV cache",
        lambda c: (
            _vl(c)
            and c.category == OOM
            and (
                (c.config.capture_sizes and max(c.config.capture_sizes) >= 2048)
                or (
                    c.config.memory.available_kv_gib is not None
                    and c.config.memory.available_kv_gib < 1.5
                )
                or c.verdict.phase.at_failure == "capture"
            )
        ),
    ),
    KnownFix(
        "vllm-shared-eagle-pool",
        "graph-pool memory with MRV2's dedicated EAGLE pool",
        lambda c: _vl(c) and c.category == OOM and c.config.runner != "mrv1",
    ),
    KnownFix(
        "vllm-negative-graph-memory-estimate",
        "negative graph-memory estimate in the log",
        lambda c: _vl(c) and c.state.hits("memory.negative-estimate"),
    ),
    KnownFix(
        "vllm-flashinfer-decode-graph-choice",
        "FlashInfer graphs with speculative decoding",
        lambda c: (
            _vl(c) and c.category in (STALE, MODE) and c.config.attention_backend == "flashinfer"
        ),
    ),
    KnownFix(
        "vllm-eagle-input-dtype-acceptance",
        "acceptance collapse with an EAGLE draft",
        lambda c: (
            _vl(c) and c.category == ACCEPT and c.config.spec_method in ("eagle", "eagle3", None)
        ),
    ),
    KnownFix(
        "vllm-draft-prefill-attn-state",
        "stale draft-prefill metadata on an MRV2 build",
        lambda c: _vl(c) and c.category in (STALE, ACCEPT) and c.config.runner != "mrv1",
    ),
    KnownFix(
        "vllm-compile-not-graphs",
        "the reporter's A/B points at torch.compile",
        lambda c: _vl(c) and c.state.hits("context.none-still-fails"),
    ),
)


def applies(change: Upstream, c: FixContext) -> tuple[str, str | None] | None:
    """Whether a fix applies to this report's engine and version: ("yes", None), ("if-older",
    the check to make), ("related", why it is not named), or None when it cannot apply (another
    engine, a version that carries the fix or predates the code it changed, no affected
    release)."""
    if c.framework not in (None, change.engine):
        return None
    label = ENGINE_LABELS[change.engine]
    fixed = change.released_in
    span = affected(change.id)
    if span is not None and (span.since or (0, 0, 0)) >= (span.until or span.since or (0, 0, 0)):
        return None  # no release had the code without the fix
    if c.version is None:
        if fixed is None:
            return "related", f"the first {label} release with this change is not recorded"
        since = f"{version_text(span.since)} <= " if span and span.since else ""
        return "if-older", (
            f"applies only if you run {since}{label} < {version_text(fixed)}: check with "
            f"`pip show {change.engine}`"
        )
    if fixed is not None and c.version >= fixed:
        return None
    if span is None:
        return "related", f"the {label} releases this change applies to are not recorded"
    return ("yes", None) if c.version in span else None


def matching_fixes(ctx: FixContext) -> list[Fix]:
    out: list[Fix] = []
    for kf in KNOWN_FIXES:
        if not kf.when(ctx):
            continue
        change = cite(kf.change)
        gate = applies(change, ctx)
        if gate is None:
            continue
        fixed = version_text(change.released_in) if change.released_in else None
        out.append(Fix(change.full_ref, change.summary, kf.why, gate[0], fixed, gate[1]))
    return out
