"""Sizes the rig refuses, checked from the configs alone: one wording for every caller.

The rig checks them when it is built; the commands check them first (`probes.preflight`),
because a rig built in a worker turns bad input into a "crash" finding.
"""

from __future__ import annotations

from eaglegraph.errors import BadInput
from eaglegraph.pair.model import Pair
from eaglegraph.rig.config import RigConfig
from eaglegraph.rig.drafting import refusal_findings
from eaglegraph.rig.plan import CapturePlan, build_plan

MAX_RIG_TOKENS = 1 << 20  # the rig's own limit on tokens per step


def check_limits(pair: Pair, config: RigConfig, plan: CapturePlan | None = None) -> None:
    """max_model_len within the target's positions, request and token counts within the
    rig's buffers, and a configuration the engine would run at all."""
    assert pair.target is not None
    largest_position = pair.target.geometry.max_position_embeddings
    if config.max_model_len > largest_position:
        raise BadInput(
            f"--max-model-len {config.max_model_len} exceeds the target's "
            f"max_position_embeddings {largest_position}",
            f"give at most {largest_position}",
        )
    seqs = config.options.max_num_seqs
    if seqs > MAX_RIG_TOKENS:
        raise BadInput(
            f"--max-num-seqs {seqs} is too large for the rig (at most {MAX_RIG_TOKENS}): "
            "its block tables hold a row per request"
        )
    plan = plan or build_plan(config.options)
    for refused in refusal_findings(pair, plan):  # a configuration the engine would not run
        raise BadInput(refused.message)
    tokens = max(config.options.max_num_batched_tokens, max(plan.capture_sizes, default=0))
    if tokens > MAX_RIG_TOKENS:
        raise BadInput(
            f"--max-num-batched-tokens {tokens} is too large for the rig (at most "
            f"{MAX_RIG_TOKENS}): its persistent buffers are sized by it"
        )
