"""The DP agreement each engine release computes before it dispatches a step, as data.

Every engine makes its DP ranks exchange one small integer row per rank before a forward and
derive the padding and graph mode from all rows; which rows, which reductions and which
collectives follow depend on the runner and the release. `dp_rule` turns a profile (and, for
vLLM, the model runner) into a `DpRule`: the rule's rows as the engine builds them, where they
were read, and the profile whose DP flags switch its behaviours. `rig.dp_agreement` runs it;
the rule's programs are the only readers of those flags.

Sources (read in the wheels): vLLM 0.33 `v1/worker/dp_utils.py`, `v1/worker/gpu/dp_utils.py`,
`v1/spec_decode/llm_base_proposer.py`, `v1/worker/gpu/spec_decode/speculator.py`; vLLM 0.11.0
`forward_context.py`, `v1/worker/gpu_model_runner.py`, `v1/spec_decode/eagle.py`; SGLang 0.5.23
`managers/scheduler_components/dp_attn.py`, `utils/common.py`,
`model_executor/runner/decode_cuda_graph_runner.py`,
`speculative/eagle_draft_cuda_graph_runner.py`; SGLang 0.5.15 for what came before #32196 and
#30450. SGLang's behaviour between #30839 and #32196 (0.5.15.post1–0.5.22) is taken from the PR
texts (research notes tp-dp.md §2.5), not from a wheel.
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.known.dp_batch import A2ABackend
from eaglegraph.known.enums import StrEnum
from eaglegraph.known.hazards import HAZARDS
from eaglegraph.known.profiles import Profile
from eaglegraph.known.runners import ModelRunner
from eaglegraph.known.tables import keyed


class DpRuleKind(StrEnum):
    VLLM_V1_TOKEN_SYNC = "vllm-v1-token-sync"
    VLLM_V1_COORDINATE = "vllm-v1-coordinate"
    VLLM_MRV2_SYNC = "vllm-mrv2-sync"
    SGLANG_MLP_SYNC = "sglang-mlp-sync"


@dataclass(frozen=True)
class RuleSpec:
    """One agreement rule: the vote row's columns in the engine's order, how each is reduced
    across ranks, and where it was read."""

    kind: DpRuleKind
    engine: str
    rows: tuple[str, ...]
    reductions: tuple[str, ...]
    source: str
    drafter: str  # how the drafter takes part in the agreement

    @property
    def width(self) -> int:
        return len(self.rows)


RULES: dict[DpRuleKind, RuleSpec] = keyed(
    lambda r: r.kind,
    RuleSpec(
        DpRuleKind.VLLM_V1_TOKEN_SYNC,
        "vllm",
        ("num_tokens",),
        ("max",),
        "vllm/forward_context.py::DPMetadata.num_tokens_across_dp, "
        "v1/worker/gpu_model_runner.py::GPUModelRunner.get_dp_padding (vLLM 0.11.0)",
        "one implicit all-reduce in set_forward_context per draft forward; "
        "EagleProposer.dummy_run runs one forward (v1/spec_decode/eagle.py, 0.11.0)",
    ),
    RuleSpec(
        DpRuleKind.VLLM_V1_COORDINATE,
        "vllm",
        ("orig_num_tokens", "padded_num_tokens", "should_ubatch", "cudagraph_mode"),
        ("gather", "max", "all", "min"),
        "vllm/v1/worker/dp_utils.py::coordinate_batch_across_dp (_run_ar, _synchronize_dp_ranks)",
        "v1/spec_decode/llm_base_proposer.py::SpecDecodeBaseProposer."
        "_determine_batch_execution_and_padding before the draft prefill and before the "
        "draft decodes; dummy_run syncs at forwards 0 and 1",
    ),
    RuleSpec(
        DpRuleKind.VLLM_MRV2_SYNC,
        "vllm",
        (
            "num_tokens",
            "cg_mode",
            "uniform_token_count",
            "max_query_len",
            "allow_ubatching",
            "num_reqs",
            "allow_skip_drafts",
        ),
        ("max", "min", "agree", "max-if-all-set", "all", "max", "all"),
        "vllm/v1/worker/gpu/dp_utils.py::sync_cudagraph_and_dp_padding (DPSyncState)",
        "v1/worker/gpu/dp_utils.py::dispatch_cg_and_sync_dp(dp_sync_state=...) reuses the "
        "target's agreement; Speculator._build_uniform_batch_dp_sync sizes draft decodes "
        "from its num_reqs",
    ),
    RuleSpec(
        DpRuleKind.SGLANG_MLP_SYNC,
        "sglang",
        (
            "num_tokens",
            "num_tokens_for_logprob",
            "can_run_decode_cuda_graph",
            "is_extend_in_batch",
            "local_can_run_tbo",
            "local_forward_mode",
            "can_run_prefill_cuda_graph",
            "prefill_cuda_graph_max_prefix_len",
            "can_run_draft_cuda_graph",
            "is_health_check",
            "attention_pairs",
        ),
        ("gather", "gather", "min", "max", "tbo", "tbo", "min", "max", "min", "max", "gather"),
        "sglang/srt/managers/scheduler_components/dp_attn.py::prepare_mlp_sync_batch_raw "
        "(MLPSyncBatchInfo._get_local_tensor, all_gather)",
        "one gather a scheduler iteration; idle ranks step through draft and verify "
        "(EagleDraftInput.create_idle_input)",
    ),
)

# SGLang ForwardMode members (model_executor/forward_batch_info.py, auto() from 1), as the
# local_forward_mode column carries them without two-batch overlap.
FORWARD_MODE = {"extend": 1, "decode": 2, "mixed": 3, "idle": 4}

# The DP hazards each rule can show, by hazard id (known.hazards).
DP_HAZARDS: dict[str, tuple[DpRuleKind, ...]] = {
    "dp-cudagraph-mode-unsynced": (DpRuleKind.VLLM_V1_TOKEN_SYNC,),
    "dp-drafter-phase-shift": (DpRuleKind.VLLM_V1_TOKEN_SYNC, DpRuleKind.VLLM_V1_COORDINATE),
    "dp-dummy-descriptor-unpadded": (DpRuleKind.VLLM_V1_TOKEN_SYNC, DpRuleKind.VLLM_V1_COORDINATE),
    "dp-drafter-skip-near-max-len": (DpRuleKind.VLLM_V1_TOKEN_SYNC, DpRuleKind.VLLM_V1_COORDINATE),
    "dp-idle-rank-no-propose": (DpRuleKind.VLLM_MRV2_SYNC,),
    "dp-draft-graph-local-veto": (DpRuleKind.SGLANG_MLP_SYNC,),
    "dp-draft-token-counts": (DpRuleKind.SGLANG_MLP_SYNC,),
    "dp-local-graph-bucket": (DpRuleKind.SGLANG_MLP_SYNC,),
    "dp-prefill-per-rank-bucket": (DpRuleKind.SGLANG_MLP_SYNC,),
}

# What each kind of disagreement does to the ranks (the tail of a finding's message).
CONSEQUENCES = {
    "collectives": "a rank waits in a DP collective its peers never issue: hang",
    "absent": "the running ranks' collectives in this phase have no counterpart: hang",
    "graph-vs-eager": "collectives captured in the graph meet eager ones: ranks deadlock",
    "graph-key": "ranks replay graphs of different sizes, so their collectives disagree in "
    "shape: hang or illegal memory access",
    "draft-steps": "ranks draft different numbers of steps: their draft collectives fall out "
    "of step",
}


@dataclass(frozen=True)
class DpRule:
    """The agreement one profile computes: its rule, and the profile whose DP flags (`dp_*`,
    `sglang_dp_*`, `sglang_dsa_seed_eager_fallback`, `sglang_a2a_max_bucket`,
    `sglang_prefill_shared_bucket`) the rule's programs (`rig.dp_vllm`, `rig.dp_sglang`) read.
    The rule keeps the profile itself rather than a copy of each flag: a new DP flag is read
    where it acts, under its one name."""

    spec: RuleSpec
    profile: Profile
    runner: ModelRunner | None
    hazards: tuple[str, ...] = ()  # the DP hazards this profile still has

    @property
    def kind(self) -> DpRuleKind:
        return self.spec.kind


def dp_rule(profile: Profile, runner: ModelRunner | None = None) -> DpRule:
    """The DP agreement `profile` computes. For vLLM the runner picks the rule: `runner`, else
    the profile's own, else MRV2 (the default runner for every model from 0.29)."""
    if profile.engine == "sglang":
        kind = DpRuleKind.SGLANG_MLP_SYNC
        runner = None
    else:
        runner = runner or profile.runner or ModelRunner.MRV2
        if runner is ModelRunner.MRV2:
            kind = DpRuleKind.VLLM_MRV2_SYNC
        elif profile.dp_cudagraph_mode_sync:
            kind = DpRuleKind.VLLM_V1_COORDINATE
        else:
            kind = DpRuleKind.VLLM_V1_TOKEN_SYNC
    lacking = tuple(
        hid
        for hid, kinds in DP_HAZARDS.items()
        if kind in kinds and (flag := HAZARDS[hid].flag) and not getattr(profile, flag)
    )
    return DpRule(spec=RULES[kind], profile=profile, runner=runner, hazards=lacking)


def require_mlp_tp_gather(a2a: A2ABackend, rule: DpRule) -> bool:
    """Whether SGLang's runners take all ranks' token counts (the largest rank's graph bucket)
    for a model on this A2A backend, under the standard DeepSeek-style layout
    (`moe_dense_tp_size=1`, `enable_dp_lm_head`). `utils/common.py::require_mlp_tp_gather`:
    no A2A gathers; FlashInfer does from #30450 (0.5.15 returned False); DeepEP does not."""
    if a2a is A2ABackend.NONE:
        return True
    if a2a is A2ABackend.FLASHINFER:
        return rule.profile.sglang_a2a_max_bucket
    return False


def geometry_bound(a2a: A2ABackend) -> bool:
    """Whether a model's MoE collectives need the same token geometry on every DP rank: the
    MAX_LEN gather of the no-A2A path and FlashInfer's fixed-geometry A2A buffers do; DeepEP
    exchanges variable counts. This is what the check holds the ranks to, whatever the
    release believed."""
    return a2a is not A2ABackend.DEEPEP
