"""What every rig-building command refuses before it allocates or starts a worker.

A worker that fails to build its rig turns bad input into a "crash" finding, and a rig that
does not fit memory is killed by the kernel without a word. So the parent checks, from the
configs alone: that the pair can be built (`rig.model_setup.check_buildable`, the same function
the model builder calls: draft kind, weights or --random-weights, MLA targets, aux layers), that
the plan's sizes are within what the rig and the target allow, and that the weights and KV cache
fit the memory left. The rig repeats its own checks; these only move them forward.
"""

from __future__ import annotations

from eaglegraph.errors import BadInput
from eaglegraph.pair.model import Pair
from eaglegraph.probes.host_memory import RigMemory, check_rig_memory
from eaglegraph.rig.config import RigConfig
from eaglegraph.rig.model_setup import check_buildable
from eaglegraph.rig.plan import build_plan
from eaglegraph.rig.speculators import refusal_findings

MAX_RIG_TOKENS = 1 << 20  # the rig's own limit on tokens per step


def check_limits(pair: Pair, config: RigConfig) -> None:
    """Sizes the rig would refuse only once built (in a worker, that is a crash)."""
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
    plan = build_plan(config.options)
    for refused in refusal_findings(pair, plan):  # a configuration the engine would not run
        raise BadInput(refused.message)
    tokens = max(config.options.max_num_batched_tokens, max(plan.capture_sizes, default=0))
    if tokens > MAX_RIG_TOKENS:
        raise BadInput(
            f"--max-num-batched-tokens {tokens} is too large for the rig (at most "
            f"{MAX_RIG_TOKENS}): its persistent buffers are sized by it"
        )


def preflight(pair: Pair, config: RigConfig, memory: bool = True) -> RigMemory | None:
    """Refuse what cannot be built or will not fit; returns the rig's memory needs."""
    check_buildable(pair, config.random_weights, config.options.framework)
    check_limits(pair, config)
    return check_rig_memory(pair, config) if memory else None
