"""Option resolution shared by every run: plan options with the draft's own K, and the device.

`probes.spec` calls these once per run; `rig_config` is the shortcut for library callers and
tests that hold a pair and want a rig without a spec.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from eaglegraph.errors import BadInput, MissingEnvironment
from eaglegraph.pair.model import Pair
from eaglegraph.rig.options import PlanOptions, resolve_plan_options

if TYPE_CHECKING:  # torch stays unimported for headers-only commands (inspect)
    import torch

    from eaglegraph.rig.config import RigConfig


def resolve_device(name: str) -> torch.device:
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise MissingEnvironment("--device cuda: no CUDA device is available on this machine")
    if name not in ("cuda", "cpu"):
        raise BadInput(f"unknown device {name!r}; choose auto, cuda or cpu")
    return torch.device(name)


def plan_options(pair: Pair, plan: Mapping[str, Any], **extra: Any) -> PlanOptions:
    """The plan options as the pair would run them: K defaults to what the draft declares.
    `extra` goes to `resolve_plan_options` (inspect: the engine's batch defaults for the GPU)."""
    hint = pair.draft_facts.speculative_tokens if pair.draft_facts else None
    return resolve_plan_options(**plan, default_num_speculative_tokens=hint, **extra)


def rig_config(
    pair: Pair,
    plan_kwargs: Mapping[str, Any],
    *,
    guard: bool = False,
    num_blocks: int | None = None,
    **rig: Any,
) -> RigConfig:
    """Resolve a spec for `pair` and its rig config in one go (device, dtype, max_model_len,
    random_weights, seed, compile_model as keywords). Uncompiled unless `compile_model` says
    otherwise: a library caller asks for Inductor's minute of compilation explicitly."""
    from eaglegraph.probes.spec import spec_for_pair

    rig.setdefault("compile_model", False)
    spec = spec_for_pair(pair, plan_kwargs, **rig)
    return spec.rig_config(guard=guard, num_blocks=num_blocks)
