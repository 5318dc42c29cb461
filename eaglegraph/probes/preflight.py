"""What every rig-building command refuses before it allocates or starts a worker.

A worker that fails to build its rig turns bad input into a "crash" finding, and a rig that
does not fit memory is killed by the kernel without a word. So the parent checks, from the
configs alone: that the pair can be built (`rig.model_setup.check_buildable`, the same function
the model builder calls: draft kind, weights or --random-weights, MLA targets, aux layers), that
the plan's sizes are within what the rig and the target allow, and that the weights and KV cache
fit the memory left. The rig repeats its own checks; these only move them forward.
"""

from __future__ import annotations

from eaglegraph.pair.model import Pair
from eaglegraph.probes.host_memory import RigMemory, check_rig_memory
from eaglegraph.rig.config import RigConfig
from eaglegraph.rig.limits import check_limits
from eaglegraph.rig.model_setup import check_buildable


def preflight(pair: Pair, config: RigConfig, memory: bool = True) -> RigMemory | None:
    """Refuse what cannot be built or will not fit; returns the rig's memory needs."""
    check_buildable(pair, config.random_weights, config.options.framework)
    check_limits(pair, config)
    return check_rig_memory(pair, config) if memory else None
