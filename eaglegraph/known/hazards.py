"""Hazards: each known failure mechanism once, with one id, whoever finds it.

The plan predicts a hazard from the configuration, the probe observes it as a stale read of a
buffer, and triage meets it in a crash log: all three name it by the same id and show the same
upstream reference and fix. A hazard records the mechanism, which releases have it, the change
that fixed it (and so the first release that carries the fix) and what to do about it.

Most hazards are rows of the table below; a hazard that an engine flag's off state reproduces
can instead sit on the flag's row (`known.profiles` `Flag.hazard`, a `HazardSpec`), and
`flag_hazards` brings it here with the flag's engine, change and name.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any

from eaglegraph.known.hazard_spec import HazardSpec
from eaglegraph.known.profiles import FLAGS, Flag
from eaglegraph.known.tables import keyed
from eaglegraph.known.upstream import Upstream, upstream
from eaglegraph.known.versions import ENGINE_LABELS, Version, VersionRange


@dataclass(frozen=True)
class Hazard:
    id: str
    engine: str | None  # None: any engine that loads the pair
    mechanism: str
    fix: str | None = None  # what the upstream fix does
    fixed_by: str | None = None  # upstream ref of the fixing change
    workaround: str | None = None  # what to do without (or before) the upstream fix
    refs: tuple[str, ...] = ()  # issues and related changes, beside the fix
    ref_note: str | None = None  # a short gloss shown after the ref
    cite: str | None = None  # the citation shown verbatim when one ref does not say it all
    # Probe observations of this hazard: (buffer name suffix, phase or None for any phase).
    buffers: tuple[tuple[str, str | None], ...] = ()
    flag: str | None = None  # the profile flag whose off state reproduces it

    @property
    def fix_change(self) -> Upstream | None:
        return upstream(self.fixed_by) if self.fixed_by else None

    @property
    def fixed_in(self) -> str | None:
        """'vLLM ≥ 0.20': the first release that carries the fix, when known."""
        change = self.fix_change
        return change.carried_by() if change else None

    @property
    def affected(self) -> VersionRange | None:
        """Releases before the first one that carries the fix, when that release is known."""
        change = self.fix_change
        if change is None or change.released_in is None:
            return None
        return VersionRange(None, change.released_in)

    def affects(self, version: Version | None) -> bool | None:
        """Whether a release still has this hazard; None when that cannot be told."""
        change = self.fix_change
        carried = change.carried_in(version) if change else None
        return None if carried is None else not carried

    @property
    def ref(self) -> str | None:
        """The reference a finding shows: the fixing change, else the first issue."""
        return self.fixed_by or (self.refs[0] if self.refs else None)

    @property
    def ref_text(self) -> str | None:
        if self.cite:
            return self.cite
        ref = self.ref
        if ref is None:
            return None
        return f"{ref} ({self.ref_note})" if self.ref_note else ref

    @property
    def fix_text(self) -> str | None:
        """'use vLLM ≥ 0.20 (PR #39773): <what it does>', after the workaround if there is one."""
        change = self.fix_change
        if change is None:
            return self.workaround or self.fix
        if change.released_in is not None:
            upgrade = f"use {change.carried_by()} ({change.pr})"
        else:
            label = ENGINE_LABELS[change.engine]
            upgrade = f"use {ARTICLES[change.engine]} {label} build with {change.pr}"
        if self.fix:
            upgrade += f": {self.fix}"
        return f"{self.workaround}, or {upgrade}" if self.workaround else upgrade


ARTICLES = {"vllm": "a", "sglang": "an"}


def flag_hazards(flags: Iterable[Flag]) -> list[Hazard]:
    """The hazards flags declare beside themselves (`Flag.hazard`): fixed by the flag's change,
    reproduced by its off state."""
    return [
        Hazard(engine=flag.engine, fixed_by=flag.ref, flag=flag.name, **_spec_fields(spec))
        for flag in flags
        if (spec := flag.hazard) is not None
    ]


def _spec_fields(spec: HazardSpec) -> dict[str, Any]:
    """A `HazardSpec`'s fields, each a `Hazard` field of the same name: a field added to the
    spec reaches the hazard without another line here."""
    return {f.name: getattr(spec, f.name) for f in fields(spec)}


HAZARDS: dict[str, Hazard] = keyed(
    lambda h: h.id,
    Hazard(
        "piecewise-draft-decode",
        "vllm",
        "draft decodes dispatch to PIECEWISE descriptors that pad num_tokens but not "
        "num_reqs; FlashInfer-style decode plans num_tokens rows and reads "
        "kv_indptr[num_reqs+1:num_tokens+1] and last_page_len[num_reqs:num_tokens] left by "
        "earlier builds",
        fix="draft decodes clamped to FULL_DECODE_ONLY or NONE, so requests are padded too",
        fixed_by="vllm#39773",
        buffers=(("kv_indptr", "draft_decode"), ("last_page_len", "draft_decode")),
        flag="draft_decode_mode_clamp",
    ),
    Hazard(
        "unpadded-last-token-indices",
        "vllm",
        "FULL draft-prefill graphs gather hidden states at last_token_indices"
        "[:num_reqs_padded]; rows past num_reqs keep stale indices from larger batches "
        "(out-of-bounds gather)",
        fix="last_token_indices[num_reqs:] padded with 0 in _prepare_eagle_inputs_kernel",
        fixed_by="vllm#39773",
        buffers=(("last_token_indices", None),),
        flag="pad_last_token_indices",
    ),
    Hazard(
        "draft-decode-rejected-kv",
        "vllm",
        "MRV1's padded drafter batch keeps the rejected drafts in the target's seq_lens; "
        "the draft decodes grow those seq_lens by one per step without dropping them, so "
        "each decode attends the rejected positions' stale draft KV (wrong drafts, and "
        "reads past the request's last valid position)",
        fix="seq_lens -= num_rejected_tokens before the draft decodes (EagleProposer.propose)",
        fixed_by="vllm#29845",
        buffers=(("eagle.seq_lens", "draft_decode"),),
        flag="draft_decode_excludes_rejected",
    ),
    Hazard(
        "stale-padded-positions",
        "sglang",
        "padded draft replays (raw_bs < graph bs) keep stale positions in rows raw_bs..bs; "
        "the draft graph advances them every step and indexes the KV cache with them "
        "(illegal memory access as batches shrink)",
        fix="positions[raw_bs:bs] reset before a padded draft replay",
        fixed_by="sglang#10892",
        ref_note="root cause of sglang#6309, #8296, #8336, #9888",
        buffers=(("draft_positions", None),),
        flag="reset_positions_on_padded_replay",
    ),
    Hazard(
        "dflash-unpadded-query-buffers",
        "vllm",
        "DFlash query buffers are sized and written for the unpadded batch; a FULL graph "
        "replayed for a batch between two capture sizes (e.g. an odd batch under an even "
        "size) reads block ids, positions, query_start_loc, seq_lens and sample indices of "
        "padded requests that no step wrote",
        fix="DFlash query buffers sized and padded for CUDA-graph-padded batches",
        fixed_by="vllm#50065",
        workaround="capture sizes at every (K+1) multiple up to max_num_seqs·(K+1), or "
        "eager DFlash drafting",
        buffers=(
            ("dflash.sample_indices", None),
            ("dflash.query_start_loc", None),
            ("dflash.seq_lens", None),
            ("dflash.input_ids", None),
            ("dflash.positions", None),
        ),
        flag="dflash_padded_query_buffers",
    ),
    Hazard(
        "dedicated-eagle-pool",
        "vllm",
        "EAGLE graphs capture into a dedicated pool: their transient peak is reserved a "
        "second time instead of reusing the target's blocks",
        fix="EAGLE graphs share the global graph pool",
        fixed_by="vllm#44078",
        ref_note="1.39 → 1.12 GiB on Llama-3.1-8B + EAGLE, K=5, H200",
        flag="dedicated_eagle_pool",
    ),
    Hazard(
        "draft-prefill-metadata-rebuild",
        "vllm",
        "every FULL draft-prefill replay is preceded by a metadata rebuild on the "
        "speculator's builders (CPU cost per step)",
        fix="draft-prefill graphs reuse the target's captured attention state",
        fixed_by="vllm#40410",
        flag="reuse_target_attn_state",
    ),
    Hazard(
        "mode-downgraded",
        "vllm",
        "the attention backend lacks uniform-batch FULL graph support for spec decode, so "
        "the requested mode is downgraded (FlashInfer runs PIECEWISE)",
        workaround="use FlashAttention 3 or Triton attention for FULL target graphs",
        refs=("vllm#49547",),
        ref_note="FlashInfer + spec-decode silently runs PIECEWISE",
    ),
    # --- the pair on disk: mismatches an engine crashes or degrades on -------------------
    Hazard(
        "hidden-mismatch",
        None,
        "the draft's hidden width differs from the target's: the target states it is fed "
        "do not fit the draft's fc",
        fixed_by="sglang#8163",
        refs=("sglang#7011", "vllm#38073"),
        cite="sgl-project/sglang#7011 (fixed by sglang PR #8163), vllm-project/vllm PR #38073",
    ),
    Hazard(
        "fc-width-mismatch",
        None,  # both engines fail the load: fc is built for the width the target emits
        "the draft's fc input width is not what the target provides",
        fixed_by="sglang#29464",
        cite="sgl-project/sglang PR #29464 (draft input width resolution)",
    ),
    Hazard(
        "draft-max-positions",
        None,
        "a draft with fewer max positions than the target indexes its rotary table out of "
        "range past its limit",
        workaround="vLLM 0.27-0.30 raise the draft's limit to the target's max_model_len; "
        "0.33 does so for default, linear and llama3 rope and caps max_model_len to the "
        "draft's for other types; SGLang refuses to start unless "
        "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1; on older vLLM and elsewhere set "
        "max_position_embeddings in the draft config to the target's",
        refs=("vllm#21986", "sglang#3513"),
        cite="vllm-project/vllm#21986, sgl-project/sglang#3513",
    ),
    Hazard(
        "eagle1-fc-bias",
        None,
        "EAGLE-1 checkpoints differ in whether fc has a bias, and loaders differ in whether "
        "they trust the config's 'bias' key",
        refs=("sglang#5773", "vllm#8790", "vllm#9580", "vllm#22323"),
        cite="sgl-project/sglang#5773, vllm-project/vllm PRs #8790, #9580, #22323",
    ),
    Hazard(
        "lm-head-rows-mismatch",
        None,  # vLLM's lm_head of draft_vocab_size rows refuses other rows at load too
        "the draft's lm_head rows and draft_vocab_size disagree",
        refs=("sglang#12421",),
        ref_note="logits buffer sized from the wrong vocabulary",
        cite="sgl-project/sglang#12421 (logits buffer sized from the wrong vocabulary)",
    ),
    Hazard(
        "sglang-bcg-draft-width",
        "sglang",
        "with breakable CUDA graphs for the draft, SGLang sizes the draft's static hidden "
        "buffer from the config; without the aux-layer keys it is too narrow for what the "
        "target emits (shape error on copy_ at BCG replay)",
        fixed_by="sglang#29464",
        workaround="add eagle_config {eagle_aux_hidden_state_layer_ids, "
        "use_aux_hidden_state: true} to the draft config",
        refs=("sglang#25795",),
        cite="sgl-project/sglang PR #25795 (get_draft_hidden_dim), fixed by PR #29464",
    ),
    # --- DP ranks that disagree (issue 25): found by the DP agreement's scenarios ------
    Hazard(
        "dp-cudagraph-mode-unsynced",
        "vllm",
        "DP ranks pad to one token count but keep their own graph mode: a rank that must "
        "run eager (a prefill under FULL_DECODE_ONLY) meets peers replaying FULL graphs, "
        "whose collectives it never issues",
        fix="the cudagraph mode joins the DP all-reduce and every rank takes the min",
        fixed_by="vllm#30173",
        flag="dp_cudagraph_mode_sync",
    ),
    Hazard(
        "dp-drafter-phase-shift",
        "vllm",
        "busy ranks all-reduce the DP token counts once per draft forward (k a step), "
        "idle ranks' drafter dummy run once: the ranks drift apart until one waits in a "
        "collective the others never reach",
        fix="explicit DP syncs in the drafter, matched by the idle ranks' dummy runs",
        fixed_by="vllm#26086",
        flag="dp_explicit_drafter_syncs",
    ),
    Hazard(
        "dp-dummy-descriptor-unpadded",
        "vllm",
        "an idle rank's dummy run pads its token count to the DP maximum but dispatches the "
        "graph of its unpadded count, so it replays another graph than its peers",
        fix="the dummy run dispatches num_tokens_after_padding",
        fixed_by="vllm#25906",
        flag="dp_dummy_run_padded_descriptor",
    ),
    Hazard(
        "dp-drafter-skip-near-max-len",
        "vllm",
        "a rank with a request near max_model_len skips the drafter "
        "(input_fits_in_drafter) and its DP syncs while the other ranks draft: the "
        "drafting ranks wait in a DP collective the skipping rank never issues",
        fix="vLLM 0.25 runs the drafter's dummy run on such a rank (read in the 0.25 wheel); "
        "MRV2 0.33 agrees skip_drafts across DP",
        refs=("vllm#44185", "vllm#29422", "vllm#44954"),
        flag="dp_unfit_drafter_dummy",
    ),
    Hazard(
        "dp-idle-rank-no-propose",
        "vllm",
        "MRV2 idle DP ranks run the target's dummy forward only: the busy ranks' draft "
        "forwards issue EP collectives with no counterpart",
        fix="idle ranks call propose(dummy_run=True) with the target's DP agreement",
        fixed_by="vllm#35294",
        flag="dp_idle_ranks_propose",
    ),
    Hazard(
        "dp-draft-graph-local-veto",
        "sglang",
        "the draft graph's eligibility is decided per rank (a GLM-5.x draft input without "
        "its DSA seed falls back to eager) while idle ranks keep replaying: the draft's "
        "all_gather runs inside a graph on some ranks and eagerly on others",
        fix="can_run_draft_cuda_graph is a min-reduced MLP-sync column",
        fixed_by="sglang#32196",
        refs=("sglang#32527", "sglang#30839"),
        ref_note="deadlock reported in sglang#32527",
        flag="sglang_dp_draft_graph_vote",
    ),
    Hazard(
        "dp-draft-token-counts",
        "sglang",
        "the draft reuses the target's token-count representation; when the draft's MoE "
        "A2A backend needs all ranks' counts and the target's does not, each rank pads the "
        "draft to its own length",
        fix="draft_global_num_tokens follows the draft's own A2A backend",
        fixed_by="sglang#32196",
        refs=("sglang#32182",),
        flag="sglang_dp_draft_token_counts",
    ),
    Hazard(
        "dp-local-graph-bucket",
        "sglang",
        "with FlashInfer MoE A2A each DP rank picks its decode graph bucket from its local "
        "batch size; the A2A's fixed-geometry buffers then differ between ranks (illegal "
        "memory access)",
        fix="require_mlp_tp_gather is True for FlashInfer A2A: every rank replays the "
        "largest rank's bucket",
        fixed_by="sglang#30450",
        refs=("sglang#30242",),
        flag="sglang_a2a_max_bucket",
    ),
    Hazard(
        "dp-prefill-per-rank-bucket",
        "sglang",
        "prefill graphs that capture a DP gather at MAX_LEN geometry replay per-rank "
        "buckets, and a 0-token rank runs eager (a SUM_LEN all_reduce) while the busy rank "
        "replays the graph's gather",
        fix="one shared MAX_LEN prefill bucket on every rank when the graph captures a DP gather",
        fixed_by="sglang#37933",
        refs=("sglang#37561",),
        flag="sglang_prefill_shared_bucket",
    ),
    *flag_hazards(FLAGS.values()),
)


def hazard(hazard_id: str) -> Hazard:
    """The hazard by id; a KeyError here is a typo in eaglegraph's own code."""
    return HAZARDS[hazard_id]


def hazard_for_buffer(buffer: str, phase: str) -> Hazard | None:
    """The known hazard that a stale or out-of-range read of `buffer` in `phase` is."""
    for h in HAZARDS.values():
        for suffix, ph in h.buffers:
            if buffer.endswith(suffix) and (ph is None or ph == phase):
                return h
    return None


def hazards_affecting(engine: str, version: Version) -> list[Hazard]:
    """The hazards with a known fix that this release of `engine` does not carry yet."""
    return [h for h in HAZARDS.values() if h.engine == engine and h.affects(version)]
