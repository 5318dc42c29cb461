"""One DP rank's batch for one step, and the deployment facts a DP agreement reads.

The engines agree on padding and graph mode from each rank's *own* batch, so a divergence is
reproduced by giving every rank its batch (idle, decode, mixed, prefill, a request near
`max_model_len`, a draft input without its seed) and running the release's agreement rule over
them (`known.dp_rules`, `rig.dp_agreement`). These are plain values: scenarios in
`known.dp_scenarios` and the random schedules of `probes.dp_scenarios` are built from them.
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.known.enums import StrEnum


class BatchKind(StrEnum):
    IDLE = "idle"
    DECODE = "decode"
    MIXED = "mixed"
    PREFILL = "prefill"


class A2ABackend(StrEnum):
    """SGLang's MoE all-to-all backend (`--moe-a2a-backend`, `--speculative-moe-a2a-backend`)."""

    NONE = "none"  # MoE input all-gathered over the DP attention ranks (MAX_LEN/SUM_LEN)
    DEEPEP = "deepep"
    FLASHINFER = "flashinfer"


class VllmGraphMode(StrEnum):
    """The vLLM `cudagraph_mode` the deployment runs (the target's dispatcher reads it)."""

    FULL_AND_PIECEWISE = "FULL_AND_PIECEWISE"
    FULL_DECODE_ONLY = "FULL_DECODE_ONLY"


@dataclass(frozen=True)
class RankBatch:
    """What one DP rank's scheduler handed it this step.

    `near_cap_reqs` counts requests whose next drafts would pass `max_model_len` (vLLM V1's
    `_input_fits_in_drafter` fails for the whole rank when one does; MRV2 may skip drafts only
    when all do). `dsa_seed` is False for an active SGLang draft input without its DSA top-k
    seed (GLM-5.x MTP IndexShare), the input that may not replay the draft graph.
    """

    decode_reqs: int = 0
    prefill_reqs: int = 0
    prefill_tokens: int = 0
    near_cap_reqs: int = 0
    dsa_seed: bool = True
    seq_len: int = 256  # committed length per decode request (SGLang's attention_pairs column)

    def __post_init__(self) -> None:
        if min(self.decode_reqs, self.prefill_reqs, self.prefill_tokens, self.near_cap_reqs) < 0:
            raise ValueError(f"negative count in {self!r}")
        if (self.prefill_reqs == 0) != (self.prefill_tokens == 0):
            raise ValueError("prefill_reqs and prefill_tokens are both zero or both positive")
        if self.prefill_tokens < self.prefill_reqs:
            raise ValueError("a prefill request schedules at least one token")
        if self.near_cap_reqs > self.num_reqs:
            raise ValueError("near_cap_reqs exceeds the batch's requests")

    @property
    def num_reqs(self) -> int:
        return self.decode_reqs + self.prefill_reqs

    @property
    def kind(self) -> BatchKind:
        if self.num_reqs == 0:
            return BatchKind.IDLE
        if self.prefill_reqs == 0:
            return BatchKind.DECODE
        return BatchKind.PREFILL if self.decode_reqs == 0 else BatchKind.MIXED

    def num_tokens(self, num_speculative_tokens: int) -> int:
        """Scheduled tokens: 1 + K per decode request (the bonus token and K drafts to verify)
        plus the prefill chunk."""
        return self.decode_reqs * (1 + num_speculative_tokens) + self.prefill_tokens

    def label(self) -> str:
        """'idle', 'decode 4', 'prefill 1×512', 'mixed 2+1×256', with ' near-cap 1' or
        ' no-seed' when they apply."""
        kind = self.kind
        if kind is BatchKind.IDLE:
            text = "idle"
        elif kind is BatchKind.DECODE:
            text = f"decode {self.decode_reqs}"
        elif kind is BatchKind.PREFILL:
            text = f"prefill {self.prefill_reqs}×{self.prefill_tokens}"
        else:
            text = f"mixed {self.decode_reqs}+{self.prefill_reqs}×{self.prefill_tokens}"
        if self.near_cap_reqs:
            text += f" near-cap {self.near_cap_reqs}"
        if not self.dsa_seed and kind is not BatchKind.IDLE:
            text += " no-seed"
        return text


IDLE = RankBatch()


def decode(reqs: int, near_cap: int = 0, dsa_seed: bool = True) -> RankBatch:
    return RankBatch(decode_reqs=reqs, near_cap_reqs=near_cap, dsa_seed=dsa_seed)


def prefill(reqs: int, tokens: int) -> RankBatch:
    return RankBatch(prefill_reqs=reqs, prefill_tokens=tokens)


@dataclass(frozen=True)
class DpSetup:
    """Deployment facts the agreement and the local dispatch read (one value for all ranks).

    vLLM reads `capture_sizes` (token counts of the target's and the drafter's graphs) and
    `graph_mode`; SGLang reads `graph_bs` (the decode, draft and draft-extend runners' batch
    sizes), the target's and the draft's MoE A2A backends, and its prefill graphs
    (`prefill_graph_tokens`, empty when off; `prefill_graph_dp_gather` when a DP gather is
    captured inside them, as MegaMoE sparse-DP does).
    """

    num_speculative_tokens: int = 3
    capture_sizes: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
    graph_mode: VllmGraphMode = VllmGraphMode.FULL_AND_PIECEWISE
    graph_bs: tuple[int, ...] = (1, 2, 4, 8, 16, 24, 32)
    moe_a2a: A2ABackend = A2ABackend.NONE
    draft_moe_a2a: A2ABackend | None = None  # None: the target's
    prefill_graph_tokens: tuple[int, ...] = ()
    prefill_graph_dp_gather: bool = False

    def __post_init__(self) -> None:
        if self.num_speculative_tokens < 1:
            raise ValueError("num_speculative_tokens must be at least 1")
        for name in ("capture_sizes", "graph_bs", "prefill_graph_tokens"):
            sizes = getattr(self, name)
            if list(sizes) != sorted(set(sizes)) or any(s < 1 for s in sizes):
                raise ValueError(f"{name} must be increasing positive sizes, not {sizes}")

    @property
    def draft_a2a(self) -> A2ABackend:
        return self.draft_moe_a2a or self.moe_a2a
