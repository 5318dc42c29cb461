"""Named DP scenarios: per-rank batches that reproduce a known rank-divergence bug.

Each scenario gives every DP rank its batch for each step, the deployment facts that matter
(`DpSetup`), the hazard it reproduces and the profiles under which the ranks must disagree
(`diverges_under`: a release before the fix) or agree (`clean_under`: releases with it).
`probes.dp_scenarios.run_scenario` runs one; tests hold every scenario to its two lists.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from eaglegraph.errors import unknown_choice
from eaglegraph.known.dp_batch import (
    IDLE,
    A2ABackend,
    DpSetup,
    RankBatch,
    VllmGraphMode,
    decode,
    prefill,
)
from eaglegraph.known.runners import ModelRunner
from eaglegraph.known.tables import keyed


@dataclass(frozen=True)
class DpScenario:
    name: str
    engine: str
    summary: str
    hazard: str  # known.hazards id
    steps: tuple[tuple[RankBatch, ...], ...]  # per step, one batch per rank
    diverges_under: tuple[str, ...]
    clean_under: tuple[str, ...]
    setup: DpSetup = field(default_factory=DpSetup)
    runner: ModelRunner | None = None
    source: str = ""  # where the batches and the mechanism come from

    def __post_init__(self) -> None:
        sizes = {len(s) for s in self.steps}
        if len(sizes) != 1 or min(sizes) < 2:
            raise ValueError(f"{self.name}: every step needs the same number (>= 2) of ranks")

    @property
    def dp_size(self) -> int:
        return len(self.steps[0])

    def expect(self, profile: str) -> str | None:
        """'diverges', 'clean' or None for a profile the scenario does not name."""
        if profile in self.diverges_under:
            return "diverges"
        return "clean" if profile in self.clean_under else None


SCENARIOS: dict[str, DpScenario] = keyed(
    lambda s: s.name,
    DpScenario(
        "sglang-idle-vs-missing-seed",
        "sglang",
        "an active rank's draft input lacks its DSA seed while the other rank is idle: "
        "the active rank falls back to eager in draft(), the idle one replays the draft "
        "graph",
        "dp-draft-graph-local-veto",
        ((decode(4, dsa_seed=False), IDLE), (decode(4), decode(2))),
        diverges_under=("sglang-0.5.15",),
        clean_under=("sglang-current", "sglang-0.5.4"),
        source="sglang#32527 report (GLM-5.2 TP8 DP8, EAGLE steps=3); PR texts of #30839 "
        "and #32196; 0.5.23 dp_attn.py::_spec_input_cuda_graph_compatible",
    ),
    DpScenario(
        "sglang-draft-a2a-unlike-target",
        "sglang",
        "the target runs DeepEP (rank-local counts), the draft no A2A (a DP gather needing "
        "all ranks' counts): the draft's graph bucket follows each rank's own count",
        "dp-draft-token-counts",
        ((decode(4), decode(1)),),
        diverges_under=("sglang-0.5.15",),
        clean_under=("sglang-current",),
        setup=DpSetup(moe_a2a=A2ABackend.DEEPEP, draft_moe_a2a=A2ABackend.NONE),
        source="sglang#32182 via PR #32196; 0.5.23 dp_attn.py::_update_gather_batch",
    ),
    DpScenario(
        "sglang-flashinfer-a2a-local-bucket",
        "sglang",
        "FlashInfer MoE A2A with DP attention: each rank picks its decode graph bucket "
        "from its local batch size",
        "dp-local-graph-bucket",
        ((decode(3), decode(9)),),
        diverges_under=("sglang-0.5.15",),
        clean_under=("sglang-current",),
        setup=DpSetup(moe_a2a=A2ABackend.FLASHINFER),
        source="sglang#30242 (DeepSeek-V4 NVFP4 PD decode, DEP16) and PR #30450; "
        "require_mlp_tp_gather read in the 0.5.15 and 0.5.23 wheels",
    ),
    DpScenario(
        "sglang-megamoe-idle-prefill",
        "sglang",
        "prefill graphs capture a DP gather (MegaMoE sparse-DP): the busy rank replays its "
        "bucket, the 0-token rank stays idle and runs eager",
        "dp-prefill-per-rank-bucket",
        ((prefill(1, 200), IDLE),),
        diverges_under=("sglang-0.5.15",),
        clean_under=("sglang-current",),
        setup=DpSetup(
            moe_a2a=A2ABackend.FLASHINFER,
            prefill_graph_tokens=(64, 128, 256, 512),
            prefill_graph_dp_gather=True,
        ),
        source="sglang#37561 and PR #37933 texts (no speculative decoding in the report; the "
        "per-rank bucket path came with #33871, inside the old profile's range)",
    ),
    DpScenario(
        "vllm-drafter-phase-shift",
        "vllm",
        "one rank drafts K=3 tokens, the other is idle: busy ranks all-reduce once per "
        "draft forward, idle ranks once a step",
        "dp-drafter-phase-shift",
        ((decode(1), IDLE),),
        diverges_under=("vllm-v1-0.11-dp",),
        clean_under=("vllm-mrv1-pre-29845", "vllm-current"),
        runner=ModelRunner.MRV1,
        source="PR #26086 text; 0.11.0 eagle.py (set_forward_context per forward, dummy_run "
        "one forward); 0.33 llm_base_proposer.py::dummy_run",
    ),
    DpScenario(
        "vllm-drafter-skip-near-max-len",
        "vllm",
        "one rank holds a request whose drafts would pass max_model_len, so it skips the "
        "drafter while the other rank drafts",
        "dp-drafter-skip-near-max-len",
        ((decode(2, near_cap=1), decode(2)),),
        diverges_under=("vllm-0.23", "vllm-v1-0.11-dp"),
        clean_under=("vllm-0.25", "vllm-current"),
        runner=ModelRunner.MRV1,
        source="vllm#44185, PRs #29422 and #44954; gpu_model_runner.py::sample_tokens read "
        "in the 0.24 and 0.25 wheels",
    ),
    DpScenario(
        "vllm-dummy-run-unpadded-descriptor",
        "vllm",
        "an idle rank's dummy run pads to the busy rank's 8 tokens but dispatches the "
        "graph of its own single token",
        "dp-dummy-descriptor-unpadded",
        ((decode(4), IDLE),),
        diverges_under=("vllm-v1-pre-25906",),
        clean_under=("vllm-v1-0.11-dp", "vllm-current"),
        setup=DpSetup(num_speculative_tokens=1),
        runner=ModelRunner.MRV1,
        source="PR #25906 (gpu_model_runner.py::_dummy_run); 0.11.0 wheel has the fix",
    ),
    DpScenario(
        "vllm-prefill-rank-eager",
        "vllm",
        "FULL_DECODE_ONLY: one rank prefills (eager), the other decodes (FULL); without "
        "the mode in the DP all-reduce the decode rank replays alone",
        "dp-cudagraph-mode-unsynced",
        ((prefill(1, 64), decode(2)),),
        diverges_under=("vllm-v1-0.11-dp",),
        clean_under=("vllm-mrv1-pre-29845", "vllm-current"),
        setup=DpSetup(graph_mode=VllmGraphMode.FULL_DECODE_ONLY),
        runner=ModelRunner.MRV1,
        source="PR #30173 (dp_utils.py cudagraph_mode row); 0.11.0 get_dp_padding",
    ),
    DpScenario(
        "vllm-mrv2-idle-rank-skips-propose",
        "vllm",
        "MRV2: one rank decodes, the other is idle and runs the target's dummy forward "
        "only, so the busy rank's draft forwards have no counterpart",
        "dp-idle-rank-no-propose",
        ((decode(2), IDLE),),
        diverges_under=("vllm-mrv2-pre-35294",),
        clean_under=("vllm-current", "vllm-0.29"),
        runner=ModelRunner.MRV2,
        source="PR #35294 text; 0.33 gpu/model_runner.py::_dummy_run (propose, dummy_run)",
    ),
)


def get_scenario(name: str) -> DpScenario:
    """A scenario by name; an unknown name is refused with the closest names."""
    if name not in SCENARIOS:
        raise unknown_choice("DP scenario", name, SCENARIOS)
    return SCENARIOS[name]
